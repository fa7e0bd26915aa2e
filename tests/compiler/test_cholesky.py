"""Declared positive-definite matrices: ``inv``, ``det`` and ``log(det)`` from one Cholesky
factorisation (tenscalc/compiler/cholesky.py), the same numbers as the generic LU path
(within 1e-12), and a clear error where the data is not what was declared."""

from __future__ import annotations

import pickle
import sys
import warnings

import numpy as np
import pytest

import tenscalc as tc

GP = "y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))"
ORDERS = {"y": 1, "K": 2, "A": 2, "b": 1}
PD = {"K": "pd"}


def _pd(n: int, seed: int = 0, dtype=np.float64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((n, n))
    return (b @ b.T / n + np.eye(n)).astype(dtype)


def _values(n: int, m: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 1)
    y, a, b = rng.standard_normal(n), rng.standard_normal((m, n)), rng.standard_normal(n)
    return {"K": _pd(n, seed), "y": y, "A": a, "b": b}


def _roots(text: str, wrt: tuple[str, ...] = ()) -> list[tc.Expr]:
    f = tc.parse(text, {name: order for name, order in ORDERS.items() if name in text})
    roots = [f]
    for _ in wrt:
        roots.append(tc.derivative(roots[-1], "K"))
    return roots


def _same(got, want, rtol: float = 1e-12) -> None:
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(1.0, float(np.abs(w).max(initial=0.0))))


def _kinds(run: tc.CompiledFunction, values: dict) -> list[str]:
    return [op.kind for op in run._bind({name: values[name].shape for name in run.inputs}).ops]


CASES = [
    ("inv(K)", ()),
    ("det(K)", ("K",)),
    ("log(det(K))", ("K", "K")),
    ("A *(ij,jk->ik) inv(K) *(ik,k->i) b", ("K",)),  # a solve inside a larger product
    ("inv(K) *(ij,j->i) b + det(K) *(,i->i) (K *(ij,j->i) b)", ("K",)),  # K read directly too
    (GP, ("K", "K")),  # the GP objective, its gradient and Hessian
]


@pytest.mark.parametrize("text,wrt", CASES, ids=[c[0][:30] for c in CASES])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_values_match_the_generic_path(text, wrt, n):
    roots = _roots(text, wrt)
    values = _values(n, m=n + 2, seed=n)
    generic, cholesky = tc.compile(roots), tc.compile(roots, assumptions=PD)
    assert _kinds(cholesky, values).count("cholesky") == 1
    assert "cholesky" not in _kinds(generic, values)
    want = generic(**{k: values[k] for k in generic.inputs})
    first = cholesky(**{k: values[k] for k in cholesky.inputs})  # the loop of closures
    second = cholesky(**{k: values[k] for k in cholesky.inputs})  # the fused function
    _same(first, want)
    _same(second, want)


def test_gp_gradient_against_the_closed_form():
    values = _values(4)
    p = tc.parse_problem(f"declare K 2 pd y 1 expression {GP} derivative wrt K")
    run = tc.compile([p.expr, p.derivative()], assumptions=p.assumptions)
    assert run.pd == frozenset({"K"})
    value, grad = run(K=values["K"], y=values["y"])
    k_inv = np.linalg.inv(values["K"])
    a = k_inv @ values["y"]
    assert np.isclose(value, values["y"] @ a + np.linalg.slogdet(values["K"])[1], rtol=1e-12)
    np.testing.assert_allclose(grad, k_inv - np.outer(a, a), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(grad, grad.T)  # the inverse's triangles made equal


def test_one_factorisation_serves_inv_det_and_log_det():
    roots = _roots(f"{GP} + det(K)", ("K",))
    run = tc.compile(roots, assumptions=PD)
    ops = run._bind({"y": (4,), "K": (4, 4)}).ops
    assert [op.kind for op in ops].count("cholesky") == 1
    factor_slot = next(op.slot for op in ops if op.kind == "cholesky")
    readers = [op.kind for op in ops if factor_slot in op.reads]
    assert sorted(readers) == ["det", "func", "inv"]  # log(det(K)) straight from the factor


def test_cost_counts_one_factorisation_instead_of_two_lu():
    n = 200
    roots = _roots(GP, ("K",))
    shapes = {"y": (n,), "K": (n, n)}
    generic = tc.compile(roots).cost(shapes)
    run = tc.compile(roots, assumptions=PD)
    cholesky = run.cost(shapes)
    factor = [op.cost for op in run._bind(shapes).ops if op.kind == "cholesky"]
    assert len(factor) == 1 and factor[0].flops == n**3 / 3
    # generic: an LU inverse (n³) and an LU determinant (n³); here potrf (n³/3) and potri (2n³/3)
    assert generic.flops - cholesky.flops >= 0.99 * n**3


def test_log_det_stays_finite_where_det_overflows():
    n = 400
    k = 10.0 * _pd(n)  # det(K) > 10^400: inf in float64
    run = tc.compile(tc.parse("log(det(K))", {"K": 2}), assumptions=PD)
    generic = tc.compile(tc.parse("log(det(K))", {"K": 2}))
    with np.errstate(over="ignore"):
        assert np.isinf(generic(K=k))
    np.testing.assert_allclose(run(K=k), np.linalg.slogdet(k)[1], rtol=1e-12)


BAD = {
    "indefinite": np.diag([1.0, -1.0, 2.0]),
    "singular": np.zeros((3, 3)),
    "rank one": np.outer([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]),
    "not symmetric": np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]]),
    "not finite": np.diag([1.0, np.nan, 1.0]),
}


