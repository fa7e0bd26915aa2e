"""One NumPy writer of a bound op, for ``tc.compile``'s fused function and ``tc.to_python(shapes=)``.

The fused function (:func:`tenscalc.compiler.fused.fuse`) writes the contractions, a
product's terms, shared pairs and sums into one buffer with the writer of the module
``tc.to_python(exprs, shapes=...)`` generates (:class:`tenscalc.compiler.source.FusedOpSource`):
over the corpus of ``test_runners.py`` it calls no closure for those ops, the module's
statement of each such op is one of the fused function's (slots named alike), and the
fused function's results are the closure loop's, bit for bit.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler import closures
from tenscalc.compiler.fused import WRITTEN, Chain, Terms, Tiles
from tenscalc.compiler.scalar import ScalarProgram
from tenscalc.compiler.source import CHAIN_KINDS
from tests.compiler.test_runners import NAMES, _values


def _fused_program(exprs: list, values: dict):
    compiled = tc.compile(exprs)
    compiled(values)
    compiled(values)  # the second call writes the fused function
    program = compiled._last[1]
    return compiled, program


def _array_cases() -> list[str]:
    return [name for name in NAMES if name != "scalars"]  # all-scalar programs take the float runner


def _normal(line: str, inputs: dict[str, int]) -> str:
    """A statement with slots named alike (``env[k]`` and ``_sk`` as ``S<k>``, inputs by
    their slot), ufuncs alike (``_np.add`` and ``_u_add``), and constants' and
    intermediates' numbers left out."""
    line = re.sub(r"env\[(\d+)\]", r"S\1", line)
    line = re.sub(r"\b_np\.(\w+)\(", r"_u_\1(", line)
    line = re.sub(r"\b_s(\d+)\b", r"S\1", line)
    for name, slot in inputs.items():
        line = re.sub(rf"(?<![\w.'\"]){re.escape(name)}\b", f"S{slot}", line)
    line = re.sub(r"\b_K\d+\b", "_K", line)
    return re.sub(r"\b_p\d+\b", "_p", line.strip())


def test_the_scalar_case_is_the_only_one_without_a_fused_function():
    exprs, values = _values("scalars")
    _, program = _fused_program(exprs, values)
    assert isinstance(program, ScalarProgram)


@pytest.mark.parametrize("name", _array_cases())
def test_the_fused_function_calls_no_closure_for_the_ops_the_writer_writes(name):
    exprs, values = _values(name)
    _, program = _fused_program(exprs, values)
    assert program.fused is not None
    written = [op for op in program.ops if op.kind in WRITTEN and not isinstance(op.inline, Chain)]
    assert written, "every corpus case with arrays has a contraction"
    names = program.fused.__globals__
    called = [op for op in written if any(value is op.fn for value in names.values())]
    assert not called, [(op.kind, op.slot) for op in called]
    # no closure of a written op's terms either: the closure runner's closures it holds are
    # those of the ops it calls (a function that is no ufunc)
    made = [value for value in names.values() if getattr(value, "__module__", None) == closures.__name__]
    calls = {id(op.fn) for op in program.ops if op.kind not in WRITTEN}
    assert all(id(fn) in calls for fn in made), [fn.__qualname__ for fn in made if id(fn) not in calls]


@pytest.mark.parametrize("name", _array_cases())
def test_the_modules_statement_of_each_written_op_is_the_fused_functions(name):
    exprs, values = _values(name)
    compiled, program = _fused_program(exprs, values)
    shapes = {k: np.shape(v) for k, v in values.items()}
    module = tc.to_python(exprs, shapes=shapes)
    inputs = dict(program.bound_plan.inputs)
    fused_lines = {_normal(line, {}) for line in program.fused_source.splitlines()}
    compared = 0
    for op in program.ops:
        if op.kind not in WRITTEN or isinstance(op.inline, (Chain, Terms, Tiles)):
            # a chain is written with out= buffers, a sum of terms added in place (float64 only), tiles
            # by the tile writer (its parts' producers write straight into them)
            continue
        found = [line for line in module.splitlines() if re.match(rf"\s*_s{op.slot} = ", line)]
        assert len(found) == 1, (op.slot, found)
        assert _normal(found[0], inputs) in fused_lines, (op.kind, op.slot, _normal(found[0], inputs))
        compared += 1
    assert compared, "each case has a contraction the module and the fused function both write"


@pytest.mark.parametrize("name", _array_cases())
def test_the_fused_function_computes_the_loops_values_bit_for_bit(name):
    exprs, values = _values(name)
    compiled, program = _fused_program(exprs, values)
    arrays = [compiled._backend.convert(n, values[n]) for n in compiled.inputs[: compiled._slot_count]]
    loop = program.run_steps(arrays, arrays[0])
    fused = program.fused(arrays, arrays[0])
    assert fused is not None
    for ours, theirs in zip(fused, loop):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("name", _array_cases())
