"""Problem classes of issue #13: derivatives nobody tuned tenscalc for.

Each class gives the tenscalc source and the transformation (built with
tenscalc's own functions), the data at benchmark size, a hand-written NumPy
closed form, and the same transformation with JAX (``jax.jit``) and PyTorch
(``torch.func``).  ``benchmarks/run_classes.py`` times them side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

NETWORK = (
    "(tanh(tanh(X *(mj,hj->mh) W1) *(mh,gh->mg) W2) *(mg,og->mo) W3 - Y) *(mo,mo->) "
    "(tanh(tanh(X *(mj,hj->mh) W1) *(mh,gh->mg) W2) *(mg,og->mo) W3 - Y)"
)
ROSENBROCK = "(100 *(,i->i) (X *(ij,j->i) q - (X *(ij,j->i) p) ^ 2) ^ 2 + (1 - X *(ij,j->i) p) ^ 2) *(i,i->) 1"
SOFTMAX = "log(exp(X *(mj,kj->mk) W) *(mk,k->m) 1) *(m,m->) 1 - Y *(mk,mk->) (X *(mj,kj->mk) W)"
EXPSUM = "exp(A *(ij,j->i) x) *(i,i->) 1"
MAP = "tanh(W3 *(oh,h->o) tanh(W2 *(gh,h->g) tanh(W1 *(hi,i->h) x)))"


@dataclass
class Case:
    """One benchmark: what tenscalc computes, and the same by hand, JAX and PyTorch."""

    name: str
    what: str
    data: Callable[[], dict]
    build: Callable  # tc -> list of expressions (compiled together)
    numpy: Callable[[dict], object]
    jax: Callable  # (jax, jnp, data) -> (jitted fn, args)
    torch: Callable  # (torch, data) -> zero-argument callable


RNG = np.random.default_rng(0)


# ---------------------------------------------------------------- deep-network HVP


def network_data(m=512, n=256, h=256, g=256, o=10):
    r = np.random.default_rng(1)
    return {
        "X": r.standard_normal((m, n)) / 16,
        "W1": r.standard_normal((h, n)) / 16,
        "W2": r.standard_normal((g, h)) / 16,
        "W3": r.standard_normal((o, g)) / 16,
        "Y": r.standard_normal((m, o)),
        "v": r.standard_normal((h, n)),
    }


def network_hvp_numpy(d):
    """Pearlmutter's R-operator by hand: forward, backward, and their directional derivatives."""
    X, W1, W2, W3, Y, V = d["X"], d["W1"], d["W2"], d["W3"], d["Y"], d["v"]
    A1 = np.tanh(X @ W1.T)
    A2 = np.tanh(A1 @ W2.T)
    R = A2 @ W3.T - Y
    S1, S2 = 1 - A1 * A1, 1 - A2 * A2
    RA1 = S1 * (X @ V.T)
    RA2 = S2 * (RA1 @ W2.T)
    RO = RA2 @ W3.T
    dA2 = 2 * R @ W3
    dA1 = (dA2 * S2) @ W2
    RdZ2 = (2 * RO @ W3) * S2 - 2 * dA2 * A2 * RA2
    RdZ1 = (RdZ2 @ W2) * S1 - 2 * dA1 * A1 * RA1
    return RdZ1.T @ X


def _network_jax(jax, jnp, d):
    def f(W1, X, W2, W3, Y):
        return jnp.sum((jnp.tanh(jnp.tanh(X @ W1.T) @ W2.T) @ W3.T - Y) ** 2)

    def hvp(W1, v, X, W2, W3, Y):
        return jax.jvp(lambda w: jax.grad(f)(w, X, W2, W3, Y), (W1,), (v,))[1]

    return jax.jit(hvp), [d[k] for k in ("W1", "v", "X", "W2", "W3", "Y")]


def _network_torch(torch, d):
    t = {k: torch.from_numpy(v) for k, v in d.items()}

    def f(W1):
        return torch.sum((torch.tanh(torch.tanh(t["X"] @ W1.T) @ t["W2"].T) @ t["W3"].T - t["Y"]) ** 2)

    tf = torch.func
    return lambda: tf.jvp(tf.grad(f), (t["W1"],), (t["v"],))[1]


# ---------------------------------------------------------------- block-diagonal Hessian


def rosenbrock_data(n=1000):
    r = np.random.default_rng(2)
    return {"X": r.standard_normal((n, 2)), "p": np.array([1.0, 0.0]), "q": np.array([0.0, 1.0])}


def rosenbrock_numpy(d):
    X = d["X"]
    a, b = X[:, 0], X[:, 1]
    n = len(a)
    H = np.zeros((n, 2, n, 2))
    D = np.einsum("iaib->iab", H)
    D[:, 0, 0] = 1200 * a * a - 400 * b + 2
    D[:, 0, 1] = D[:, 1, 0] = -400 * a
    D[:, 1, 1] = 200
    return H


def _rosenbrock_jax(jax, jnp, d):
    def f(X):
        a, b = X[:, 0], X[:, 1]
        return jnp.sum(100 * (b - a * a) ** 2 + (1 - a) ** 2)

    return jax.jit(jax.hessian(f)), [d["X"]]