@pytest.mark.parametrize("scipy", [True, False], ids=["scipy", "numpy only"])
@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("text", ["inv(K)", "det(K)", "log(det(K))"])
def test_data_that_is_not_positive_definite_is_refused(case, text, scipy, monkeypatch):
    if not scipy:
        monkeypatch.setitem(sys.modules, "scipy.linalg", None)
    run = tc.compile(tc.parse(text, {"K": 2}), assumptions={"K": ("symmetric", "pd")})
    with pytest.raises(tc.EvaluationError, match="'K' is declared positive definite"):
        run(K=BAD[case])


def test_asymmetry_of_rounding_is_accepted():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 5)), _pd(5)
    k = a @ b @ a.T + np.eye(5)  # symmetric up to rounding only
    assert not np.array_equal(k, k.T)
    run = tc.compile(tc.parse("inv(K)", {"K": 2}), assumptions=PD)
    np.testing.assert_allclose(run(K=k), np.linalg.inv(k), rtol=1e-10)


def test_without_scipy_the_values_are_the_same(monkeypatch):
    roots = _roots(GP, ("K", "K"))
    values = _values(4)
    want = tc.compile(roots)(K=values["K"], y=values["y"])
    monkeypatch.setitem(sys.modules, "scipy.linalg", None)
    run = tc.compile(roots, assumptions=PD)
    assert _kinds(run, values).count("cholesky") == 1
    _same(run(K=values["K"], y=values["y"]), want)
    _same(run(K=values["K"], y=values["y"]), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.longdouble])
def test_other_real_dtypes_keep_their_dtype(dtype):
    k = _pd(3, dtype=dtype)
    roots = _roots("log(det(K)) + det(K)", ()) + [tc.parse("inv(K)", {"K": 2})]
    got = tc.compile(roots, assumptions=PD)(K=k)
    want = tc.compile(roots)(K=k)
    eps = max(float(np.finfo(dtype).eps), float(np.finfo(np.float64).eps))  # longdouble: factorised in float64
    for g, w in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g.astype(float), w.astype(float), rtol=64 * eps)


def test_complex_values_take_the_generic_path():
    k = _pd(3) + 0j
    roots = [tc.parse("inv(K)", {"K": 2}), tc.parse("log(det(K))", {"K": 2})]
    _same(tc.compile(roots, assumptions=PD)(K=k), tc.compile(roots)(K=k), rtol=0)


def test_an_empty_matrix():
    k = np.zeros((0, 0))
    roots = [tc.parse("inv(K)", {"K": 2}), tc.parse("det(K)", {"K": 2}), tc.parse("log(det(K))", {"K": 2})]
    _same(tc.compile(roots, assumptions=PD)(K=k), tc.compile(roots)(K=k), rtol=0)


def test_only_a_declared_matrix_itself_is_factorised():
    # inv(K + A) is not the inverse of a declared matrix: the generic path
    roots = [tc.parse("inv(K + A)", {"K": 2, "A": 2}), tc.parse("det(A)", {"A": 2})]
    run = tc.compile(roots, assumptions=PD)
    values = {"K": _pd(3), "A": np.eye(3)}
    assert "cholesky" not in _kinds(run, values)
    _same(run(**values), tc.compile(roots)(**values), rtol=0)


