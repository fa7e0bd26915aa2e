"""The fused path (``tenscalc/compiler/fused.py``): a bound NumPy program run as one
generated function, elementwise steps inline, buffers nobody needs any more reused.

It must compute exactly what the loop of closures computes (the same ufuncs on the
same operands in the same order: equal bit for bit), never write into an array a
view or a later step still reads, hand out arrays the caller may write to, and leave
inputs that are not float64 to the loop.
"""

from __future__ import annotations

import random
import re
import threading
import tracemalloc
import warnings
from dataclasses import replace

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler import fused as fused_module
from tenscalc.compiler.cost import OpCost
from tenscalc.compiler.fused import Call, Chain, Slot, View, fresh_results, fuse
from tenscalc.compiler.lowered import Op
from tenscalc.compiler.program import Program
from tests.fuzz.generate import Generator

EXTENDED = "sum(100*(x[1::2] - x[::2].^2).^2 + (1 - x[::2]).^2)"
CHAINED = "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)"


def _program(run: tc.CompiledFunction) -> Program:
    assert run._last is not None
    return run._last[1]


def _both(run: tc.CompiledFunction, values: dict) -> tuple[tuple, tuple]:
    """(the fused function's results, the loop's results) for ``values``."""
    run(**values)  # the first call binds and runs the loop; the fused function is written on the second
    got = run(**values)
    got = got if isinstance(got, tuple) else (got,)
    program = _program(run)
    arrays = [run._backend.convert(name, values[name]) for name in run.inputs]
    loop = replace(program, fused=None).run(arrays[: run._slot_count], arrays[0] if arrays else None)
    return got, loop


def _same_bits(got: tuple, expected: tuple) -> None:
    for g, e in zip(got, expected, strict=True):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)  # nan == nan here; no tolerance


HAND_PICKED = [
    (EXTENDED, {"x": 1}),
    (CHAINED, {"x": 1}),
    # a squared vector read through two views: its buffer must not be reused while they live
    ("sum((x.^2)[1:] .* (x.^2)[:-1]) + sum(exp(x)[::2] .* 3)", {"x": 1}),
    ("sum(log(1 + exp(-(A *(ij,j->i) w))) ) + 0.5 * (w *(i,i->) w)", {"A": 2, "w": 1}),
    ("sum(tanh(W *(ij,j->i) x) .^ 2) - sum(relu(x)[1:] *(i,->i) 2)", {"W": 2, "x": 1}),
    ("sum(sqrt(x .^ 2 + 1) ./ (x .^ 2 + 2) + (x + 3) .^ (-2) + abs(x) .^ 1.5)", {"x": 1}),
    ("sum((X - Y) .* (X - Y)) + sum(X[1:, :] .* Y[:-1, :])", {"X": 2, "Y": 2}),
]


@pytest.mark.parametrize(("text", "orders"), HAND_PICKED, ids=[t[:30] for t, _ in HAND_PICKED])
def test_hand_picked_functions_and_derivatives_agree_bit_for_bit_with_the_loop(text, orders):
    f = tc.parse(text, orders)
    names = sorted(orders)
    exprs = [f] + [tc.gradient(f, n) for n in names] + [tc.hessian(f, names[-1])]
    rng = np.random.default_rng(7)
    lengths = {"x": (10,), "w": (4,), "A": (6, 4), "W": (10, 10), "X": (5, 3), "Y": (5, 3)}
    values = {n: rng.uniform(0.2, 1.5, lengths[n]) for n in names}
    for exprs_compiled in (exprs, exprs[1:2], exprs[-1:]):
        run = tc.compile(exprs_compiled)
        got, loop = _both(run, values)
        assert _program(run).fused is not None
        _same_bits(got, loop)
        for g, e in zip(got, exprs_compiled):
            np.testing.assert_allclose(g, tc.evaluate(e, values), rtol=1e-11, atol=1e-12)
        # other values through the same fused function: nothing is left over from a call
        other = {n: rng.uniform(0.2, 1.5, lengths[n]) for n in names}
        for point in (other, values, other):
            for g, e in zip(run(**point), exprs_compiled):
                np.testing.assert_allclose(g, tc.evaluate(e, point), rtol=1e-11, atol=1e-12)


def _random_problems(count: int):
    rng = random.Random(20261124)
    for seed in range(count):
        gen = Generator(random.Random(rng.random()))
        problem = gen.problem()
        yield seed, problem.text, problem.orders


@pytest.mark.parametrize(("seed", "text", "orders"), list(_random_problems(40)), ids=lambda v: str(v)[:30])
def test_random_expressions_and_their_derivatives_agree_bit_for_bit_with_the_loop(seed, text, orders):
    f = tc.parse(text, orders)
    names = sorted(f.variables)
    exprs = [f] + [tc.derivative(f, n) for n in names]
    run = tc.compile(exprs)
    rng = np.random.default_rng(seed)
    values = {n: rng.uniform(0.3, 1.2, (3,) * orders[n]) for n in names}
    with np.errstate(all="ignore"):
        got, loop = _both(run, values)
    _same_bits(got, loop)


