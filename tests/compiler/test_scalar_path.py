"""The scalar fast path (``tenscalc/compiler/scalar.py``): a plan whose every step is a
number runs as one float function, and agrees with the NumPy program it falls back to.

Agreement is checked three ways: with ``tc.evaluate`` (to 1e-14 relative: libm and
NumPy's own kernels may differ by an ulp), with the NumPy program of the same binding
(the fallback), and, for derivatives, with central differences of the fast path's own
values.  Wherever float semantics would differ from NumPy's (nan, inf, complex, domain
errors, overflow) the values and the warnings are the NumPy program's.
"""

from __future__ import annotations

import pickle
import random
import threading
import warnings

import numpy as np
import pytest

import tenscalc as tc
from benchmarks.elimination_problems import PROBLEMS, tenscalc_outputs
from tenscalc.compiler.backends import available_backends
from tenscalc.compiler.program import Program
from tenscalc.compiler.scalar import ScalarProgram
from tenscalc.interpreter import ELEMENTWISE
from tests.fuzz.generate import Generator

RTOL = 1e-14


def _program(run: tc.CompiledFunction) -> Program:
    """The program the latest call of ``run`` used."""
    assert run._last is not None
    return run._last[1]


def _numpy_program(run: tc.CompiledFunction, values: dict) -> tuple:
    """What the NumPy program (the fallback) returns for ``values``, bypassing the fast path."""
    arrays = [run._backend.convert(name, values[name]) for name in run.inputs]
    return Program.run(_program(run), arrays[: run._slot_count], arrays[0] if arrays else None)


def _close(got, expected, rtol: float = RTOL) -> None:
    for g, e in zip(got, expected, strict=True):
        assert isinstance(g, np.ndarray) and g.shape == () and g.dtype == np.float64
        np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-300)


def _jacobian_function(name: str) -> tuple[tc.CompiledFunction, tc.CompiledFunction, list[str], dict]:
    fn, names, point = PROBLEMS[name]
    outs, names_ = tenscalc_outputs(name)
    acc = tc.jacobian_accumulation(outs, names_, shapes={x: () for x in names})
    jac = tc.compile([acc.jacobians[k][x] for k in range(len(outs)) for x in names])
    return tc.compile(outs), jac, list(names), {x: np.float64(v) for x, v in zip(names, point)}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_elimination_jacobians_take_the_fast_path_and_agree(name):
    f, jac, names, values = _jacobian_function(name)
    got = jac(**values)
    assert isinstance(_program(jac), ScalarProgram)
    exprs = jac.exprs
    _close(got, [tc.evaluate(e, values) for e in exprs])
    _close(got, _numpy_program(jac, values))
    # central differences of the function's own fast path
    h = 1e-6
    outputs = len(f.exprs)
    for j, x in enumerate(names):
        up = f(**{**values, x: values[x] + h})
        down = f(**{**values, x: values[x] - h})
        assert isinstance(_program(f), ScalarProgram)
        for k in range(outputs):
            slope = (float(up[k]) - float(down[k])) / (2 * h)
            assert float(got[k * len(names) + j]) == pytest.approx(slope, rel=1e-6, abs=1e-7), (k, x)


def test_arithmetic_and_square_roots_agree_bit_for_bit_with_the_numpy_program():
    # IEEE arithmetic and sqrt are correctly rounded in both: the same operations in the
    # same order (sums in the binder's order, products along the same path) give the
    # same bits; functions such as exp may differ by an ulp (NumPy's own kernels)
    z = tc.var("z", 0)
    e = (x * y) * (x + y) * (x - z) * (x + 2 * y) * (z + 0.7) * 3.0 + tc.sqrt(x * z + 1) - 2.5
    hessian = tc.hessian(e, [x, y, z])
    run = tc.compile(
        [e] + [tc.derivative(e, v) for v in (x, y, z)] + [h for row in hessian.values() for h in row.values()]
    )
    assert any(len(t.operands) >= 4 for step in run.plan.steps if step.kind == "product" for t in step.data)
    rng = np.random.default_rng(7)
    for _ in range(50):  # one point may round alike in two orders; 50 points do not
        values = {n: np.float64(rng.uniform(0.1, 3)) for n in ("x", "y", "z")}  # sqrt(x z + 1) real
        got = run(**values)
        assert isinstance(_program(run), ScalarProgram)
        for g, e in zip(got, _numpy_program(run, values), strict=True):
            assert float(g) == float(e)
    _, jac, _, values = _jacobian_function("roe_flux_1d")  # +, *, /, sqrt, abs, sign
    for g, e in zip(jac(**values), _numpy_program(jac, values), strict=True):
        assert float(g) == float(e)