def test_a_transposed_declared_matrix_is_the_matrix():
    # Kᵀ = K for a declared pd (so symmetric) K: inv(Kᵀ) is inv(K), factorised
    roots = [tc.parse("inv(K *(ij,->ji) 1)", {"K": 2})]
    run = tc.compile(roots, assumptions=PD)
    values = {"K": _pd(3)}
    assert _kinds(run, values).count("cholesky") == 1
    _same(run(**values), tc.compile(roots)(**values))


def test_the_assumptions_are_checked():
    f = tc.parse("inv(K) *(ij,j->i) x", {"K": 2, "x": 1})
    with pytest.raises(tc.EvaluationError, match="unknown assumption 'posdef' about 'K'"):
        tc.compile(f, assumptions={"K": "posdef"})
    with pytest.raises(tc.EvaluationError, match="'pd' is an assumption about matrices, but 'x' has order 1"):
        tc.compile(f, assumptions={"x": "pd"})
    with pytest.raises(tc.EvaluationError, match="assumptions must map"):
        tc.compile(f, assumptions=["K"])
    # intervals, sign words and variables the expressions do not read are fine
    run = tc.compile(f, assumptions={"K": ("pd", (0, None)), "x": "positive", "z": "pd"})
    assert run.pd == frozenset({"K"})


def test_pickling_keeps_the_assumptions():
    run = pickle.loads(pickle.dumps(tc.compile(tc.parse("inv(K)", {"K": 2}), assumptions=PD)))
    assert run.pd == frozenset({"K"})
    with pytest.raises(tc.EvaluationError, match="declared positive definite"):
        run(K=-np.eye(2))


def test_torch_factorises_too():
    torch = pytest.importorskip("torch")
    roots = _roots(GP, ("K", "K"))
    values = _values(3)
    run = tc.compile(roots, backend="torch", assumptions=PD)
    assert _kinds(run, values).count("cholesky") == 1
    got = run(K=torch.as_tensor(values["K"]), y=torch.as_tensor(values["y"]))
    want = tc.compile(roots)(K=values["K"], y=values["y"])
    _same([g.numpy() for g in got], want)
    for case in ("indefinite", "not symmetric", "not finite"):
        with pytest.raises(tc.EvaluationError, match="'K' is declared positive definite"):
            run(K=torch.as_tensor(BAD[case]), y=torch.ones(3, dtype=torch.float64))
    auto = tc.compile(roots, assumptions=PD)  # no backend named: torch in, torch out, factorised
    _same([g.numpy() for g in auto(K=torch.as_tensor(values["K"]), y=torch.as_tensor(values["y"]))], want)
    with pytest.raises(tc.EvaluationError, match="'K' is declared positive definite"):
        auto(K=torch.as_tensor(BAD["indefinite"]), y=torch.ones(3, dtype=torch.float64))


def test_a_second_inverse_of_one_matrix_is_not_read_from_the_overwritten_factor():
    from tenscalc.compiler.cholesky import plan_factors
    from tenscalc.compiler.plan import Plan, Step

    k = tc.var("K", 2)  # tc.compile never plans inv(K) twice (nodes are interned): a plan made by hand
    steps = [Step(0, "input", k, (), "K"), Step(1, "inv", tc.inv(k), (0,)), Step(2, "inv", tc.inv(k), (0,))]
    factors = plan_factors(Plan(steps, (1, 2), {"K": 0}), frozenset({0}), 3)
    assert factors.readers == {1: (0, "inv")}


# ------------------------------------------------------------------ declared symmetric matrices

QUADRATIC = "(x *(i,ij->j) A *(j,j->) x) * (z *(k,k->) z)"  # z: a distinct length


def test_a_symmetric_declaration_simplifies_as_the_derivative_does():
    f = tc.parse(QUADRATIC, {"x": 1, "A": 2, "z": 1})
    gradient = tc.gradient(f, "x")  # (A + Aᵀ) x (z·z): nothing declared when differentiating
    declared = tc.compile(gradient, assumptions={"A": "symmetric"})
    at_symmetric = tc.compile(tc.derivative(f, "x", symmetric=["A"]))  # 2 A x (z·z)
    assert len(declared.plan.steps) == len(at_symmetric.plan.steps) < len(tc.compile(gradient).plan.steps)
    rng = np.random.default_rng(5)
    a, x, z = rng.standard_normal((3, 3)), rng.standard_normal(3), rng.standard_normal(4)
    a = a + a.T
    np.testing.assert_allclose(declared(A=a, x=x, z=z), 2 * (a @ x) * (z @ z), rtol=1e-13)
    np.testing.assert_allclose(declared(A=a, x=x, z=z), at_symmetric(A=a, x=x, z=z), rtol=1e-13)


