"""Pickling and copying (issue 14, item 5): compiled functions after being called,
and expressions thousands of levels deep."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import numpy as np
import pytest

import tenscalc as tc

TEXTS = [
    ("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}),
    ("log(det(X)) + 2 *(,->) sin(c) - c", {"X": 2, "c": 0}),
    ("(x - 1) *(i,i->) (x - 1) / c", {"x": 1, "c": 0}),
    ("delta(1) *(ij,jk->ik) inv(X) + 1", {"X": 2}),
]


@pytest.mark.parametrize("text, orders", TEXTS)
def test_expressions_and_their_derivatives_unpickle_to_the_same_node(text, orders):
    e = tc.parse(text, orders)
    for node in [e, *(tc.derivative(e, name) for name in orders)]:
        assert pickle.loads(pickle.dumps(node)) is node
        assert copy.deepcopy(node) is node and copy.copy(node) is node


def test_deep_expressions_pickle_and_deepcopy():
    e = tc.var("x", 0)
    for k in range(5000):
        e = tc.sin(e) + k if k % 2 else tc.sin(e)
    assert pickle.loads(pickle.dumps(e)) is e
    assert copy.deepcopy([e, e])[0] is e


def _square_norm_gradient(args):
    run, x = args
    return run(x=x)


def test_a_called_compiled_function_pickles_and_maps_over_a_pool(rng):
    f = tc.parse("x *(i,i->) x", {"x": 1})
    run = tc.compile([f, tc.gradient(f, "x")])
    xs = [rng.standard_normal(n) for n in (2, 3, 4, 5)]
    run(x=xs[0])  # binds a program (closures) to a shape
    again = pickle.loads(pickle.dumps(run))
    value, grad = again(x=xs[1])
    np.testing.assert_allclose(value, xs[1] @ xs[1])
    np.testing.assert_allclose(grad, 2 * xs[1])
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.map(_square_norm_gradient, [(run, x) for x in xs])
    for x, (value, grad) in zip(xs, results):
        np.testing.assert_allclose(value, x @ x)
        np.testing.assert_allclose(grad, 2 * x)
