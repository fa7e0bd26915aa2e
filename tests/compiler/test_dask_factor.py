"""On Dask, a matrix declared positive definite is factorised once per call, as on NumPy.

The factor is a task running the NumPy runners' Cholesky text on one block holding the matrix;
``inv(K)``, ``det(K)`` and ``log(det(K))`` are tasks reading it (:mod:`tenscalc.compiler.dask_factor`).
Before, Dask computed them by LU after checking the declaration with a factor it threw away:
``log(det(K))`` of a large pd ``K`` was ``log(inf) = inf`` where every other backend gives the
finite value from the factor's diagonal.  Sizes are distinct (K is 4 x 4, B 3 x 4, y 4).
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

da = pytest.importorskip("dask.array", reason='Dask is not installed (pip install "dask[array]")')
import dask  # noqa: E402 - after the skip

from tenscalc.compiler.dask_factor import CHECKED, FACTOR, block_cholesky, block_det, block_inv  # noqa: E402

GP = "y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))"
N = 4


def _pd(n: int, seed: int = 0) -> np.ndarray:
    b = np.random.default_rng(seed).standard_normal((n, n))
    return b @ b.T / n + np.eye(n)


def _gp_roots() -> list[tc.Expr]:
    """The GP objective, its gradient in K and its Hessian in K (order 4)."""
    f = tc.parse(GP, {"y": 1, "K": 2})
    grad = tc.gradient(f, "K")
    return [f, grad, tc.derivative(grad, "K")]


def _both(roots, values, chunks):
    """(NumPy's results, Dask's on inputs cut in ``chunks``), K declared pd."""
    want = tc.compile(roots, assumptions={"K": "pd"})(values)
    run = tc.compile(roots, backend="dask", assumptions={"K": "pd"})
    got = dask.compute(*run({name: da.from_array(v, chunks=chunks) for name, v in values.items()}))
    return want, got


def test_log_det_of_a_large_pd_matrix_is_finite_as_on_numpy():
    """n = 400, eigenvalues about 10: det(K) ~ 10^400 overflows; its log is summed from the factor."""
    n = 400
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((n, n)))
    k = (q * np.linspace(9.0, 11.0, n)) @ q.T
    k = (k + k.T) / 2
    roots = [tc.parse("log(det(K))", {"K": 2})]
    (want,), (got,) = _both(roots, {"K": k}, 128)
    assert np.isfinite(want)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(got, np.linalg.slogdet(k)[1], rtol=1e-12)  # an independent reference
    with np.errstate(over="ignore"):  # undeclared: LU's det overflows (what Dask gave before, declared too)
        assert tc.compile(roots[0], backend="dask")(K=da.from_array(k, chunks=128)).compute(scheduler="sync") == np.inf


@pytest.mark.parametrize("chunks", [1, 3, N])
def test_value_gradient_and_hessian_are_numpys(chunks):
    values = {"K": _pd(N), "y": np.random.default_rng(2).standard_normal(N)}
    want, got = _both(_gp_roots(), values, chunks)
    assert [np.shape(g) for g in got] == [(), (N, N), (N, N, N, N)]
    assert float(got[0]) == float(want[0])  # one text on one matrix: the same factor, the same sum
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def test_the_hessian_against_central_differences_of_the_gradient():
    values = {"K": _pd(N), "y": np.random.default_rng(2).standard_normal(N)}
    _, grad, hessian = _gp_roots()
    got = tc.compile(hessian, backend="dask", assumptions={"K": "pd"})(values).compute()
    gradient = tc.compile(grad)  # undeclared, NumPy: an independent path (LU)
    h = 1e-6
    want = np.zeros((N, N, N, N))
    for p in range(N):
        for q in range(N):
            step = np.zeros((N, N))
            step[p, q] = h
            up, down = gradient(dict(values, K=values["K"] + step)), gradient(dict(values, K=values["K"] - step))
            want[:, :, p, q] = (up - down) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_program_with_another_matrix_and_det_itself():
    """det(K) (not its log) and inv(K) read one factor; B (3 x 4) is no declared matrix."""
    roots = [tc.parse("det(K) * (B *(ij,jk->ik) inv(K) *(ik,ik->) B)", {"K": 2, "B": 2})]
    roots.append(tc.gradient(roots[0], "K"))
    values = {"K": _pd(N, 3), "B": np.random.default_rng(4).standard_normal((3, N))}
    want, got = _both(roots, values, 2)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def _layers(roots, values, chunks=2) -> dict[str, set[str]]:
    """The layers of the results' graphs (one per task kind here), each with those it reads."""
    run = tc.compile(roots, backend="dask", assumptions={"K": "pd"})
    layers: dict[str, set[str]] = {}
    for result in run({name: da.from_array(v, chunks=chunks) for name, v in values.items()}):
        for name, deps in result.__dask_graph__().dependencies.items():
            layers.setdefault(name, set()).update(deps)
    return layers


