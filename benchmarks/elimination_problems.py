"""Vertex-elimination benchmark functions, written once for tenscalc and for JAX.

Each function takes its inputs as separate arguments and an ``ops`` namespace
with ``sqrt``, ``abs``, ``sin``, ``cos``, ``log`` (``tenscalc`` or ``jax.numpy``),
and returns a tuple of outputs.  Called with ``tc.var`` scalars it builds the
tenscalc expressions; with vectors (``tc.var(name, 1)``) a batch of independent
evaluations, whose local Jacobians are all diagonal.

* ``simple``: graphax's introductory ``f(x, y)`` (also the example of the vertex
  elimination blog post): ``(log sin xy, xy + sin xy)``.
* ``roe_flux_1d``: the 1-d Roe flux (Roe 1981) between a left and a right state
  of the Euler equations, 6 inputs, 3 outputs, in graphax's formulation
  (``gamma = 0.5``, ``|.|`` of the eigenvalues).
* ``robot_arm_6dof``: forward kinematics of a 6-joint arm with UR5-like
  Denavit-Hartenberg parameters: the tool's position and its x axis (6 outputs).
* ``planar_arm``: a planar arm with ``n`` joints, the end point (2 outputs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

GAMMA = 0.5


def simple(x, y, ops):
    z = x * y
    w = ops.sin(z)
    return ops.log(w), z + w


def _pressure(u0, u1, u2):
    return (GAMMA - 1.0) * (u2 - 0.5 * u1**2 / u0)


def _enthalpy(u0, u2, p):
    return (u2 + p) / u0


def _euler_flux(u0, u1, u2, p):
    v = u1 / u0
    return u1, p + u1 * v, v * (p + u2)


def roe_flux_1d(ul0, ul1, ul2, ur0, ur1, ur2, ops):
    du0 = ur0 - ul0
    ulr0 = ops.sqrt(ul0 * ur0)
    sl, sr = ops.sqrt(ul0), ops.sqrt(ur0)
    w1 = sl + sr
    vl = ul1 / ul0
    pl = _pressure(ul0, ul1, ul2)
    hl = _enthalpy(ul0, ul2, pl)
    vr = ur1 / ur0
    pr = _pressure(ur0, ur1, ur2)
    hr = _enthalpy(ur0, ur2, pr)
    dp = pr - pl
    dv = vr - vl
    u = (sl * vl + sr * vr) / w1  # Roe averages
    h = (sl * hl + sr * hr) / w1
    q2 = u**2
    a2 = (GAMMA - 1.0) * (h - 0.5 * q2)
    a = ops.sqrt(a2)
    lp = ops.abs(u + a)
    lam = ops.abs(u)
    n = a * ulr0
    c0 = (du0 - dp / a2) * lam
    c1 = (dv + dp / n) * lp
    c2 = (dv - dp / n) * lam
    fl = _euler_flux(ul0, ul1, ul2, pl)
    fr = _euler_flux(ur0, ur1, ur2, pr)
    c = 0.5 * ulr0 / a
    df0 = c0 + c * c1 - c * c2
    df1 = c0 * u + c * c1 * (u + a) - c * c2 * (u - a)
    df2 = c0 * 0.5 * q2 + c * c1 * (h + u * a) - c * c2 * (h - u * a)
    return tuple(0.5 * (fl[k] + fr[k] - df) for k, df in enumerate((df0, df1, df2)))


#: UR5-like Denavit-Hartenberg parameters: (d, a, alpha) per joint
DH_6DOF = (
    (0.089, 0.0, math.pi / 2),
    (0.0, -0.425, 0.0),
    (0.0, -0.392, 0.0),
    (0.109, 0.0, math.pi / 2),
    (0.095, 0.0, -math.pi / 2),
    (0.082, 0.0, 0.0),
)


def _scaled(c: float, e: Any) -> Any:
    """``c * e`` without writing products by 0 or 1 (the constants of the DH table)."""
    if c == 0:
        return 0.0
    return e if c == 1 else (-e if c == -1 else c * e)


def _sum(terms: list) -> Any:
    live = [t for t in terms if not (isinstance(t, float) and t == 0.0)]
    if not live:
        return 0.0
    total = live[0]
    for t in live[1:]:
        total = total + t
    return total


def _round(v: float) -> float:
    """cos(pi/2) is 6e-17, not 0: the DH table's angles are multiples of pi/2."""
    return float(round(v)) if abs(v - round(v)) < 1e-12 else v


