"""Numeric counterexamples: negative curvature and Jensen gaps.

Numbers may refute convexity; they never certify it.  Points are sampled inside
the domain (assumptions respected: positive entries, intervals, symmetric, PSD
matrices as ``G Gᵀ``, PD as ``G Gᵀ + εI``, diagonal matrices; constraints implied
by the expression checked by evaluating them).  At each point the most negative
(or, for concavity, most positive) curvature ``vᵀ H v`` is found: from the dense
Hessian for small inputs, or by Lanczos iterations on Hessian-vector products
built symbolically (the derivative of ``∇f · v``) for large ones, so that an
order-4 Hessian is never formed.  A candidate is accepted only when the function
itself confirms it: the second difference ``f(x+hv) + f(x-hv) - 2 f(x)`` has the
wrong sign by more than rounding can explain, which is a Jensen violation with
``a = x + hv``, ``b = x - hv``.  Random pairs ``(a, b)`` give Jensen gaps for
non-smooth functions, whose Hessians vanish almost everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..calculus.api import derivative, hessian
from ..core import nodes as N
from ..core.axes import axis_graph
from ..core.nodes import Expr
from ..errors import TensCalcError
from ..interpreter import evaluate
from ..testing import combine
from .assumptions import Constraint, VariableAssumption
from .constraint_kinds import CONSTRAINT_KINDS

TOLERANCE = 1e-9
"""A gap counts only when it exceeds this fraction of the function values involved
(rounding in the evaluation of ``f`` stays far below it)."""


@dataclass
class Counterexample:
    """A numeric refutation of convexity (``against="convex"``) or concavity.

    ``point`` holds every variable; ``direction`` the wrt variables' direction
    ``v``; ``curvature`` is ``vᵀ H v`` for a unit ``v`` (the most negative found, for
    convexity); ``second_difference`` is ``f(x+hv) + f(x-hv) - 2 f(x)``.  A Jensen
    triple ``(a, b, gap)`` has ``gap = f((a+b)/2) - (f(a) + f(b))/2`` (> 0 refutes
    convexity, < 0 concavity); ``a`` and ``b`` hold the wrt variables.
    """

    against: str
    kind: str  # "negative curvature", "positive curvature", "Jensen gap", "domain not convex"
    point: dict[str, np.ndarray]
    direction: dict[str, np.ndarray] | None = None
    curvature: float | None = None
    step: float | None = None
    second_difference: float | None = None
    a: dict[str, np.ndarray] | None = None
    b: dict[str, np.ndarray] | None = None
    gap: float | None = None
    values: tuple[float, float, float] | None = None  # f(a), f(mid), f(b)

    @property
    def jensen(self) -> tuple[dict, dict, float] | None:
        if self.a is None or self.b is None or self.gap is None:
            return None
        return self.a, self.b, self.gap

    def describe(self) -> str:
        lines = []
        if self.kind.endswith("curvature"):
            word = "negative" if self.against == "convex" else "positive"
            lines.append(f"{word} curvature vᵀHv = {self.curvature:.6g} (unit v) at the point below")
            lines.append(
                f"confirmed by the function: f(x+hv) + f(x-hv) - 2f(x) = {self.second_difference:.6g} with h = "
                f"{self.step:.3g}"
            )
        elif self.kind == "domain not convex":
            lines.append("a and b are in the domain but their midpoint is not")
        else:
            lines.append(f"Jensen gap f((a+b)/2) - (f(a)+f(b))/2 = {self.gap:.6g}")
        lines.append("point: " + _fmt_values(self.point))
        if self.direction is not None:
            lines.append("direction v: " + _fmt_values(self.direction))
        if self.a is not None and self.kind not in ("negative curvature", "positive curvature"):
            lines.append("a: " + _fmt_values(self.a))
            lines.append("b: " + _fmt_values(self.b))
        return "\n".join(lines)


def _fmt_values(values: Mapping[str, Any]) -> str:
    parts = []
    for name, value in values.items():
        arr = np.asarray(value)
        text = np.array2string(arr, precision=4, suppress_small=True, max_line_width=100, threshold=20)
        parts.append(f"{name} = {text}")
    return "; ".join(parts)


@dataclass
class SearchReport:
    convex: Counterexample | None = None
    concave: Counterexample | None = None
    points_tried: int = 0
    points_in_domain: int = 0
    method: str = ""
    notes: list[str] = field(default_factory=list)


class Falsifier:
    """Search for counterexamples to convexity / concavity of ``f`` in ``wrt``."""

    def __init__(
        self,
        f: Expr,
        wrt: Sequence[str],
        assumed: Mapping[str, VariableAssumption],
        constraints: Sequence[Constraint],
        seed: int = 0,
        values: Mapping[str, Any] | None = None,
        dense_limit: int = 200,
    ):
        self.f = f
        self.wrt = list(wrt)
        self.orders = f.variables
        self.assumed = assumed
        self.constraints = [c for c in constraints]
        self.rng = np.random.default_rng(seed)
        self.fixed = {k: np.asarray(v, dtype=float) for k, v in (values or {}).items()}
        self.shapes = self._shapes()
        self.dense_limit = dense_limit
        self._blocks: dict[tuple[str, str], Expr] | None = None
        self._hvp: dict[str, Expr] | None = None

    # -- shapes and sampling ------------------------------------------------------------------
    def _shapes(self) -> dict[str, tuple[int, ...]]:
        # a matrix with matrix assumptions is square: reading its diagonal ties the axes
        square = [
            N.mul((N.var(name, 2),), ((0, 0),), ())
            for name, a in self.assumed.items()
            if a.tags and self.orders.get(name) == 2
        ]
        combined = combine([self.f] + square)
        graph = axis_graph(combined)
        length_of: dict[int, int] = {}
        for name, _order, axis, slot in graph.var_slots:  # lengths of the arrays given
            if name in self.fixed and axis < self.fixed[name].ndim:
                length_of.setdefault(graph.find(slot), int(self.fixed[name].shape[axis]))
        shapes: dict[str, list[int]] = {}
        for name, order, axis, slot in graph.var_slots:  # the others: 2, 3, 4 ... (distinct)
            cls = graph.find(slot)
            if cls not in length_of:
                length_of[cls] = 2 + len(length_of)
            shapes.setdefault(name, [0] * order)[axis] = length_of[cls]
        result = {name: tuple(shape) for name, shape in shapes.items()}
        for name, order in self.orders.items():
            result.setdefault(name, (2,) * order)
        for name, value in self.fixed.items():
            result[name] = value.shape
        return result

    @property
    def size(self) -> int:
        return sum(int(np.prod(self.shapes[n], dtype=int)) for n in self.wrt)

    def _sample_variable(self, name: str, scale: float) -> np.ndarray | float:
        shape = self.shapes[name]
        a = self.assumed.get(name)
        rng = self.rng
        if a is not None and a.tags and len(shape) == 2:
            n = shape[0]
            if "diagonal" in a.tags:
                d = rng.standard_normal(n) * scale
                if "pd" in a.tags or "psd" in a.tags:
                    d = np.abs(d) + (0.05 * scale if "pd" in a.tags else 0.0)
                m = np.diag(d)
            elif "pd" in a.tags or "psd" in a.tags:
                rank = n if "pd" in a.tags or rng.random() < 0.5 else max(1, n - 1)
                g = rng.standard_normal((n, rank)) * np.sqrt(scale)
                m = g @ g.T / rank
                if "pd" in a.tags:
                    m = m + 0.1 * scale * np.eye(n)
            else:  # symmetric
                g = rng.standard_normal((n, n)) * scale
                m = (g + g.T) / 2
            return self._clip(name, m)
        iv = a.interval if a is not None else None
        if iv is None or (iv.lo == -np.inf and iv.hi == np.inf):
            x = rng.standard_normal(shape) * scale
        elif iv.lo > -np.inf and iv.hi < np.inf:
            x = rng.uniform(iv.lo, iv.hi, size=shape)
        elif iv.lo > -np.inf:
            x = iv.lo + rng.exponential(scale, size=shape) + (1e-3 if not iv.lo_closed else 0.0)
        else:
            x = iv.hi - rng.exponential(scale, size=shape) - (1e-3 if not iv.hi_closed else 0.0)
        return float(x) if shape == () else x

    def _clip(self, name: str, m: np.ndarray) -> np.ndarray:
        a = self.assumed.get(name)
        if a is None:
            return m
        iv = a.interval
        if iv.lo > -np.inf or iv.hi < np.inf:
            m = np.clip(m, iv.lo, iv.hi)
        return m

    def sample(self, scale: float) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name in self.orders:
            if name in self.fixed:
                values[name] = self.fixed[name]
            else:
                values[name] = self._sample_variable(name, scale)
        return values

    # -- domain --------------------------------------------------------------------------------
    def assumptions_hold(self, values: Mapping[str, Any]) -> bool:
        for name, a in self.assumed.items():
            x = np.asarray(values[name], dtype=float)
            iv = a.interval
            if iv.lo > -np.inf and (np.any(x < iv.lo) or (not iv.lo_closed and np.any(x == iv.lo))):
                return False
            if iv.hi < np.inf and (np.any(x > iv.hi) or (not iv.hi_closed and np.any(x == iv.hi))):
                return False
            if x.ndim == 2 and a.tags:
                if "symmetric" in a.tags and not np.allclose(x, x.T, atol=0, rtol=0):
                    return False
                if "diagonal" in a.tags and np.any(x - np.diag(np.diag(x)) != 0):
                    return False
                if "psd" in a.tags or "pd" in a.tags:
                    w = np.linalg.eigvalsh((x + x.T) / 2)
                    if w.min() < (1e-12 * max(1.0, abs(w).max()) if "pd" in a.tags else -1e-12):
                        return False
        return True

    def constraints_hold(self, values: Mapping[str, Any]) -> bool:
        for c in self.constraints:
            try:
                with np.errstate(all="ignore"):
                    u = np.asarray(evaluate(c.node, values), dtype=float)
            except (TensCalcError, np.linalg.LinAlgError, ValueError):
                return False
            kind = CONSTRAINT_KINDS[c.kind]
            if not (kind.allows_nonfinite or np.all(np.isfinite(u))) or not kind.holds(u):
                return False
        return True

    def in_domain(self, values: Mapping[str, Any]) -> bool:
        return self.assumptions_hold(values) and self.constraints_hold(values)

    def value(self, values: Mapping[str, Any]) -> float | None:
        try:
            with np.errstate(all="ignore"):
                v = float(evaluate(self.f, values))
        except (TensCalcError, np.linalg.LinAlgError, ValueError, OverflowError):
            return None
        return v if np.isfinite(v) else None

    # -- directions ------------------------------------------------------------------------------
    def _basis_project(self, name: str, v: np.ndarray) -> np.ndarray:
        """Project a direction onto the directions the assumptions allow."""
        a = self.assumed.get(name)
        if a is not None and v.ndim == 2 and a.tags:
            if "diagonal" in a.tags:
                return np.diag(np.diag(v))
            if "symmetric" in a.tags:
                return (v + v.T) / 2
        return v

    @property
    def constrained(self) -> bool:
        """Whether some wrt variable allows only some directions (symmetric, diagonal)."""
        return any(self._projection_kind(name) is not None for name in self.wrt)

    def _projection_kind(self, name: str) -> str | None:
        a = self.assumed.get(name)
        if a is None or not a.tags or len(self.shapes[name]) != 2:
            return None
        if "diagonal" in a.tags:
            return "diagonal"
        if "symmetric" in a.tags:
            return "symmetric"
        return None

    def project(self, flat: np.ndarray) -> np.ndarray:
        """The orthogonal projection of a stacked direction onto the allowed directions,
        in O(size): symmetric matrices ``(V + Vᵀ)/2``, diagonal ones ``diag(V)``."""
        if not self.constrained:
            return flat
        parts = [self._basis_project(name, d).ravel() for name, d in self._split(flat).items()]
        return np.concatenate(parts) if parts else flat

    def _basis(self) -> np.ndarray:
        """Columns spanning the allowed directions of the stacked wrt variables
        (dense: only for the small problems whose Hessian is formed)."""
        columns = []
        offset = 0
        total = self.size
        for name in self.wrt:
            shape = self.shapes[name]
            size = int(np.prod(shape, dtype=int))
            for k in range(size):
                e = np.zeros(size)
                e[k] = 1.0
                p = self._basis_project(name, e.reshape(shape)).ravel()
                if np.any(p):
                    col = np.zeros(total)
                    col[offset : offset + size] = p
                    columns.append(col)
            offset += size
        if not columns:
            return np.zeros((total, 0))
        mat = np.array(columns).T
        q, r = np.linalg.qr(mat)
        keep = np.abs(np.diag(r)) > 1e-10
        return q[:, keep]

    def _split(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        offset = 0
        for name in self.wrt:
            shape = self.shapes[name]
            size = int(np.prod(shape, dtype=int))
            out[name] = flat[offset : offset + size].reshape(shape)
            offset += size
        return out

    def _hessian_blocks(self) -> dict[tuple[str, str], Expr]:
        if self._blocks is None:
            self._blocks = {(a, b): hessian(self.f, a, b) for a in self.wrt for b in self.wrt}
        return self._blocks

    def dense_hessian(self, values: Mapping[str, Any]) -> np.ndarray | None:
        rows = []
        try:
            with np.errstate(all="ignore"):
                for a in self.wrt:
                    row = []
                    sa = int(np.prod(self.shapes[a], dtype=int))
                    for b in self.wrt:
                        sb = int(np.prod(self.shapes[b], dtype=int))
                        block = np.asarray(evaluate(self._hessian_blocks()[(a, b)], values), dtype=float)
                        row.append(block.reshape(sa, sb))
                    rows.append(np.hstack(row))
        except (TensCalcError, np.linalg.LinAlgError, ValueError):
            return None
        h = np.vstack(rows)
        return h if np.all(np.isfinite(h)) else None

    def _hvp_exprs(self) -> dict[str, Expr]:
        """(H v)_b for each wrt variable b, as expressions in the point and directions v_a."""
        if self._hvp is None:
            directional = None
            for a in self.wrt:
                g = derivative(self.f, a)
                v = N.var(f"dir__{a}", self.orders[a])
                spec = tuple(range(self.orders[a]))
                term = N.mul((g, v), (spec, spec), ())
                directional = term if directional is None else N.add((directional, term))
            self._hvp = {b: derivative(directional, N.var(b, self.orders[b])) for b in self.wrt}
        return self._hvp

    def hvp(self, values: Mapping[str, Any], flat: np.ndarray) -> np.ndarray | None:
        directions = self._split(flat)
        env = dict(values)
        for a in self.wrt:
            env[f"dir__{a}"] = directions[a]
        parts = []
        try:
            with np.errstate(all="ignore"):
                for b in self.wrt:
                    parts.append(np.asarray(evaluate(self._hvp_exprs()[b], env), dtype=float).ravel())
        except (TensCalcError, np.linalg.LinAlgError, ValueError):
            return None
        out = np.concatenate(parts)
        return out if np.all(np.isfinite(out)) else None

    def extreme_curvature(self, values: Mapping[str, Any], sign: int) -> tuple[float, np.ndarray] | None:
        """The smallest eigenvalue of ``sign * H`` on the allowed directions, with its
        unit eigenvector (stacked)."""
        if self.size <= self.dense_limit:
            basis = self._basis()
            if basis.shape[1] == 0:
                return None
            h = self.dense_hessian(values)
            if h is None:
                return None
            hs = basis.T @ (sign * h) @ basis
            hs = (hs + hs.T) / 2
            w, vecs = np.linalg.eigh(hs)
            return float(w[0]), basis @ vecs[:, 0]
        return self._lanczos(values, sign)

    def _lanczos(self, values, sign: int, steps: int = 30):
        """Lanczos on ``P H P`` (P the projection onto the allowed directions) from
        Hessian-vector products: O(size · steps) memory and time besides the products."""
        q = self.project(self.rng.standard_normal(self.size))
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return None
        q /= norm
        qs = [q]
        alphas: list[float] = []
        betas: list[float] = []
        for j in range(steps):
            hv = self.hvp(values, qs[-1])
            if hv is None:
                return None
            w = sign * self.project(hv)
            alpha = float(qs[-1] @ w)
            w = w - alpha * qs[-1] - (betas[-1] * qs[-2] if betas else 0)
            basis = np.array(qs)  # full reorthogonalisation, steps x size
            w -= basis.T @ (basis @ w)
            alphas.append(alpha)
            beta = float(np.linalg.norm(w))
            if beta < 1e-12 or j == steps - 1:
                break
            betas.append(beta)
            qs.append(w / beta)
        t = np.diag(alphas) + np.diag(betas[: len(alphas) - 1], 1) + np.diag(betas[: len(alphas) - 1], -1)
        w, vecs = np.linalg.eigh(t)
        y = np.array(qs[: len(alphas)]).T @ vecs[:, 0]
        return float(w[0]), y

    # -- confirmation ------------------------------------------------------------------------------
    def _moved(self, values: Mapping[str, Any], flat: np.ndarray, t: float) -> dict[str, Any]:
        moved = dict(values)
        for name, d in self._split(flat).items():
            base = np.asarray(values[name], dtype=float)
            moved[name] = base + t * d if base.shape else float(base + t * d)
        return moved

    def confirm(self, values, flat: np.ndarray, sign: int) -> tuple[float, float, tuple] | None:
        """A step h with sign * (f(x+hv) + f(x-hv) - 2 f(x)) clearly negative."""
        f0 = self.value(values)
        if f0 is None:
            return None
        scale = max(1.0, max(float(np.max(np.abs(np.asarray(values[n])))) for n in self.wrt))
        for h in (0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4):
            step = h * scale
            plus, minus = self._moved(values, flat, step), self._moved(values, flat, -step)
            if not (self.in_domain(plus) and self.in_domain(minus)):
                continue
            fp, fm = self.value(plus), self.value(minus)
            if fp is None or fm is None:
                continue
            second = fp + fm - 2 * f0
            tol = TOLERANCE * (abs(fp) + abs(fm) + 2 * abs(f0)) + 1e-300
            if sign * second < -tol:
                return step, second, (fp, f0, fm)
        return None

    # -- the search ---------------------------------------------------------------------------------
    def run(self, convex: bool = True, concave: bool = True, points: int = 12, pairs: int = 40) -> SearchReport:
        dense = self.size <= self.dense_limit
        report = SearchReport(method="dense Hessian" if dense else "Lanczos on Hessian-vector products")
        scales = (1.0, 0.3, 3.0)
        samples: list[dict[str, Any]] = []
        attempts = 0
        while len(samples) < points and attempts < points * 8:
            attempts += 1
            values = self.sample(scales[attempts % len(scales)])
            report.points_tried += 1
            if self.in_domain(values) and self.value(values) is not None:
                samples.append(values)
        report.points_in_domain = len(samples)
        if not samples:
            report.notes.append("no point of the domain was found by sampling")
            return report
        for values in samples:
            for want, sign in (("convex", 1), ("concave", -1)):
                if (want == "convex" and (not convex or report.convex)) or (
                    want == "concave" and (not concave or report.concave)
                ):
                    continue
                found = self.extreme_curvature(values, sign)
                if found is None:
                    continue
                lam, v = found
                if lam >= -1e-10 * max(1.0, abs(lam)):
                    continue
                confirmed = self.confirm(values, v, sign)
                if confirmed is None:
                    continue
                step, second, fvals = confirmed
                cex = Counterexample(
                    against=want,
                    kind="negative curvature" if sign > 0 else "positive curvature",
                    point={k: np.asarray(x) for k, x in values.items()},
                    direction=self._split(v),
                    curvature=sign * lam,
                    step=step,
                    second_difference=second,
                    a={k: np.asarray(x) for k, x in self._moved(values, v, step).items() if k in self.wrt},
                    b={k: np.asarray(x) for k, x in self._moved(values, v, -step).items() if k in self.wrt},
                    gap=fvals[1] - (fvals[0] + fvals[2]) / 2,
                    values=fvals,
                )
                if want == "convex":
                    report.convex = cex
                else:
                    report.concave = cex
            if (report.convex or not convex) and (report.concave or not concave):
                return report
        self._jensen(samples, report, convex, concave, pairs)
        return report

    def _jensen(self, samples, report: SearchReport, convex: bool, concave: bool, pairs: int) -> None:
        for i in range(pairs):
            if (report.convex or not convex) and (report.concave or not concave):
                return
            a = samples[i % len(samples)]
            if i % 2 == 0 and len(samples) > 1:
                other = samples[(i * 7 + 1) % len(samples)]
                b = dict(a)
                for name in self.wrt:
                    b[name] = other[name]
            else:
                b = dict(a)
                t = (0.1, 0.5, 1.0, 2.0)[i % 4]
                for name in self.wrt:
                    base = np.asarray(a[name], dtype=float)
                    d = (
                        self._basis_project(name, self.rng.standard_normal(base.shape))
                        if base.shape
                        else self.rng.standard_normal()
                    )
                    b[name] = base + t * d if base.shape else float(base + t * d)
            if not self.in_domain(b):
                continue
            mid = dict(a)
            for name in self.wrt:
                mid[name] = (np.asarray(a[name], dtype=float) + np.asarray(b[name], dtype=float)) / 2
                if np.asarray(a[name]).shape == ():
                    mid[name] = float(mid[name])
            fa, fb = self.value(a), self.value(b)
            if fa is None or fb is None:
                continue
            wrt_a = {k: np.asarray(a[k]) for k in self.wrt}
            wrt_b = {k: np.asarray(b[k]) for k in self.wrt}
            if not self.in_domain(mid) or self.value(mid) is None:
                if self.assumptions_hold(mid) and not self.constraints_hold(mid):
                    cex = Counterexample(
                        "convex", "domain not convex", {k: np.asarray(x) for k, x in a.items()}, a=wrt_a, b=wrt_b
                    )
                    if convex and not report.convex:
                        report.convex = cex
                    if concave and not report.concave:
                        report.concave = Counterexample("concave", "domain not convex", cex.point, a=wrt_a, b=wrt_b)
                continue
            fm = self.value(mid)
            gap = fm - (fa + fb) / 2
            tol = TOLERANCE * (abs(fa) + abs(fb) + 2 * abs(fm)) + 1e-300
            point = {k: np.asarray(x) for k, x in a.items()}
            if convex and not report.convex and gap > tol:
                report.convex = Counterexample(
                    "convex", "Jensen gap", point, a=wrt_a, b=wrt_b, gap=gap, values=(fa, fm, fb)
                )
            if concave and not report.concave and gap < -tol:
                report.concave = Counterexample(
                    "concave", "Jensen gap", point, a=wrt_a, b=wrt_b, gap=gap, values=(fa, fm, fb)
                )