def test_one_factor_task_read_by_inv_and_log_det_and_no_lu():
    layers = _layers(_gp_roots()[:2], {"K": _pd(N), "y": np.ones(N)})
    (factor,) = (n for n in layers if n.startswith(FACTOR))
    (checked,) = (n for n in layers if n.startswith(CHECKED))  # K's blocks, waiting for the factor
    readers = sorted(n.split("-")[0] for n, deps in layers.items() if factor in deps)
    assert readers == ["_block_factored", "block_det", "block_inv"], layers
    assert not any(checked in deps for deps in layers.values())  # the program reads K only through its factor
    # no LU (the backend's _block_inv, _block_det) and no block-by-block symmetry check
    assert not [n for n in layers if n.startswith(("_block_inv", "_block_det", "_block_gap", "_symmetric_verdict"))]


@pytest.mark.parametrize("first", ["inv", "det"])
def test_inv_and_log_det_read_one_factor_in_either_order(first):
    """potri spends the factor (overwrites it): det reads the diagonal kept apart, so it is the
    same before or after, and the inverse is the same either way."""
    k = _pd(5)
    fresh = block_cholesky(k, "K")
    want_inv, want_det = block_inv(fresh).copy(), block_det(block_cholesky(k, "K"), True)[0, 0]
    record = block_cholesky(k, "K")
    if first == "inv":
        inverse, logdet = block_inv(record), block_det(record, True)[0, 0]
    else:
        logdet, inverse = block_det(record, True)[0, 0], block_inv(record)
    np.testing.assert_array_equal(inverse, want_inv)
    assert logdet == want_det
    np.testing.assert_allclose(inverse, np.linalg.inv(k), rtol=1e-12)
    np.testing.assert_allclose(logdet, np.linalg.slogdet(k)[1], rtol=1e-12)


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_inv_and_log_det_of_one_call_computed_together_and_apart(scheduler):
    """Both readers in one graph (one factor task: both read its output), or each alone."""
    k = _pd(6)
    roots = [tc.parse("inv(K)", {"K": 2}), tc.parse("log(det(K))", {"K": 2})]
    want = tc.compile(roots, assumptions={"K": "pd"})(K=k)
    lazy = tc.compile(roots, backend="dask", assumptions={"K": "pd"})(K=da.from_array(k, chunks=4))
    for _ in range(3):
        together = dask.compute(*lazy, scheduler=scheduler)
        apart = [result.compute(scheduler=scheduler) for result in reversed(lazy)][::-1]
        for got in (together, apart):
            np.testing.assert_array_equal(got[0], want[0])
            assert float(got[1]) == float(want[1])


def test_a_result_reading_the_matrix_itself_waits_for_the_factor():
    """log(det(K)) and K b: both raise NumPy's error for an indefinite K (NumPy refuses the call)."""
    roots = [tc.parse("log(det(K))", {"K": 2}), tc.parse("K *(ij,j->i) b", {"K": 2, "b": 1})]
    bad = np.diag([1.0, -1.0, 2.0, 3.0])
    with pytest.raises(tc.EvaluationError) as numpy_error:
        tc.compile(roots, assumptions={"K": "pd"})(K=bad, b=np.ones(N))
    lazy = tc.compile(roots, backend="dask", assumptions={"K": "pd"})(K=da.from_array(bad, chunks=3), b=np.ones(N))
    for result in lazy:
        with pytest.raises(tc.EvaluationError) as dask_error:
            result.compute()
        assert str(dask_error.value) == str(numpy_error.value)
    assert "breaks down at row 1" in str(numpy_error.value)