def _rosenbrock_torch(torch, d):
    X = torch.from_numpy(d["X"])

    def f(X):
        a, b = X[:, 0], X[:, 1]
        return torch.sum(100 * (b - a * a) ** 2 + (1 - a) ** 2)

    return lambda: torch.func.hessian(f)(X)


# ---------------------------------------------------------------- softmax regression


def softmax_data(m=2000, n=50, k=10):
    r = np.random.default_rng(3)
    labels = r.integers(0, k, m)
    return {"X": r.standard_normal((m, n)) / np.sqrt(n), "W": r.standard_normal((k, n)), "Y": np.eye(k)[labels]}


def softmax_numpy(d):
    X, W = d["X"], d["W"]
    Z = X @ W.T
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    k, n = W.shape
    # H[a,j,b,i] = sum_m (P_ma delta_ab - P_ma P_mb) X_mj X_mi
    diag = np.einsum("ma,mj,mi->aji", P, X, X)
    B = (P[:, :, None] * X[:, None, :]).reshape(len(X), k * n)
    H = -(B.T @ B).reshape(k, n, k, n)
    np.einsum("ajai->aji", H)[...] += diag
    return H


def _softmax_jax(jax, jnp, d):
    def f(W, X, Y):
        Z = X @ W.T
        return jnp.sum(jnp.log(jnp.sum(jnp.exp(Z), axis=1))) - jnp.sum(Y * Z)

    return jax.jit(jax.hessian(f)), [d["W"], d["X"], d["Y"]]


def _softmax_torch(torch, d):
    X, Y, W = (torch.from_numpy(d[k]) for k in ("X", "Y", "W"))

    def f(W):
        Z = X @ W.T
        return torch.sum(torch.log(torch.sum(torch.exp(Z), dim=1))) - torch.sum(Y * Z)

    return lambda: torch.func.hessian(f)(W)


# ---------------------------------------------------------------- third derivative


def expsum_data(m=500, n=100):
    r = np.random.default_rng(4)
    return {"A": r.standard_normal((m, n)) / np.sqrt(n), "x": r.standard_normal(n) / 4}


def expsum_numpy(d):
    A, x = d["A"], d["x"]
    e = np.exp(A @ x)
    m, n = A.shape
    B = A * e[:, None]
    outer = (A[:, :, None] * A[:, None, :]).reshape(m, n * n)
    return (outer.T @ B).reshape(n, n, n)


def _expsum_jax(jax, jnp, d):
    def f(x, A):
        return jnp.sum(jnp.exp(A @ x))

    return jax.jit(jax.jacfwd(jax.hessian(f))), [d["x"], d["A"]]


def _expsum_torch(torch, d):
    A, x = torch.from_numpy(d["A"]), torch.from_numpy(d["x"])

    def f(x):
        return torch.sum(torch.exp(A @ x))

    return lambda: torch.func.jacfwd(torch.func.hessian(f))(x)


# ---------------------------------------------------------------- Jacobians tall and wide


def map_data(n_in, hidden, n_out):
    r = np.random.default_rng(5)
    return {
        "x": r.standard_normal(n_in),
        "W1": r.standard_normal((hidden, n_in)) / np.sqrt(n_in),
        "W2": r.standard_normal((hidden, hidden)) / np.sqrt(hidden),
        "W3": r.standard_normal((n_out, hidden)) / np.sqrt(hidden),
    }


def map_numpy(d):
    """Forward or reverse accumulation by hand, whichever is cheaper: chain of diag(s) W."""
    x, W1, W2, W3 = d["x"], d["W1"], d["W2"], d["W3"]
    a1 = np.tanh(W1 @ x)
    a2 = np.tanh(W2 @ a1)
    a3 = np.tanh(W3 @ a2)
    s1, s2, s3 = 1 - a1 * a1, 1 - a2 * a2, 1 - a3 * a3
    if len(x) <= len(a3):  # tall: forward (input-sized columns)
        return s3[:, None] * (W3 @ (s2[:, None] * (W2 @ (s1[:, None] * W1))))
    return ((((s3[:, None] * W3) * s2) @ W2) * s1) @ W1  # wide: reverse


def _map_jax(jax, jnp, d):
    def f(x, W1, W2, W3):
        return jnp.tanh(W3 @ jnp.tanh(W2 @ jnp.tanh(W1 @ x)))

    tall = d["W3"].shape[0] >= len(d["x"])
    jac = jax.jacfwd(f) if tall else jax.jacrev(f)  # the better mode for JAX
    return jax.jit(jac), [d["x"], d["W1"], d["W2"], d["W3"]]


def _map_torch(torch, d):
    x, W1, W2, W3 = (torch.from_numpy(d[k]) for k in ("x", "W1", "W2", "W3"))

    def f(x):
        return torch.tanh(W3 @ torch.tanh(W2 @ torch.tanh(W1 @ x)))

    tall = W3.shape[0] >= len(x)
    jac = torch.func.jacfwd(f) if tall else torch.func.jacrev(f)
    return lambda: jac(x)


