"""A backend's own compiler over the whole bound program: ``jax.jit`` (the JAX default)
and ``torch.compile`` (``jit=True``).

The jitted function must agree with the interpreter and with the op-by-op run on the
corpus of ``test_backends.py``, keep the backend's arrays and dtypes (float32 stays
float32, with JAX's x64 on or off), and a backend without a compiler must refuse
``jit=True`` clearly.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.errors import EvaluationError
from tenscalc.testing import random_values
from tests.compiler.test_backends import GROUPS, IDS, ORDERS


@pytest.fixture(scope="module")
def jnp(jax_numpy):
    """JAX's NumPy in 64-bit mode (tests/compiler/conftest.py), under the name this file reads."""
    return jax_numpy


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
def test_jax_jitted_agrees_with_eager_and_interpreter(exprs, jnp):
    values = random_values(exprs)
    jitted, eager = tc.compile(exprs, backend="jax"), tc.compile(exprs, backend="jax", jit=False)
    assert jitted.jit and not eager.jit
    arrays = {name: jnp.asarray(value) for name, value in values.items()}
    for _ in range(2):  # the second call runs the cached XLA computation
        got, plain = jitted(arrays), eager(arrays)
        for expr, ours, theirs in zip(exprs, got, plain):
            assert type(ours) is type(jnp.asarray(1.0))  # a JAX array, not NumPy
            expected = tc.evaluate(expr, values)
            np.testing.assert_allclose(np.asarray(ours), expected, rtol=1e-9, atol=1e-12, err_msg=str(expr))
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-9, atol=1e-12)
    program = jitted._last[1]
    assert program.whole is not None and eager._last[1].whole is None


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
def test_jax_float32_stays_float32(exprs, jnp):
    """x64 is on here: constants the program makes (identities, fills) take the inputs' dtype."""
    values = random_values(exprs)
    compiled = tc.compile(exprs, backend="jax")
    got = compiled({name: jnp.asarray(value, dtype=jnp.float32) for name, value in values.items()})
    again = compiled({name: jnp.asarray(value) for name, value in values.items()})  # float64: traced anew
    for expr, single, double in zip(exprs, got, again):
        assert single.dtype == jnp.float32 and double.dtype == jnp.float64, str(expr)
        expected = tc.evaluate(expr, values)
        np.testing.assert_allclose(np.asarray(single), expected, rtol=2e-3, atol=2e-3, err_msg=str(expr))
        np.testing.assert_allclose(np.asarray(double), expected, rtol=1e-9, atol=1e-12, err_msg=str(expr))