def test_the_factor_larger_than_the_memory_limit_is_refused_by_name():
    old = tc.set_memory_limit(1024)  # 20 x 20 floats: 3,200 bytes
    try:
        with pytest.raises(tc.EvaluationError) as caught:
            run = tc.compile(tc.parse("log(det(K))", {"K": 2}), backend="dask", assumptions={"K": "pd"})
            run(K=da.from_array(np.eye(20), chunks=4))
    finally:
        tc.set_memory_limit(old)
    assert "the block dask's Cholesky factor computes on of shape (20, 20)" in str(caught.value)


def test_the_bound_program_is_numpys_one_factor_and_its_readers():
    """Cost model: the linalg ops and flops of NumPy's program (potrf n³/3, potri 2n³/3), no LU."""
    n = 1500
    roots = _gp_roots()[:2]
    ops = {}
    for backend in ("numpy", "dask"):
        program = tc.compile(roots, backend=backend, assumptions={"K": "pd"})._bind({"y": (n,), "K": (n, n)})
        ops[backend] = [(op.kind, type(op.record).__name__, op.cost.flops) for op in program.ops]
    linalg = [op for op in ops["dask"] if op[0] in ("cholesky", "inv", "det")]
    assert linalg == [op for op in ops["numpy"] if op[0] in ("cholesky", "inv", "det")]
    assert [op[:2] for op in linalg] == [
        ("cholesky", "FactorRecord"),
        ("inv", "FactorReaderRecord"),
        ("det", "FactorReaderRecord"),
    ]
    assert linalg[0][2] + linalg[1][2] == pytest.approx(n**3)  # n³/3 + 2n³/3


def test_on_a_cluster_one_factor_gives_numpys_numbers_and_errors():
    """``dask.distributed`` (one worker, two threads): the factor's task and its readers run
    there (module-level functions, sent by reference)."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    roots = [tc.parse(text, {"K": 2, "b": 1}) for text in ("inv(K)", "log(det(K))", "K *(ij,j->i) b")]
    run = tc.compile(roots, backend="dask", assumptions={"K": "pd"})
    numpy = tc.compile(roots, assumptions={"K": "pd"})
    good, bad, b = _pd(5), np.diag([1.0, 2.0, -1.0, 3.0, 4.0]), np.arange(5.0)
    cluster = distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0")
    with cluster, distributed.Client(cluster) as client:
        got = client.compute(list(run(K=da.from_array(good, chunks=2), b=b)), sync=True)
        for g, w in zip(got, numpy(K=good, b=b), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)
        with pytest.raises(tc.EvaluationError) as numpy_error:
            numpy(K=bad, b=b)
        for result in run(K=da.from_array(bad, chunks=2), b=b):
            with pytest.raises(tc.EvaluationError) as error:
                client.compute(result, sync=True)
            assert str(error.value) == str(numpy_error.value)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble, np.complex128])
def test_inv_and_log_det_in_each_dtype_are_numpys(dtype):
    """float16 and longdouble factorised in the dtype LAPACK has, complex by LU (checked
    symmetric and finite): the NumPy runners' text, its dtypes, its numbers."""
    roots = [tc.parse("inv(K)", {"K": 2}), tc.parse("log(det(K))", {"K": 2}), tc.parse("det(K)", {"K": 2})]
    k = (_pd(5) * 2).astype(dtype)
    want, got = _both(roots, {"K": k}, 3)
    tolerance = {np.float16: 1e-3, np.float32: 1e-6}.get(dtype, 1e-13)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tolerance)


def test_a_matrix_not_checked_at_the_call_is_factorised_and_checked_by_its_own_task():
    """dask_factor of a plain dask array (no check made it): a new factor task, which checks."""
    from tenscalc.compiler.dask_factor import dask_factor, dask_factor_det, dask_factor_inv

    k = _pd(5)
    factor = dask_factor("K", da.from_array(k, chunks=2))
    inverse, logdet = dask.compute(dask_factor_inv(factor), dask_factor_det(factor, True))
    np.testing.assert_allclose(inverse, np.linalg.inv(k), rtol=1e-12)
    np.testing.assert_allclose(logdet, np.linalg.slogdet(k)[1], rtol=1e-12)
    with pytest.raises(tc.EvaluationError, match="'K' is declared positive definite"):
        dask_factor_det(dask_factor("K", da.from_array(-k, chunks=2)), False).compute()