def robot_arm_6dof(t1, t2, t3, t4, t5, t6, ops):
    # T = A_1 ... A_6 with A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i); only the top
    # three rows are kept, each entry an expression or a Python float
    rows: list[list[Any]] = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
    for theta, (d, a, alpha) in zip((t1, t2, t3, t4, t5, t6), DH_6DOF):
        c, s = ops.cos(theta), ops.sin(theta)
        ca, sa = _round(math.cos(alpha)), _round(math.sin(alpha))
        # columns of A: (c, s, 0), (-s ca, c ca, sa), (s sa, -c sa, ca), (a c, a s, d)
        cols = [
            [c, s, 0.0],
            [_scaled(-ca, s), _scaled(ca, c), sa],
            [_scaled(sa, s), _scaled(-sa, c), ca],
            [_scaled(a, c), _scaled(a, s), d],
        ]
        new_rows = []
        for row in rows:
            entries = [_sum([_mul(row[m], col[m]) for m in range(3)]) for col in cols]
            entries[3] = _sum([entries[3], row[3]])
            new_rows.append(entries)
        rows = new_rows
    return rows[0][3], rows[1][3], rows[2][3], rows[0][0], rows[1][0], rows[2][0]


def _mul(a: Any, b: Any) -> Any:
    if isinstance(a, float) and isinstance(b, float):
        return a * b
    if isinstance(a, float):
        return _scaled(a, b)
    if isinstance(b, float):
        return _scaled(b, a)
    return a * b


def planar_arm(n: int) -> Callable:
    """A planar arm with ``n`` joints and link lengths 1/2, 1/3, 1/4 ...: its end point."""

    def arm(*args):
        *thetas, ops = args
        angle = thetas[0]
        xs, ys = [], []
        for k, theta in enumerate(thetas):
            if k:
                angle = angle + theta
            xs.append(_scaled(1.0 / (k + 2), ops.cos(angle)))
            ys.append(_scaled(1.0 / (k + 2), ops.sin(angle)))
        return _sum(xs), _sum(ys)

    return arm


#: name -> (function, input names, a point where it is smooth and real)
PROBLEMS: dict[str, tuple[Callable, tuple[str, ...], tuple[float, ...]]] = {
    "simple": (simple, ("x", "y"), (0.7, 1.3)),
    "roe_flux_1d": (
        roe_flux_1d,
        ("ul0", "ul1", "ul2", "ur0", "ur1", "ur2"),
        # graphax's point (.01, .02, .02, .01, .03, .03) has h - q2/2 < 0 for gamma = 0.5;
        # this one keeps a2 > 0 and u, u + a away from 0
        (1.0, 0.3, -2.5, 0.8, 0.2, -2.0),
    ),
    "robot_arm_6dof": (robot_arm_6dof, tuple(f"t{k}" for k in range(1, 7)), (0.1, -0.4, 0.9, 0.3, -1.1, 0.5)),
    "planar_arm_6": (planar_arm(6), tuple(f"t{k}" for k in range(1, 7)), (0.1, -0.4, 0.9, 0.3, -1.1, 0.5)),
}


def tenscalc_outputs(name: str, batched: bool = False) -> tuple[list, list[str]]:
    """The outputs of problem ``name`` as tenscalc expressions and its variable names
    (vectors of one common length with ``batched``)."""
    import tenscalc as tc

    fn, names, _ = PROBLEMS[name]
    order = 1 if batched else 0
    outs = fn(*(tc.var(v, order) for v in names), tc)
    return list(outs), list(names)
