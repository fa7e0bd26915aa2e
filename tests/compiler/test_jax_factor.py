"""A matrix declared positive definite on JAX (tenscalc/compiler/jax_factor.py): one Cholesky
factor per call, jitted or not, the numbers of the NumPy runners (within rounding), and the
NumPy runners' own error, word for word, where the value is not what was declared."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tests.compiler.test_cholesky import BAD as NUMPY_BAD

GP = "y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))"
PD = {"K": "pd"}

#: values of K that are not positive definite, each refused by every runner: the NumPy
#: runners' cases and an inf mirrored off the diagonal (symmetric, not finite)
BAD = {**NUMPY_BAD, "inf off the diagonal": np.array([[2.0, np.inf, 0.0], [np.inf, 2.0, 0.0], [0.0, 0.0, 2.0]])}


def _pd(n: int, seed: int = 0) -> np.ndarray:
    b = np.random.default_rng(seed).standard_normal((n, n))
    return b @ b.T / n + np.eye(n)


def _gp(order: int) -> list[tc.Expr]:
    roots = [tc.parse(GP, {"y": 1, "K": 2})]
    for _ in range(order):
        roots.append(tc.derivative(roots[-1], "K"))
    return roots


def _kinds(run: tc.CompiledFunction, shapes: dict) -> list[str]:
    return [op.kind for op in run._bind(shapes).ops]


def _numpy_error(roots, values) -> str:
    with pytest.raises(tc.EvaluationError) as caught:
        tc.compile(roots, assumptions=PD)(values)
    return str(caught.value)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jitted"])
def test_jax_factorises_with_the_numpy_runners_numbers(jax_numpy, jit):
    jnp = jax_numpy
    roots = _gp(2)  # the value, the gradient and the Hessian: inv and log det from one factor
    k, y = _pd(4), np.random.default_rng(1).standard_normal(4)
    run = tc.compile(roots, backend="jax", assumptions=PD, jit=jit)
    assert _kinds(run, {"K": (4, 4), "y": (4,)}).count("cholesky") == 1
    got = run(K=jnp.asarray(k), y=jnp.asarray(y))
    want = tc.compile(roots)(K=k, y=y)  # undeclared: NumPy's LU
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jitted"])
@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("text", ["inv(K)", "det(K)", "log(det(K))", GP])
def test_data_that_is_not_positive_definite_gets_the_numpy_runners_error(jax_numpy, jit, case, text):
    jnp = jax_numpy
    roots = [tc.parse(text, {"y": 1, "K": 2})]
    values = {"K": BAD[case], "y": np.ones(3)}
    values = {name: values[name] for name in tc.compile(roots).inputs}
    expected = _numpy_error(roots, values)
    assert "'K' is declared positive definite (pd)" in expected
    run = tc.compile(roots, backend="jax", assumptions=PD, jit=jit)
    with pytest.raises(tc.EvaluationError) as caught:
        run({name: jnp.asarray(value) for name, value in values.items()})
    assert str(caught.value) == expected
    with pytest.raises(tc.EvaluationError) as caught:  # NumPy arrays handed to JAX: the same
        run(values)
    assert str(caught.value) == expected


def test_the_jitted_function_handed_out_checks_the_declaration(jax_numpy):
    jnp = jax_numpy
    roots = _gp(1)
    good = {"K": jnp.asarray(_pd(3)), "y": jnp.ones(3)}
    run = tc.compile(roots, backend="jax", assumptions=PD)
    jitted = run.jitted(good)
    order = run.inputs
    np.testing.assert_allclose(np.asarray(jitted(*[good[n] for n in order])[1]), np.asarray(run(good)[1]))
    bad = {"K": jnp.asarray(BAD["indefinite"]), "y": jnp.ones(3)}
    with pytest.raises(tc.EvaluationError, match="breaks down at row 1"):
        jitted(*[bad[n] for n in order])


def test_float32_stays_float32(jax_numpy):
    jnp = jax_numpy
    roots = _gp(1)
    k, y = _pd(5).astype(np.float32), np.ones(5, np.float32)
    got = tc.compile(roots, backend="jax", assumptions=PD)(K=jnp.asarray(k), y=jnp.asarray(y))
    want = tc.compile(roots)(K=k.astype(np.float64), y=y.astype(np.float64))
    for g, w in zip(got, want):
        assert g.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-4, atol=2e-5)


def test_a_complex_matrix_takes_lu_and_is_checked(jax_numpy):
    jnp = jax_numpy
    roots = tc.parse("inv(K)", {"K": 2})
    k = _pd(3).astype(np.complex128)
    run = tc.compile(roots, backend="jax", assumptions=PD)
    np.testing.assert_allclose(np.asarray(run(K=jnp.asarray(k))), np.linalg.inv(k), rtol=1e-12)
    hermitian = k + 1j * np.array([[0, 1, 0], [-1, 0, 0], [0, 0, 0]])
    expected = _numpy_error(roots, {"K": hermitian})
    with pytest.raises(tc.EvaluationError) as caught:
        run(K=jnp.asarray(hermitian))
    assert str(caught.value) == expected


@pytest.mark.parametrize("path", ["potri", "cho_solve"])
def test_both_inverses_and_their_derivative_under_the_callers_grad(jax_numpy, monkeypatch, path):
    """LAPACK's potri through SciPy (a CPU) and XLA's cho_solve (a device, or no SciPy) give the
    inverse; jax.grad through the compiled function agrees with JAX's own LU derivative."""
    jnp = jax_numpy
    import jax

    from tenscalc.compiler import jax_factor

    if path == "cho_solve":
        monkeypatch.setattr(jax_factor, "_potri_routine", lambda dtype: None)
    run = tc.compile(tc.parse(GP, {"y": 1, "K": 2}), backend="jax", assumptions=PD)
    k, y = jnp.asarray(_pd(4, seed=2)), jnp.asarray(np.arange(1.0, 5.0))

    def own(k):
        return y @ jnp.linalg.solve(k, y) + jnp.linalg.slogdet(k)[1]

    np.testing.assert_allclose(float(run(K=k, y=y)), float(own(k)), rtol=1e-12)
    # K symmetric: JAX's own gradient is the symmetric one along symmetric directions
    direction = jnp.asarray(_pd(4, seed=3))
    program = run.unchecked_jitted(K=k, y=y)

    def at(m):
        return program(*(m if name == "K" else y for name in run.inputs))

    ours = jax.jvp(lambda t: at(k + t * direction), (0.0,), (1.0,))[1]
    theirs = jax.jvp(lambda t: own(k + t * direction), (0.0,), (1.0,))[1]
    np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-10)
    batch = jnp.stack([k, 2 * k])  # vmap: one matrix at a time through the callback
    values = jax.vmap(at)(batch)
    np.testing.assert_allclose(np.asarray(values), [float(own(k)), float(own(2 * k))], rtol=1e-12)


