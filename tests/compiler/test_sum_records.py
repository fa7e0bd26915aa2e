"""A sum is described once: the binder's record (issue 26), which every runner follows.

A sum of the plan (an ``add`` step) with embedded (slice), diagonal (``delta``) or
broadcast parts is bound to one frozen :class:`tenscalc.compiler.sums.SumPlan`; the
closure loop runs the closure built from it, and ``tc.compile``'s fused function and the
module ``tc.to_python(shapes=)`` writes are written from it.  Here the record is changed
while binding (``program.plan_sum`` patched) and all three runners must follow the
change; the runners agree with the interpreter on sums of each kind of part (distinct
axis lengths); the counted arithmetic of the module is compile's; and whether a sum
writes into the buffer it starts from (``SumPlan.take``, ``BoundStep.take`` for a sum of
terms into one buffer) is the binder's decision alone, never a caller's input or a
buffer still read.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler import accumulate, program
from tenscalc.compiler.backends import get_backend
from tenscalc.compiler.plan import AddItem, build_plan
from tenscalc.compiler.program import ShapeResolver, bind
from tenscalc.compiler.source import ProgramSource
from tenscalc.compiler.sums import plan_sum, sum_closure
from tenscalc.core.axes import axis_graph
from tests.compiler.test_runner_costs import assert_forms_count_like_the_loop
from tests.compiler.test_runners import CORPUS, ROSEN

RNG = np.random.default_rng(26)


def _rosenbrock(order: int):
    f = tc.parse(ROSEN)
    return tc.gradient(f, "x") if order == 1 else tc.hessian(f, "x")


#: name -> (expressions, values): sums with embedded, diagonal and dense parts, distinct lengths
CASES = {
    "Rosenbrock gradient (two slices embedded)": (lambda: [_rosenbrock(1)], {"x": RNG.uniform(-1, 1, 7)}),
    "Rosenbrock Hessian": (lambda: [_rosenbrock(2)], {"x": RNG.uniform(-1, 1, 6)}),
    "a slice embedded and a diagonal": (
        lambda: [tc.gradient(tc.parse("sum(A[1:, :-1] .* B) + A *(ij,ij->) delta(1)", {"A": 2, "B": 2}), "A")],
        {"A": RNG.uniform(-1, 1, (5, 5)), "B": RNG.uniform(-1, 1, (4, 4))},
    ),
    "dense, diagonal and a slice embedded": (
        lambda: [
            tc.gradient(
                tc.parse("sum(A[1:, :-1] .* B) + 2 * (A *(ij,ij->) delta(1)) + A *(ij,ij->) A", {"A": 2, "B": 2}), "A"
            )
        ],
        {"A": RNG.uniform(-1, 1, (4, 4)), "B": RNG.uniform(-1, 1, (3, 3))},
    ),
    "two slices of a 4x5 matrix": (
        lambda: [tc.gradient(tc.parse("sum(A[1:, :-1] .* B) + sum(A[:-1, 1:] .^ 2)", {"A": 2, "B": 2}), "A")],
        {"A": RNG.uniform(-1, 1, (4, 5)), "B": RNG.uniform(-1, 1, (3, 4))},
    ),
    "an input plus the identity": (lambda: [tc.parse("A + delta(1)", {"A": 2})], {"A": RNG.uniform(-1, 1, (3, 3))}),
    "a product still handed out, plus the identity": (
        lambda: [tc.parse("A .* A + delta(1)", {"A": 2}), tc.parse("A .* A", {"A": 2})],
        {"A": RNG.uniform(-1, 1, (4, 4))},
    ),
    "matfac Hessian (a copy and a dense term into one buffer)": (
        CORPUS["matfac (diagonal Hessian)"][0],
        {"T": RNG.uniform(-1, 1, (3, 5)), "U": RNG.uniform(-1, 1, (3, 2)), "V": RNG.uniform(-1, 1, (5, 2))},
    ),
    "broadcast sum u + v - C (one buffer)": (
        lambda: [tc.hessian(tc.parse("sum(exp(u *(i,j->ij) 1 + 1 *(i,j->ij) v - C))", {"u": 1, "v": 1, "C": 2}), "v")],
        {"u": RNG.uniform(-1, 1, 3), "v": RNG.uniform(-1, 1, 5), "C": RNG.uniform(-1, 1, (3, 5))},
    ),
}


def _three_runners(exprs: list, values: dict) -> dict[str, tuple]:
    """The results of the closure loop, the fused function and the generated module, each
    on its own copy of the inputs (returned too: a runner that wrote into them shows)."""
    shapes = {k: np.shape(v) for k, v in values.items()}
    got: dict[str, tuple] = {}
    inputs: dict[str, dict] = {}
    compiled = tc.compile(exprs)
    compiled({k: np.array(v) for k, v in values.items()})  # binds; the loop runs
    program_ = compiled._last[1]
    mine = {k: np.array(v) for k, v in values.items()}
    arrays = [mine[n] for n in compiled.inputs]
    got["loop"], inputs["loop"] = tuple(program_.run_steps(arrays, arrays[0])), mine
    mine = {k: np.array(v) for k, v in values.items()}
    got["fused"], inputs["fused"] = tuple(compiled(mine)), mine  # the second call: the fused function
    assert compiled._last[1].fused is not None
    namespace: dict = {}
    exec(compile(tc.to_python(exprs, shapes=shapes), "<generated>", "exec"), namespace)  # noqa: S102 - under test
    mine = {k: np.array(v) for k, v in values.items()}
    got["to_python(shapes=)"], inputs["to_python(shapes=)"] = tuple(namespace["f"](**mine)), mine
    return {runner: (got[runner], inputs[runner]) for runner in got}


def _records(exprs: list, values: dict) -> list:
    compiled = tc.compile(exprs)
    compiled(values)
    return [step.sum for step in compiled._last[1].steps.values() if step.sum is not None]


@pytest.mark.parametrize("name", list(CASES))
def test_the_runners_agree_with_the_interpreter(name):
    build, values = CASES[name]
    exprs = build()
    expected = [tc.evaluate(e, values) for e in exprs]
    for runner, (results, inputs) in _three_runners(exprs, values).items():
        for k, (got, want) in enumerate(zip(results, expected)):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12, err_msg=f"{runner}, result {k}")
        for key, value in values.items():  # no runner wrote into its inputs
            np.testing.assert_array_equal(inputs[key], value, err_msg=f"{runner} wrote into input {key}")


def test_the_cases_have_the_parts_they_are_named_for():
    """Each kind of part (embedded, diagonal, dense) occurs, a sum starting from a
    slot (the caller's input, a product still handed out) does not take it over, and
    a sum starting from an array it made does."""
    hows = {}
    for name, (build, values) in CASES.items():
        structured = [r for r in _records(build(), values) if any(part.how != "dense" for part in r.parts)]
        hows[name] = {part.how for record in structured for part in record.parts}
    assert hows["Rosenbrock gradient (two slices embedded)"] == {"embedded"}
    assert hows["a slice embedded and a diagonal"] == {"embedded", "diagonal"}
    assert hows["dense, diagonal and a slice embedded"] == {"dense", "embedded", "diagonal"}
    for name in ("an input plus the identity", "a product still handed out, plus the identity"):
        build, values = CASES[name]
        (record,) = [r for r in _records(build(), values) if r.added]
        assert record.start == "slot" and not record.take, name
    build, values = CASES["dense, diagonal and a slice embedded"]
    (record,) = [r for r in _records(build(), values) if r.added]
    assert record.start == "chain" and record.take


@pytest.mark.parametrize("name", list(CASES))
def test_the_module_counts_the_arithmetic_compile_counts(name):
    build, values = CASES[name]
    assert_forms_count_like_the_loop(build(), values, ("elementwise", "reduction"))


# ---------------------------------------------------------------- the record is the only description


def _patched(monkeypatch, change) -> None:
    """Bind every sum with ``change(record)`` in place of the binder's record."""
    plan = program.plan_sum
    monkeypatch.setattr(program, "plan_sum", lambda *args: change(plan(*args)))


def test_a_changed_coefficient_is_followed_by_every_runner(monkeypatch):
    """The last embedded part of the Rosenbrock gradient's sum counted twice: the loop,
    the fused function and the module all add it twice (the difference is one of the
    two slices' parts, known by hand: 200 (x[1:] - x[:-1]²) at [1:], or
    -400 x (x[1:] - x[:-1]²) - 2 (1 - x) at [:-1])."""
    build, values = CASES["Rosenbrock gradient (two slices embedded)"]
    x = values["x"]
    plain = tc.evaluate(build()[0], values)

    def twice(record):
        embedded = [k for k, part in enumerate(record.parts) if part.how == "embedded"]
        if not embedded:
            return record
        parts = list(record.parts)
        parts[embedded[-1]] = replace(parts[embedded[-1]], coef=2 * parts[embedded[-1]].coef)
        return replace(record, parts=tuple(parts))

    _patched(monkeypatch, twice)
    upper, lower = np.zeros_like(x), np.zeros_like(x)
    upper[1:] = 200 * (x[1:] - x[:-1] ** 2)
    lower[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    differences = []
    for runner, (results, _) in _three_runners(build(), values).items():
        difference = np.asarray(results[0]) - plain
        assert np.allclose(difference, upper, atol=1e-9) or np.allclose(difference, lower, atol=1e-9), runner
        differences.append(difference)
    np.testing.assert_allclose(differences[1], differences[0], atol=1e-12)
    np.testing.assert_allclose(differences[2], differences[0], atol=1e-12)


@pytest.mark.parametrize("name", ["an input plus the identity", "a product still handed out, plus the identity"])
def test_a_sum_told_to_take_over_a_slot_writes_into_it_in_every_runner(monkeypatch, name):
    """What the aliasing check above catches: a record saying ``take`` for a sum that
    starts from the caller's input, or from a product handed out later, makes every
    runner write into that array (the input changes, or the second result gets the
    identity too). So the binder's ``take=False`` there is what keeps them intact, and
    the runners decide nothing of their own."""
    build, values = CASES[name]
    exprs = build()
    expected = [tc.evaluate(e, values) for e in exprs]
    _patched(monkeypatch, lambda record: replace(record, take=True) if record.start == "slot" else record)
    for runner, (results, inputs) in _three_runners(exprs, values).items():
        if len(exprs) == 1:  # the caller's A now holds A + I
            np.testing.assert_allclose(inputs["A"], values["A"] + np.eye(3), atol=1e-12, err_msg=runner)
        else:  # A .* A, handed out, had the identity added into it
            np.testing.assert_allclose(results[1], expected[0], atol=1e-12, err_msg=runner)


def test_a_sum_of_terms_takes_over_its_first_term_by_the_binders_decision_only(monkeypatch):
    """A sum of terms into one buffer (the matrix factorisation's diagonal Hessian: a
    copy and a dense term): the binder takes the dense term's new array as the buffer
    (``BoundStep.take``) and the module writes it as it is; told not to
    (``accumulate.takes_first``), the binder's record says so and the module copies it
    (one ``_np.array`` more), and every runner still computes the interpreter's values
    without writing into an input."""
    build, values = CASES["matfac Hessian (a copy and a dense term into one buffer)"]
    exprs = build()
    shapes = {k: np.shape(v) for k, v in values.items()}

    def bound_takes() -> list[bool]:
        compiled = tc.compile(exprs)
        compiled(values)
        return [step.take for step in compiled._last[1].steps.values() if step.parts is not None]

    assert bound_takes() == [True]
    taken = tc.to_python(exprs, shapes=shapes)
    monkeypatch.setattr(accumulate, "takes_first", lambda fn: False)
    assert bound_takes() == [False]
    copied = tc.to_python(exprs, shapes=shapes)
    assert copied.count("_np.array(") == taken.count("_np.array(") + 1
    expected = [tc.evaluate(e, values) for e in exprs]
    for runner, (results, inputs) in _three_runners(exprs, values).items():
        for got, want in zip(results, expected):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12, err_msg=runner)
        for key, value in values.items():
            np.testing.assert_array_equal(inputs[key], value, err_msg=f"{runner} wrote into input {key}")


def test_the_source_writer_writes_the_binders_record_object():
    """``tc.to_python(shapes=)`` writes each sum that is no elementwise chain from the
    record the binder bound (``BoundStep.sum``), the same object, and from nothing else."""
    build, values = CASES["dense, diagonal and a slice embedded"]
    roots = build()
    shapes = {k: np.shape(v) for k, v in values.items()}
    graphs = [axis_graph(roots[0])]
    bound = bind(build_plan(list(roots)), ShapeResolver(graphs, shapes, estimate=True), get_backend("numpy"))
    records = [bound.steps[op.slot].sum for op in bound.ops if op.kind == "add" and op.inline is not None]
    records = [record for record in records if record is not None and record.added]
    assert records, "the case has a sum with an embedded and a diagonal part"
    written: list = []
    writer = ProgramSource(bound, ShapeResolver(graphs, shapes))
    sum_ = writer._sum
    writer._sum = lambda record: written.append(record) or sum_(record)  # type: ignore[method-assign]
    writer.write({slot: name for name, slot in bound.bound_plan.inputs.items()})
    assert [id(record) for record in written] == [id(record) for record in records]


# ---------------------------------------------------------------- a broadcast part


def test_a_broadcast_part_is_read_alike_by_the_numpy_and_the_generic_closure():
    """A sum of a 0-d slot (broadcast over the sum's axes) and the identity, 3x3: the
    record says the slot is broadcast and not taken over; the NumPy closure (the helper
    text the module writes) and the generic one (any other library's backend calls)
    compute s + I, and neither writes into s."""
    items = (AddItem("slot", 2.0, slot=0), AddItem("delta", 1.0, n=1), AddItem("slot", 1.0, slot=1))
    record = plan_sum(items, (3, 4 - 1), [(), (3,)])
    assert [part.how for part in record.parts] == ["broadcast", "diagonal", "broadcast"]
    assert record.broadcast and not record.take and record.start == "chain"
    numpy = get_backend("numpy")
    generic = copy.copy(numpy)
    generic.runs_numpy_helpers = False  # the path every other library takes (no NumPy helper text)
    s, row = np.array(1.5), np.array([1.0, 2.0, 4.0])
    expected = 2 * 1.5 + np.eye(3) + row
    for backend in (numpy, generic):
        env = [s.copy(), row.copy(), s]
        np.testing.assert_array_equal(sum_closure(record, backend)(env), expected)
        assert env[0] == s and np.array_equal(env[1], row)