def test_jax_without_x64_computes_in_float32(jnp):
    """JAX's default (x64 off) in a fresh process: the jitted program runs in float32."""
    code = (
        "import numpy as np, tenscalc as tc\n"
        "f = tc.parse('log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1', {'X': 2, 'y': 1, 'w': 1})\n"
        "r = np.random.default_rng(0)\n"
        "d = {'X': r.standard_normal((5, 3)), 'y': r.standard_normal(5), 'w': r.standard_normal(3)}\n"
        "exprs = [f, tc.gradient(f, 'w'), tc.hessian(f, 'w')]\n"
        "got = tc.compile(exprs, backend='jax')(d)\n"
        "for e, g in zip(exprs, got):\n"
        "    assert str(g.dtype) == 'float32', g.dtype\n"
        "    np.testing.assert_allclose(np.asarray(g), tc.evaluate(e, d), rtol=1e-4, atol=1e-5)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_jit_refused_where_the_backend_has_no_compiler():
    f = tc.parse("x *(i,i->) x", ORDERS)
    with pytest.raises(EvaluationError, match="no whole-program compiler"):
        tc.compile(f, jit=True)
    assert tc.compile(f, jit=False)(x=np.array([1.0, 2.0])) == 5.0  # the NumPy program as always


@pytest.mark.parametrize("jit", ["False", "yes", 1, 0.0])
def test_jit_must_be_true_false_or_none(jit):
    # jit="False" once compiled with jax.jit (bool of a non-empty string)
    x = tc.var("x", 1)
    with pytest.raises(tc.EvaluationError, match=r"jit must be True, False or None \(the backend's default\), not"):
        tc.compile(x, backend="jax", jit=jit)


def test_jit_survives_pickling(jnp):
    import pickle

    f = tc.parse("x *(i,i->) x", ORDERS)
    eager = pickle.loads(pickle.dumps(tc.compile(f, backend="jax", jit=False)))
    assert eager.jit is False
    assert float(eager(x=jnp.asarray([1.0, 2.0]))) == 5.0


def test_torch_compile_agrees(monkeypatch):
    """``jit=True`` on torch: the program traced by ``torch.compile``'s Dynamo.  The test
    compiles with Dynamo's ``eager`` backend: Inductor's C++ build of even this small
    program took 50 s on the project's shared 2-core machine (the benchmark
    ``benchmarks/jit_backends.py --torch`` runs the default Inductor)."""
    import functools

    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    f = tc.parse("tanh(X *(ij,kj->ik) W) *(ij,j->) v", ORDERS)
    exprs = [f, tc.gradient(f, "W")]
    values = random_values(exprs)
    compiled = tc.compile(exprs, backend="torch", jit=True)
    got = compiled({name: torch.as_tensor(value) for name, value in values.items()})
    assert compiled.jit and compiled._last[1].whole is not None
    for expr, result in zip(exprs, got):
        assert isinstance(result, torch.Tensor) and result.dtype == torch.float64
        np.testing.assert_allclose(result.numpy(), tc.evaluate(expr, values), rtol=1e-9, atol=1e-12)


def test_large_programs_run_op_by_op_unless_jit_is_asked_for(jnp, monkeypatch):
    """XLA's compile time grows faster than the program: past JIT_MAX_OPS ops the default
    runs op by op, and ``jit=True`` compiles anyway (the cap lowered here to 2 ops)."""
    import tenscalc.compiler as compiler

    monkeypatch.setattr(compiler, "JIT_MAX_OPS", 2)
    f = tc.parse("sum(sin(x) .* exp(x)) + sum(x .^ 3)", ORDERS)
    exprs = [f, tc.gradient(f, "x")]
    x = jnp.asarray([0.1, 0.2, 0.3])
    default, forced = tc.compile(exprs, backend="jax"), tc.compile(exprs, backend="jax", jit=True)
    got, again = default(x=x), forced(x=x)
    assert len(default._last[1].ops) > 2
    assert default._last[1].whole is None and forced._last[1].whole is not None
    for expr, ours, theirs in zip(exprs, got, again):
        expected = tc.evaluate(expr, {"x": np.asarray(x)})
        np.testing.assert_allclose(np.asarray(ours), expected, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(theirs), expected, rtol=1e-12)


@pytest.mark.parametrize("jit", [True, False])
def test_a_constant_step_is_not_kept_as_a_tracer(jnp, jit):
    # a program's constant (the chained Rosenbrock's shifted identity) is moved to JAX once and
    # kept: made inside a trace (jax.jit's, or the caller's), it was a tracer, and the next
    # trace (a call with another dtype) raised UnexpectedTracerError
    import jax

    from tests.compiler.test_runners import CORPUS

    exprs = CORPUS["chained Rosenbrock (slices, banded Hessian)"][0]()
    assert "constant" in {step.kind for step in tc.compile(exprs).plan.steps}
    run = tc.compile(exprs, backend="jax", jit=jit)
    x = np.random.default_rng(0).standard_normal(7)
    want = tc.compile(exprs)(x=x)
    first = jax.jit(lambda v: run(x=v))(jnp.asarray(x)) if not jit else run(x=x.astype(np.float32))
    assert first[0].dtype == (np.float64 if not jit else np.float32)
    for got, expected in zip(run(x=x), want):
        assert got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12)