# ---------------------------------------------------------------- all gradients of a deep model

DEPTH = 8


def deep_source(layers: int) -> tuple[str, dict]:
    body = "X"
    for k in range(1, layers + 1):
        body = f"tanh({body} *(mj,hj->mh) W{k})"
    return f"{body} *(mh,mh->) {body}", {"X": 2, **{f"W{k}": 2 for k in range(1, layers + 1)}}


def deep_data(layers=DEPTH, m=256, h=64):
    r = np.random.default_rng(6)
    d = {"X": r.standard_normal((m, h))}
    for k in range(1, layers + 1):
        d[f"W{k}"] = r.standard_normal((h, h)) / np.sqrt(h)
    return d


def deep_build(tc, layers=DEPTH):
    src, orders = deep_source(layers)
    f = tc.parse(src, orders)
    names = [f"W{k}" for k in range(1, layers + 1)]
    try:  # one reverse sweep for all variables (issue #13 item 4), where tenscalc has it
        grads = tc.gradient(f, names)
    except tc.SemanticError:  # a tenscalc without it: one derivative per layer
        return [tc.gradient(f, name) for name in names]
    return [grads[name] for name in names]


def deep_numpy(d):
    layers = len(d) - 1
    acts = [d["X"]]
    for k in range(1, layers + 1):
        acts.append(np.tanh(acts[-1] @ d[f"W{k}"].T))
    grads = [None] * layers
    delta = 2 * acts[-1]
    for k in range(layers, 0, -1):
        dz = delta * (1 - acts[k] * acts[k])
        grads[k - 1] = dz.T @ acts[k - 1]
        delta = dz @ d[f"W{k}"]
    return grads


def _deep_jax(jax, jnp, d):
    layers = len(d) - 1

    def f(Ws, X):
        a = X
        for W in Ws:
            a = jnp.tanh(a @ W.T)
        return jnp.sum(a * a)

    g = jax.jit(jax.grad(f))
    return (lambda Ws, X: g(Ws, X)), [[d[f"W{k}"] for k in range(1, layers + 1)], d["X"]]


def _deep_torch(torch, d):
    layers = len(d) - 1
    Ws = tuple(torch.from_numpy(d[f"W{k}"]) for k in range(1, layers + 1))
    X = torch.from_numpy(d["X"])

    def f(Ws):
        a = X
        for W in Ws:
            a = torch.tanh(a @ W.T)
        return torch.sum(a * a)

    return lambda: torch.func.grad(f)(Ws)


# ---------------------------------------------------------------- the table


def cases() -> list[Case]:
    def parse(tc, src, orders):
        return tc.parse(src, orders)

    network_orders = {"X": 2, "W1": 2, "W2": 2, "W3": 2, "Y": 2}
    return [
        Case(
            "network_hvp", "HVP of a 3-layer tanh network by W1 (X 512×256)", network_data,
            lambda tc: [tc.hvp(parse(tc, NETWORK, network_orders), "W1", direction="v")],
            network_hvp_numpy, _network_jax, _network_torch,
        ),
        Case(
            "rosenbrock", "block-diagonal Hessian, extended Rosenbrock (X 1000×2)", rosenbrock_data,
            lambda tc: [tc.hessian(parse(tc, ROSENBROCK, {"X": 2, "p": 1, "q": 1}), "X")],
            rosenbrock_numpy, _rosenbrock_jax, _rosenbrock_torch,
        ),
        Case(
            "softmax", "softmax-regression Hessian by W (k 10, m 2000, n 50)", softmax_data,
            lambda tc: [tc.hessian(parse(tc, SOFTMAX, {"X": 2, "W": 2, "Y": 2}), "W")],
            softmax_numpy, _softmax_jax, _softmax_torch,
        ),
        Case(
            "third_derivative", "third derivative of Σ exp(Ax) (A 500×100)", expsum_data,
            lambda tc: [tc.nth_derivative(parse(tc, EXPSUM, {"A": 2, "x": 1}), "x", 3)],
            expsum_numpy, _expsum_jax, _expsum_torch,
        ),
        Case(
            "jacobian_tall", "Jacobian of a 3-layer map R^10 -> R^1000 (hidden 200)", lambda: map_data(10, 200, 1000),
            lambda tc: [tc.jacobian(parse(tc, MAP, {"x": 1, "W1": 2, "W2": 2, "W3": 2}), "x")],
            map_numpy, _map_jax, _map_torch,
        ),
        Case(
            "jacobian_wide", "Jacobian of a 3-layer map R^1000 -> R^10 (hidden 200)", lambda: map_data(1000, 200, 10),
            lambda tc: [tc.jacobian(parse(tc, MAP, {"x": 1, "W1": 2, "W2": 2, "W3": 2}), "x")],
            map_numpy, _map_jax, _map_torch,
        ),
        Case(
            "deep_gradients", f"all {DEPTH} weight gradients of a {DEPTH}-layer tanh network (X 256×64)", deep_data,
            deep_build, deep_numpy, _deep_jax, _deep_torch,
        ),
    ]  # fmt: skip
