"""The lowered ops' step tables agree, and every op's closure is its record's (issue 26).

The binder keeps each op's decisions in a record (``Op.record``: :mod:`tenscalc.compiler.records`,
``TermPlan``, ``SumPlan`` ...), and the runners read the records, one function per op kind or
record type each: the closure runner (``closures.CLOSURE_RUNNERS``), the fused writer's
descriptions (``descriptions.FUSED_DESCRIPTIONS``), the NumPy source writer
(``source.OP_WRITERS``, its plan steps by ``source.SOURCE_RULES``) and the float runner
(``scalar.SCALAR_RULES``, for the kinds whose op can be a number computed from numbers).
Here: every op kind the binder makes (``program.OP_RECORDS``) has an entry in every table,
and every op of the runner corpus (and of a declared positive-definite matrix's Cholesky
program) carries a record of its kind whose closure and description, rebuilt from the record
alone, compute the values the loop computed and say what the op says.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.closures import CLOSURE_RUNNERS, closure
from tenscalc.compiler.descriptions import FUSED_DESCRIPTIONS, fused_description
from tenscalc.compiler.fused import WRITTEN
from tenscalc.compiler.program import BIND_RULES, OP_RECORDS
from tenscalc.compiler.scalar import SCALAR_RULES
from tenscalc.compiler.source import OP_WRITERS, SOURCE_RULES
from tests.compiler.test_runners import NAMES, _values

#: the op kinds whose op can compute a number from numbers (the others read or make arrays:
#: a slice, an embedding, a matrix's inv, det or adj, a pair, a band, a Cholesky factor)
SCALAR_KINDS = {"constant", "func", "pow", "add", "product"}

ROSEN = "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)"


def _pd_case() -> tuple[list, dict, dict]:
    """Roots reading a declared pd matrix's factor (its inv, det and log det), with values."""
    rng = np.random.default_rng(3)
    b = rng.standard_normal((4, 4))
    f = tc.parse("y *(i,ij->j) inv(K) *(j,j->) y + log(det(K)) + det(K)", {"K": 2, "y": 1})
    return [f, tc.gradient(f, "y")], {"K": b @ b.T / 4 + np.eye(4), "y": rng.standard_normal(4)}, {"K": "pd"}


def _adj_case() -> tuple[list, dict, dict]:
    """The derivative of det: an adjugate."""
    rng = np.random.default_rng(4)
    return [tc.derivative(tc.parse("det(A)", {"A": 2}), "A")], {"A": rng.uniform(0.5, 1.5, (3, 3))}, {}


def _embed_case() -> tuple[list, dict, dict]:
    """The gradient of a slice's function: the part written into zeros."""
    return [tc.gradient(tc.parse("sum(sin(x[1:]))", {"x": 1}), "x")], {"x": np.linspace(0.5, 1.5, 5)}, {}


def _twin_case() -> tuple[list, dict, dict]:
    """A banded Hessian that another step reads densely: its dense twin."""
    hessian = tc.hessian(tc.parse(ROSEN), "x")
    return [hessian, tc.sin(hessian)], {"x": np.linspace(0.5, 1.5, 6)}, {}


def _constant_case() -> tuple[list, dict, dict]:
    """A constant array a sum reads (``delta`` summed along one axis: a vector of ones)."""
    return [tc.parse("x + delta(1) *(ij,j->i) 1", {"x": 1})], {"x": np.linspace(0.5, 1.5, 4)}, {}


#: cases besides the runner corpus, for the op kinds it does not reach
EXTRA = {
    "inv, det and log det of a declared positive-definite K": _pd_case,
    "adj (the derivative of det)": _adj_case,
    "embed (the gradient of sin of a slice)": _embed_case,
    "twin (a banded Hessian read densely)": _twin_case,
    "constant (a vector of ones)": _constant_case,
}
CASES = [*NAMES, *EXTRA]


def test_every_op_kind_has_an_entry_in_every_table():
    """The binder's op kinds, the closure runner's record types, the source writer's op and
    step kinds and the float runner's kinds agree."""
    assert set(BIND_RULES) <= set(OP_RECORDS), set(BIND_RULES) - set(OP_RECORDS)
    records = {record for types in OP_RECORDS.values() for record in types}
    assert records == set(CLOSURE_RUNNERS), records ^ set(CLOSURE_RUNNERS)
    assert set(FUSED_DESCRIPTIONS) == set(CLOSURE_RUNNERS), set(FUSED_DESCRIPTIONS) ^ set(CLOSURE_RUNNERS)
    assert set(OP_WRITERS) == set(OP_RECORDS), set(OP_WRITERS) ^ set(OP_RECORDS)
    assert set(SOURCE_RULES) == set(BIND_RULES), set(SOURCE_RULES) ^ set(BIND_RULES)
    assert WRITTEN <= set(OP_RECORDS), WRITTEN - set(OP_RECORDS)  # what the fused function writes with it
    assert set(SCALAR_RULES) == SCALAR_KINDS, set(SCALAR_RULES) ^ SCALAR_KINDS