def test_the_modules_elementwise_chains_are_the_fused_functions_without_its_buffers(name):
    """A function, power or sum the binder describes as a chain of ufunc calls is written
    from that one description: the fused function's statements, less its ``out=``
    buffers (the module takes any dtype, the fused function float64 only)."""
    exprs, values = _values(name)
    compiled, program = _fused_program(exprs, values)
    module = tc.to_python(exprs, shapes={k: np.shape(v) for k, v in values.items()})
    inputs = dict(program.bound_plan.inputs)
    fused_lines = [re.sub(r", out=[^)]*\)", ")", _normal(line, {})) for line in program.fused_source.splitlines()]
    module_lines = [_normal(line, inputs) for line in module.splitlines()]
    chains = [op for op in program.ops if op.kind in CHAIN_KINDS and isinstance(op.inline, Chain)]
    compared = 0
    for op in chains:
        target = f"S{op.slot} = "
        if not any(line.startswith(target) and line != f"{target}None" for line in fused_lines):
            continue  # written straight into its part of a tiled array
        end = next(k for k, line in enumerate(module_lines) if line.startswith(target))
        start = end - (len(op.inline.calls) - 1)  # the chain's temporaries, then its value
        written = module_lines[start : end + 1]
        assert any(fused_lines[k : k + len(written)] == written for k in range(len(fused_lines))), (op.slot, written)
        compared += 1
    if name in ("extended Rosenbrock (tiles)", "chained Rosenbrock (slices, banded Hessian)", "mlp"):
        assert compared, "these cases have elementwise steps"


