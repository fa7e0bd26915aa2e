"""Fenced values of ``backend="jax"``: transcendental values computed once (issue 26).

XLA on a CPU copies an operation of one operand (``sin(t)``) into the fusion of every
reader and removes ``optimization_barrier`` before fusing.  On a batch of scalar programs
(the batched Jacobians of ``tc.jacobian_accumulation``) that multiplied the sines and
cosines: the robot arm's 31 Jacobian diagonals evaluated 126 sines and 129 cosines per
point for its 6 and 6, and ran 3.8-6.8x JAX's ``jacfwd``.  The binder marks such values
(``program.costly_shared``) and the JAX backend computes them inside a loop XLA cannot
see through (``backends._fenced_on_cpu``).  Checked on the compiled program's operations
(never on timings), and through the caller's own ``jax.grad``, ``vmap`` and ``hessian``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.program import costly_shared, entrywise_batch

jax = pytest.importorskip("jax", reason="JAX is not installed")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True)
def _x64():
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


def _robot_arm(batch: int):
    from tests.compiler.test_runners import _robot_arm_diagonals

    exprs = _robot_arm_diagonals()
    rng = np.random.default_rng(7)
    values = {f"t{k}": rng.uniform(-1.0, 1.0, batch) for k in range(1, 7)}
    return exprs, values


def _compiled_text(run, values) -> str:
    arrays = {name: jnp.asarray(v) for name, v in values.items()}
    jitted = run.unchecked_jitted(arrays)  # the jax.jit function itself: its compiled text
    return jitted.lower(*[arrays[name] for name in run.inputs]).compile().as_text()


def _count(text: str, op: str) -> int:
    return len(re.findall(rf"= f(?:32|64)\[[0-9,]*\]\{{[0-9,]*\}} {op}\(", text))


def test_the_robot_arms_sines_and_cosines_are_computed_once_each(monkeypatch):
    if jax.default_backend() != "cpu":
        pytest.skip("the fence is a CPU measure")
    exprs, values = _robot_arm(5)  # the corpus's batch length (the diagonals were built for it)
    run = tc.compile(exprs, backend="jax")
    text = _compiled_text(run, values)
    program = run._last[1]
    transcendental = {s for s in program.fenced if program.steps[s].step.kind == "func"}
    assert len(transcendental) == 12  # six sines and six cosines, each read by 4-12 ops
    # one sine and one cosine, each of the six angles stacked (program.stacked_groups)
    assert _count(text, "sine") == 1 and _count(text, "cosine") == 1, (_count(text, "sine"), _count(text, "cosine"))
    assert re.search(r"= f64\[6,5\]\{[0-9,]*\} sine\(", text) and re.search(r"= f64\[6,5\]\{[0-9,]*\} cosine\(", text)
    # the same program unfenced: XLA copies them into the readers' fusions (the measure's reason)
    from tenscalc.compiler.backends import JaxBackend

    monkeypatch.setattr(JaxBackend, "fences", False)
    plain = _compiled_text(tc.compile(exprs, backend="jax"), values)
    assert _count(plain, "sine") + _count(plain, "cosine") > 12
    expected = [tc.evaluate(e, values) for e in exprs]
    for got, want in zip(run(values), expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)


def test_only_a_batch_of_scalar_programs_is_fenced():
    batch = tc.compile([tc.parse("sin(x) .* x"), tc.parse("sin(x) .* y")], backend="jax")
    program = batch._bind({"x": (4,), "y": (4,)})
    assert entrywise_batch(program.ops) and len(program.fenced) == 1
    # a dense program: its exp read by a row and a column sum stays the compiler's to fuse
    ot = tc.compile(tc.gradient(tc.parse("sum(exp(u *(i,j->ij) 1 + 1 *(i,j->ij) v - C))",
                                         {"u": 1, "v": 1, "C": 2}), "u"), backend="jax")  # fmt: skip
    program = ot._bind({"u": (3,), "v": (5,), "C": (3, 5)})
    assert not entrywise_batch(program.ops) and program.fenced == frozenset()
    assert costly_shared(program.ops, program.steps) == frozenset()
    numpy = tc.compile([tc.parse("sin(x) .* x"), tc.parse("sin(x) .* y")])  # NumPy runs each op once anyway
    assert numpy._bind({"x": (4,), "y": (4,)}).fenced == frozenset()


def _fenced_pair():
    run = tc.compile([tc.parse("sin(x) .* x + cos(x)"), tc.parse("sin(x) .* y - cos(x) .* x")], backend="jax")
    x, y = jnp.linspace(0.1, 1.0, 5), jnp.linspace(1.0, 2.0, 5)
    run(x=x, y=y)
    assert len(run._last[1].fenced) == 2
    return run, x, y


def test_the_callers_grad_jacfwd_hessian_and_vmap_go_through_a_fenced_program():
    run, x, y = _fenced_pair()
    xs, ys = np.asarray(x), np.asarray(y)
    grad = jax.grad(lambda x: jnp.sum(run(x=x, y=y)[1]))(x)  # a while loop has no reverse mode: custom_jvp
    np.testing.assert_allclose(grad, np.cos(xs) * ys + np.sin(xs) * xs - np.cos(xs), rtol=1e-12)
    jac = jax.jacfwd(lambda x: run(x=x, y=y)[0])(x)
    np.testing.assert_allclose(np.diag(jac), np.cos(xs) * xs, rtol=1e-12, atol=1e-15)
    hess = jax.hessian(lambda x: jnp.sum(run(x=x, y=y)[0]))(x)
    np.testing.assert_allclose(np.diag(hess), np.cos(xs) - np.sin(xs) * xs, rtol=1e-10)
    mapped = jax.vmap(lambda x: run(x=x, y=y)[0])(jnp.stack([x, 2 * x]))
    np.testing.assert_allclose(mapped[1], np.sin(2 * xs) * 2 * xs + np.cos(2 * xs), rtol=1e-12)


def test_a_nan_probe_runs_the_loop_twice_with_the_same_values():
    run, x, y = _fenced_pair()
    first, _ = run(x=x, y=y)
    with_nan, _ = run(x=x.at[0].set(jnp.nan), y=y)
    assert np.isnan(np.asarray(with_nan)[0])
    np.testing.assert_array_equal(np.asarray(with_nan)[1:], np.asarray(first)[1:])


def test_float32_stays_float32_through_a_fence():
    run, x, y = _fenced_pair()
    got = run(x=x.astype(jnp.float32), y=y.astype(jnp.float32))
    assert all(r.dtype == jnp.float32 for r in got)
    np.testing.assert_allclose(got[0], np.sin(np.asarray(x)) * np.asarray(x) + np.cos(np.asarray(x)), rtol=1e-6)


def test_a_waves_values_of_one_function_are_computed_on_their_operands_stacked():
    # two square roots and two sines of different operands, each read twice: one sqrt of a
    # (2, n) stack and one sine of a (2, n) stack; the exponent 1.5 is its own group
    exprs = [
        tc.parse("sqrt(x .* y) .* x + sqrt(x + y) .* y + sin(x .* y) + sin(x + y) + (x .* y) .^ 1.5"),
        tc.parse("sqrt(x .* y) - sqrt(x + y) .* x + sin(x .* y) .* y - sin(x + y) .* x - (x .* y) .^ 1.5 .* x"),
    ]
    run = tc.compile(exprs, backend="jax")
    rng = np.random.default_rng(3)
    values = {"x": rng.uniform(0.5, 2.0, 7), "y": rng.uniform(0.5, 2.0, 7)}
    expected = [tc.evaluate(e, values) for e in exprs]
    for got, want in zip(run({k: jnp.asarray(v) for k, v in values.items()}), expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    if jax.default_backend() != "cpu":
        return
    text = _compiled_text(run, values)
    assert re.search(r"= f64\[2,7\]\{[0-9,]*\} sine\(", text), "the two sines are not computed as one stack"
    assert re.search(r"= f64\[2,7\]\{[0-9,]*\} sqrt\(", text), "the two square roots are not computed as one stack"
    # float32 through the stacks
    got32 = run({k: jnp.asarray(v, dtype=jnp.float32) for k, v in values.items()})
    for got, want in zip(got32, expected, strict=True):
        assert got.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5)


def test_a_long_cheap_chain_read_by_several_ops_is_fenced_a_short_one_is_not():
    # XLA copies a value's whole cone of cheap arithmetic into each reader's fusion: the
    # batched Roe flux ran 2.2x JAX's vector operations. A cone of FENCED_CONE ops or more
    # (times the readers beyond the first) is computed once; a short one is left to XLA.
    from tenscalc.compiler.program import FENCED_CONE

    def chain(length: int) -> str:
        text = "x"
        for k in range(length):
            text = f"({text} .* y + {k + 1})"
        return text

    long, short = chain(FENCED_CONE), chain(2)
    for body, fenced in ((long, True), (short, False)):
        exprs = [tc.parse(f"{body} .* x"), tc.parse(f"{body} .* y")]  # two readers
        program = tc.compile(exprs)._bind({"x": (4,), "y": (4,)})
        marked = costly_shared(program.ops, program.steps)
        assert bool(marked) is fenced, (len(program.ops), marked)
    run = tc.compile([tc.parse(f"{long} .* x"), tc.parse(f"{long} .* y")], backend="jax")
    rng = np.random.default_rng(5)
    values = {"x": rng.uniform(0.5, 1.0, 6), "y": rng.uniform(0.5, 1.0, 6)}
    got = run({k: jnp.asarray(v) for k, v in values.items()})
    assert len(run._last[1].fenced) >= 1
    for g, e in zip(got, [tc.parse(f"{long} .* x"), tc.parse(f"{long} .* y")], strict=True):
        np.testing.assert_allclose(np.asarray(g), tc.evaluate(e, values), rtol=1e-12)
