"""Compile time linear in the size of the DAG (issue #13, items 6 and 8).

Counted, not timed: the plan builder's letter work (every ``find`` and
``union`` on letter classes) must grow at most ~2.3x when the expression doubles.
Before, ``PlanBuilder._resolve`` walked every letter created so far for each
product, which made compiling a 10,000-deep nesting take minutes.

The same holds for all the Python work of ``tc.compile`` and of binding the plan
to shapes on the first call (lines executed, counted with ``sys.settrace``), for
the shared-pair search (once quadratic in the operands of a fused term: the
gradient of a deep nesting fuses thousands) and for opt_einsum's path search
(once per distinct contraction, not per term of a long sum; never for an
entrywise product of many operands).
"""

from __future__ import annotations

import sys

import numpy as np
import opt_einsum
import pytest

import tenscalc as tc
from benchmarks.compile_scaling import build_nest, build_sinsum, build_sum
from tenscalc.compiler import program
from tenscalc.core.letters import LetterClasses

GROWTH = 2.3


# the families of benchmarks/compile_scaling.py, at test sizes
wide_sum = build_sinsum  # sum_k (k+1) sin((k+1) x): n products, n functions, one sum


def deep_gradient(n: int):
    """The gradient of sum_i sin(sin(...sin(x_i))), n deep: a chain of n elementwise products."""
    return tc.gradient(build_nest(n), "x")


def quadratic_forms(n: int):
    """The gradient (unsimplified) of sum_k (x + k) A (x + k): n distinct fused terms."""
    return tc.derivative(build_sum(n), "x", simplify=False)


def deep_nesting(n: int):
    """The gradient (unsimplified) of sum_i sin(sin(...sin(x_i))), n deep."""
    return tc.derivative(build_nest(n), "x", simplify=False)


def counting(owner, name: str, monkeypatch, calls: list[int]) -> None:
    """Replace ``owner.name`` by a wrapper that adds one to ``calls[0]`` per call."""
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


SHAPES = {"x": (3,), "A": (3, 3)}


def compile_and_bind(expr):
    run = tc.compile(expr)
    return run.cost({name: SHAPES[name] for name in run.inputs})  # binds the plan, as a first call does


def lines_executed(expr) -> int:
    """Python lines run (in every module: tenscalc, opt_einsum, the standard library)
    while compiling ``expr`` and binding its plan to shapes."""
    count = [0]

    def trace(frame, event, arg):
        count[0] += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        compile_and_bind(expr)
    finally:
        sys.settrace(previous)
    return count[0]


@pytest.mark.parametrize(
    "build, n", [(wide_sum, 200), (quadratic_forms, 100), (deep_nesting, 150), (deep_gradient, 150)]
)
def test_compile_and_bind_work_grows_linearly(build, n):
    small = lines_executed(build(n))
    large = lines_executed(build(2 * n))
    assert small > 100 * n  # the count measures something
    assert large <= GROWTH * small, (small, large)


def test_shared_pair_search_is_linear_in_the_operands(monkeypatch):
    """A fused term of n operands sharing one letter: at most one candidate pair per
    letter, not n² pairs (every pair was tried: 20 million for 10,000 operands)."""
    calls = [0]
    counting(program, "_pair_key", monkeypatch, calls)
    counts = []
    for n in (200, 400):
        calls[0] = 0
        compile_and_bind(deep_nesting(n))
        counts.append(calls[0])
    assert counts[1] <= GROWTH * max(counts[0], 1), counts


def test_paths_searched_once_per_distinct_contraction(monkeypatch):
    calls = [0]
    counting(opt_einsum, "contract_path", monkeypatch, calls)
    counts = []
    for n in (100, 200):
        calls[0] = 0
        compile_and_bind(quadratic_forms(n))
        counts.append(calls[0])
    # the terms of the sum repeat a few contractions: their number does not grow with n
    assert 0 < counts[0] == counts[1] < 20, counts
    calls[0] = 0
    compile_and_bind(deep_nesting(400))  # one entrywise product of 400 operands: a fold, no search
    assert calls[0] < 10, calls[0]


def test_entrywise_fold_agrees_with_einsum():
    """The fold path of an entrywise product of many operands, some transposed."""
    rng = np.random.default_rng(3)
    specs = ["ab" if k % 3 else "ba" for k in range(17)]
    shapes = [(2, 3) if spec == "ab" else (3, 2) for spec in specs]
    eq = ",".join(specs) + "->ab"
    path, info = program.choose_path(eq, shapes, 6)
    assert len(path) == 16 and info.opt_cost == 16 * 6 and info.largest_intermediate == 6
    arrays = [rng.normal(size=shape) for shape in shapes]
    kernel = tc.compiler.backends.get_backend("numpy").contraction(eq, shapes, path)
    np.testing.assert_allclose(kernel(*arrays), np.einsum(eq, *arrays), rtol=1e-12)


def test_quadratic_forms_compile_and_agree():
    n = 60
    g = quadratic_forms(n)
    x = np.array([0.3, -1.2, 2.0])
    a = np.arange(9.0).reshape(3, 3) / 9 + np.eye(3)
    expected = sum((a + a.T) @ (x + k) for k in range(n))
    np.testing.assert_allclose(tc.compile(g)(x=x, A=a), expected, rtol=1e-12)
    np.testing.assert_allclose(tc.evaluate(g, {"x": x, "A": a}), expected, rtol=1e-12)


def letter_work(expr, monkeypatch) -> int:
    calls = [0]
    with monkeypatch.context() as patch:
        counting(LetterClasses, "find", patch, calls)
        counting(LetterClasses, "union", patch, calls)
        tc.compile(expr)
    return calls[0]


# (the products of wide_sum are all plain: their terms are built without letter classes)
@pytest.mark.parametrize("build, n", [(quadratic_forms, 200), (deep_gradient, 300)])
def test_plan_work_grows_linearly(build, n, monkeypatch):
    small = letter_work(build(n), monkeypatch)
    large = letter_work(build(2 * n), monkeypatch)
    assert small > n  # the count measures something
    assert large <= GROWTH * small, (small, large)


def test_wide_sum_compiles_and_agrees():
    e = wide_sum(300)
    x = np.array([0.3, -1.2, 2.0])
    expected = x + sum((k + 1) * np.sin((k + 1) * x) for k in range(1, 300))
    np.testing.assert_allclose(tc.compile(e)(x=x), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tc.evaluate(e, {"x": x}), expected, rtol=1e-10, atol=1e-10)


def test_deep_gradient_compiles_and_agrees():
    depth = 1000
    g = deep_gradient(depth)
    x = np.array([0.7, -0.2, 1.3])
    # chain rule by hand: d/dx sin^n(x) = prod_k cos(sin^k(x))
    value, expected = x.copy(), np.ones_like(x)
    for _ in range(depth):
        expected *= np.cos(value)
        value = np.sin(value)
    np.testing.assert_allclose(tc.compile(g)(x=x), expected, rtol=1e-10)
    np.testing.assert_allclose(tc.evaluate(g, {"x": x}), expected, rtol=1e-10)
