"""Sums of dense terms written into one buffer (issue 27 items 1 and 2).

A sum of summand products (the log-sum-exp Hessian ``diag(p) - p pᵀ``, the Rayleigh
quotient's six n×n terms, the optimal-transport ``u ⊗ 1 + 1 ⊗ v - C``) is one
accumulate op: outer products gathered into one GEMM ``U Vᵀ``, diagonal terms added
through the diagonal view, broadcast terms and scaled copies added in place.  Values
are checked against the interpreter on every runner with distinct axis lengths; the
peak memory of such a sum is one result plus small vectors, in the cost model and
measured (tracemalloc).
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler import program
from tenscalc.compiler.accumulate import Broadcast, Copy, Dense, Diagonal, Outer, gather_sums, parts
from tests.cost import traced_peak

LSE = ("log(exp(x) *(i,i->) 1)", {"x": 1})
RAYLEIGH = ("(x *(i,ij->j) A *(j,j->) x) / (x *(i,i->) x)", {"x": 1, "A": 2})


def _hessian(text: str, orders: dict) -> tc.Expr:
    return tc.hessian(tc.parse(text, orders), "x")


#: name -> (expression, shapes with distinct axis lengths)
CASES = {
    "log-sum-exp Hessian (diagonal + outer)": (lambda: _hessian(*LSE), {"x": (5,)}),
    "Rayleigh Hessian (outer x3, A, Aᵀ, diagonal)": (lambda: _hessian(*RAYLEIGH), {"x": (4,), "A": (4, 4)}),
    "broadcast sum u ⊗ 1 + 1 ⊗ v - C": (
        lambda: tc.parse("u *(i,j->ij) 1 + 1 *(i,j->ij) v - C", {"u": 1, "v": 1, "C": 2}),
        {"u": (3,), "v": (5,), "C": (3, 5)},
    ),
    "one broadcast minus a copy, then a scaled broadcast": (
        lambda: tc.parse("u *(i,j->ij) 1 - C - 2 * (1 *(i,j->ij) v)", {"u": 1, "v": 1, "C": 2}),
        {"u": (3,), "v": (5,), "C": (3, 5)},
    ),
    "rectangular outer products, copy and transposed copy": (
        lambda: tc.parse(
            "u *(i,j->ij) v - 3 * (w *(i,j->ij) z) + 2 * B + C *(ji,->ij) 1",
            {"u": 1, "v": 1, "w": 1, "z": 1, "B": 2, "C": 2},
        ),
        {"u": (3,), "v": (5,), "w": (3,), "z": (5,), "B": (3, 5), "C": (5, 3)},
    ),
    "three copies of one 0-d scale (summed, then scaled once) and an outer product": (
        lambda: tc.parse(
            "s *(,ij->ij) A + s *(,ij->ji) A + s *(,ij->ij) B + u *(i,j->ij) w",
            {"s": 0, "A": 2, "B": 2, "u": 1, "w": 1},
        ),
        {"s": (), "A": (4, 4), "B": (4, 4), "u": (4,), "w": (4,)},
    ),
    "a contraction (dense) plus an outer product": (
        lambda: tc.parse("X *(ik,kj->ij) Y + u *(i,j->ij) v", {"X": 2, "Y": 2, "u": 1, "v": 1}),
        {"X": (3, 4), "Y": (4, 5), "u": (3,), "v": (5,)},
    ),
    "order 3: a copy and two broadcasts": (
        lambda: tc.parse("T + u *(i,jk->ijk) 1 - 2 * (1 *(i,jk->ijk) M)", {"T": 3, "u": 1, "M": 2}),
        {"T": (2, 3, 4), "u": (2,), "M": (3, 4)},
    ),
    "delta and diagonal terms": (
        lambda: _hessian("log(exp(x) *(i,i->) 1) + x *(i,i->) x", {"x": 1}),
        {"x": (4,)},
    ),
}


def _values(shapes: dict, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(0.5, 1.5, shape) for name, shape in shapes.items()}


def _accumulates(compiled, values: dict) -> bool:
    compiled(values)
    return any(op.kind == "accumulate" for op in compiled._last[1].ops)


@pytest.mark.parametrize("name", list(CASES))
def test_every_numpy_runner_agrees_with_the_interpreter(name):
    build, shapes = CASES[name]
    expr = build()
    values = _values(shapes)
    expected = tc.evaluate(expr, values)
    compiled = tc.compile(expr)
    assert _accumulates(compiled, values), "the sum is one accumulate op"
    program = compiled._last[1]
    arrays = [values[n] for n in compiled.inputs]
    got = {"loop": program.run_steps(arrays, arrays[0])[0], "first call": tc.compile(expr)(values)}
    got["fused (second call)"] = compiled(values)
    assert compiled._last[1].fused is not None
    namespace: dict = {}
    source = tc.to_python(expr, shapes=shapes)
    assert "_accumulate(" in source
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the source under test
    got["to_python(shapes=)"] = namespace["f"](**values)
    for runner, value in got.items():
        assert np.shape(value) == np.shape(expected), runner
        np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12, err_msg=runner)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_array_library_backends_agree(name, backend):
    if backend == "jax":
        jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
        jax.config.update("jax_enable_x64", True)
    else:
        pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    build, shapes = CASES[name]
    expr = build()
    values = _values(shapes)
    got = tc.compile(expr, backend=backend)(values)
    value = got.numpy() if hasattr(got, "numpy") and backend == "torch" else np.asarray(got)
    np.testing.assert_allclose(value, tc.evaluate(expr, values), rtol=1e-12, atol=1e-12)


def test_complex_and_float32_inputs_keep_their_dtype():
    expr = _hessian(*RAYLEIGH)
    rng = np.random.default_rng(5)
    values = {"x": rng.standard_normal(4) + 1j * rng.standard_normal(4), "A": rng.standard_normal((4, 4))}
    got = tc.compile(expr)(values)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=1e-12, atol=1e-12)
    single = {"x": np.float32([1.0, 2.0, 0.5, 1.5]), "A": np.eye(4, dtype=np.float32) + 0.25}
    got = tc.compile(expr)(single)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, tc.evaluate(expr, single), rtol=1e-5)


def test_parts_sort_terms_by_structure():
    compiled = tc.compile(_hessian(*RAYLEIGH))
    plan, folded = program.fold_squares(compiled.plan)
    resolver = program.ShapeResolver(compiled._graphs, {"x": (4,), "A": (4, 4)})
    gathered, skip = gather_sums(plan, [program.step_shape(step, resolver) for step in plan.steps], folded)
    assert len(skip - folded) == 6  # the six summand products are no longer computed on their own
    (step,) = [s for s in gathered.steps if s.kind == "product" and len(s.data) > 1]
    kinds = sorted(type(p).__name__ for p in parts(step.data, (4, 4)))
    assert kinds == ["Copy", "Copy", "Diagonal", "Outer", "Outer", "Outer"]
    assert {Broadcast, Dense} & {type(p) for p in parts(step.data, (4, 4))} == set()
    assert [p for p in parts(step.data, (4, 4)) if isinstance(p, Copy)][1].perm == (1, 0)
    assert all(p.core.out == p.core.out[:1] for p in parts(step.data, (4, 4)) if isinstance(p, Diagonal))
    assert all(len(p.row.out) == 1 for p in parts(step.data, (4, 4)) if isinstance(p, Outer))


def _sum_op(compiled, shapes: dict):
    program = compiled._bind(shapes)
    # the n x n sum (a vector sum may accumulate too: factoring's x ⊗ (a + b), tenscalc.compiler.factoring)
    (op,) = [op for op in program.ops if op.kind == "accumulate" and len(op.shape) == 2]
    return program, op


@pytest.mark.parametrize("text, orders, extra", [(*LSE, lambda n: {}), (*RAYLEIGH, lambda n: {"A": (n, n)})])
def test_peak_is_one_result_plus_vectors(text, orders, extra):
    """Before: 3 (log-sum-exp) and 7 (Rayleigh) arrays of n² entries at the peak."""
    compiled = tc.compile(_hessian(text, orders))
    peaks = {}
    for n in (200, 400):
        program, op = _sum_op(compiled, {"x": (n,), **extra(n)})
        # one result, a block of at most 1/16 of its rows, vectors
        assert op.cost.step_peak <= n * n * 17 / 16 + 16 * n, op.cost
        peaks[n] = program.cost.peak_memory
        assert peaks[n] <= n * n * 17 / 16 + 32 * n, program.cost  # and the vectors live around it
    assert 3.6 <= peaks[400] / peaks[200] <= 4.1


def test_cost_counts_the_low_rank_gemm():
    compiled = tc.compile(_hessian(*RAYLEIGH))
    n = 300
    _, op = _sum_op(compiled, {"x": (n,), "A": (n, n)})
    # outer products in one GEMM (2 n² r: three, two once the two sharing x are factored),
    # two scaled copies, a diagonal, five adds
    assert 2 * n * n * 2 <= op.cost.flops <= 2 * n * n * 3 + 10 * n * n
    assert op.cost.multiplications >= n * n * 3


def _measured_peak(fn) -> int:
    return traced_peak(fn, warm=2)  # the fused function is written on the second call


@pytest.mark.parametrize("text, orders, extra", [(*LSE, lambda n: {}), (*RAYLEIGH, lambda n: {"A": (n, n)})])
def test_measured_peak_agrees_with_the_model(text, orders, extra):
    n = 600
    expr = _hessian(text, orders)
    shapes = {"x": (n,), **extra(n)}
    values = _values(shapes)
    compiled = tc.compile(expr)
    model = compiled.cost(shapes).peak_memory * 8
    measured = _measured_peak(lambda: compiled(values))
    assert measured <= model + 64 * 1024, (measured, model)
    bound = (n * n * 17 / 16 + 64 * n) * 8  # one n x n array, a block of rows, vectors (was 3 and 7 arrays)
    assert measured <= bound, measured
    namespace: dict = {}
    exec(compile(tc.to_python(expr, shapes=shapes), "<generated>", "exec"), namespace)  # noqa: S102
    generated = _measured_peak(lambda: namespace["f"](**values))
    assert generated <= bound, generated


def test_broadcast_sum_is_one_array():
    """``u ⊗ 1 + 1 ⊗ v - C`` (the optimal-transport dual's exponent): one n×m array."""
    expr = tc.parse("exp(u *(i,j->ij) 1 + 1 *(i,j->ij) v - C) *(ij,->i) 1", {"u": 1, "v": 1, "C": 2})
    n, m = 500, 400
    shapes = {"u": (n,), "v": (m,), "C": (n, m)}
    compiled = tc.compile(expr)
    program, op = _sum_op(compiled, shapes)
    assert op.cost.step_peak <= n * m + 4 * (n + m), op.cost
    # the model counts exp's result beside the sum (two arrays: the loop's peak); the
    # fused function writes exp into the released sum's buffer: one array (was three)
    assert program.cost.peak_memory <= 2 * n * m + 4 * (n + m)
    values = _values(shapes)
    measured = _measured_peak(lambda: compiled(values))
    assert measured <= 1.1 * n * m * 8, measured
    np.testing.assert_allclose(compiled(values), tc.evaluate(expr, values), rtol=1e-12)


def test_a_sum_of_general_products_of_inputs_holds_one_term_at_a_time():
    """``A B + C D + E F``: the three products were each an array alive until the sum
    (peak 4 n² with the sum's own); their operands are inputs, alive anyway, so they are
    computed into the sum's buffer one after another (peak 2 n²: the buffer and one
    product)."""
    f = tc.parse("A *(ij,jk->ik) B + C *(ij,jk->ik) D - 2 * (E *(ij,jk->ik) F)", {k: 2 for k in "ABCDEF"})
    compiled = tc.compile(f)
    n = 400
    cost = compiled.cost({k: (n, n) for k in "ABCDEF"})
    assert cost.peak_memory == 2 * n * n
    rng = np.random.default_rng(6)
    data = {k: rng.standard_normal((3, 4) if k in "ACE" else (4, 5)) for k in "ABCDEF"}
    for _ in range(2):  # the loop, then the fused function
        np.testing.assert_allclose(compiled(data), tc.evaluate(f, data), rtol=1e-13, atol=1e-13)
    namespace: dict = {}
    exec(compile(tc.to_python(f, shapes={k: v.shape for k, v in data.items()}), "<generated>", "exec"), namespace)  # noqa: S102
    np.testing.assert_allclose(namespace["f"](**data), tc.evaluate(f, data), rtol=1e-13, atol=1e-13)