def test_a_module_with_stretched_bands_defines_its_stretch_helper():
    """A banded Hessian whose bands are stretches of a band value (``_stretch``): the
    module defines the helper it calls (it raised NameError before) and computes what
    ``tc.compile`` computes; by hand, H = diag(2 (x_{k-1}^2 + x_{k+1}^2)) with 4 x_k x_{k+1}
    off the diagonal."""
    f = tc.parse("sum((x.^2)[1:] .* (x.^2)[:-1])")
    exprs = [f, tc.gradient(f, "x"), tc.hessian(f, "x")]
    x = np.linspace(0.5, 1.4, 7)
    module = tc.to_python(exprs, shapes={"x": (7,)})
    assert "_stretch(" in module
    namespace: dict = {}
    exec(compile(module, "<generated>", "exec"), namespace)  # noqa: S102 - the source under test
    got = namespace["f"](x=x)
    squares = np.concatenate([[0.0], x**2, [0.0]])
    hand = np.diag(2 * (squares[:-2] + squares[2:])) + np.diag(4 * x[:-1] * x[1:], 1) + np.diag(4 * x[:-1] * x[1:], -1)
    np.testing.assert_allclose(got[2], hand, rtol=1e-12)
    for ours, theirs in zip(got, tc.compile(exprs)(x=x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_every_name_a_helper_defines_is_reserved_from_the_functions_name():
    """A generated function named like a helper of its module would replace it
    (``generated.MODULE_NAMES``): every module-level name of ``source.HELPERS`` is reserved."""
    from tenscalc.compiler.generated import MODULE_NAMES
    from tenscalc.compiler.source import HELPERS

    defined = set()
    for text in HELPERS.values():
        defined |= set(re.findall(r"^def (\w+)", text, re.M))
        for names in re.findall(r"^(\w[\w, ]*) = ", text, re.M):
            defined |= {name.strip() for name in names.split(",")}
    assert {"_outer_columns", "_gram", "_accumulate"} <= defined
    assert defined <= MODULE_NAMES, sorted(defined - MODULE_NAMES)


def _linalg_case() -> tuple[list, dict[str, np.ndarray]]:
    """inv, det and adj of one matrix (distinct lengths: A is 3 x 3, x has 3 entries, B is 3 x 4)."""
    f = tc.parse("det(A) + x *(i,ij->j) inv(A) *(j,j->) x + sum(adj(A) *(ij,jk->ik) B)", {"A": 2, "x": 1, "B": 2})
    rng = np.random.default_rng(26)
    values = {"A": np.eye(3) * 3 + rng.uniform(0.5, 1.5, (3, 3)) / 4, "x": rng.uniform(0.5, 1.5, 3)}
    values["B"] = rng.uniform(0.5, 1.5, (3, 4))
    return [f, tc.gradient(f, "A")], values


def test_inv_det_and_adj_are_written_by_the_one_writer_not_called_as_closures():
    """The fused function computes inv, det and adj with the statements the module writes
    (``_inv(...)``, the text the closures run), calls none of their closures, and its values
    are the loop's bit for bit."""
    assert {"inv", "det", "adj"} <= WRITTEN
    exprs, values = _linalg_case()
    compiled, program = _fused_program(exprs, values)
    ops = [op for op in program.ops if op.kind in ("inv", "det", "adj")]
    assert {op.kind for op in ops} == {"inv", "det", "adj"}
    names = program.fused.__globals__
    assert not [op.kind for op in ops if any(value is op.fn for value in names.values())]
    module = tc.to_python(exprs, shapes={k: np.shape(v) for k, v in values.items()})
    inputs = dict(program.bound_plan.inputs)
    fused_lines = {_normal(line, {}) for line in program.fused_source.splitlines()}
    for op in ops:
        (line,) = [line for line in module.splitlines() if re.match(rf"\s*_s{op.slot} = _{op.kind}\(", line)]
        assert _normal(line, inputs) in fused_lines, (op.kind, line)
    arrays = [compiled._backend.convert(n, values[n]) for n in compiled.inputs[: compiled._slot_count]]
    for ours, theirs in zip(program.fused(arrays, arrays[0]), program.run_steps(arrays, arrays[0])):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def _errors(exprs: list, good: dict, bad: dict) -> list[str]:
    """The error each runner raises on ``bad``: the closure loop (a first call), the fused
    function (a third call, after two on ``good``), the module ``to_python(shapes=)`` and
    the shape-free ``to_python()``."""
    messages = []
    fused = tc.compile(exprs)
    fused(good)
    fused(good)
    modules = [tc.to_python(exprs, shapes={k: np.shape(v) for k, v in good.items()}), tc.to_python(exprs)]
    functions = []
    for module in modules:
        namespace: dict = {}
        exec(compile(module, "<generated>", "exec"), namespace)  # noqa: S102 - the source under test
        functions.append(namespace["f"])
    runs = [lambda: tc.compile(exprs)(bad), lambda: fused(bad), *[lambda f=f: f(**bad) for f in functions]]
    for run in runs:
        with pytest.raises(tc.EvaluationError) as caught:
            run()
        messages.append(str(caught.value))
    return messages


def test_the_three_runners_raise_the_same_error_on_a_singular_matrix():
    exprs, values = _values("inv and det")
    singular = dict(values, A=np.ones((3, 3)))
    loop, fused, module, shape_free = _errors(exprs, values, singular)
    assert loop == "inv(A): the matrix A is singular"
    assert loop == fused == module == shape_free


def test_the_three_runners_raise_the_same_error_on_a_non_finite_matrix():
    """adj of a matrix with a NaN entry (whose SVD does not converge): the same error in the
    runners, said before the SVD."""
    exprs, values = _linalg_case()
    exprs = [tc.parse("sum(adj(A) *(ij,jk->ik) B)", {"A": 2, "B": 2})]
    values = {k: values[k] for k in ("A", "B")}
    bad = dict(values, A=np.where(np.eye(3) == 1, np.nan, values["A"]))
    loop, fused, module, shape_free = _errors(exprs, values, bad)
    assert loop == "adj(A): the matrix A has an entry that is not finite (NaN or inf)"
    assert loop == fused == module == shape_free


def test_x_to_the_one_is_one_record_every_writer_follows():
    """``x^1`` is ``x`` itself: the binder says so once (``fused.Same``), the fused
    function, the module and the float runner write that alias and call no closure."""
    from tenscalc.compiler.fused import Same

    expr = tc.parse("x^1 .* y + x^1", {"x": 1, "y": 1})
    values = {"x": np.array([0.5, -2.0, 3.0]), "y": np.array([1.5, 2.0, -1.0])}
    compiled, program = _fused_program([expr], values)
    (power,) = [op for op in program.ops if op.kind == "pow"]
    assert power.inline == Same(power.reads[0])
    assert not any(value is power.fn for value in program.fused.__globals__.values())
    assert f"env[{power.slot}] = env[{power.reads[0]}]" in program.fused_source
    module = tc.to_python([expr], shapes={"x": (3,), "y": (3,)})
    assert f"_s{power.slot} = x\n" in module
    namespace: dict = {}
    exec(module, namespace)  # noqa: S102 - the module under test
    expected = values["x"] * values["y"] + values["x"]
    np.testing.assert_array_equal(namespace["f"](**values)[0], expected)
    np.testing.assert_array_equal(compiled(values)[0], expected)
    scalar = tc.compile(tc.parse("a^1 * b", {"a": 0, "b": 0}))
    assert scalar(a=2.0, b=3.0) == 6.0
    assert isinstance(scalar._last[1], ScalarProgram) and "_s1 = _s0\n" in scalar._last[1].source
