"""Squares read by one single-operand product term are folded into it at bind time
(``sum(r.^2)`` runs as the dot product ``r · r``): the same numbers as the
interpreter, no temporary for the square, and nothing folded that another step
or the caller still reads."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.program import fold_squares

CASES = [
    # (expression, orders, squares folded)
    ("sum((x - 1).^2)", {"x": 1}, 1),
    ("sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)", {"x": 1}, 2),  # Rosenbrock: x[:-1]^2 is read by an add
    ("sum((A*x - b).^2)", {"A": 2, "x": 1, "b": 1}, 1),  # the base's last reader was the square
    ("sum(X.^2)", {"X": 2}, 1),  # an order-2 inner product
    ("sum((x - 1).^2) + sum(x - 1)", {"x": 1}, 1),
    ("sum((x - 1).^2) * (x - 1)", {"x": 1}, 0),  # fused with another operand: left as planned
    ("(x - 1).^2 *(i,->i) sum((x - 1).^2)", {"x": 1}, 0),  # the square is read twice
    ("(x - 1).^2", {"x": 1}, 0),  # the square is the result
]


def _values(orders, rng):
    shapes = {"x": (5,), "b": (4,), "A": (4, 5), "X": (3, 6)}
    return {name: rng.standard_normal(shapes[name]) for name in orders}


@pytest.mark.parametrize("text, orders, expected", CASES)
def test_folded_squares_give_the_interpreters_numbers(text, orders, expected, rng):
    f = tc.parse(text, orders)
    values = _values(orders, rng)
    for expr in (f, *tc.derivative(f, sorted(orders)).values()):
        compiled = tc.compile(expr)
        np.testing.assert_allclose(compiled(values), tc.evaluate(expr, values), rtol=1e-12, atol=1e-12)
    _, folded = fold_squares(tc.compile(f).plan)
    assert len(folded) == expected


def test_a_folded_square_is_one_operation_less():
    # sum(r.^2) for r = A x - b: A x, the subtraction and r · r (without folding, a
    # fourth operation squares r into a temporary before the sum)
    f = tc.parse("sum((A*x - b).^2)", {"A": 2, "x": 1, "b": 1})
    cost = tc.compile(f).cost({"A": (1000, 10), "x": (10,), "b": (1000,)})
    assert cost.operations == 3


def test_the_base_of_a_folded_square_is_released_after_its_new_reader(rng):
    # the square was r's last reader; after folding the product reads r, later
    f = tc.parse("sum((x - 1).^2) + sum(exp(x))", {"x": 1})
    plan, folded = fold_squares(tc.compile(f).plan)
    (square,) = folded
    (base,) = tc.compile(f).plan.steps[square].args
    readers = [step.index for step in plan.steps if step.index not in folded and base in _reads(step)]
    released = [k for k, dead in enumerate(plan.release) if base in dead]
    assert released == [max(readers)]
    x = rng.standard_normal(7)
    np.testing.assert_allclose(tc.compile(f)(x=x), np.sum((x - 1) ** 2) + np.sum(np.exp(x)), rtol=1e-12)


def _reads(step):
    from tenscalc.compiler.plan import step_reads

    return step_reads(step)


# ------------------------------------------------------------------ sums of embedded parts


@pytest.mark.parametrize(
    "text, tiles",
    [
        ("sum(x[1::2] .* x[::2])", True),  # the gradient writes x[::2] and x[1::2]: a tiling
        ("sum(x[1:] .* x[:-1])", False),  # x[1:] and x[:-1] overlap: a sum
        ("sum(x[2:] .^ 2)", False),  # one part: zeros elsewhere
    ],
)
def test_parts_that_tile_the_result_are_written_once(text, tiles, rng):
    from tenscalc.compiler.program import _partitions
    from tenscalc.interpreter import slice_key

    f = tc.parse(text)
    g = tc.gradient(f, "x")
    plan = tc.compile(g).plan
    (last,) = [step for step in plan.steps if step.index in plan.outputs]
    if last.kind == "add":
        embeds = [(item.slot, item.coef, slice_key(item.items)) for item in last.data if item.kind == "embed"]
        assert _partitions(embeds, (8,)) is tiles
    else:  # one part: an embed step of its own
        assert not tiles
    for n in (8, 10):
        x = rng.standard_normal(n)
        np.testing.assert_allclose(tc.compile(g)(x=x), tc.evaluate(g, x=x), rtol=1e-13, atol=1e-13)
    # complex data: the parts' dtypes agree, and a real and a complex part mix correctly
    z = rng.standard_normal(8) + 1j * rng.standard_normal(8)
    np.testing.assert_allclose(tc.compile(g)(x=z), tc.evaluate(g, x=z), rtol=1e-13, atol=1e-13)