def _program(case: str, backend: str = "numpy"):
    """The compiled function of a case, its values and its program bound to their shapes."""
    if case in EXTRA:
        exprs, values, assumptions = EXTRA[case]()
    else:
        (exprs, values), assumptions = _values(case), {}
    compiled = tc.compile(exprs, assumptions=assumptions, backend=backend, jit=False)
    return compiled, values, compiled._bind({k: np.shape(v) for k, v in values.items()})


def _same(rebuilt, original) -> bool:
    """The two values are the same numbers (a banded slot's tuple band by band; the NumPy
    Cholesky factor's list entry by entry: arrays, its dtype, its flag)."""
    if isinstance(original, (tuple, list)):
        return type(rebuilt) is type(original) and len(rebuilt) == len(original) and all(map(_same, rebuilt, original))
    if original is None:  # a det only its logs read: not computed
        return rebuilt is None
    if isinstance(original, (np.ndarray, np.generic, float)) or hasattr(original, "numpy"):  # a torch tensor too
        return np.array_equal(np.asarray(rebuilt), np.asarray(original), equal_nan=True)
    if hasattr(original, "lower"):  # PyTorch's Cholesky factor
        return type(rebuilt) is type(original) and _same(rebuilt.lower, original.lower)
    return type(rebuilt) is type(original) and rebuilt == original


def _same_description(rebuilt, original) -> bool:
    """The two descriptions are equal (a constant band's numbers compared as arrays)."""
    if type(rebuilt) is not type(original):
        return False
    if hasattr(original, "value") and isinstance(original.value, (tuple, np.ndarray)):  # BandNumber
        return _same(rebuilt.value, original.value)
    return rebuilt == original


@pytest.mark.parametrize("case", CASES)
def test_every_op_has_a_record_of_its_kind_and_its_closure_is_the_records(case):
    """Each op's record is one its kind carries; its closure rebuilt from the record alone (no
    binder, no resolver) computes, on the slots the loop computed, exactly the loop's value."""
    _check_records(case, "numpy")


@pytest.mark.parametrize("case", ["mlp", "inv and det", "inv, det and log det of a declared positive-definite K"])
def test_the_closure_runner_rebuilds_another_librarys_closures(case):
    """The same for PyTorch's closures (the closure runner serves any array library)."""
    pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    _check_records(case, "torch")


def _check_records(case: str, library: str) -> None:
    """Every op of ``case`` bound for ``library``: a record of its kind, whose closure the
    closure runner rebuilds to compute the loop's value again."""
    compiled, values, program = _program(case, library)
    name = f"{case} ({library})"
    backend = compiled._backend
    env: list = [None] * (program.n_slots + 1)
    for slot, variable in zip(program.input_slots, compiled.inputs):
        env[slot] = backend.convert(variable, values[variable])
    env[-1] = env[program.input_slots[0]]
    kinds = set()
    for op in program.ops:
        assert type(op.record) in OP_RECORDS[op.kind], (name, op.kind, op.record)
        kinds.add(op.kind)
        # the slots as the op found them (the inverse read from a Cholesky factor overwrites it)
        before = copy.deepcopy(env)
        env[op.slot] = op.fn(env)  # the loop's value (nothing released: every slot stays readable)
        rebuilt = closure(op.record, backend)
        assert rebuilt is not op.fn
        # what the writers read is the record's description, never an attribute of a closure
        assert _same_description(fused_description(op.record, backend), op.inline), (name, op.kind)
        assert not hasattr(op.fn, "inline") and not hasattr(rebuilt, "inline"), (name, op.kind)
        assert _same(rebuilt(before), env[op.slot]), (name, op.kind, op.record)
    if case in EXTRA:  # each reaches the kinds it is there for (a pd matrix: its factor and three readers)
        wanted = {"cholesky", "inv", "det", "func"} if "positive-definite" in case else {case.split()[0]}
        assert wanted <= kinds, (case, wanted - kinds)
    if all(shape == () for shape in program.dense):
        assert kinds <= set(SCALAR_RULES), kinds - set(SCALAR_RULES)


def test_the_cases_reach_every_op_kind():
    """The cases above meet every op kind the binder makes."""
    kinds = {op.kind for case in CASES for op in _program(case)[2].ops}
    assert kinds == set(OP_RECORDS), set(OP_RECORDS) ^ kinds


def test_a_record_holds_no_closure():
    """A record is decisions (numbers, slots, keys, other records), never a closure: the
    closure runner makes the closures."""
    from dataclasses import fields, is_dataclass

    def closures_in(value, depth=0) -> list:
        if depth > 16:
            return []
        if callable(value) and not isinstance(value, (type, np.ufunc)) and not is_dataclass(value):
            return [value]
        if is_dataclass(value):
            return [c for f in fields(value) for c in closures_in(getattr(value, f.name), depth + 1)]
        if isinstance(value, (tuple, list)):
            return [c for item in value for c in closures_in(item, depth + 1)]
        return []

    for case in CASES:
        for op in _program(case)[2].ops:
            assert not closures_in(op.record), (case, op.kind, closures_in(op.record))
