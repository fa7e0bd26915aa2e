"""A declared structure on the Dask backend is checked, never trusted (the compiler wrote ``Kᵀ`` as ``K``).

Dask's arrays are lazy: the check runs in the graph (the NumPy runners' own text on one block
holding the matrix) and every block of the matrix the program reads depends on it, so a result
that reads a matrix that is not what was declared raises, when dask computes it, the
``EvaluationError`` NumPy's runner raises at the call, with the same message: not symmetric,
not finite, and (declared ``pd``, its ``inv`` or ``det`` computed) not positive definite.
Before, Dask trusted the declaration: a gradient through ``inv(K)`` of a ``K`` that is not
symmetric was another matrix's, without a word, and an indefinite ``K``'s ``log(det(K))`` NaN.
Sizes are distinct (K is 4 x 4, B 2 x 4) and the Dask inputs are cut in several chunks.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

da = pytest.importorskip("dask.array", reason='Dask is not installed (pip install "dask[array]")')
import dask  # noqa: E402 - after the skip

GP = "y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))"
N, M = 4, 2  # K is N x N, B is M x N
ORDERS = {"y": 1, "K": 2, "B": 2, "b": 1}
#: program -> (text, how many derivatives wrt K, the declaration): K's factor read (inv, det,
#: log det), K read only as itself, a symmetric declaration
PROGRAMS = {
    "gp": (GP, 1, "pd"),
    "log det": ("log(det(K))", 0, "pd"),
    "pd read as itself": ("B *(ij,j->i) (K *(ij,j->i) b)", 1, "pd"),
    "symmetric": ("B *(ij,j->i) (K *(ij,j->i) b) + B *(ij,j->i) (K *(ij,->ji) 1 *(ij,j->i) b)", 1, "symmetric"),
    "symmetric inv": ("y *(i,ij->j) inv(K) *(j,j->) y", 1, "symmetric"),
}
BAD = {
    "not symmetric": np.triu(np.ones((N, N))) + np.eye(N),
    "not symmetric by a little": np.eye(N) + np.where(np.arange(N * N).reshape(N, N) == 6, 1e-9, 0.0),
    "indefinite": np.diag([1.0, -1.0, 2.0, 3.0]),
    "singular": np.zeros((N, N)),
    "nan": np.diag([1.0, np.nan, 1.0, 1.0]),
    "inf": np.diag([1.0, np.inf, 1.0, 1.0]),
    "nan off the diagonal": np.eye(N) + np.where(np.arange(N * N).reshape(N, N) == 1, np.nan, 0.0),
}


def _pd(n: int) -> np.ndarray:
    b = np.random.default_rng(0).standard_normal((n, n))
    return b @ b.T / n + np.eye(n)


def _good(text: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    values = {"K": _pd(N), "y": rng.standard_normal(N), "B": rng.standard_normal((M, N)), "b": rng.standard_normal(N)}
    return {name: value for name, value in values.items() if name in text}


def _roots(program: str) -> list[tc.Expr]:
    text, derivatives, _ = PROGRAMS[program]
    roots = [tc.parse(text, {name: order for name, order in ORDERS.items() if name in text})]
    for _ in range(derivatives):
        roots.append(tc.gradient(roots[-1], "K") if roots[-1].order == 0 else tc.derivative(roots[-1], "K"))
    return roots


def _numpy(program: str, values: dict) -> tuple:
    """NumPy's runner: ("raises", class, message) or ("computes", its results)."""
    run = tc.compile(_roots(program), assumptions={"K": PROGRAMS[program][2]})
    try:
        return ("computes", run(values))
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return ("raises", type(error), str(error))