def test_the_extended_rosenbrock_gradient_reuses_buffers_and_writes_its_parts_in_place():
    run = tc.compile(tc.gradient(tc.parse(EXTENDED), "x"))
    x = np.random.default_rng(1).uniform(-2, 2, 10)
    run(x=x)
    assert _program(run).fused is None  # the first call does not pay for writing it
    run(x=x)
    source = _program(run).fused_source
    assert re.search(r"out=env\[\d+\]", source)  # a dead slot's buffer taken over
    assert re.search(r"out=_o\d+\[", source)  # a part computed straight into the result
    assert "_o" in source and "] = env[" not in source.split("_empty")[1]  # no part copied in
    # by hand: the gradient of the extended Rosenbrock function
    odd, even = x[1::2], x[::2]
    expected = np.empty_like(x)
    expected[::2] = -400 * even * (odd - even**2) - 2 * (1 - even)
    expected[1::2] = 200 * (odd - even**2)
    np.testing.assert_allclose(run(x=x), expected, rtol=1e-13)


def test_a_buffer_a_view_still_reads_is_never_reused():
    # slot 1 = x * x; slot 2 = a view of slot 1; slot 3 = slot 1 + 1 with slot 1 released
    # there: slot 1's buffer would be free, but slot 2 still shows into it
    square = Chain((Call(np.multiply, (Slot(0), Slot(0))),))
    view = View(1, (slice(1, None),))
    plus = Chain((Call(np.add, (Slot(1), fused_module.Const(1.0))),))
    times = Chain((Call(np.multiply, (Slot(3), fused_module.Const(2.0))),))
    shapes = [(4,), (4,), (3,), (4,), (4,)]
    free = OpCost(0, 0, 0)
    ops = [  # closures and their descriptions (the binder reads both from the op's record)
        Op("func", 1, (0,), (), shapes[1], free, lambda env: env[0] * env[0], None, square),
        Op("slice", 2, (1,), (), shapes[2], free, lambda env: env[1][1:], None, view),
        Op("add", 3, (1,), (1,), shapes[3], free, lambda env: env[1] + 1.0, None, plus),
        Op("product", 4, (3,), (3,), shapes[4], free, lambda env: env[3] * 2.0, None, times),
    ]
    made = fuse(ops, shapes, (0,), (2, 4), 5, {})
    assert made is not None
    run, source = made
    assert "out=env[1]" not in source  # slot 1 is aliased by the view
    assert "out=env[3]" in source  # slot 3 is not: its buffer is reused
    x = np.arange(4.0)
    view_value, doubled = run([x], x)
    np.testing.assert_array_equal(view_value, (x * x)[1:])
    np.testing.assert_array_equal(doubled, (x * x + 1) * 2)
    assert not fresh_results(ops, shapes, (2, 4), {})  # a view is handed out: the caller's copy check stays
    assert fresh_results(ops, shapes, (4,), {})


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_inputs_that_are_not_float64_run_the_loop_and_keep_their_dtype(dtype):
    f = tc.parse("sum(exp(x) .* x .^ 2) + sum((1 - x[1:]) .^ 2)")
    run = tc.compile([f, tc.gradient(f, "x")])
    x = (np.linspace(0.1, 0.9, 7) * (1 + 0.5j if dtype is np.complex128 else 1)).astype(dtype)
    value, grad = run(x=x)
    assert grad.dtype == dtype
    got, loop = _both(run, {"x": x})
    _same_bits(got, loop)
    np.testing.assert_allclose(grad, tc.evaluate(tc.gradient(f, "x"), {"x": x}), rtol=1e-5)


def test_results_are_the_callers_to_write_and_never_views_of_the_inputs():
    x = tc.var("x", 1)
    run = tc.compile([x, x[1:], x * 2.0, tc.parse("x .^ 2", {"x": 1}), x[::2] + 1.0])
    inputs = np.arange(1.0, 7.0)
    kept = inputs.copy()
    results = run(x=inputs)
    for result in results:
        assert not np.shares_memory(result, inputs)
        result[...] = -1.0  # writable
    np.testing.assert_array_equal(inputs, kept)