def test_a_plus_its_transpose_is_twice_a():
    f = tc.parse("A + A *(ij,->ji) 1", {"A": 2})
    run = tc.compile(f, assumptions={"A": "symmetric"})
    assert [step.kind for step in run.plan.steps] == ["input", "product"]  # 2A: one scaling
    a = _pd(3)
    np.testing.assert_array_equal(run(A=a), 2 * a)


@pytest.mark.parametrize("word", ["symmetric", "psd", "pd", "diagonal"])
def test_data_that_is_not_symmetric_is_refused(word):
    f = tc.parse(QUADRATIC, {"x": 1, "A": 2, "z": 1})
    run = tc.compile(tc.gradient(f, "x"), assumptions={"A": word})
    a = np.array([[1.0, 2.0], [0.0, 1.0]])
    with pytest.raises(tc.EvaluationError, match=r"'A' is declared .* but its value is not: A\[0, 1\] = 2.0"):
        run(A=a, x=np.ones(2), z=np.ones(3))
    with pytest.raises(tc.EvaluationError, match="'A' is declared .* but its value is not square"):
        run(A=np.ones((2, 3)), x=np.ones(2), z=np.ones(3))


def test_symmetric_up_to_rounding_is_accepted():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 5)), _pd(5)
    s = a @ b @ a.T
    assert not np.array_equal(s, s.T)
    run = tc.compile(tc.parse("A + A *(ij,->ji) 1", {"A": 2}), assumptions={"A": "symmetric"})
    np.testing.assert_array_equal(run(A=s), 2 * s)


@pytest.mark.parametrize("layout", ["strided", "fortran", "offset"])
def test_any_memory_layout(layout):
    k = _pd(8)
    k = {"strided": k[::2, ::2], "fortran": np.asfortranarray(k[:4, :4]), "offset": k[1:5, 1:5]}[layout]
    roots = [tc.parse("inv(K)", {"K": 2}), tc.parse("log(det(K))", {"K": 2})]
    run, generic = tc.compile(roots, assumptions=PD), tc.compile(roots)
    _same(run(K=k), generic(K=k))
    _same(run(K=k), generic(K=k))


@pytest.mark.parametrize("n", [127, 128, 130, 300])
def test_the_inverse_is_symmetric_across_mirrored_blocks(n):
    from tenscalc.compiler.cholesky import MIRROR_BLOCK

    assert MIRROR_BLOCK == 128  # the sizes above straddle it
    k = _pd(n, seed=n)
    f = tc.parse("inv(K)", {"K": 2})
    got = tc.compile(f, assumptions=PD)(K=k)
    np.testing.assert_array_equal(got, got.T)
    _same([got], [tc.compile(f)(K=k)])


# ------------------------------------------------------------------ generated code (tc.to_python)


def _generated(roots, shapes=None, assumptions=PD):
    namespace: dict = {}
    exec(tc.to_python(roots, name="f", shapes=shapes, assumptions=assumptions), namespace)
    return namespace["f"]


@pytest.mark.parametrize("with_shapes", [False, True], ids=["shape-free", "shape-specialised"])
def test_generated_code_matches_the_generic_path(with_shapes):
    roots = _roots(GP, ("K", "K"))
    values = _values(3)  # the size of the BAD matrices
    shapes = {"K": (3, 3), "y": (3,)} if with_shapes else None
    source = tc.to_python(roots, name="f", shapes=shapes, assumptions=PD)
    # checked by its one factor (for inv, the Hessian's inv and log det), as tc.compile checks it
    assert "_symmetric(K, " not in source.split("def f(")[1]
    assert source.count("= _cholesky(K, 'K')") == 1
    assert "_np.linalg.inv" not in source.split("def f(")[1] and "_np.linalg.det" not in source.split("def f(")[1]
    f = _generated(roots, shapes)
    _same(f(K=values["K"], y=values["y"]), tc.compile(roots)(K=values["K"], y=values["y"]))
    for case in ("not symmetric", "not finite", "indefinite", "singular"):
        with pytest.raises(ValueError, match="'K' is declared positive definite"):
            f(K=BAD[case], y=np.ones(3))


