"""A declared positive-definite matrix in every NumPy runner (issue 26): one helper text.

``generated.CHOLESKY_HELPER`` (the symmetry check, the factorisation, ``inv``, ``det``
and ``log(det)`` from the factor) is what ``tc.compile``'s loop of closures runs (the
text exec'd once), what its fused function writes, and what both generated modules
(``tc.to_python(shapes=)`` and the shape-free ``tc.to_python()``) write.  So data that is
not what was declared (not symmetric, not positive definite, not finite) raises the same
``EvaluationError`` with the same message in the four runners, and a valid matrix gives
the same numbers (checked here against the generic LU path, a closed form and central
differences, with distinct axis lengths).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tenscalc as tc

GP = "y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))"
SOLVE = "B *(ij,jk->ik) inv(K) *(ik,k->i) b + det(K) *(,i->i) (B *(ij,j->i) b)"  # B: 2 x 4, K: 4 x 4
PD = {"K": "pd"}
N, M = 4, 2  # K is N x N, B is M x N: distinct lengths


def _pd(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((n, n))
    return b @ b.T / n + np.eye(n)


def _good() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"K": _pd(N), "y": rng.standard_normal(N), "B": rng.standard_normal((M, N)), "b": rng.standard_normal(N)}


def _roots(text: str, derivatives: int) -> list[tc.Expr]:
    orders = {"y": 1, "K": 2, "B": 2, "b": 1}
    roots = [tc.parse(text, {name: order for name, order in orders.items() if name in text})]
    for _ in range(derivatives):
        roots.append(tc.derivative(roots[-1], "K"))
    return roots


def _runners(roots: list, good: dict, assumptions: dict) -> dict:
    """The four NumPy runners of ``roots``, each a function of the values: the closure loop
    (a fresh compile's first call), the fused function (a compile called twice on ``good``:
    checked to have one), the module of ``to_python(shapes=)`` and the shape-free one."""
    fused = tc.compile(roots, assumptions=assumptions)
    fused(good)
    fused(good)
    assert fused._last[1].fused is not None, "the third call runs the fused function"
    functions = []
    for shapes in ({k: np.shape(v) for k, v in good.items()}, None):
        namespace: dict = {}
        source = tc.to_python(roots, name="f", shapes=shapes, assumptions=assumptions)
        exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the source under test
        functions.append(namespace["f"])
    return {
        "loop": lambda values: tc.compile(roots, assumptions=assumptions)(values),
        "fused": lambda values: fused(values),
        "module": lambda values: functions[0](**values),
        "shape-free": lambda values: functions[1](**values),
    }


def _errors(roots: list, good: dict, bad: dict, assumptions: dict = PD) -> dict[str, tuple[type, str]]:
    """Each runner's error on ``bad``: (its class, its message)."""
    caught = {}
    for name, run in _runners(roots, good, assumptions).items():
        with pytest.raises(Exception) as error:  # noqa: PT011 - the class is what is compared
            run(bad)
        caught[name] = (type(error.value), str(error.value))
    return caught


BAD = {
    "indefinite": np.diag([1.0, -1.0, 2.0, 3.0]),
    "singular": np.zeros((N, N)),
    "rank one": np.outer([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]),
    "not symmetric": np.triu(np.ones((N, N))) + np.eye(N),
    "nan": np.diag([1.0, np.nan, 1.0, 1.0]),
    "inf": np.diag([1.0, np.inf, 1.0, 1.0]),
    "nan off the diagonal": np.where(np.eye(N) == 1, 2.0, 0.0)
    + np.where(np.arange(N * N).reshape(N, N) == 1, np.nan, 0),
}
#: the start of each case's message: what is wrong, said once for every runner
SAYS = {
    "indefinite": "'K' is declared positive definite (pd) but its value is not: its Cholesky factorisation breaks down",
    "singular": "'K' is declared positive definite (pd) but its value is not: its Cholesky factorisation breaks down",
    "rank one": "'K' is declared positive definite (pd) but its value is not: its Cholesky factorisation breaks down",
    "not symmetric": "'K' is declared positive definite (pd) but its value is not: K[0, 1] = 1.0, K[1, 0] = 0.0",
    "nan": "'K' is declared positive definite (pd) but its value has an entry that is not finite",
    "inf": "'K' is declared positive definite (pd) but its value has an entry that is not finite",
    "nan off the diagonal": "'K' is declared positive definite (pd) but its value has an entry that is not finite",
}
#: programs reading the factor in each way: inv, det and log det (the GP objective with its
#: gradient and Hessian), log det alone (its det never computed), inv inside a larger product
PROGRAMS = {"gp": (GP, 2), "log det": ("log(det(K))", 0), "solve": (SOLVE, 1)}


