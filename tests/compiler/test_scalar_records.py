"""The float runner (``tenscalc/compiler/scalar.py``) reads the bound program's records.

Its order of operations must be the NumPy program's by construction: a product of
numbers is multiplied along the path in the binder's :class:`~tenscalc.compiler.terms.TermPlan`,
not along one the float runner finds again.  So when the binder is given another path
search, the float runner must follow it: multiplication of floats does not associate,
and the two runners then agree bit for bit only if they read the same record.
"""

from __future__ import annotations

import numpy as np

import tenscalc as tc
from tenscalc.compiler import program as program_module
from tenscalc.compiler.closures import CLOSURE_RUNNERS
from tenscalc.compiler.descriptions import FUSED_DESCRIPTIONS
from tenscalc.compiler.fused import Call, Chain, Slot
from tenscalc.compiler.program import Program
from tenscalc.compiler.records import FuncRecord
from tenscalc.compiler.scalar import ScalarProgram

NAMES = ("a", "b", "c", "d", "e")


def _right_nested(eq: str, op_shapes, out_size: int):
    """A path search multiplying numbers right to left, ``a (b (c (d e)))``: not the one
    :func:`~tenscalc.compiler.program.choose_path` takes (``((a b) c) ...``)."""
    found = ORIGINAL(eq, op_shapes, out_size)
    if len(op_shapes) > 2 and all(shape == () for shape in op_shapes):
        n = len(op_shapes)
        return [(m - 2, m - 1) for m in range(n, 1, -1)], found[1]
    return found


ORIGINAL = program_module.choose_path


def _fast_and_numpy(run: tc.CompiledFunction, values: dict) -> tuple[list[float], list[float]]:
    """The float runner's results and the NumPy program's (its closures) for ``values``."""
    got = run(**values)
    program = run._last[1]
    assert isinstance(program, ScalarProgram)
    arrays = [run._backend.convert(n, values[n]) for n in run.inputs]
    expected = Program.run(program, arrays, arrays[0])
    return [float(g) for g in got], [float(x) for x in expected]


def test_the_float_runner_multiplies_along_the_binders_path(monkeypatch):
    a, b, c, d, e = (tc.var(n, 0) for n in NAMES)
    exprs = [a * b * c * d * e, tc.sin(a * b * c * d * e)]
    default = tc.compile(exprs)
    default(**dict.fromkeys(NAMES, 1.0))  # bound now, with the default path search
    monkeypatch.setattr(program_module, "choose_path", _right_nested)
    other = tc.compile(exprs)  # bound with the other path search
    rng = np.random.default_rng(3)
    paths_differ = 0
    for _ in range(200):
        values = {n: np.float64(rng.uniform(0.1, 10.0)) for n in NAMES}
        for run in (default, other):
            fast, numpy = _fast_and_numpy(run, values)
            assert fast == numpy  # bit for bit: the same multiplications in the same order
        paths_differ += _fast_and_numpy(default, values)[0] != _fast_and_numpy(other, values)[0]
    assert paths_differ > 10  # the two paths round differently here: the test can fail


def test_the_float_function_is_written_from_the_bound_plan():
    # bind folds squares and takes shared factors out: the float function runs the plan
    # as bound (one op per written statement), not the plan before those rewrites
    x, y = tc.var("x", 0), tc.var("y", 0)
    run = tc.compile([x * y + x * tc.sin(y), 3 * x**2])
    run(x=0.5, y=2.0)
    program = run._last[1]
    assert isinstance(program, ScalarProgram)
    written = {
        int(line.split("=")[0].strip()[2:]) for line in program.source.splitlines()[4:] if line.startswith("    _s")
    }
    assert written == {op.slot for op in program.ops}
    values = {"x": np.float64(0.7), "y": np.float64(-1.3)}
    got = run(**values)
    for g, e in zip(got, run.exprs, strict=True):
        np.testing.assert_allclose(float(g), tc.evaluate(e, values), rtol=1e-14)


def test_a_program_without_ops_gives_an_array_input_to_the_numpy_program():
    # x itself: no op at all, so only the input's shape says it is no number
    run = tc.compile(tc.var("x", 1))
    np.testing.assert_array_equal(run(x=np.arange(3.0)), np.arange(3.0))
    assert type(run._last[1]) is Program
    scalar = tc.compile(tc.var("x", 0))
    assert float(scalar(x=2.5)) == 2.5 and isinstance(scalar._last[1], ScalarProgram)


def _cos_for_sin(run_func, describe_func):
    """A closure runner and a describer of functions that run ``sin`` as ``cos``: a decision
    the float runner can only follow by reading the op's description of it."""

    def run(record, backend):
        if record.name != "sin":
            return run_func(record, backend)
        a = record.slot
        return lambda env: np.cos(env[a])

    def describe(record, backend):
        if record.name != "sin":
            return describe_func(record, backend)
        return Chain((Call(np.cos, (Slot(record.slot),)),))

    return run, describe


def test_functions_and_powers_are_written_from_the_binders_chains(monkeypatch):
    x, y = tc.var("x", 0), tc.var("y", 0)
    exprs = [tc.sin(x) * tc.tanh(y), tc.relu(x - y), tc.abs(x) + tc.sign(y), x**y, x**2, x**-1, x**-2, x**0.5, x**3]
    run = tc.compile(exprs)
    run(x=0.5, y=2.0)
    program = run._last[1]
    assert isinstance(program, ScalarProgram)
    chains = {op.kind: [] for op in program.ops}
    for op in program.ops:
        chains[op.kind].append(op.inline)
    # every function and power (x^y included) is described, none left to a rule of the float runner
    assert chains["func"] and chains["pow"] and all(isinstance(c, Chain) for c in chains["func"] + chains["pow"])
    run_cos, describe_cos = _cos_for_sin(CLOSURE_RUNNERS[FuncRecord], FUSED_DESCRIPTIONS[FuncRecord])
    monkeypatch.setitem(CLOSURE_RUNNERS, FuncRecord, run_cos)
    monkeypatch.setitem(FUSED_DESCRIPTIONS, FuncRecord, describe_cos)
    other = tc.compile(exprs)
    rng = np.random.default_rng(5)
    for _ in range(50):
        values = {"x": np.float64(rng.uniform(0.1, 3.0)), "y": np.float64(rng.uniform(-2.0, 2.0))}
        fast, numpy = _fast_and_numpy(other, values)
        # the float runner ran cos where the binder did (math's and NumPy's cos and tanh may
        # differ in the last bit; sin is nowhere near cos on (0.1, 3))
        np.testing.assert_allclose(fast, numpy, rtol=1e-14, atol=0)
        np.testing.assert_allclose(fast[0], np.cos(values["x"]) * np.tanh(values["y"]), rtol=1e-14)
        np.testing.assert_allclose(*_fast_and_numpy(run, values), rtol=1e-14, atol=0)