def _dask(program: str, values: dict, chunks: int = 3) -> tuple:
    """Dask's, on inputs cut in chunks of ``chunks``: the call builds the graph without
    raising (it reads no values), the error comes when dask computes."""
    run = tc.compile(_roots(program), backend="dask", assumptions={"K": PROGRAMS[program][2]})
    lazy = run({name: da.from_array(value, chunks=chunks) for name, value in values.items()})
    try:
        return ("computes", dask.compute(*lazy))
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return ("raises", type(error), str(error))


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("case", sorted(BAD))
def test_dask_raises_numpys_error_on_data_that_is_not_what_was_declared(program, case):
    values = dict(_good(PROGRAMS[program][0]), K=BAD[case])
    want, got = _numpy(program, values), _dask(program, values)
    if want[0] == "raises":
        assert got == want
        assert want[1] is tc.EvaluationError
        assert "K" in want[2], want  # named: the declaration's error (an inv's, of an inf on a symmetric K's diagonal)
    else:  # NumPy computes (an indefinite symmetric K read as itself): so does Dask, the same numbers
        assert got[0] == "computes", got
        for g, w in zip(got[1], want[1], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_the_issues_example_is_refused_where_it_was_a_wrong_gradient():
    f = tc.parse("declare K 2 pd y 1 expression y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))")
    roots = [f, tc.gradient(f, "K")]
    values = {"K": np.array([[2.0, 0.5], [0.1, 3.0]]), "y": np.array([1.0, 2.0])}
    message = "'K' is declared positive definite (pd) but its value is not: K[0, 1] = 0.5, K[1, 0] = 0.1"
    with pytest.raises(tc.EvaluationError) as numpy_error:
        tc.compile(roots, assumptions={"K": "pd"})(values)
    # NumPy arrays in: checked lazily all the same
    value, grad = tc.compile(roots, backend="dask", assumptions={"K": "pd"})(values)
    for result in (value, grad):
        with pytest.raises(tc.EvaluationError) as dask_error:
            result.compute()
        assert str(dask_error.value) == str(numpy_error.value) == message


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("chunks", [1, 3, N])
def test_a_value_that_is_what_was_declared_gives_numpys_numbers(program, chunks):
    values = _good(PROGRAMS[program][0])
    kind, want = _numpy(program, values)
    assert kind == "computes"
    undeclared = tc.compile(_roots(program))(values)  # the generic path: nothing declared
    kind, got = _dask(program, values, chunks)
    assert kind == "computes"
    for g, w, u in zip(got, want, undeclared, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(g, u, rtol=1e-11, atol=1e-12)


def test_the_gradient_through_a_declared_matrix_against_central_differences():
    f, grad = _roots("gp")
    values = _good(GP)
    got = tc.compile(grad, backend="dask", assumptions={"K": "pd"})(values).compute()
    value = tc.compile(f)  # the undeclared function: its derivative in each entry of K
    want = np.zeros((N, N))
    h = 1e-6
    for i in range(N):
        for j in range(N):
            step = np.zeros((N, N))
            step[i, j] = h
            up, down = value(dict(values, K=values["K"] + step)), value(dict(values, K=values["K"] - step))
            want[i, j] = (up - down) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)


def test_symmetry_up_to_rounding_is_accepted_as_numpy_accepts_it():
    k = _pd(N)
    k[0, 1] += 8 * N * np.finfo(float).eps * np.abs(k).max()  # within 16 n eps max|K|
    values = dict(_good(GP), K=k)
    kind, want = _numpy("gp", values)
    assert kind == "computes"
    kind, got = _dask("gp", values)
    assert kind == "computes"
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)


def test_a_float32_matrix_is_checked_in_its_own_precision():
    values = {name: value.astype(np.float32) for name, value in _good(GP).items()}
    values["K"][2, 0] += 1e-3
    want, got = _numpy("gp", values), _dask("gp", values)
    assert want[0] == "raises"
    assert got == want


def test_a_result_that_does_not_read_the_matrix_computes():
    """Only the results that read the declared matrix wait for its check."""
    run = tc.compile([tc.parse("log(det(K))", {"K": 2}), tc.parse("y *(i,i->) y", {"y": 1})], backend="dask")
    declared = tc.compile(run.exprs, backend="dask", assumptions={"K": "pd"})
    logdet, square = declared(K=BAD["not symmetric"], y=np.arange(3.0))
    assert float(square.compute()) == 5.0
    with pytest.raises(tc.EvaluationError, match="'K' is declared positive definite"):
        logdet.compute()


def test_a_matrix_that_is_not_square_is_refused_at_the_call_as_numpy_refuses_it():
    roots = [tc.parse("B *(ij,j->i) (K *(ij,j->i) b)", {"B": 2, "K": 2, "b": 1})]
    values = {"B": np.ones((M, N)), "K": np.ones((N, N + 1)), "b": np.ones(N + 1)}
    messages = []
    for backend in ("numpy", "dask"):
        with pytest.raises(tc.EvaluationError) as error:
            tc.compile(roots, backend=backend, assumptions={"K": "symmetric"})(values)
        messages.append(str(error.value))
    assert messages[0] == messages[1] == "'K' is declared symmetric but its value is not square (shape (4, 5))"


@pytest.mark.parametrize(("program", "verdict"), [("gp", "tenscalc-pd-factor-"), ("symmetric", "_symmetric_verdict")])
def test_the_check_is_one_verdict_shared_by_the_results(program, verdict):
    """One check per call, whatever reads the matrix: one task decides (the factor of the whole
    matrix, which its inv and det read; or the verdict on its blocks' gaps, one task per block
    of the chunked matrix, never gathered)."""
    run = tc.compile(_roots(program), backend="dask", assumptions={"K": PROGRAMS[program][2]})
    lazy = run({name: da.from_array(value, chunks=2) for name, value in _good(PROGRAMS[program][0]).items()})
    keys = {key for result in lazy for key in dict(result.__dask_graph__())}
    tasks = {name: [key for key in keys if str(key[0]).startswith(name)] for name in (verdict, "_block_gap")}
    assert len(tasks[verdict]) == 1, keys
    assert len(tasks["_block_gap"]) == (4 if verdict == "_symmetric_verdict" else 0), keys  # K in 2 x 2 blocks


# ------------------------------------------------------------------ the chunked symmetry check itself


