"""Memory layout of intermediates: a matrix product that meets arrays of the other
axis order entrywise is computed transposed (``program._transposed_slots``).

The network HVP's shared ``X vᵀ`` is ``(h, m)`` in the DAG but is multiplied
entrywise with ``(m, h)`` arrays; laid out as the DAG says, each such product strode
through one operand (0.41 ms against 0.03 ms at 512x256).  Checked here from the
layouts of the arrays, never from timings.
"""

from __future__ import annotations

import numpy as np

import tenscalc as tc
from tenscalc.compiler.program import (
    ShapeResolver,
    _shared_pairs,
    _terms_of,
    _transposed_slots,
    fold_squares,
    step_shape,
)
from tests.compiler.test_paths import network_hvp, small_network_data


def _program(compiled, data):
    compiled(data)
    return compiled._last[1]


def _layout_choice(compiled, data):
    """The plan as binding sees it (squares folded, shared pairs hoisted), and the
    slots :func:`_transposed_slots` lays out transposed for these shapes."""
    plan, _ = fold_squares(compiled.plan)
    resolver = ShapeResolver(compiled._graphs, {name: np.shape(data[name]) for name in compiled.inputs})
    dense = [step_shape(step, resolver) for step in plan.steps]
    hoisted, rewritten = _shared_pairs(plan, dense, {})
    return plan, rewritten, _transposed_slots(plan, rewritten, hoisted, dense, set())


def _walk(program, data, names):
    """Every slot's array, step by step, as the loop computes them."""
    env = [None] * (program.n_slots + 1)
    for slot, name in zip(program.input_slots, names):
        env[slot] = data[name]
    for op in program.ops:
        env[op.slot] = op.fn(env)
    return env


def test_the_network_hvp_computes_its_shared_product_transposed_and_agrees():
    hv = network_hvp()
    data = small_network_data(np.random.default_rng(3))
    compiled = tc.compile(hv)
    program = _program(compiled, data)
    env = _walk(program, data, compiled.inputs)
    laid_out_transposed = [
        op.slot
        for op in program.ops
        if isinstance(env[op.slot], np.ndarray) and env[op.slot].ndim == 2 and not env[op.slot].flags.c_contiguous
    ]
    assert len(laid_out_transposed) == 1
    (slot,) = laid_out_transposed
    assert env[slot].flags.f_contiguous  # a transposed view of a fresh C array
    # the entrywise partners of that slot, in the fused products reading it, have the
    # reversed axis order and C layout: the same element order in memory
    plan, rewritten, chosen = _layout_choice(compiled, data)
    assert chosen == {slot}
    partners = []
    for step in [rewritten.get(s.index, s) for s in plan.steps if s.kind == "product"]:
        for term in _terms_of(step):
            specs = dict(term.operands)
            if slot in specs:
                spec = specs[slot]
                partners += [other for other, s in term.operands if tuple(s) == (spec[1], spec[0])]
    assert partners and all(env[p].flags.c_contiguous for p in partners)
    # the values: the interpreter, and the loop and the fused function alike
    expected = tc.evaluate(hv, data)
    np.testing.assert_allclose(compiled(data), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled(data), expected, rtol=1e-12, atol=1e-12)


def test_outputs_and_slots_read_elementwise_keep_the_dags_layout():
    # A Bᵀ read entrywise against a (j, i) array: transposing it would pay, but it is
    # the output here (handed out C-contiguous) ...
    f = tc.parse("A *(ik,jk->ij) B", {"A": 2, "B": 2})
    compiled = tc.compile(f)
    rng = np.random.default_rng(0)
    data = {"A": rng.standard_normal((3, 4)), "B": rng.standard_normal((5, 4))}
    assert compiled(data).flags.c_contiguous
    # ... and here it is also read by tanh (an elementwise chain would carry the layout on)
    g = tc.parse("tanh(A *(ik,jk->ij) B) *(ij,ji->) C + (A *(ik,jk->ij) B) *(ij,ji->) C", {"A": 2, "B": 2, "C": 2})
    compiled = tc.compile(g)
    data["C"] = rng.standard_normal((5, 3))
    program = _program(compiled, data)
    assert _layout_choice(compiled, data)[2] == set()
    np.testing.assert_allclose(compiled(data), tc.evaluate(g, data), rtol=1e-12)
    assert all(not isinstance(a, np.ndarray) or a.flags.c_contiguous for a in _walk(program, data, compiled.inputs))


def test_a_product_met_only_in_the_other_order_is_transposed():
    # P = A Bᵀ, laid out (i, j), meets C and D of order (j, i) entrywise in two
    # products: computed as B Aᵀ and handed on as its transposed view
    src = "(A *(ik,jk->ij) B) *(ij,ji->j) C + (A *(ik,jk->ij) B) *(ij,ji->j) D"
    g = tc.parse(src, {"A": 2, "B": 2, "C": 2, "D": 2})
    compiled = tc.compile(g)
    rng = np.random.default_rng(1)
    data = {name: rng.standard_normal(shape) for name, shape in zip("ABCD", [(3, 4), (5, 4), (5, 3), (5, 3)])}
    (chosen,) = _layout_choice(compiled, data)[2]
    env = _walk(_program(compiled, data), data, compiled.inputs)
    assert env[chosen].shape == (3, 5) and env[chosen].flags.f_contiguous
    for _ in range(2):  # the loop, then the fused function
        np.testing.assert_allclose(compiled(data), tc.evaluate(g, data), rtol=1e-12)