def _scalar_problems(count: int):
    """Random expressions of order-0 variables from the fuzz grammar (seeded)."""
    found = 0
    seed = 0
    while found < count:
        seed += 1
        rng = random.Random(seed)
        gen = Generator(rng)
        gen.orders = {name: 0 for name in gen.orders}
        problem = gen.problem()
        yield seed, tc.parse(problem.text, problem.orders)
        found += 1


@pytest.mark.parametrize(("seed", "expr"), list(_scalar_problems(60)), ids=lambda v: str(v)[:40])
def test_random_scalar_expressions_and_their_derivatives_agree(seed, expr):
    names = sorted(expr.variables)
    rng = np.random.default_rng(seed)
    values = {n: np.float64(rng.uniform(0.3, 1.2)) for n in names}
    exprs = [expr] + [tc.derivative(expr, tc.var(n, 0)) for n in names]
    exprs += [tc.derivative(d, tc.var(n, 0)) for d in exprs[1:] for n in names]
    run = tc.compile(exprs)
    got = run(**values)
    assert isinstance(_program(run), ScalarProgram)
    _close(got, [tc.evaluate(e, values) for e in exprs], rtol=1e-13)
    _close(got, _numpy_program(run, values), rtol=1e-13)
    # the first derivatives against central differences of the fast path's values
    f = tc.compile(expr)
    h = 1e-6
    for k, n in enumerate(names):
        slope = (float(f(**{**values, n: values[n] + h})) - float(f(**{**values, n: values[n] - h}))) / (2 * h)
        assert float(got[1 + k]) == pytest.approx(slope, rel=1e-5, abs=1e-6)


