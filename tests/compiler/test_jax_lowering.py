"""What ``tc.compile(..., backend="jax")`` hands XLA, read from the optimised HLO of the
jitted program and compared with ``jax.jit`` of JAX's own transform of the same function
(an independent reference): every dot in the fast form, and no more arithmetic than JAX's.
Properties of the compiled program, not timings (tests/compiler/test_jit.py checks values)."""

from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import tenscalc as tc  # noqa: E402

MAP = "tanh(W3 *(oh,h->o) tanh(W2 *(gh,h->g) tanh(W1 *(hi,i->h) x)))"
ROSENBROCK = "(100 *(,i->i) (X *(ij,j->i) q - (X *(ij,j->i) p) ^ 2) ^ 2 + (1 - X *(ij,j->i) p) ^ 2) *(i,i->) 1"
LOGREG = "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1"
NETWORK = (
    "(tanh(tanh(X *(mj,hj->mh) W1) *(mh,gh->mg) W2) *(mg,og->mo) W3 - Y) *(mo,mo->) "
    "(tanh(tanh(X *(mj,hj->mh) W1) *(mh,gh->mg) W2) *(mg,og->mo) W3 - Y)"
)


@pytest.fixture(autouse=True)
def _x64_on_cpu():
    """float64, and XLA's CPU backend (whose kernels these layouts are for) also where a GPU is the default."""
    jax.config.update("jax_enable_x64", True)
    with jax.default_device(jax.devices("cpu")[0]):
        yield


def _compiled(fn, args):
    return jax.jit(fn).lower(*args).compile()


def _ours(exprs, names, args):
    compiled = tc.compile(exprs, backend="jax")
    return _compiled(lambda *arrays: compiled(dict(zip(names, arrays))), args)


def _flops(compiled) -> float:
    cost = compiled.cost_analysis()
    return (cost[0] if isinstance(cost, list) else cost)["flops"]


def _dots(compiled) -> list[tuple[tuple[int, ...], int]]:
    """(the left operand's shape, its contracted axis) of every dot in the optimised HLO."""
    text = compiled.as_text()
    shapes = {
        name: tuple(int(n) for n in dims.split(",") if n)
        for name, dims in re.findall(r"%([\w.\-]+) = \w+\[([\d,]*)\]", text)
    }
    found = []
    for lhs, axes in re.findall(r" dot\(%([\w.\-]+), %[\w.\-]+\), lhs_contracting_dims=\{([\d,]*)\}", text):
        (axis,) = (int(a) for a in axes.split(","))
        found.append((shapes[lhs], axis))
    return found


def _network():
    r = np.random.default_rng(1)
    m, n, h, g, o = 96, 40, 48, 56, 6
    data = {
        "W1": r.standard_normal((h, n)), "v": r.standard_normal((h, n)), "X": r.standard_normal((m, n)),
        "W2": r.standard_normal((g, h)), "W3": r.standard_normal((o, g)), "Y": r.standard_normal((m, o)),
    }  # fmt: skip
    f = tc.parse(NETWORK, {"X": 2, "W1": 2, "W2": 2, "W3": 2, "Y": 2})

    def theirs(W1, v, X, W2, W3, Y):
        def loss(W1):
            return jnp.sum((jnp.tanh(jnp.tanh(X @ W1.T) @ W2.T) @ W3.T - Y) ** 2)

        return jax.jvp(jax.grad(loss), (W1,), (v,))[1]

    return [tc.hvp(f, "W1", direction="v")], data, theirs


def _jacobian(n_in, hidden, n_out):
    r = np.random.default_rng(5)
    data = {
        "x": r.standard_normal(n_in), "W1": r.standard_normal((hidden, n_in)),
        "W2": r.standard_normal((hidden, hidden)), "W3": r.standard_normal((n_out, hidden)),
    }  # fmt: skip
    f = tc.parse(MAP, {"x": 1, "W1": 2, "W2": 2, "W3": 2})

    def theirs(x, W1, W2, W3):
        def g(x):
            return jnp.tanh(W3 @ jnp.tanh(W2 @ jnp.tanh(W1 @ x)))

        return (jax.jacfwd(g) if n_out >= n_in else jax.jacrev(g))(x)

    return [tc.jacobian(f, "x")], data, theirs


def _rosenbrock(n=300):
    data = {"X": np.random.default_rng(2).standard_normal((n, 2)), "p": np.array([1.0, 0.0]), "q": np.array([0.0, 1.0])}

    def theirs(X, p, q):
        def f(X):
            return jnp.sum(100 * (X[:, 1] - X[:, 0] ** 2) ** 2 + (1 - X[:, 0]) ** 2)

        return jax.hessian(f)(X)

    return [tc.hessian(tc.parse(ROSENBROCK, {"X": 2, "p": 1, "q": 1}), "X")], data, theirs


def _logreg():
    r = np.random.default_rng(0)
    data = {"w": r.standard_normal(40) / 10, "X": r.standard_normal((120, 40)), "y": np.sign(r.standard_normal(120))}
    f = tc.parse(LOGREG, {"X": 2, "y": 1, "w": 1})

    def theirs(w, X, y):
        def loss(w):
            return jnp.sum(jnp.log(jnp.exp(-y * (X @ w)) + 1))

        return jax.value_and_grad(loss)(w), jax.hessian(loss)(w)

    return [f, tc.gradient(f, "w"), tc.hessian(f, "w")], data, theirs


CHAINED_ROSENBROCK = "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)"