def _inputs(text: str, values: dict) -> dict:
    return {k: v for k, v in values.items() if k in text}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("case", sorted(BAD))
def test_the_four_runners_raise_one_error_on_data_that_is_not_positive_definite(program, case):
    text, derivatives = PROGRAMS[program]
    good = _inputs(text, _good())
    caught = _errors(_roots(text, derivatives), good, dict(good, K=BAD[case]))
    assert set(caught.values()) == {caught["loop"]}, caught
    kind, message = caught["loop"]
    assert kind is tc.EvaluationError
    assert message.startswith(SAYS[case]), message


def test_a_declared_matrix_read_only_as_itself_is_checked_alike():
    """K declared pd but neither inverted nor its det taken: no factor, the declaration is
    checked on entry (symmetric, finite), with the same error in the four runners."""
    text = "B *(ij,j->i) (K *(ij,j->i) b)"
    good = _inputs(text, _good())
    for case in ("not symmetric", "nan"):
        caught = _errors(_roots(text, 0), good, dict(good, K=BAD[case]))
        assert set(caught.values()) == {caught["loop"]}, caught
        assert caught["loop"] == (tc.EvaluationError, SAYS[case]), caught


def test_a_symmetric_declaration_is_checked_alike():
    text = "A + A *(ij,->ji) 1"
    roots = [tc.parse(text, {"A": 2})]
    good = {"A": _pd(3)}
    bad = {"A": np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 0.0], [0.0, 0.0, 1.0]])}
    caught = _errors(roots, good, bad, {"A": "symmetric"})
    assert set(caught.values()) == {caught["loop"]}, caught
    assert caught["loop"] == (
        tc.EvaluationError,
        "'A' is declared symmetric but its value is not: A[0, 1] = 2.0, A[1, 0] = 3.0",
    )


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_four_runners_compute_the_same_numbers(program):
    text, derivatives = PROGRAMS[program]
    good = _inputs(text, _good())
    roots = _roots(text, derivatives)
    want = tc.compile(roots)(good)  # the generic path: LU, no declaration
    results = {name: run(good) for name, run in _runners(roots, good, PD).items()}
    for name, got in results.items():
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11 * max(1.0, float(np.abs(w).max())), err_msg=name)


def test_the_factors_readers_are_bit_for_bit_the_same_in_the_four_runners():
    """inv, det and log det of a declared matrix, as results: the helper text's own numbers,
    the same bits from each runner (one text, the same LAPACK calls on the same matrix)."""
    roots = [tc.parse(text, {"K": 2}) for text in ("inv(K)", "det(K)", "log(det(K))")]
    good = {"K": _pd(5, seed=3)}
    results = {name: run(good) for name, run in _runners(roots, good, PD).items()}
    for name, got in results.items():
        for g, w in zip(got, results["loop"]):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(g, w, err_msg=name)
    np.testing.assert_array_equal(results["loop"][0], results["loop"][0].T)  # the mirrored inverse