def _recorded(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, sorted((w.category.__name__, str(w.message)) for w in caught)


x, y = tc.var("x", 0), tc.var("y", 0)

FALLBACKS = {
    "log of a negative": ([tc.log(x * y), tc.derivative(tc.log(x * y), x)], {"x": -1.0, "y": 2.0}),
    "1 / 0": ([1 / (x - y)], {"x": 2.0, "y": 2.0}),
    "x^-2 at 0": ([(x - y) ** -2], {"x": 2.0, "y": 2.0}),
    "exp overflow": ([tc.exp(x * y), tc.derivative(tc.exp(x * y), y)], {"x": 900.0, "y": 2.0}),
    "product overflow": ([x * x * y * y, x * y + 1], {"x": 1e200, "y": 1e200}),
    "overflow hidden by 1/x": ([1 / (x * x * y) + y], {"x": 1e200, "y": 1e200}),
    "overflow hidden by tanh": ([tc.tanh(x * x * y)], {"x": 1e200, "y": 1e200}),
    "overflow hidden by arctan": ([tc.arctan(x * x * y)], {"x": 1e200, "y": 1e200}),
    "overflow hidden by exp": ([tc.exp(-x * x * y)], {"x": 1e200, "y": 1e200}),
    "nan input": ([tc.sin(x * y), x + y], {"x": np.nan, "y": 1.0}),
    "inf input": ([tc.exp(-x * y), x * y], {"x": np.inf, "y": 1.0}),
    "sqrt of a negative": ([(x - y) ** 0.5], {"x": 1.0, "y": 2.0}),
    "fractional power of a negative": ([(x - y) ** 0.3, (x - y) ** y], {"x": 1.0, "y": 2.5}),
    "arcsin out of range": ([tc.arcsin(x * y)], {"x": 1.0, "y": 2.0}),
    "sign and relu of an inf input": ([tc.sign(x * y), tc.relu(x * y)], {"x": np.inf, "y": 0.0}),
    "complex input": ([tc.sin(x) * y, tc.exp(x + y)], {"x": 1.0 + 2.0j, "y": 2.0}),
    "float32 input": ([tc.sin(x) * y, x * y], {"x": np.float32(0.1), "y": np.float32(3.0)}),
}


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_fallbacks_give_the_numpy_programs_values_and_warnings(case):
    exprs, raw = FALLBACKS[case]
    values = {n: np.asarray(v) for n, v in raw.items()}
    run = tc.compile(exprs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(x=0.5, y=0.25)  # bound, and fast at a harmless point
    assert isinstance(_program(run), ScalarProgram)
    got, got_warnings = _recorded(lambda: run(**values))
    expected, expected_warnings = _recorded(lambda: _numpy_program(run, values))
    assert got_warnings == expected_warnings
    for g, e in zip(got, expected, strict=True):
        assert type(g) is np.ndarray and g.dtype == np.asarray(e).dtype and g.shape == ()
        np.testing.assert_array_equal(g, e)
    if "input" not in case:
        with np.errstate(all="ignore"):
            for g, e in zip(got, exprs, strict=True):
                np.testing.assert_array_equal(g, tc.evaluate(e, values))


def test_sign_and_maximum_are_numpys():
    # relu is the binder's np.maximum(x, 0.0) call, written with _maximum: every pair, both orders
    from tenscalc.compiler.scalar import _maximum, _sign

    values = (-2.0, -0.0, 0.0, 3.0, np.nan, np.inf, -np.inf)
    for v in values:
        pairs = [(_sign(v), np.sign(v))] + [(_maximum(v, w), np.maximum(v, w)) for w in values]
        for mine, theirs in pairs:
            assert type(mine) is float
            np.testing.assert_array_equal(mine, theirs)
            assert np.signbit(mine) == np.signbit(theirs)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_every_function_agrees_with_numpy_on_the_fast_path(name):
    run = tc.compile(tc.parse(f"{name}(x)", {"x": 0}))
    for v in (-0.7, -0.0, 0.0, 0.3, 0.9, 2.5):
        with np.errstate(all="ignore"):
            expected = ELEMENTWISE[name](np.float64(v))
        got, caught = _recorded(lambda v=v: run(x=v))
        if np.isfinite(expected):
            assert isinstance(_program(run), ScalarProgram) and not caught
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=0)
        assert np.signbit(got) == np.signbit(expected)


def test_a_fast_call_is_warning_free_and_hands_out_fresh_arrays():
    run = tc.compile([x, tc.sin(x) * y, tc.sin(x) * y])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = run(x=0.25, y=np.float64(3.0))
    assert isinstance(_program(run), ScalarProgram)
    for value in first:
        assert type(value) is np.ndarray and value.flags.writeable and value.base is None
    first[0][()] = 7.0  # the caller's copy only
    again = run(x=0.25, y=3.0)
    assert float(again[0]) == 0.25 and float(again[1]) == 3.0 * np.sin(0.25)


def test_long_sums_are_written_in_several_statements():
    terms = [tc.sin(x + k) * y for k in range(1, 201)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    run = tc.compile([total, tc.derivative(total, x)])
    values = {"x": np.float64(0.3), "y": np.float64(1.7)}
    got = run(**values)
    program = _program(run)
    assert isinstance(program, ScalarProgram)
    assert max(line.count("+") for line in program.source.splitlines()) <= 70
    _close(got, _numpy_program(run, values))
    _close(got, [tc.evaluate(e, values) for e in run.exprs], rtol=1e-13)


def test_arrays_and_other_backends_keep_the_numpy_program():
    a = tc.var("a", 1)
    run = tc.compile([tc.sin(x) * y, tc.sum(a * x)])
    run(x=0.5, y=2.0, a=np.ones(3))  # a step with an axis: the NumPy program
    assert type(_program(run)) is Program
    run = tc.compile(tc.sin(x) * y)
    run(x=0.5, y=2.0)
    assert isinstance(_program(run), ScalarProgram)
    if "torch" in available_backends():
        torch_run = tc.compile(tc.sin(x) * y, backend="torch")
        torch_run(x=0.5, y=2.0)
        assert type(_program(torch_run)) is Program


@pytest.mark.slow  # a thread stress test
def test_eight_threads_share_one_compiled_function():
    _, jac, names, point = _jacobian_function("roe_flux_1d")
    rng = np.random.default_rng(1)
    inputs = [{n: np.float64(v * (1 + 0.01 * rng.standard_normal())) for n, v in point.items()} for _ in range(8)]
    expected = [[tc.evaluate(e, values) for e in jac.exprs] for values in inputs]
    jac(**inputs[0])
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(200):
                _close(jac(**inputs[k]), expected[k])
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    assert isinstance(_program(jac), ScalarProgram)


def test_pickled_functions_bind_the_fast_path_again():
    f, jac, names, values = _jacobian_function("simple")
    before = jac(**values)
    copy = pickle.loads(pickle.dumps(jac))
    after = copy(**values)
    assert isinstance(_program(copy), ScalarProgram)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