def _verdicts(m: np.ndarray, chunks) -> tuple:
    """(NumPy's text on the whole matrix, Dask's check of it in ``chunks``): each "passes" or
    the (class, message) it raises."""
    from tenscalc.compiler.backends import get_backend
    from tenscalc.compiler.generated import symmetric_check

    outcomes = []
    for check in (
        lambda: symmetric_check(m, "S", "symmetric"),
        lambda: get_backend("dask").checked_declaration("S", da.from_array(m, chunks=chunks), False, False).compute(),
    ):
        try:
            check()
            outcomes.append("passes")
        except Exception as error:  # noqa: BLE001 - the class is what is compared
            outcomes.append((type(error), str(error)))
    return tuple(outcomes)


def _with(n: int, entries: dict, base: np.ndarray | None = None) -> np.ndarray:
    m = np.zeros((n, n)) if base is None else base.copy()
    for (i, j), value in entries.items():
        m[i, j] = value
    return m


CHUNKED = {
    "ties across blocks: the first in row-major order": _with(5, {(3, 4): 1.0, (0, 2): 1.0}),
    "a tie whose first entry is below the diagonal": _with(5, {(4, 0): 1.0, (1, 3): 1.0}),
    "the scale from another block: within rounding": _with(5, {(3, 4): 1e-9}, np.diag([1e6, 1, 1, 1, 1])),
    "the scale from another block: beyond it": _with(5, {(3, 4): 1e-7}, np.diag([1e6, 1, 1, 1, 1])),
    "an inf met by itself, alone": _with(5, {(0, 0): np.inf, (1, 4): 2.0, (4, 1): 2.0}),
    "an inf met by itself, beside a gap": _with(5, {(0, 0): np.inf, (3, 4): 1.0}),
    "a nan": _with(5, {(2, 2): np.nan}),
    "an inf off the diagonal": _with(5, {(1, 3): np.inf}),
    "symmetric": _with(5, {(1, 3): 2.0, (3, 1): 2.0}),
}


@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract:RuntimeWarning")  # NumPy's text: inf - inf
@pytest.mark.parametrize("case", sorted(CHUNKED))
@pytest.mark.parametrize("chunks", [1, 2, 5, ((2, 3), (3, 2)), ((1, 4), (4, 1))])
def test_the_chunked_check_is_numpys_verdict(case, chunks):
    numpy, dask_ = _verdicts(CHUNKED[case], chunks)
    assert dask_ == numpy
    assert (numpy == "passes") == (
        case in {"symmetric", "the scale from another block: within rounding", "an inf met by itself, alone"}
    )


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.longdouble, np.int64, np.complex64, np.complex128])
@pytest.mark.parametrize("chunks", [2, 5])
def test_the_chunked_check_in_other_dtypes(dtype, chunks):
    for m in (_with(5, {(3, 4): 1.0}), _with(5, {(3, 4): 1.0, (4, 3): 1.0}), _with(5, {(0, 1): 1e-7}, np.eye(5))):
        numpy, dask_ = _verdicts(m.astype(dtype), chunks)
        assert dask_ == numpy


def _random_chunks(rng: np.random.Generator, n: int) -> tuple[int, ...]:
    """``n`` cut in blocks at random places."""
    cuts = np.sort(rng.choice(np.arange(1, n), int(rng.integers(0, n)), replace=False))
    return tuple(int(c) for c in np.diff(np.r_[0, cuts, n]))


def test_the_chunked_check_on_random_matrices():
    """Small integer entries (many ties), random chunks: NumPy's verdict each time."""
    rng = np.random.default_rng(3)
    refused = 0
    for _ in range(60):
        n = int(rng.integers(1, 7))
        m = rng.integers(-2, 3, (n, n)).astype(float)
        m = np.where(rng.random((n, n)) < 0.7, (m + m.T) / 2, m)  # mostly symmetric
        chunks = (_random_chunks(rng, n), _random_chunks(rng, n))  # rows and columns cut apart
        numpy, dask_ = _verdicts(m, chunks)
        assert dask_ == numpy, (m, chunks)
        refused += numpy != "passes"
    assert 10 < refused < 60  # both verdicts were reached


def test_on_a_cluster_the_error_arrives_as_numpys():
    """Computed by a ``dask.distributed`` cluster: the check's tasks run on its worker (the
    functions are module-level, sent by reference) and the call gets NumPy's error."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    cluster = distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0")
    with cluster, distributed.Client(cluster) as client:
        for program, chunks in (("gp", N), ("symmetric", 2)):  # the factor's task, the blocks' verdict
            values = dict(_good(PROGRAMS[program][0]), K=BAD["not symmetric"])
            want = _numpy(program, values)
            run = tc.compile(_roots(program), backend="dask", assumptions={"K": PROGRAMS[program][2]})
            lazy = run({name: da.from_array(value, chunks=chunks) for name, value in values.items()})
            with pytest.raises(tc.EvaluationError) as error:
                client.compute(list(lazy), sync=True)
            assert ("raises", type(error.value), str(error.value)) == want
        good = _good(GP)
        run = tc.compile(_roots("gp"), backend="dask", assumptions={"K": "pd"})
        for got, expected in zip(client.compute(list(run(good)), sync=True), _numpy("gp", good)[1], strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-12)