def test_the_gradient_and_hessian_through_a_pd_matrix():
    """The GP objective's gradient (closed form) and Hessian (central differences of the
    gradient along a symmetric direction) from every runner."""
    good = _inputs(GP, _good())
    k, y = good["K"], good["y"]
    k_inv = np.linalg.inv(k)
    a = k_inv @ y
    closed = k_inv - np.outer(a, a)  # d/dK (yᵀ K⁻¹ y + log det K)
    rng = np.random.default_rng(11)
    e = rng.standard_normal((N, N))
    e = e + e.T
    h = 1e-5
    gradient = tc.compile(_roots(GP, 1)[1])
    central = (gradient(K=k + h * e, y=y) - gradient(K=k - h * e, y=y)) / (2 * h)
    for name, run in _runners(_roots(GP, 2), good, PD).items():
        value, grad, hessian = run(good)
        np.testing.assert_allclose(value, y @ a + np.linalg.slogdet(k)[1], rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(grad, closed, rtol=1e-11, atol=1e-12, err_msg=name)
        assert np.shape(hessian) == (N, N, N, N)
        np.testing.assert_allclose(np.einsum("ijkl,kl->ij", hessian, e), central, rtol=1e-6, atol=1e-8, err_msg=name)


def test_the_fused_function_writes_the_factor_and_its_readers():
    """The fused function calls the helper text's functions, no closure of the factor."""
    roots = _roots(GP, 1)
    good = _inputs(GP, _good())
    run = tc.compile(roots, assumptions=PD)
    run(good)
    run(good)
    program = run._last[1]
    source = program.fused_source
    assert source.count("_cholesky(") == 1 and "_cho_inv(" in source and "_cho_det(" in source
    factor_ops = [
        op for op in program.ops if op.kind == "cholesky" or op.slot in program.steps and program.steps[op.slot].factor
    ]
    assert len(factor_ops) >= 3  # the factor, inv and log det
    names = program.fused.__globals__
    assert not [op.kind for op in factor_ops if any(value is op.fn for value in names.values())]


@pytest.mark.parametrize("with_shapes", [False, True], ids=["shape-free", "shape-specialised"])
def test_a_module_run_without_tenscalc_raises_a_value_error_with_the_same_message(monkeypatch, with_shapes):
    """A generated module needs NumPy only: where tenscalc cannot be imported its error
    class is ValueError (tenscalc's EvaluationError is one), the message unchanged."""
    roots = _roots(GP, 1)
    good = _inputs(GP, _good())
    bad = dict(good, K=BAD["indefinite"])
    with pytest.raises(tc.EvaluationError) as compiled:
        tc.compile(roots, assumptions=PD)(bad)
    source = tc.to_python(
        roots, name="f", shapes={k: v.shape for k, v in good.items()} if with_shapes else None, assumptions=PD
    )
    monkeypatch.setitem(sys.modules, "tenscalc.errors", None)  # `from tenscalc.errors import ...` fails
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the source under test
    with pytest.raises(ValueError) as caught:  # noqa: PT011 - the class is what is checked
        namespace["f"](**bad)
    assert type(caught.value) is ValueError
    assert str(caught.value) == str(compiled.value)


#: inv, det and adj of a matrix that is not declared (LU and SVD, .generated.LINALG_HELPER):
#: A is 3 x 3, B 3 x 2, c 2 (distinct lengths)
LINALG = {
    "inv": "sum(inv(A) *(ij,jk->ik) B)",
    "det": "det(A) *(,k->k) c",
    "adj": "sum(adj(A) *(ij,jk->ik) B)",
    "log det": "log(det(A *(ij,kj->ik) A))",
}
#: how the errors name each case's matrix: an input by its name, a computed one by its text
LINALG_LABELS = {"inv": "A", "det": "A", "adj": "A", "log det": "A *(ij,kj->ik) A"}


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("what", sorted(LINALG))
def test_a_non_finite_matrix_in_inv_det_or_adj_is_one_error_from_every_runner(what, special):
    """LAPACK returns NaN for the inv and det of a matrix with a NaN or inf entry, without a
    word: the four runners (and tc.evaluate) refuse it instead, with one message."""
    text = LINALG[what]
    roots = [tc.parse(text, {"A": 2, "B": 2, "c": 1})]
    rng = np.random.default_rng(5)
    good = {
        "A": rng.standard_normal((3, 3)) + 3 * np.eye(3),
        "B": rng.standard_normal((3, 2)),
        "c": rng.standard_normal(2),
    }
    good = {k: v for k, v in good.items() if k in text}
    a = good["A"].copy()
    a[1, 2] = special
    caught = _errors(roots, good, dict(good, A=a), {})
    with pytest.raises(tc.EvaluationError) as evaluated:
        tc.evaluate(roots[0], dict(good, A=a))
    caught["evaluate"] = (type(evaluated.value), str(evaluated.value))
    assert set(caught.values()) == {caught["loop"]}, caught
    kind, label = what.split()[-1], LINALG_LABELS[what]
    message = f"{kind}({label}): the matrix {label} has an entry that is not finite (NaN or inf)"
    assert caught["loop"] == (tc.EvaluationError, message)


#: a complex K (Hermitian positive definite where good) takes LU: its errors name K as the real ones do
COMPLEX_BAD = {
    "singular": (  # complex symmetric, det [[1, i], [i, -1]] = -1 - i² = 0
        np.block([[np.array([[1, 1j], [1j, -1]]), np.zeros((2, 2))], [np.zeros((2, 2)), np.diag([2.0, 3.0])]]),
        "inv(K): the matrix K is singular",
    ),
    "nan": (np.diag([1.0, np.nan, 1.0, 1.0]) + 1j * (np.eye(N, k=1) + np.eye(N, k=-1)), SAYS["nan"]),
    "inf": (np.diag([1.0, np.inf, 1.0, 1.0]) + 0j, SAYS["inf"]),
}


@pytest.mark.parametrize("case", sorted(COMPLEX_BAD))
def test_a_complex_declared_matrix_is_named_in_its_errors_by_every_runner(case):
    """A complex K declared pd takes the generic path (LU): its errors were unnamed
    ('inv: the matrix is singular') in the NumPy runners, and PyTorch returned NaN for a
    NaN entry and raised its own LinAlgError for a singular K; now every runner says one
    message that names K, a non-finite entry in the words of a real K's."""
    text, derivatives = PROGRAMS["solve"]
    good = dict(_inputs(text, _good()), K=_pd(N) + 0j)
    bad, says = COMPLEX_BAD[case]
    caught = _errors(_roots(text, derivatives), good, dict(good, K=bad))
    torch = pytest.importorskip("torch", reason="torch is not installed")
    tensors = {k: torch.tensor(v) for k, v in dict(good, K=bad).items()}
    with pytest.raises(tc.EvaluationError) as by_torch:
        tc.compile(_roots(text, derivatives), backend="torch", assumptions=PD)(tensors)
    caught["torch"] = (type(by_torch.value), str(by_torch.value))
    assert set(caught.values()) == {(tc.EvaluationError, says)}, caught


def test_a_complex_declared_matrix_still_computes_the_generic_paths_numbers():
    text, derivatives = PROGRAMS["gp"]
    roots = _roots(text, derivatives)
    k = _pd(N) + 0.1j * _pd(N, 1)  # complex symmetric: K = Kᵀ, as the compiler writes it
    good = dict(_inputs(text, _good()), K=k)
    expected = tc.compile(roots)(good)
    for name, run in _runners(roots, good, PD).items():
        for got, want in zip(run(good), expected):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_a_hermitian_declared_matrix_that_is_not_symmetric_is_refused_by_name():
    """pd makes the compiler write Kᵀ as K: a Hermitian complex K (Kᵀ = conj(K)) gave the
    gradient of another function without a word (its imaginary parts of the wrong sign)."""
    text, derivatives = PROGRAMS["gp"]
    k = np.diag([2.0, 3.0, 4.0, 5.0]) + 0.1j * (np.eye(N, k=1) - np.eye(N, k=-1))  # Hermitian pd, not symmetric
    good = dict(_inputs(text, _good()), K=_pd(N) + 0j)
    caught = _errors(_roots(text, derivatives), good, dict(good, K=k))
    assert set(caught.values()) == {caught["loop"]}, caught
    says = "'K' is declared positive definite (pd) but its value is not: K[0, 1] = 0.1j, K[1, 0] = "
    assert caught["loop"][0] is tc.EvaluationError and caught["loop"][1].startswith(says), caught