def test_concurrent_calls_from_threads_agree_with_sequential_ones():
    f = tc.parse(EXTENDED)
    run = tc.compile([f, tc.gradient(f, "x"), tc.hessian(f, "x")])
    points = [np.random.default_rng(k).uniform(-2, 2, 40) for k in range(8)]
    expected = [run(x=x) for x in points]
    failures: list[str] = []

    def work(k: int) -> None:
        for _ in range(200):
            got = run(x=points[k])
            for g, e in zip(got, expected[k]):
                if not np.array_equal(g, e):
                    failures.append(f"thread {k}")
                    return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_programs_over_the_size_limit_keep_the_loop(monkeypatch):
    monkeypatch.setattr(fused_module, "MAX_OPS", 3)
    f = tc.parse(CHAINED)
    run = tc.compile(tc.gradient(f, "x"))
    x = np.linspace(-1, 1, 8)
    run(x=x)
    got = run(x=x)
    assert _program(run).fused is None and _program(run).runs == 2
    np.testing.assert_allclose(got, tc.evaluate(tc.gradient(f, "x"), {"x": x}), rtol=1e-13)


def test_reusing_buffers_lowers_the_peak_memory_of_a_call():
    # elementwise steps on 10^6 entries: the loop allocates a new array for each, the
    # fused function writes most into the buffers of released ones
    f = tc.parse("sum(exp(x) .* sin(x) + cos(x) .^ 2 - x ./ (1 + x .^ 2))")
    run = tc.compile(tc.gradient(f, "x"))
    x = np.linspace(0.1, 2.0, 1_000_000)
    run(x=x)
    run(x=x)
    program = _program(run)
    arrays = [x]

    def peak(call) -> int:
        tracemalloc.start()
        try:
            call()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    fused_peak = peak(lambda: program.run(arrays, x))
    loop_peak = peak(lambda: replace(program, fused=None).run(arrays, x))
    # measured: 7 arrays of x's size at the peak against 8 (the plan keeps five
    # summands alive until the final sum: that part of the peak is the plan's)
    assert fused_peak <= loop_peak - x.nbytes


def test_a_network_gradient_writes_elementwise_steps_into_released_contraction_results():
    from benchmarks import classes

    run = tc.compile(classes.deep_build(tc, 3))
    data = classes.deep_data(3, m=12, h=5)
    got, loop = _both(run, {name: data[name] for name in run.inputs})
    _same_bits(got, loop)
    # tanh(X W1ᵀ) into the buffer of X W1ᵀ (a matmul's result, released right there)
    assert re.search(r"= _u_tanh\(env\[(\d+)\], out=env\[\1\]\)", _program(run).fused_source)
    np.testing.assert_allclose(got[0], classes.deep_numpy(data)[0], rtol=1e-12)


def test_the_terms_of_a_product_are_added_in_place_and_agree_bit_for_bit():
    from benchmarks import classes

    f = tc.parse(classes.SOFTMAX, {"X": 2, "W": 2, "Y": 2})
    run = tc.compile(tc.hessian(f, "W"))
    rng = np.random.default_rng(3)
    values = {"X": rng.standard_normal((7, 4)), "W": rng.standard_normal((3, 4)), "Y": np.eye(3)[rng.integers(0, 3, 7)]}
    got, loop = _both(run, {name: values[name] for name in run.inputs})
    assert "_s = _u_add(_s, " in _program(run).fused_source  # a sum of terms, accumulated
    _same_bits(got, loop)
    np.testing.assert_allclose(got[0], tc.evaluate(tc.hessian(f, "W"), values), rtol=1e-12, atol=1e-13)


def test_numbers_warn_as_the_loop_warns():
    # 0-d steps: the closures use Python operators (NumPy scalar arithmetic, "scalar
    # divide" in its warning); the fused function writes the same operators there
    f = tc.parse("1 / (sum(x) - 3) + sum(x .^ 2)")
    run = tc.compile([f, tc.gradient(f, "x")])
    x = np.ones(3)

    def recorded():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values = run(x=x)
        return values, [(type(w.message).__name__, str(w.message)) for w in caught]

    loop_values, loop_warnings = recorded()
    fused_values, fused_warnings = recorded()
    assert _program(run).fused is not None
    assert loop_warnings and fused_warnings == loop_warnings
    _same_bits(fused_values, loop_values)


@pytest.mark.parametrize("text", [EXTENDED, CHAINED, "sum(exp(x[1:] .* x[:-1])) + sum((x[2:] - x[:-2] .^ 3) .^ 2)"])
def test_banded_hessians_are_written_inline_and_agree_bit_for_bit(text):
    f = tc.parse(text)
    run = tc.compile(tc.hessian(f, "x"))
    x = np.random.default_rng(5).uniform(-1.5, 1.5, 12)
    got, loop = _both(run, {"x": x})
    _same_bits(got, loop)
    source = _program(run).fused_source
    # a banded step is a tuple of its bands' values, written out (no closure per band)
    assert re.search(r"env\[\d+\] = \(.*env\[\d+\]\[\d+\]", source)
    np.testing.assert_allclose(got[0], tc.evaluate(tc.hessian(f, "x"), {"x": x}), rtol=1e-12, atol=1e-12)
