"""The plan's value numbering (``plan._step_key``): two steps share a slot only when
they compute the same value.  A product of constants alone (``2 delta(1)``, the
Hessian of ``x.x``) takes its axis lengths from its node, so the Hessians of ``x.x``
and ``y.y`` are two values where x and y differ in length.  Every runner handed out
the first for both (the y Hessian came back 2 x 2 where y has 3 entries)."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

ORDERS = {"x": 1, "y": 1, "A": 2, "B": 2}
VALUES = {"x": np.arange(1.0, 3.0), "y": np.arange(1.0, 4.0), "A": np.ones((2, 2)), "B": np.ones((3, 3))}


def _pairs() -> dict[str, list[tc.Expr]]:
    def parse(text: str) -> tc.Expr:
        return tc.parse(text, ORDERS)

    hessian_a = tc.derivative(tc.gradient(parse("A *(ij,ij->) A"), "A"), tc.var("A", 2))
    hessian_b = tc.derivative(tc.gradient(parse("B *(ij,ij->) B"), "B"), tc.var("B", 2))
    return {
        "vector Hessians": [tc.hessian(parse("x *(i,i->) x"), "x"), tc.hessian(parse("y *(i,i->) y"), "y")],
        "Hessians of one sum": [
            tc.hessian(parse("x *(i,i->) x + y *(i,i->) y"), "x"),
            tc.hessian(parse("x *(i,i->) x + y *(i,i->) y"), "y"),
        ],
        "trace gradients": [tc.gradient(parse("A *(ii,->) 1"), "A"), tc.gradient(parse("B *(ii,->) 1"), "B")],
        "matrix Hessians": [hessian_a, hessian_b],
    }


def _expected(exprs: list[tc.Expr]) -> list[np.ndarray]:
    return [np.asarray(tc.evaluate(e, VALUES)) for e in exprs]


def _same(got, expected) -> None:
    assert [np.shape(g) for g in got] == [e.shape for e in expected]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(_pairs()))
def test_constant_products_of_different_lengths_are_different_values(name):
    exprs = _pairs()[name]
    expected = _expected(exprs)
    assert expected[0].shape != expected[1].shape  # the case: two lengths
    run = tc.compile(exprs)
    _same(run(VALUES), expected)  # the closure loop
    _same(run(VALUES), expected)  # the fused function
    needed = {n for e in exprs for n in (*e.variables, *e.shape_variables)}
    for shapes in (None, {n: VALUES[n].shape for n in needed}):
        namespace: dict = {}
        exec(tc.to_python(exprs, shapes=shapes), namespace)  # noqa: S102 - our own code
        _same(namespace["f"](**{n: VALUES[n] for n in needed}), expected)


def test_the_same_constant_product_of_one_length_is_computed_once():
    # one Hessian asked for twice: one step; two of different lengths: two
    run = tc.compile([tc.hessian(tc.parse("x *(i,i->) x", ORDERS), "x")] * 2)
    assert len(run.plan.steps) == 1
    hx = tc.hessian(tc.parse("x *(i,i->) x", ORDERS), "x")
    hy = tc.hessian(tc.parse("y *(i,i->) y", ORDERS), "y")
    assert len(tc.compile([hx, hy]).plan.steps) == 2


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_every_backend_hands_out_both(backend):
    library = pytest.importorskip(backend)
    if backend == "jax":
        library.config.update("jax_enable_x64", True)
        values = {k: library.numpy.asarray(v) for k, v in VALUES.items()}
    else:
        values = {k: library.as_tensor(v) for k, v in VALUES.items()}
    exprs = _pairs()["vector Hessians"]
    got = tc.compile(exprs, backend=backend)(values)
    _same([np.asarray(g) for g in got], _expected(exprs))
