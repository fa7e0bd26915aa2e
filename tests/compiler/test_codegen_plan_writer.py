"""Shape-free ``tc.to_python()`` writes the compiler's shape-free plan (issue 26, item 2).

One statement per plan step (:func:`tenscalc.compiler.plan.build_plan`), deleted after
the plan's last reader; sums added into one buffer (a dead summand scaled in place,
never an input or an array something else still reads); contractions along the
compiler's memory-bounded path choice.  Values are checked against ``tc.evaluate`` (an
independent evaluator) at distinct axis lengths; peak memory through tracemalloc.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import tenscalc as tc
from benchmarks.classes import NETWORK, network_data
from tenscalc.compiler.codegen import STEP_WRITERS, _binder_decisions
from tenscalc.compiler.plan import build_plan
from tenscalc.compiler.program import BIND_RULES
from tests.cost import traced_peak

ROSEN = "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)"
NETWORK_ORDERS = {"X": 2, "W1": 2, "W2": 2, "W3": 2, "Y": 2}


def _function(exprs, name: str = "f"):
    source = tc.to_python(exprs, name=name)
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the library's own code
    return namespace[name], source


def _body(source: str) -> list[str]:
    """The statements of the plan's steps: ``_sK`` (an array) or ``_bK`` (bands) and their deletions."""
    return [line.strip() for line in source.splitlines() if re.match(r"    (del )?_[sb]\d", line)]


CASES = {
    "logistic regression f, g, H": (
        "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1",
        {"X": 2, "y": 1, "w": 1},
        "w",
        {"X": (5, 3), "y": (5,), "w": (3,)},
    ),
    "chained Rosenbrock f, g, H": (ROSEN, {"x": 1}, "x", {"x": (6,)}),
    "quadratic form": ("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}, "x", {"x": (4,), "A": (4, 4)}),
}


@pytest.mark.parametrize("label", sorted(CASES))
def test_one_statement_per_plan_step_deleted_after_its_last_reader(label, rng):
    text, orders, wrt, shapes = CASES[label]
    f = tc.parse(text, orders)
    exprs = [f, tc.gradient(f, wrt), tc.hessian(f, wrt)]
    function, source = _function(exprs)
    # the plan as tc.compile binds it: its sums gathered, the summand products they take never computed
    decisions = _binder_decisions(exprs, build_plan(exprs))
    plan, gathered = decisions.plan, decisions.gathered
    body = _body(source)
    # a banded step's bands, then its dense value where something reads it densely
    written = list(dict.fromkeys(int(m.group(1)) for line in body if (m := re.match(r"_[sb](\d+) = ", line))))
    assert written == [step.index for step in plan.steps if step.kind != "input" and step.index not in gathered]
    outputs = set(plan.outputs) | gathered
    deleted = {int(n) for line in body if line.startswith("del ") for n in re.findall(r"_[sb](\d+)", line)}
    released = {s for dead in plan.release for s in dead if plan.steps[s].kind != "input" and s not in outputs}
    assert deleted == released
    values = {name: rng.standard_normal(shape) for name, shape in shapes.items()}
    for got, expr in zip(function(**values), exprs, strict=True):
        np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=1e-11, atol=1e-12)


def test_sums_scale_only_dead_arrays_in_place(rng):
    # u = exp(x) is read by the sum and by a later product (not dead there), a slice of
    # v = sin(x) keeps a view of it: neither may be overwritten; x is an input
    x = tc.var("x", 1)
    u, v = tc.exp(x), tc.sin(x)
    exprs = [2 * u - 3 * v + 4 * tc.cos(x) - 1.5, u * 5, v[1:] * 2, 2 * tc.tanh(x) - 3 * tc.exp(2 * x)]
    function, source = _function(exprs)
    assert "_sum(" in source and "True)" in source  # some summand is scaled in place
    values = {"x": rng.standard_normal(5)}
    before = values["x"].copy()
    for got, expr in zip(function(**values), exprs, strict=True):
        np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(values["x"], before)
    # a complex summand after real ones: a new array of NumPy's promotion
    c = tc.var("c", 1)
    mixed = [2 * tc.exp(x) - 3 * c + tc.sin(x)]
    function, _ = _function(mixed)
    complex_values = {"x": rng.standard_normal(4), "c": rng.standard_normal(4) + 1j * rng.standard_normal(4)}
    (got,) = function(**complex_values)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, tc.evaluate(mixed[0], complex_values), rtol=1e-13)


