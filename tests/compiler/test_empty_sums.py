"""A sum written over an empty axis is 0 whatever it holds, on every evaluator.

``tc.evaluate`` (the reference) computes as written: ``x *(i,j->) y`` with ``x`` empty is 0
even where ``y`` has an inf (a sum of nothing), and ``sum(x) * sum(y)`` is ``0 * inf``, nan.
The compiled runners fuse written sums into one einsum term; before, they contracted each
operand first (``sum(x) * sum(y)`` for both forms: nan), and the shape-free ``tc.to_python``
wrote both forms as one einsum (0 for both).  Now each term knows the written sums holding
each operand (``Term.holders``), and a sum over an empty axis is taken out of the term with
what it holds, a 0 standing for it (:data:`tenscalc.compiler.terms.EMPTY_SUM_SOURCE`): at
bind time for the records every runner reads, at run time in the shape-free module.

A contraction of two operands that several products share (``B A`` in
``x *(i,ij->j) B *(j,jk->k) A`` and its derivative by ``x``) is computed once: ``x (B A)``
for ``(x B) A`` moves ``A`` into the empty sum over ``x``'s axis.  ``tc.compile`` decides at
each call's lengths and shares no pair in a term that sums an empty axis; the shape-free
module, which shares it as decided at the probe's lengths, writes such a term as written
where an operand has an axis of length 0 (a shape test, at run time).

Each form runs through the interpreter, the closure loop, the fused NumPy function,
``to_python(shapes=)``, shape-free ``to_python()``, JAX (jitted and eager), PyTorch and
Dask, with its derivatives, at distinct non-empty lengths (2, 3) beside the empty one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tenscalc as tc
from tests.compiler.test_runners import _numpy_runners

inf = np.inf
ORDERS = {"a": 0, "x": 1, "y": 1, "z": 1, "A": 2, "B": 2, "C": 2}
X0 = np.zeros(0)  # the empty vector: every sum over its axis is empty
Y = np.array([inf, 1.0])  # an inf beside the empty sums
Z = np.array([2.0, -1.0, 0.5])

#: name -> (expression, values, what tc.evaluate gives for the expression itself): an inf
#: held by a sum over an empty axis becomes part of that sum's 0; one outside it multiplies
#: the 0 (nan)
FORMS = {
    "one sum holds both (x *(i,j->) y)": ("x *(i,j->) y", {"x": X0, "y": Y}, 0.0),
    "two sums side by side (sum(x) * sum(y))": ("sum(x) * sum(y)", {"x": X0, "y": Y}, np.nan),
    "the inf's sum first (sum(y) * sum(x))": ("sum(y) * sum(x)", {"x": X0, "y": Y}, np.nan),
    "a vector held (x *(i,j->j) y)": ("x *(i,j->j) y", {"x": X0, "y": Y}, [0.0, 0.0]),
    "a vector outside (sum(x) * y)": ("sum(x) * y", {"x": X0, "y": Y}, [np.nan, 0.0]),
    "nested, the inf inside (sum(x * sum(y)))": ("sum(x * sum(y))", {"x": X0, "y": Y}, 0.0),
    "nested, the inf outside (sum(y * sum(x)))": ("sum(y * sum(x))", {"x": X0, "y": Y}, np.nan),
    "three sums (sum(x * sum(y)) * sum(z))": ("sum(x * sum(y)) * sum(z)", {"x": X0, "y": Y, "z": Z}, 0.0),
    "a matrix held (x *(i,jk->k) A)": ("x *(i,jk->k) A", {"x": X0, "A": np.array([[inf, 1, 2], [3, 4, 5]])},
                                       [0.0, 0.0, 0.0]),
    "a matrix after an empty sum (x *(i,ij->j) B *(j,jk->k) A)": (
        "x *(i,ij->j) B *(j,jk->k) A",
        {"x": X0, "B": np.zeros((0, 2)), "A": np.array([[inf, 1.0, 2.0], [3.0, 4.0, 5.0]])},
        [np.nan, 0.0, 0.0],
    ),
    "a vector with an empty matrix (x *(i,ij->j) B) * y": (
        "(x *(i,ij->j) B) *(j,j->j) y", {"x": X0, "B": np.zeros((0, 2)), "y": Y}, [np.nan, 0.0]),
    "a matrix product, empty inner axis, inf outside ((A B) y)": (
        "(A *(ij,jk->ik) B) *(ik,k->i) z",
        {"A": np.ones((2, 0)), "B": np.zeros((0, 3)), "z": np.array([inf, 1.0, 2.0])},
        [np.nan, np.nan],
    ),
    "a matrix product, empty inner axis, inf in a third matrix (A B C)": (
        "A *(ij,jk->ik) B *(ik,kl->il) C",
        {"A": np.ones((2, 0)), "B": np.zeros((0, 3)), "C": np.array([[inf, 1.0], [2.0, 3.0], [4.0, 5.0]])},
        [[np.nan, 0.0], [np.nan, 0.0]],
    ),
    "a number and a vector in one sum (sum(a * x) * sum(z))": (
        "sum(a * x) * sum(z)", {"a": inf, "x": X0, "z": Z}, 0.0),
    "a log beside the sums (log(1 + (x *(i,j->) y)^2) + sum(x) * sum(z))": (
        "log(1 + (x *(i,j->) y)^2) + sum(x) * sum(z)", {"x": X0, "y": Y, "z": Z}, 0.0),
    # an order-0 constant multiplies its product's contraction after it, as every evaluator applies it
    "a constant beside the empty sum (x *(i,->) 2^2222)": ("x *(i,->) 2^2222", {"x": X0}, np.nan),
    "a constant inside a vector the sum holds (x *(i,j->j) (y * exp(1000)))": (
        "x *(i,j->j) (y * exp(1000))", {"x": X0, "y": Y}, [0.0, 0.0]),
    "a constant inside one of two sums (sum(x * exp(1000)) * sum(y))": (
        "sum(x * exp(1000)) * sum(y)", {"x": X0, "y": Y}, np.nan),
}  # fmt: skip


def _exprs(text: str, values: dict) -> list:
    """The expression, its derivative by each variable, and its second derivative by each."""
    f = tc.parse(text, ORDERS)
    names = [tc.var(name, order) for name, order in sorted(f.variables.items())]
    first = [tc.derivative(f, name) for name in names]
    return [f, *first, *[tc.derivative(d, name) for d, name in zip(first, names)]]


def _library_runners(exprs: list, values: dict) -> dict[str, tuple]:
    """JAX (jitted and eager), PyTorch and Dask, where installed."""
    got: dict[str, tuple] = {}
    for backend, jits in (("jax", (True, False)), ("torch", (False,)), ("dask", (False,))):
        try:
            module = __import__(backend)
        except ImportError:
            continue
        if backend == "jax":
            module.config.update("jax_enable_x64", True)
        for jit in jits:
            results = tc.compile(exprs, backend=backend, jit=jit)(values)
            if backend == "dask":
                results = module.compute(*results)
            elif backend == "torch":
                results = [r.numpy() for r in results]
            got[f"{backend}{' jitted' if jit else ''}"] = tuple(np.asarray(r) for r in results)
    return got


@pytest.mark.parametrize("name", list(FORMS))
def test_every_evaluator_gives_what_evaluate_gives(name):
    text, values, value = FORMS[name]
    exprs = _exprs(text, values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 0 * inf, in evaluate too
        got = _numpy_runners(exprs, values) | _library_runners(exprs, values)
    expected = got.pop("interpreter")
    np.testing.assert_array_equal(expected[0], value)  # the reference computes as written
    for runner, results in got.items():
        assert len(results) == len(expected), runner
        for k, (ours, theirs) in enumerate(zip(results, expected)):
            ours = np.asarray(ours, dtype=float)
            assert ours.shape == np.shape(theirs), (runner, k, ours.shape, np.shape(theirs))
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0, equal_nan=True, err_msg=f"{runner}, {k}")


@pytest.mark.parametrize("name", list(FORMS))
def test_the_same_programs_at_nonzero_lengths(name):
    """The same compiled programs and modules where no axis is empty: nothing taken out."""
    text, values, _ = FORMS[name]
    rng = np.random.default_rng(len(name))
    lengths = {0: 4}  # the empty axis gets length 4; the others keep theirs (2, 3)
    full = {
        k: rng.uniform(0.5, 1.5, tuple(lengths.get(n, n) for n in np.shape(v))) if np.ndim(v) else 1.5
        for k, v in values.items()
    }
    exprs = _exprs(text, full)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 2^2222 and exp(1000) overflow, in evaluate too
        got = _numpy_runners(exprs, full) | _library_runners(exprs, full)
    expected = got.pop("interpreter")
    beyond = "2^2222" in text or "exp(1000)" in text  # a constant beyond float64's range: inf
    assert all(np.all(np.isfinite(e)) for e in expected) != beyond
    for runner, results in got.items():
        for k, (ours, theirs) in enumerate(zip(results, expected)):
            np.testing.assert_allclose(np.asarray(ours, dtype=float), theirs, rtol=1e-10, err_msg=f"{runner}, {k}")