@pytest.mark.parametrize("with_shapes", [False, True], ids=["shape-free", "shape-specialised"])
def test_generated_code_without_scipy(monkeypatch, with_shapes):
    roots = _roots(GP, ("K",))
    values = _values(5)
    f = _generated(roots, shapes={"K": (5, 5), "y": (5,)} if with_shapes else None)
    monkeypatch.setitem(sys.modules, "scipy.linalg", None)
    _same(f(K=values["K"], y=values["y"]), tc.compile(roots)(K=values["K"], y=values["y"]))


@pytest.mark.parametrize("with_shapes", [False, True], ids=["shape-free", "shape-specialised"])
def test_generated_log_det_stays_finite(with_shapes):
    k = 10.0 * _pd(400)
    f = _generated([tc.parse("log(det(K))", {"K": 2})], shapes={"K": k.shape} if with_shapes else None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no det computed on the way (it overflows)
        np.testing.assert_allclose(f(K=k)[0], np.linalg.slogdet(k)[1], rtol=1e-12)


def test_generated_code_checks_a_symmetric_declaration():
    f = _generated([tc.parse("A + A *(ij,->ji) 1", {"A": 2})], assumptions={"A": "symmetric"})
    a = _pd(3)
    np.testing.assert_array_equal(f(A=a)[0], 2 * a)
    # tc.compile's error and message (the one text, .generated.SYMMETRIC_HELPER)
    with pytest.raises(tc.EvaluationError, match=r"'A' is declared symmetric but its value is not: A\[0, 1\] = 1.0"):
        f(A=BAD["not symmetric"])


def test_the_cli_writes_the_declarations_into_its_code(capsys):
    from tenscalc import cli

    status = cli.main(["--python", f"declare K 2 pd y 1 expression {GP} derivative wrt K"])
    out = capsys.readouterr().out
    assert status == 0
    source = out[out.index("# Generated by tenscalc") :]
    assert source.count("= _cholesky(K, 'K')") == 1
    namespace: dict = {}
    exec(source, namespace)
    values = _values(3)
    p = tc.parse_problem(f"declare K 2 pd y 1 expression {GP} derivative wrt K")
    _same(
        namespace["f"](K=values["K"], y=values["y"]), tc.compile([p.expr, p.derivative()])(K=values["K"], y=values["y"])
    )


@pytest.mark.parametrize("jit", [True, False])
def test_jax_refuses_data_that_is_not_symmetric(jax_numpy, jit):
    # the declaration simplifies A + Aᵀ to 2A: a value that is not symmetric would give a wrong number
    jnp = jax_numpy
    f = tc.parse(QUADRATIC, {"x": 1, "A": 2, "z": 1})
    run = tc.compile(tc.gradient(f, "x"), assumptions={"A": "pd"}, backend="jax", jit=jit)
    a = np.array([[1.0, 2.0], [0.0, 1.0]])
    for given in (a, jnp.asarray(a)):  # converted, and the backend's own arrays (the call's fast path)
        with pytest.raises(tc.EvaluationError, match=r"'A' is declared .* but its value is not: A\[0, 1\] = 2.0"):
            run(A=given, x=jnp.ones(2), z=jnp.ones(3))
    s, x, z = a + a.T, np.array([1.0, -2.0]), np.array([0.5, 1.0, 2.0])
    got = run(A=jnp.asarray(s), x=jnp.asarray(x), z=jnp.asarray(z))
    np.testing.assert_allclose(np.asarray(got), 2 * s @ x * (z @ z))


def test_jax_inside_the_callers_jit_trusts_the_declaration(jax_numpy):
    import jax

    jnp = jax_numpy
    f = tc.parse(QUADRATIC, {"x": 1, "A": 2, "z": 1})
    run = tc.compile(tc.gradient(f, "x"), assumptions={"A": "symmetric"}, backend="jax")
    s, x, z = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([1.0, -2.0]), np.array([0.5, 1.0, 2.0])
    got = jax.jit(lambda a: run(A=a, x=jnp.asarray(x), z=jnp.asarray(z)))(jnp.asarray(s))  # a tracer: not read
    np.testing.assert_allclose(np.asarray(got), 2 * s @ x * (z @ z))