def test_a_constant_two_steps_share_is_never_summed_into(rng):
    # 3 I is one walker array read by two plan steps: the first sum must not add into it
    # (found by the fuzz campaign: the second inverse read 3 I + 0.1 W)
    text = "inv(3 *(,ij->ij) delta(1) + 0.1 *(,ij->ij) (W + inv(3 *(,ij->ij) delta(1) + 0.1 *(,ij->ij) W)))"
    expr = tc.parse(text, {"W": 2})
    function, _ = _function(expr)
    values = {"W": rng.standard_normal((3, 3))}
    np.testing.assert_allclose(function(**values), tc.evaluate(expr, values), rtol=1e-12, atol=1e-13)


def _peaks(exprs, values) -> tuple[int, int]:
    compiled = tc.compile(exprs)
    function, _ = _function(exprs)
    expected = compiled(**values)
    for got, want in zip(function(**values), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    return traced_peak(lambda: compiled(**values), warm=2), traced_peak(lambda: function(**values), warm=1)


def test_the_network_hvp_contracts_along_the_compilers_path():
    # opt_einsum's `auto` path (branch-2) built an m x h x g intermediate: 8x compile's peak
    data = network_data(96, 48, 40, 32, 6)
    compiled, generated = _peaks([tc.hvp(tc.parse(NETWORK, NETWORK_ORDERS), "W1", direction="v")], data)
    assert generated <= 1.5 * compiled, (generated, compiled)


def test_a_pd_inputs_inverse_and_log_det_read_one_factor(rng):
    p = tc.parse_problem("declare K 2 pd y 1 expression y'*inv(K)*y + log(det(K)) derivative wrt K")
    exprs = [p.expr, p.derivative()]
    source = tc.to_python(exprs, name="gp", assumptions=p.assumptions)
    body = [line.strip() for line in source[source.index("def gp(") :].splitlines()]
    assert sum(line.startswith("_t0 = _cholesky(K") for line in body) == 1
    assert any("_cho_inv(_t0)" in line for line in body) and any("_cho_det(_t0, True)" in line for line in body)
    assert not any("_cho_det(_t0, False)" in line or "linalg.det" in line for line in body)  # no det computed
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the library's own code
    a = rng.standard_normal((4, 4))
    values = {"K": a @ a.T + 4 * np.eye(4), "y": rng.standard_normal(4)}
    for got, expr in zip(namespace["gp"](**values), exprs, strict=True):
        np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=1e-11, atol=1e-12)


def test_the_writer_has_a_rule_for_every_step_kind_the_binder_binds():
    assert set(STEP_WRITERS) == set(BIND_RULES)


@pytest.mark.parametrize(
    ("text", "orders"),
    [
        ("inv(3 *(,ij->ij) delta(1) + 0.1 *(,ij->ij) W) *(ij,ij->) (2 *(,ij->ij) delta(1) - W)", {"W": 2}),
        ("sum(x * (sin(1) + exp(2)) + x * 2^2222) + sum(x) * cos(1) / (1 - cos(0))", {"x": 1}),
        ("sum(x) * " + "sin(" * 60 + "1" + ")" * 60, {"x": 1}),  # one statement per level: no nesting limit
    ],
)
def test_a_constant_is_written_from_the_steps_of_its_own_plan(text, orders, rng):
    # issue 26: the DAG walker wrote constant-only steps (and terms' constant operands) by its
    # own rules; each is now its own plan (numbers and deltas folded: build_constant_plan),
    # written one statement per step by the plan writer, its temporaries deleted
    from tenscalc.compiler.plan import build_constant_plan

    expr = tc.parse(text, orders)
    function, source = _function(expr)
    plan = build_plan([expr])
    constants = [step.node for step in plan.steps if step.kind == "constant"]
    constants += [c for step in plan.steps if step.kind == "product" for term in step.data for c, _ in term.constants]
    expected = sorted(len(build_constant_plan(node).steps) for node in constants if node.children)
    assert expected, "the case has a constant that is more than a number or a delta"
    body = [line.strip() for line in source.splitlines()]
    written = Counter(m.group(1) for line in body if (m := re.match(r"_c(\d+)_\d+ = ", line)))
    assert sorted(written.values()) == expected
    made = {m.group(0) for line in body if (m := re.match(r"_c\d+_\d+", line))}
    deleted = {name for line in body if line.startswith("del ") for name in re.findall(r"_c\d+_\d+", line)}
    assert made == deleted  # every constant's arrays released
    values = {"W": rng.standard_normal((3, 3)) / 5, "x": rng.standard_normal(4)}
    values = {name: values[name] for name in expr.variables}
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(function(**values), tc.evaluate(expr, values), rtol=1e-12)
