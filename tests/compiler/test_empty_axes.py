"""Empty axes: every evaluator agrees with ``tc.evaluate`` when an axis has length 0.

Each axis class of a corpus of functions with their gradients/Jacobians and Hessians
is set to length 0 in turn (the others keep distinct lengths 2, 3, 4 ...), and the
compiled function (first call: the loop; second call: the fused function), the
torch and JAX backends and generated code (shape-free and shape-specialised) must
give what ``tc.evaluate`` gives: arrays of the right, partly empty shape, and the
right numbers where entries remain (a sum over an empty axis is 0).
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import axis_lengths

ORDERS = {"a": 0, "x": 1, "y": 1, "w": 1, "v": 1, "A": 2, "X": 2, "U": 2, "V": 2, "W": 2, "T": 3}

CORPUS = [
    ("exp(X *(ij,j->i) w) *(i,i->) 1", "w"),  # the Gram Hessian Xᵀ diag(d) X (issue 30 item 1)
    ("log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1", "w"),
    ("sum(log(1 + exp(-(A *(ij,j->i) w))) ) + 0.5 * (w *(i,i->) w)", "w"),
    ("sum(tanh(W *(ij,j->i) x) .^ 2) - sum(relu(x))", "x"),
    ("x *(i,ij->j) A *(j,j->) x", "x"),
    ("(X - U *(ik,jk->ij) V) *(ij,ij->) (X - U *(ik,jk->ij) V)", "U"),
    ("tanh(X *(mj,hj->mh) W) *(mh,h->) v", "W"),
    ("sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)", "x"),
    ("sin(A *(ij,j->i) x)", "x"),  # a Jacobian, and a third-order "Hessian"
    ("sin((T *(ijk,k->ij) x) *(ij,j->i) y)", "x"),
    ("(x *(i,j->ij) y) *(ij,ij->) (x *(i,j->ij) y)", "x"),
    ("log(det(A)) + a * sum(inv(A) *(ij,j->i) x)", "A"),
]


def _cases():
    for text, wrt in CORPUS:
        f = tc.parse(text, ORDERS)
        exprs = [f, tc.derivative(f, wrt), tc.derivative(tc.derivative(f, wrt), wrt)]
        shapes = axis_lengths(exprs)
        for length in sorted({n for shape in shapes.values() for n in shape}):
            yield pytest.param(exprs, shapes, length, id=f"{text[:40]}-{wrt}-axis{length}")


def _values(shapes: dict, empty: int) -> dict:
    """Random values with every axis of length ``empty`` made 0 (a square matrix gets ``n I`` added)."""
    rng = np.random.default_rng(empty)
    values: dict = {}
    for name, shape in shapes.items():
        shape = tuple(0 if n == empty else n for n in shape)
        array = rng.uniform(0.1, 0.9, shape)
        if len(shape) == 2 and shape[0] == shape[1]:
            array = array + shape[0] * np.eye(shape[0])
        values[name] = array if shape else float(array)
    return values


def _agree(got, expected: list[np.ndarray], who: str) -> None:
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.shape == e.shape, (who, g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12, err_msg=who)


CASES = list(_cases())


def test_the_corpus_has_an_empty_axis_in_every_function():
    assert {c.values[2] for c in CASES} >= {2, 3, 4}
    assert len(CASES) >= 2 * len(CORPUS)


@pytest.mark.parametrize(("exprs", "shapes", "empty"), CASES)
def test_compiled_calls_and_generated_code_agree_with_evaluate_on_empty_axes(exprs, shapes, empty):
    values = _values(shapes, empty)
    assert any(0 in np.shape(v) for v in values.values())
    expected = [np.asarray(tc.evaluate(e, values)) for e in exprs]
    assert any(e.size == 0 for e in expected) or any(e.size > 0 and np.any(e == 0) for e in expected)
    run = tc.compile(exprs)
    _agree(run(**values), expected, "first call")
    _agree(run(**values), expected, "second (fused) call")
    for source_shapes in (None, {n: np.shape(v) for n, v in values.items()}):
        namespace: dict = {}
        exec(compile(tc.to_python(exprs, name="g", shapes=source_shapes), "<generated>", "exec"), namespace)  # noqa: S102
        _agree(namespace["g"](**values), expected, f"to_python(shapes={source_shapes})")


@pytest.mark.parametrize(("exprs", "shapes", "empty"), CASES)
def test_torch_and_jax_agree_with_evaluate_on_empty_axes(exprs, shapes, empty):
    values = _values(shapes, empty)
    expected = [np.asarray(tc.evaluate(e, values)) for e in exprs]
    ran = 0
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        run = tc.compile(exprs, backend="torch")
        tensors = {n: torch.as_tensor(np.asarray(v)) for n, v in values.items()}
        for call in ("first", "second"):
            _agree(tuple(t.numpy() for t in run(**tensors)), expected, f"torch {call} call")
        ran += 1
    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        run = tc.compile(exprs, backend="jax")
        for call in ("first", "second"):
            _agree(tuple(np.asarray(t) for t in run(**values)), expected, f"jax {call} call")
        ran += 1
    if not ran:
        pytest.skip("neither torch nor jax is installed (pip install torch jax)")
