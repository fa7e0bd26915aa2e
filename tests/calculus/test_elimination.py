"""Jacobians by vertex elimination (tenscalc.calculus.elimination).

Every order must give the Jacobian that finite differences and the reverse
sweep give, on the vertex-elimination benchmarks (scalar and batched) and on
tensor graphs with distinct axis lengths; diagonal partials must stay diagonal;
the product counts must agree with an independent count on a hand-built graph.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from benchmarks import elimination as bench
from benchmarks.elimination_problems import PROBLEMS, planar_arm, tenscalc_outputs
from tenscalc.errors import SemanticError
from tenscalc.testing import check_derivative, random_values

ORDERS = ["forward", "reverse", "markowitz", "markowitz-cost"]


def _differences(outs, names, values, h=1e-6):
    """d out / d x by central differences, for scalar or elementwise-batched inputs."""
    result = {}
    for x in names:
        base = np.asarray(values[x], dtype=float)
        columns = []
        for index in np.ndindex(*base.shape):
            step = np.zeros_like(base)
            step[index] = h
            plus = [np.asarray(tc.evaluate(o, {**values, x: base + step})) for o in outs]
            minus = [np.asarray(tc.evaluate(o, {**values, x: base - step})) for o in outs]
            columns.append([(p - m) / (2 * h) for p, m in zip(plus, minus)])
        for k, out in enumerate(outs):
            stacked = np.stack([c[k] for c in columns], axis=-1)
            shape = np.broadcast_shapes(np.shape(tc.evaluate(out, values)))
            result[k, x] = stacked.reshape(shape + base.shape)
    return result


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("order", ORDERS)
def test_scalar_benchmarks_agree_with_differences_and_reverse_mode(name, order):
    outs, names = tenscalc_outputs(name)
    values = dict(zip(names, PROBLEMS[name][2]))
    acc = tc.jacobian_accumulation(outs, names, order=order)
    numeric = _differences(outs, names, values)
    for k, out in enumerate(outs):
        reverse = tc.derivative(out, [tc.var(x, 0) for x in names])
        for x in names:
            got = float(tc.evaluate(acc.jacobians[k][x], values))
            assert got == pytest.approx(float(numeric[k, x]), rel=1e-6, abs=1e-7), (k, x)
            assert got == pytest.approx(float(tc.evaluate(reverse[x], values)), rel=1e-12, abs=1e-14)
            assert acc.partials[k][x].diagonal or acc.partials[k][x].value.order == 0


@pytest.mark.parametrize("name", ["roe_flux_1d", "robot_arm_6dof"])
def test_batched_benchmarks_keep_every_partial_diagonal(name):
    outs, names = tenscalc_outputs(name, batched=True)
    n = 5
    point = PROBLEMS[name][2]
    rng = np.random.default_rng(0)
    values = {x: v * (1 + 0.05 * rng.standard_normal(n)) for x, v in zip(names, point)}
    acc = tc.jacobian_accumulation(outs, names, order="auto")
    numeric = _differences(outs, names, values)
    for k in range(len(outs)):
        for x in names:
            partial = acc.partials[k][x]
            dense = np.asarray(tc.evaluate(acc.jacobians[k][x], values))
            assert dense.shape == (n, n)
            np.testing.assert_allclose(dense, numeric[k, x], rtol=1e-6, atol=1e-7)
            if partial.value.op == "const" and partial.value.arg[0] == 0:
                continue  # this output does not depend on x
            assert partial.diagonal, (k, x)
            np.testing.assert_allclose(tc.evaluate(partial.value, values), np.diag(dense), rtol=1e-12, atol=1e-14)
    # no n x n array anywhere when the diagonals are compiled: the cost model says so
    diagonals = [acc.partials[k][x].value for k in range(len(outs)) for x in names]
    diagonals = [d for d in diagonals if not (d.op == "const" and d.arg[0] == 0)]  # zero: no dependence
    cost = tc.compile(diagonals).cost({x: (1000,) for x in names})
    assert cost.largest_intermediate == 1000


def _tensor_outputs():
    # dense and diagonal partials mixed, contractions, a shared intermediate, distinct lengths
    A, x, y = tc.var("A", 2), tc.var("x", 1), tc.var("y", 1)
    h = tc.sin(tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1}))
    g = h * y + tc.exp(y)
    return [g, tc.sum(g * h), tc.log(tc.parse("x *(i,i->) x", {"x": 1}) + 1.0)], [A, x, y]


@pytest.mark.parametrize("order", ORDERS)
def test_tensor_graph_with_distinct_lengths(order):
    outs, xs = _tensor_outputs()
    names = [v.arg[0] for v in xs]
    values = random_values(outs, seed=3)
    assert len({np.shape(values["A"])[0], np.shape(values["A"])[1]}) == 2  # distinct lengths
    acc = tc.jacobian_accumulation(outs, names, order=order)
    for k, out in enumerate(outs):
        for v in xs:
            expected = tc.evaluate(tc.derivative(out, v), values)
            got = tc.evaluate(acc.jacobians[k][v.arg[0]], values)
            np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
            assert check_derivative(out, v, values=values).ok  # the reference itself, by differences
    numeric = _differences(outs, names, values)
    for (k, x), expected in numeric.items():
        np.testing.assert_allclose(tc.evaluate(acc.jacobians[k][x], values), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [3, 6, 12])
def test_counts_match_an_independent_count_on_a_hand_built_graph(n):
    # benchmarks/elimination.py builds the planar arm's graph by hand and eliminates it
    # with its own code; tenscalc's DAG of the same function must give the same counts
    reference = bench.counts(bench.robot_arm(n))
    names = [f"t{k}" for k in range(n)]
    outs = list(planar_arm(n)(*(tc.var(v, 0) for v in names), tc))
    for order in ("forward", "reverse", "markowitz"):
        assert tc.jacobian_accumulation(outs, names, order=order, simplify=False).products == reference[order]


def test_auto_is_the_cheapest_order():
    outs, names = tenscalc_outputs("roe_flux_1d")
    acc = tc.jacobian_accumulation(outs, names)
    assert set(acc.counts) == set(ORDERS)
    assert acc.products == min(acc.counts.values())
    assert acc.products <= acc.counts["markowitz"]
    # with shapes, the compiled cost decides: never more flops than any single order
    shapes = {x: () for x in names}
    by_cost = tc.jacobian_accumulation(outs, names, shapes=shapes)

    def flops(a):
        return tc.compile([e for row in a.jacobians for e in row.values()]).cost(shapes).flops

    best = flops(by_cost)
    for order in ORDERS:
        assert best <= flops(tc.jacobian_accumulation(outs, names, order=order))


def test_jacobian_mode():
    f = tc.parse("sin(A *(ij,j->i) x) *(i,i->i) y", {"A": 2, "x": 1, "y": 1})
    values = random_values(f, seed=1)
    expected = tc.evaluate(tc.jacobian(f, "x"), values)
    for mode in ["forward", "markowitz", "markowitz-cost", "auto"]:
        np.testing.assert_allclose(tc.evaluate(tc.jacobian(f, "x", mode=mode), values), expected, rtol=1e-12)
        both = tc.jacobian(f, ["x", "y"], mode=mode)
        np.testing.assert_allclose(tc.evaluate(both["y"], values), tc.evaluate(tc.jacobian(f, "y"), values))
    zero = tc.jacobian(f, tc.var("z", 1), mode="forward")
    assert zero.order == 2 and tc.evaluate(zero, {**values, "z": np.ones(4)}).shape == (values["y"].shape[0], 4)


def test_bad_input_is_a_clear_error():
    f = tc.parse("sin(x *(,->) y)", {"x": 0, "y": 0})
    with pytest.raises(SemanticError, match="unknown variable 'w'"):
        tc.jacobian_accumulation([f], ["w"])
    with pytest.raises(SemanticError, match="elimination order"):
        tc.jacobian_accumulation([f], ["x"], order="sideways")
    with pytest.raises(SemanticError, match="listed twice"):
        tc.jacobian_accumulation([f], ["x", "x"])
    with pytest.raises(SemanticError, match="empty"):
        tc.jacobian_accumulation([f], [])
    with pytest.raises(SemanticError, match="non-empty list"):
        tc.jacobian_accumulation([], ["x"])
    with pytest.raises(SemanticError, match="has order 0"):
        tc.jacobian_accumulation([f], [tc.var("x", 1)])
    with pytest.raises(SemanticError, match="unknown variable 'w'"):
        tc.jacobian(f, "w", mode="forward")


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_chosen_order_needs_no_more_multiplications_than_the_reverse_sweeps(name):
    # cost().multiplications of the compiled Jacobians (function values included):
    # the order chosen by compiled cost against one reverse sweep per output
    outs, names = tenscalc_outputs(name)
    shapes = {x: () for x in names}
    acc = tc.jacobian_accumulation(outs, names, shapes=shapes)
    chosen = tc.compile([e for row in acc.jacobians for e in row.values()]).cost(shapes)
    swept = [tc.derivative(o, [tc.var(x, 0) for x in names]) for o in outs]
    reverse = tc.compile([e for row in swept for e in row.values()]).cost(shapes)
    assert 0 < chosen.multiplications <= reverse.multiplications