def _chained_rosenbrock(n=1000):
    data = {"x": np.random.default_rng(3).uniform(-2, 2, n)}

    def theirs(x):
        def f(x):
            return jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

        return jax.value_and_grad(f)(x)

    f = tc.parse(CHAINED_ROSENBROCK)
    return [f, tc.gradient(f, "x")], data, theirs


PROBLEMS = {
    "network_hvp": _network,
    "jacobian_tall": lambda: _jacobian(7, 50, 300),
    "jacobian_wide": lambda: _jacobian(300, 50, 7),
    "rosenbrock": _rosenbrock,
    "logreg": _logreg,
    "chained_rosenbrock": _chained_rosenbrock,
}


def _both(name):
    exprs, data, theirs = PROBLEMS[name]()
    names = list(data)
    args = [data[k] for k in names]
    return _ours(exprs, names, args), _compiled(theirs, args)


@pytest.mark.parametrize("name", [name for name in PROBLEMS if name != "chained_rosenbrock"])
def test_no_dot_reads_its_left_operand_along_its_first_axis(name):
    """Every matrix dot of the jitted program contracts its left operand on the last axis
    (XNNPACK's fast form); a dot of a vector (one row) may read it either way."""
    ours, _ = _both(name)
    dots = _dots(ours)
    assert dots, "no dot found in the compiled program"
    slow = [(shape, axis) for shape, axis in dots if axis != len(shape) - 1 and np.prod(shape) != shape[axis]]
    assert not slow, slow


@pytest.mark.parametrize("name", ["rosenbrock", "jacobian_wide", "logreg", "chained_rosenbrock"])
def test_no_more_flops_than_jax_own_transform(name):
    """XLA's own count of the arithmetic in the compiled programs: tenscalc's derivative
    does no more than JAX's (the Rosenbrock Hessian's blocks are written by one select
    where JAX's forward-over-reverse multiplies by an identity; logistic regression's
    Hessian is one Gram product)."""
    ours, theirs = _both(name)
    assert _flops(ours) <= _flops(theirs)


def test_a_slice_gradient_is_written_by_pads_as_jax_writes_it():
    """The chained Rosenbrock gradient adds its two shifted parts into the vector: tenscalc
    hands XLA pads (as JAX's transpose of a slice does), no scatter, before or after XLA's
    passes."""
    exprs, data, theirs = _chained_rosenbrock()
    compiled = tc.compile(exprs, backend="jax")
    lowered = jax.jit(lambda x: compiled(x=x)).lower(data["x"])
    assert "stablehlo.pad" in lowered.as_text() and "scatter" not in lowered.as_text()
    assert "scatter" not in lowered.compile().as_text()


def test_the_chained_rosenbrock_program_fuses_as_jax_own():
    """Its value (two sums of squares) is summed as one chain, as JAX's own transform sums
    the chain the user wrote: XLA makes no more fusions (loops) of tenscalc's program than
    of JAX's, and counts no more bytes moved."""
    ours, theirs = _both("chained_rosenbrock")
    count = lambda compiled: compiled.as_text().count(" fusion(")  # noqa: E731
    assert count(ours) <= count(theirs)
    bytes_moved = lambda compiled: (lambda c: c[0] if isinstance(c, list) else c)(compiled.cost_analysis())  # noqa: E731
    assert bytes_moved(ours)["bytes accessed"] <= bytes_moved(theirs)["bytes accessed"]


CHAIN = "sum((A - B).^2 + (C - D).^2 + A.*D)"


def test_a_summed_chain_is_one_reduction():
    """sum((A-B)∘(A-B) + (C-D)∘(C-D) + A∘D), which the simplifier distributes into three
    full contractions, reaches XLA as one reduction of one chain (no dot), as written."""
    rng = np.random.default_rng(4)
    data = {name: rng.standard_normal((3, 4)) for name in "ABCD"}
    compiled = tc.compile(tc.parse(CHAIN, {name: 2 for name in data}), backend="jax")
    text = jax.jit(lambda A, B, C, D: compiled(A=A, B=B, C=C, D=D)).lower(*data.values()).as_text()
    assert text.count("stablehlo.reduce") == 1 and "dot_general" not in text
    A, B, C, D = data.values()
    expected = ((A - B) ** 2 + (C - D) ** 2 + A * D).sum()
    assert np.isclose(float(compiled(data)), expected, rtol=1e-13)


@pytest.mark.parametrize(
    "source",
    [
        CHAIN,
        "sum(A.*D' + B.^2)",  # a transposed read: a contraction, not one chain
        "sum(1e308 * 1e308 * A.^2 + A)",  # an infinite factor: applied after its own sum
        "sum(A.*B + 2)",
    ],
)
def test_sums_of_terms_agree_with_numpy_where_merged_or_not(source):
    """Values of the JAX backend (one summed chain or not) against the NumPy backend, at distinct lengths."""
    rng = np.random.default_rng(5)
    data = {"A": rng.standard_normal((3, 4)), "B": rng.standard_normal((3, 4)), "C": rng.standard_normal((3, 4)),
            "D": rng.standard_normal((4, 3)) if "'" in source else rng.standard_normal((3, 4))}  # fmt: skip
    expr = tc.parse(source, {name: 2 for name in data})
    given = {name: data[name] for name in tc.compile(expr).inputs}
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.asarray(tc.compile(expr, backend="numpy")(given))
        got = np.asarray(tc.compile(expr, backend="jax")(given))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
