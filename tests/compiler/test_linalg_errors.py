"""inv, det and adj of a bad matrix: one error, naming the matrix, from every runner.

A matrix with a NaN or inf entry (LAPACK would return NaN without a word) and, for
``inv``, an exactly singular one: ``tc.evaluate``, ``tc.compile`` with each backend
(NumPy's loop and its fused function, PyTorch, JAX op by op, Dask when computed) and
both forms of ``tc.to_python`` raise the same ``EvaluationError``, whose words are
:func:`tenscalc.linalg.matrix_error`'s.  A jitted JAX function reads two flags
its program returns for each inv, det and adj (matrix finite, result finite) after it
runs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tenscalc as tc

ORDERS = {"A": 2, "B": 2, "C": 2, "c": 1}

#: case -> (the text, the op, how its errors name the matrix); B is n x (n + 1), c n + 1 long
CASES = {
    "inv": ("sum(inv(A) *(ij,jk->ik) B)", "inv", "A"),
    "det": ("det(A) *(,k->k) c", "det", "A"),
    "adj": ("sum(adj(A) *(ij,jk->ik) B)", "adj", "A"),
    "adj2": ("sum(adj(A, 2))", "adj", "A"),
    "inv computed": ("sum(inv(A + C) *(ij,jk->ik) B)", "inv", "C + A"),
    "det computed": ("log(det(A *(ij,kj->ik) A))", "det", "A *(ij,kj->ik) A"),
    # jitted JAX handed a computed matrix with an inf entry to LAPACK's SVD, which never returned
    "adj computed": ("sum(adj(A + C) *(ij,jk->ik) B)", "adj", "C + A"),
}

NOT_FINITE = "has an entry that is not finite (NaN or inf)"


def _values(exprs, n: int, a: np.ndarray) -> dict[str, np.ndarray]:
    """The values of the variables ``exprs`` read, ``a`` for A (n x n; B n x (n + 1), c n + 1 long)."""
    rng = np.random.default_rng(n)
    values = {
        "A": a,
        "B": rng.standard_normal((n, n + 1)),
        "C": np.zeros((n, n)),  # A + C is A
        "c": rng.standard_normal(n + 1),
    }
    names = set().union(*(e.variables for e in exprs))
    return {k: v for k, v in values.items() if k in names}


def _good(n: int) -> np.ndarray:
    return np.random.default_rng(10 + n).standard_normal((n, n)) + 3 * np.eye(n)


def _module(exprs, values: dict, shapes: bool):
    kwargs = {"shapes": {k: np.shape(v) for k, v in values.items()}} if shapes else {}
    namespace: dict = {}
    exec(compile(tc.to_python(exprs, **kwargs), "<generated>", "exec"), namespace)  # noqa: S102 - code under test
    return namespace["f"]


def _fused(exprs, good: dict):
    run = tc.compile(exprs)
    run(good)  # the third call with these shapes runs the fused function
    run(good)
    return run


def _computed(result):
    import dask

    return dask.compute(result)[0]


#: runner -> (the optional library it needs, a function of (exprs, good values) giving a
#: function of the values that runs them)
RUNNERS = {
    "evaluate": (None, lambda exprs, good: lambda v: tc.evaluate(exprs[0], v)),
    "numpy loop": (None, lambda exprs, good: lambda v: tc.compile(exprs)(v)),
    "numpy fused": (None, lambda exprs, good: _fused(exprs, good)),
    "to_python shapes": (None, lambda exprs, good: lambda v: _module(exprs, good, True)(**v)),
    "to_python": (None, lambda exprs, good: lambda v: _module(exprs, good, False)(**v)),
    "torch": ("torch", lambda exprs, good: lambda v: tc.compile(exprs, backend="torch")(v)),
    "jax eager": ("jax", lambda exprs, good: lambda v: tc.compile(exprs, backend="jax", jit=False)(v)),
    "jax jit": ("jax", lambda exprs, good: lambda v: tc.compile(exprs, backend="jax")(v)),
    "dask": ("dask", lambda exprs, good: lambda v: _computed(tc.compile(exprs, backend="dask")(v))),
}


def _runner(name: str, exprs, good: dict):
    library, make = RUNNERS[name]
    if library is not None:
        pytest.importorskip(library, reason=f"{library} is not installed")
    if library == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)  # float64, as the others (no downcast warning)
    return make(exprs, good)


def _message(case: str, problem: str) -> str:
    _, op, label = CASES[case]
    return f"{op}({label}): the matrix {label} {problem}"


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("special", [np.nan, -np.inf], ids=["nan", "-inf"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_non_finite_matrix_is_one_error_naming_it_from_every_runner(runner, case, special, n):
    text = CASES[case][0]
    exprs = [tc.parse(text, ORDERS)]
    good = _values(exprs, n, _good(n))
    a = good["A"].copy()
    a[n - 1, 0] = special
    run = _runner(runner, exprs, good)
    with pytest.raises(tc.EvaluationError) as caught:
        run(dict(good, A=a))
    assert str(caught.value) == _message(case, NOT_FINITE)


def _singular(n: int, kind: str) -> np.ndarray:
    if kind == "zeros":
        return np.zeros((n, n))
    v = np.arange(1.0, n + 1)
    return np.outer(v, 2 * v)  # rank 1: [[2, 4], [4, 8]] at n = 2; exact in binary


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("kind", ["zeros", "rank 1"])
@pytest.mark.parametrize("case", ["inv", "inv computed"])
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_inv_of_a_singular_matrix_is_one_error_naming_it_from_every_runner(runner, case, kind, n):
    text = CASES[case][0]
    exprs = [tc.parse(text, ORDERS)]
    good = _values(exprs, n, _good(n))
    run = _runner(runner, exprs, good)
    bad = dict(good, A=_singular(n, kind))
    with pytest.raises(tc.EvaluationError) as caught:
        run(bad)
    assert str(caught.value) == _message(case, "is singular")


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_det_and_adj_of_a_singular_matrix_are_numbers(runner):
    """det and adj are polynomials, finite at a singular matrix: no runner refuses one."""
    n = 3
    exprs = [tc.parse(CASES["det"][0], ORDERS), tc.parse(CASES["adj"][0], ORDERS)]
    good = _values(exprs, n, _good(n))
    run = _runner(runner, exprs, good)
    bad = dict(good, A=_singular(n, "rank 1"))
    if runner == "evaluate":
        det, adj = (tc.evaluate(e, bad) for e in exprs)
    else:
        det, adj = (np.asarray(r) for r in run(bad))
    np.testing.assert_array_equal(det, np.zeros(n + 1))
    # adj of the rank-1 matrix u vᵀ is 0 for n >= 3: a sum of zeros up to rounding
    np.testing.assert_allclose(adj, 0.0, atol=1e-12)


#: a matrix with no zero pivot whose inverse overflows, and that inverse (NumPy's)
OVERFLOWING = {
    # pivots 1e-160 and 1e-160: the inverse's corner -1/t² is -inf
    "corner": (np.array([[1e-160, 1.0], [0.0, 1e-160]]), np.array([[1e160, -np.inf], [0.0, 1e160]])),
    # a subnormal pivot (XLA compares it as 0; LAPACK and NumPy do not): 1/t is inf, 0·inf NaN
    "subnormal": (np.diag([1e-309, 1.0]), np.array([[np.inf, np.nan], [0.0, 1.0]])),
}


@pytest.mark.parametrize("matrix", sorted(OVERFLOWING))
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_inv_of_a_matrix_without_a_zero_pivot_is_no_error_where_it_overflows(runner, matrix):
    """Singular means what NumPy's LAPACK says: an exact zero pivot.  Every runner returns
    the inverse of a matrix without one, inf where it overflows (JAX read a non-finite
    result as singular, and raised)."""
    exprs = [tc.parse("inv(A)", ORDERS)]
    overflowing, expected = OVERFLOWING[matrix]
    run = _runner(runner, exprs, {"A": _good(2)})
    got = tc.evaluate(exprs[0], {"A": overflowing}) if runner == "evaluate" else run({"A": overflowing})
    got = np.asarray(got[0] if isinstance(got, tuple) else got)
    np.testing.assert_allclose(got, expected, rtol=1e-14)


def test_a_long_computed_matrix_is_named_by_its_text_cut_to_40_characters():
    text = "sum(inv(exp(A) + A *(ij,jk->ik) A + A *(ij,kj->ik) A + C) *(ij,jk->ik) B)"
    exprs = [tc.parse(text, ORDERS)]
    good = _values(exprs, 3, _good(3))
    a = good["A"].copy()
    a[0, 0] = np.nan
    messages = set()
    for runner in ("evaluate", "numpy loop", "to_python shapes", "to_python"):
        with pytest.raises(tc.EvaluationError) as caught:
            _runner(runner, exprs, good)(dict(good, A=a))
        messages.add(str(caught.value))
    (message,) = messages
    label = message.split("(", 1)[1].split("): ", 1)[0]
    assert len(label) == 40 and label.endswith("...")
    assert message == f"inv({label}): the matrix {label} {NOT_FINITE}"


def test_torch_compiled_whole_says_the_same_errors():
    """jit=True (torch.compile): the checks run eagerly, and the singular matrix's error is
    caught (compiled, torch's LinAlgError came out of the graph, past the backend's try)."""
    pytest.importorskip("torch", reason="torch is not installed")
    exprs = [tc.parse(CASES["inv"][0], ORDERS)]
    good = _values(exprs, 3, _good(3))
    run = tc.compile(exprs, backend="torch", jit=True)
    a = good["A"].copy()
    a[2, 1] = np.nan
    for bad, problem in ((a, NOT_FINITE), (_singular(3, "rank 1"), "is singular")):
        with pytest.raises(tc.EvaluationError) as caught:
            run(dict(good, A=bad))
        assert str(caught.value) == _message("inv", problem)


@pytest.mark.parametrize("kind", ["zeros", "rank 1", "nan"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_matrix_larger_than_a_dask_block_says_what_numpy_says(case, kind):
    """A = 8 x 8 in 4 x 4 blocks (dask's chunk size holds one): singular, inv raises NumPy's
    named error (dask's blocked inv raised its own LinAlgError) and det and adj are NumPy's
    numbers; with a NaN entry, every case raises NumPy's error."""
    pytest.importorskip("dask", reason="dask is not installed")
    import dask
    import dask.array as da

    n = 8
    exprs = [tc.parse(CASES[case][0], ORDERS)]
    good = _values(exprs, n, _good(n))
    a = _singular(n, kind) if kind != "nan" else good["A"].copy()
    if kind == "nan":
        a[n - 1, 0] = np.nan
    bad = dict(good, A=a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(det) of a singular matrix: log(0)
        try:
            expected: object = tc.compile(exprs)(bad)
        except tc.EvaluationError as exc:
            expected = exc
        with dask.config.set({"array.chunk-size": "128B"}):
            blocked = dict(bad, A=da.from_array(a, chunks=4))
            assert blocked["A"].numblocks == (2, 2)
            run = _runner("dask", exprs, good)
            if isinstance(expected, tc.EvaluationError):
                with pytest.raises(tc.EvaluationError) as caught:
                    run(blocked)
                assert str(caught.value) == str(expected)
                return
            np.testing.assert_allclose(run(blocked), expected, rtol=1e-12, atol=1e-12)
