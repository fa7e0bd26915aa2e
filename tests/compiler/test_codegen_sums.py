"""Shape-free ``tc.to_python()`` writes sums into one buffer, and diagonal results as their
cores, as ``tc.compile`` does (issue 26).

The module takes ``compile``'s decisions from the binder's own code: which summand
products a sum gathers (:func:`tenscalc.compiler.accumulate.gather_sums`, taken at probe
lengths), whether the gathered sum is written into one buffer
(:func:`~tenscalc.compiler.accumulate.accumulates`) and its parts
(:func:`~tenscalc.compiler.accumulate.parts`: outer products as one GEMM, diagonals through
a view, scaled copies in row blocks), run by the binder's run-time text
(:data:`~tenscalc.compiler.accumulate.ACCUMULATE_SOURCE`, its block size included).  One
module per expression list, run at several lengths (tiny ones included); values against ``tc.evaluate``, peak
memory through tracemalloc against ``compile``'s.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tests.cost import traced_peak

RAYLEIGH = "(x *(i,ij->j) A *(j,j->) x) / (x *(i,i->) x)"
LOG_SUM_EXP = "log(exp(x) *(i,i->) 1)"


def _exprs(text: str, orders: dict[str, int]) -> list:
    f = tc.parse(text, orders)
    return [f, tc.gradient(f, "x"), tc.hessian(f, "x")]


def _module(exprs):
    source = tc.to_python(exprs)
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the library's own code
    return namespace["f"], source


def _rayleigh_values(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(0.5, 1.5, n), "A": np.eye(n) + rng.uniform(0.5, 1.5, (n, n)) / (4 * n)}


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_rayleigh_quotient_module_is_right_at_every_length(n):
    exprs = _exprs(RAYLEIGH, {"x": 1, "A": 2})
    function, source = _module(exprs)
    assert "_accumulate(" in source  # compile's decision: one buffer
    values = _rayleigh_values(n, n)
    for got, expr in zip(function(**values), exprs, strict=True):
        expected = tc.evaluate(expr, values)
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-12)


def test_the_log_sum_exp_module_is_right_at_every_length(rng):
    exprs = _exprs(LOG_SUM_EXP, {"x": 1})
    function, source = _module(exprs)
    assert "_accumulate(" in source
    for n in (1, 2, 4, 7):
        values = {"x": rng.uniform(-2, 2, n)}
        for got, expr in zip(function(**values), exprs, strict=True):
            np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=1e-12, atol=1e-12)


def _peaks(exprs, values) -> tuple[int, int]:
    """Peak bytes of ``compile``'s call and of the shape-free module's, their values compared."""
    compiled = tc.compile(exprs)
    function, _ = _module(exprs)
    for got, want in zip(function(**values), compiled(**values), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    return traced_peak(lambda: compiled(**values), warm=2), traced_peak(lambda: function(**values), warm=1)


@pytest.mark.parametrize("n", [1000, 1500])
def test_the_rayleigh_quotient_hessian_module_peaks_like_compile(n):
    # before: the Hessian's six summands were n x n arrays alive together, added by _sum:
    # 45.9 MiB against compile's 8.0 MiB at n = 1,000 (5.7x)
    compiled, generated = _peaks(_exprs(RAYLEIGH, {"x": 1, "A": 2}), _rayleigh_values(n, 11))
    assert generated <= 1.1 * compiled, (n, generated / 2**20, compiled / 2**20)


@pytest.mark.parametrize("n", [1000, 1500])
def test_the_log_sum_exp_hessian_module_peaks_like_compile(n):
    # before: diag(p) and p pᵀ dense n x n arrays, then their sum: 1.98x compile's peak at n = 600
    values = {"x": np.random.default_rng(n).uniform(-2, 2, n)}
    compiled, generated = _peaks(_exprs(LOG_SUM_EXP, {"x": 1}), values)
    assert generated <= 1.1 * compiled, (n, generated / 2**20, compiled / 2**20)


#: compile's diagonal steps (:func:`tenscalc.compiler.program._structured_slots`): held as their
#: core, written out densely when handed out, after every other step
BROADCAST = "sum(exp(u *(i,j->ij) 1 + 1 *(i,j->ij) v - C))"


def _broadcast_values(m: int, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"u": rng.uniform(-1, 1, m), "v": rng.uniform(-1, 1, n), "C": rng.uniform(-1, 1, (m, n))}


def _broadcast_exprs() -> list:
    f = tc.parse(BROADCAST, {"u": 1, "v": 1, "C": 2})
    return [f, tc.gradient(f, "u"), tc.hessian(f, "u")]


def _order_four() -> list:
    f = tc.parse("sum(sin(x) .^ 2)", {"x": 1})
    return [f, tc.gradient(f, "x"), tc.hessian(f, "x"), tc.nth_derivative(f, "x", 4)]


def test_diagonal_results_are_right_at_every_length(rng):
    broadcast, _ = _module(_broadcast_exprs())
    for m, n in ((1, 2), (2, 3), (4, 5)):
        values = _broadcast_values(m, n, m)
        for got, expr in zip(broadcast(**values), _broadcast_exprs(), strict=True):
            np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=1e-12, atol=1e-12)
    exprs = _order_four()
    order_four, source = _module(exprs)
    assert source.count("_write_diagonal(_s") == 2  # the Hessian and the order-4 tensor, when handed out
    for n in (1, 2, 3, 5):
        values = {"x": rng.uniform(-2, 2, n)}
        for got, expr in zip(order_four(**values), exprs, strict=True):
            expected = tc.evaluate(expr, values)
            assert np.shape(got) == np.shape(expected)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("m", "n"), [(600, 300), (900, 450)])
def test_the_broadcast_sum_module_peaks_like_compile(m, n):
    # before: the Hessian diag(rowsum(exp(...))) written as an m x m array while the m x n
    # exp was alive: 1.50x compile's peak at m, n = 600, 300
    compiled, generated = _peaks(_broadcast_exprs(), _broadcast_values(m, n, 3))
    assert generated <= 1.1 * compiled, (m, n, generated / 2**20, compiled / 2**20)


@pytest.mark.parametrize("n", [20, 24])
def test_the_order_four_module_peaks_like_compile(n):
    # before: the order-4 derivative's n^4 tensor written out where computed, with the
    # Hessian's dense sum alive: 2.00x compile's peak at n = 20
    values = {"x": np.random.default_rng(n).uniform(-2, 2, n)}
    compiled, generated = _peaks(_order_four(), values)
    assert generated <= 1.1 * compiled, (n, generated / 2**20, compiled / 2**20)


@pytest.mark.parametrize("kind", ["float32", "complex", "empty"])
def test_sums_in_one_buffer_keep_compiles_dtype_and_empty_axes(kind, rng):
    """The buffer's dtype is NumPy's promotion of the parts (float32 stays float32, a complex
    input makes it complex), and a length 0 gives empty results, as ``compile`` gives them."""
    n = 0 if kind == "empty" else 4
    cases = [(_broadcast_exprs(), _broadcast_values(n, 3, 5))]
    if kind != "empty":  # at n = 0 the quotient is 0 / 0: compile's value is not evaluate's NaN (issue kept apart)
        cases.append((_exprs(RAYLEIGH, {"x": 1, "A": 2}), _rayleigh_values(n, 5)))
    for exprs, values in cases:
        if kind == "float32":
            values = {k: v.astype(np.float32) for k, v in values.items()}
        elif kind == "complex":
            values["x" if "x" in values else "u"] = values.get("x", values.get("u")) + 0.25j
        function, _ = _module(exprs)
        compiled = tc.compile(exprs)
        for got, want, expr in zip(function(**values), compiled(**values), exprs, strict=True):
            assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
            tolerance = 1e-4 if kind == "float32" else 1e-11
            np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=tolerance, atol=tolerance)


#: a sum of products sharing an operand, ``X diag(a) + X diag(b)``: compile factors it
#: (:func:`tenscalc.compiler.factoring.factor_shared`) into ``X diag(a + b)``
ROSENBROCK_X = "(100 *(,i->i) (X *(ij,j->i) q - (X *(ij,j->i) p) ^ 2) ^ 2 + (1 - X *(ij,j->i) p) ^ 2) *(i,i->) 1"


def _rosenbrock_x() -> list:
    f = tc.parse(ROSENBROCK_X, {"X": 2, "q": 1, "p": 1})
    return [f, tc.gradient(f, "p"), tc.hessian(f, "p")]


def _rosenbrock_x_values(m: int, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"X": rng.standard_normal((m, n)) / 20, "q": rng.standard_normal(n), "p": rng.standard_normal(n)}


def test_a_factored_sum_is_right_at_every_length():
    exprs = _rosenbrock_x()
    function, _ = _module(exprs)
    for m, n in ((1, 2), (3, 2), (5, 4)):
        values = _rosenbrock_x_values(m, n, m + n)
        for got, expr in zip(function(**values), exprs, strict=True):
            np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize(("m", "n"), [(800, 300), (1200, 450)])
def test_a_factored_sum_module_peaks_like_compile(m, n):
    # before: the two m x n products X diag(a), X diag(b) alive together: 1.48x compile's peak at 800 x 300
    compiled, generated = _peaks(_rosenbrock_x(), _rosenbrock_x_values(m, n, 2))
    assert generated <= 1.1 * compiled, (m, n, generated / 2**20, compiled / 2**20)


def test_a_sum_of_broadcasts_reading_an_input_the_plan_meets_later():
    """Found by the fuzz campaign: the sum is written where its first summand stood, before
    the plan's step reading ``w``; the module raised KeyError instead of being written."""
    expr = tc.parse("exp(u *(i,j->ij) 1 + 3 * (w *(i,j->ij) 64) + C)", {"u": 1, "w": 1, "C": 2})
    namespace: dict = {}
    exec(compile(tc.to_python(expr), "<generated>", "exec"), namespace)  # noqa: S102 - the module under test
    rng = np.random.default_rng(4)
    values = {"u": rng.standard_normal(3), "w": rng.standard_normal(3) / 64, "C": rng.standard_normal((3, 5))}
    np.testing.assert_allclose(namespace["f"](**values), tc.evaluate(expr, values), rtol=1e-12)