def test_the_host_inverse_is_potri_mirrored():
    pytest.importorskip("scipy")
    from tenscalc.compiler.jax_factor import host_potri_inverse

    for n in (1, 3, 130, 257):  # across the mirror's blocks of 128 rows
        k = _pd(n, seed=n)
        got = host_potri_inverse(np.linalg.cholesky(k))
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, got.T)
        np.testing.assert_allclose(got @ k, np.eye(n), atol=1e-10)
    assert np.isnan(host_potri_inverse(np.zeros((2, 2)))).all()  # potri fails: NaN, the flag names it


def test_the_factorised_matrix_is_not_read_on_the_host_before_the_call(jax_numpy):
    """Its factor's flag checks it inside the program: the call hands JAX's arrays straight to
    jit, with no host pass over K (one declared only symmetric has its check on the host)."""
    roots = _gp(1)
    declared = tc.compile(roots, backend="jax", assumptions=PD)
    assert declared._checks == () and declared._native is not None
    symmetric = tc.compile(roots, backend="jax", assumptions={"K": "symmetric"})
    assert symmetric._checks != () and symmetric._native is None


def test_a_failed_flag_without_the_value_still_names_the_matrix():
    """whole_call's function traced without its inputs' names (a backend's own caller): the
    flag's error has the NumPy runners' opening words, without the value's details."""
    from tenscalc.compiler.backends import _raise_flagged

    with pytest.raises(tc.EvaluationError, match=r"^'K' is declared positive definite \(pd\) but its value is not"):
        _raise_flagged([("pd", "K")], np.array([False, True]))
    with pytest.raises(tc.EvaluationError, match="breaks down at row 1"):  # with the value: NumPy's words
        _raise_flagged([("pd", "K")], np.array([False, True]), {"K": BAD["indefinite"]})
