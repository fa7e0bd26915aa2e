"""The per-call path of ``backend="jax"`` jitted functions: JAX arrays go straight into one
``jax.jit`` function (no conversion per input, no step loop, no cast in Python), and every
other call (NumPy arrays, numbers, mixed dtypes, inputs read for their shape only, keys,
positional values, threads) gives what the general path gives.

The work per call is counted (calls of ``convert``, of the jitted function, of the traced
step loop, of ``Program.run``), never timed.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.backends import JaxBackend
from tenscalc.compiler.program import Program
from tenscalc.errors import EvaluationError

ORDERS = {"c": 0, "x": 1, "y": 1, "A": 2}
#: c, y read as values; x only for its shape (the Hessian of c·|x|² is 2c times the identity)
F = "c * sum(x.^2) + sum(y.^3) + y *(i,ij->j) A *(j,j->) x"


@pytest.fixture(scope="module")
def jnp(jax_numpy):
    return jax_numpy


def _exprs() -> list[tc.Expr]:
    f = tc.parse(F, ORDERS)
    return [f, tc.gradient(f, "y"), tc.hessian(f, "x")]


def _values(n: int = 3, m: int = 4) -> dict[str, np.ndarray]:
    r = np.random.default_rng(0)
    return {"c": np.array(1.5), "x": r.standard_normal(m), "y": r.standard_normal(n), "A": r.standard_normal((n, m))}


class Counter:
    """Counts the calls of the functions it wraps (one count per name)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def wrap(self, name, fn):
        self.counts.setdefault(name, 0)

        def counted(*args, **kwargs):
            self.counts[name] += 1
            return fn(*args, **kwargs)

        return counted


@pytest.fixture
def counted(monkeypatch, jnp):
    """Counts ``convert``, ``Program.run``, the jitted function and its traces (the step loop
    run in Python) of the functions compiled while it is active."""
    counter = Counter()
    monkeypatch.setattr(JaxBackend, "convert", counter.wrap("convert", JaxBackend.convert))
    monkeypatch.setattr(Program, "run", counter.wrap("Program.run", Program.run))
    whole_call = JaxBackend.whole_call

    def counting_whole_call(self, run, slots, single, shapes=None, names=()):
        return counter.wrap("jitted", whole_call(self, counter.wrap("traced", run), slots, single, shapes, names))

    monkeypatch.setattr(JaxBackend, "whole_call", counting_whole_call)
    return counter


def test_jax_arrays_go_straight_into_one_jitted_function(counted, jnp):
    exprs = _exprs()
    compiled = tc.compile(exprs, backend="jax")
    arrays = {name: jnp.asarray(value) for name, value in _values().items()}
    first = compiled(arrays)
    for _ in range(4):
        got = compiled(arrays)
    assert counted.counts == {"convert": 0, "Program.run": 0, "jitted": 5, "traced": 1}
    for expr, a, b in zip(exprs, first, got):
        assert type(b) is type(jnp.asarray(1.0))
        np.testing.assert_allclose(np.asarray(b), tc.evaluate(expr, _values()), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_numpy_float_arrays_go_in_unconverted_and_run_the_same_function(counted, jnp):
    compiled = tc.compile(_exprs(), backend="jax")
    values = _values()
    from_numpy = compiled(values)
    from_jax = compiled({name: jnp.asarray(value) for name, value in values.items()})
    # jit takes NumPy float arrays itself: no conversion, one trace serves both calls (one dtype)
    assert counted.counts == {"convert": 0, "Program.run": 0, "jitted": 2, "traced": 1}
    for a, b in zip(from_numpy, from_jax):
        assert type(a) is type(b) and a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_integers_numbers_and_lists_are_converted_each(counted, jnp):
    compiled = tc.compile(_exprs(), backend="jax")
    values = _values()
    given = {"c": 2, "x": values["x"].tolist(), "y": np.arange(3), "A": values["A"]}
    got = compiled(given)
    assert counted.counts["convert"] == 4 and counted.counts["jitted"] == 1
    floats = {"c": 2.0, "x": values["x"], "y": np.arange(3.0), "A": values["A"]}
    for expr, result in zip(_exprs(), got):
        assert result.dtype == jnp.float64
        np.testing.assert_allclose(np.asarray(result), tc.evaluate(expr, floats), rtol=1e-12, atol=1e-12)


def test_a_program_run_op_by_op_converts_what_a_jitted_one_takes_as_it_is(counted, jnp, monkeypatch):
    """Past JIT_MAX_OPS a jitted function runs that program op by op: NumPy values are then
    converted (the ops need JAX arrays), and the results are JAX arrays."""
    import tenscalc.compiler

    monkeypatch.setattr(tenscalc.compiler, "JIT_MAX_OPS", 0)
    compiled = tc.compile(_exprs(), backend="jax")
    got = compiled(_values())
    assert counted.counts["convert"] == 4 and "jitted" not in counted.counts and counted.counts["Program.run"] == 1
    for expr, result in zip(_exprs(), got):
        assert type(result) is type(jnp.asarray(1.0))
        np.testing.assert_allclose(np.asarray(result), tc.evaluate(expr, _values()), rtol=1e-12, atol=1e-12)


def test_a_new_dtype_or_shape_traces_anew(counted, jnp):
    compiled = tc.compile(_exprs(), backend="jax")
    for values in (_values(), _values(5, 2)):
        for dtype in (jnp.float64, jnp.float32, jnp.float64):
            compiled({name: jnp.asarray(value, dtype=dtype) for name, value in values.items()})
    assert counted.counts["traced"] == 4 and counted.counts["jitted"] == 6 and counted.counts["convert"] == 0
    assert len(compiled._programs) == 2


def _dtypes_of(results) -> list[str]:
    return [str(r.dtype) for r in results]


@pytest.mark.parametrize(
    "dtypes",
    [
        {"c": "float32", "x": "float32", "y": "float32", "A": "float32"},
        {"c": "float32", "x": "float64", "y": "float32", "A": "float32"},  # x read for its shape only
        {"c": "float64", "x": "float32", "y": "float32", "A": "float32"},
        {"c": "float", "x": "float32", "y": "float32", "A": "float32"},  # a Python number: weak
        {"c": "int", "x": "float32", "y": "float32", "A": "float32"},
        {"c": "numpy", "x": "float32", "y": "float32", "A": "float32"},  # a NumPy float64 array
        {"c": "complex64", "x": "float32", "y": "float32", "A": "float32"},
    ],
    ids=lambda d: "-".join(f"{k}:{v}" for k, v in d.items()),
)
def test_dtypes_as_the_general_path_gives_them(dtypes, jnp):
    """The jitted call's dtypes and values against the op-by-op run (the general path)."""
    values = _values()
    given = {}
    for name, dtype in dtypes.items():
        if dtype == "float":
            given[name] = float(values[name])
        elif dtype == "int":
            given[name] = 2
        elif dtype == "numpy":
            given[name] = values[name]
        else:
            given[name] = jnp.asarray(values[name], dtype=dtype)
    exprs = _exprs()
    jitted, eager = tc.compile(exprs, backend="jax"), tc.compile(exprs, backend="jax", jit=False)
    got, expected = jitted(given), eager(given)
    assert _dtypes_of(got) == _dtypes_of(expected)
    # XLA fuses the single-precision parts in another order than the op-by-op run
    tolerance = 1e-5 if any(d in ("float32", "complex64") for d in dtypes.values()) else 1e-12
    for a, b in zip(got, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tolerance, atol=tolerance)


def test_keys_single_and_positional_calls(jnp):
    f = tc.parse(F, ORDERS)
    values = {name: jnp.asarray(value) for name, value in _values().items()}
    keyed = tc.compile({"zeta": f, "alpha": tc.gradient(f, "y")}, backend="jax")
    got = keyed(values)
    assert list(got) == ["zeta", "alpha"]  # the order given, not sorted
    np.testing.assert_allclose(np.asarray(got["alpha"]), tc.evaluate(tc.gradient(f, "y"), _values()), rtol=1e-12)
    single = tc.compile(f, backend="jax")
    value = single(values)
    assert value.shape == () and float(value) == pytest.approx(float(tc.evaluate(f, _values())), rel=1e-12)
    g = tc.parse("sum(x.^2)", ORDERS)
    x = jnp.asarray(_values()["x"])
    gradient = tc.compile(tc.gradient(g, "x"), backend="jax")
    np.testing.assert_allclose(np.asarray(gradient(x)), 2 * np.asarray(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gradient(x=x)), 2 * np.asarray(x), rtol=1e-12)


def test_bad_calls_are_refused_as_before(jnp):
    compiled = tc.compile(_exprs(), backend="jax")
    values = {name: jnp.asarray(value) for name, value in _values().items()}
    compiled(values)  # bound and jitted: the refusals below come after a fast call
    with pytest.raises(EvaluationError, match="no value given for variable 'A'"):
        compiled({name: value for name, value in values.items() if name != "A"})
    with pytest.raises(EvaluationError, match="'y' is declared with order 1 but the array given has 2 axes"):
        compiled({**values, "y": jnp.ones((3, 1))})
    with pytest.raises(EvaluationError, match="pass them by name"):
        compiled(values["x"])
    with pytest.raises(EvaluationError):  # y of 3 against A of 3 x 4 read as 5 x 4
        compiled({**values, "y": jnp.ones(5)})


def test_threads_with_alternating_shapes(jnp):
    compiled = tc.compile(_exprs(), backend="jax")
    cases = [_values(), _values(5, 2), _values(2, 6)]
    expected = [[tc.evaluate(e, v) for e in _exprs()] for v in cases]
    arrays = [{name: jnp.asarray(value) for name, value in v.items()} for v in cases]
    failures: list[str] = []

    def work(offset: int) -> None:
        for i in range(30):
            k = (i + offset) % len(cases)
            for got, want in zip(compiled(arrays[k]), expected[k]):
                if not np.allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12):
                    failures.append(f"case {k}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_jitted_hands_out_the_program_of_its_own_call_when_another_thread_calls_between(jnp, monkeypatch):
    """jitted(values) calls, then reads the program that call ran: another thread's call
    of other shapes in between must not hand out that thread's program (it read the
    latest call of any thread, and refused the caller's own arrays)."""
    run = tc.compile(tc.parse("x *(i,i->) x", {"x": 1}), backend="jax")
    mine, other = {"x": jnp.ones(3)}, {"x": jnp.ones(5)}
    evaluate = run._evaluate

    def then_another_thread_calls(given, values):
        result = evaluate(given, values)
        if values is mine:
            thread = threading.Thread(target=run, args=(other,))
            thread.start()
            thread.join()
        return result

    monkeypatch.setattr(run, "_evaluate", then_another_thread_calls)
    assert run._whole(mine, {})[0] == ((3,),)
    assert float(run.unchecked_jitted(mine)(mine["x"])) == 3.0


def test_program_run_runs_the_same_jitted_function(counted, jnp):
    """``Program.run`` (the loop's callers, ``Program.whole``) reaches the one jitted function."""
    compiled = tc.compile(_exprs(), backend="jax")
    values = {name: jnp.asarray(value) for name, value in _values().items()}
    expected = compiled(values)
    program = compiled._last[1]
    arrays = [values[name] for name in compiled.inputs]
    got = program.run(arrays[: compiled._slot_count], arrays[0])
    assert counted.counts["traced"] == 1 and counted.counts["jitted"] == 2
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_without_x64_float32_arrays_pass_and_float64_is_still_warned():
    """JAX's default (x64 off), in a fresh process: float32 JAX and NumPy arrays are not
    converted; a float64 one (NumPy, or JAX made while x64 was on) is converted, with the
    downcast warning."""
    code = (
        "import warnings, numpy as np, jax, jax.numpy as jnp, tenscalc as tc\n"
        "from tenscalc.compiler.backends import JaxBackend\n"
        "jax.config.update('jax_enable_x64', True)\n"
        "wide = jnp.ones(3)\n"
        "jax.config.update('jax_enable_x64', False)\n"
        "calls = []\n"
        "convert = JaxBackend.convert\n"
        "JaxBackend.convert = lambda self, n, v: calls.append(n) or convert(self, n, v)\n"
        "f = tc.parse('sum(x.^2)', {'x': 1})\n"
        "run = tc.compile([f, tc.gradient(f, 'x')], backend='jax')\n"
        "value, grad = run(x=jnp.ones(3))\n"
        "value, grad = run(x=np.ones(3, dtype=np.float32))\n"
        "assert calls == [] and str(grad.dtype) == 'float32', (calls, grad.dtype)\n"
        "for given in (wide, np.ones(3)):\n"
        "    JaxBackend.warned_x64 = False\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        "        value, grad = run(x=given)\n"
        "    assert str(grad.dtype) == 'float32', grad.dtype\n"
        "    assert any('downcast' in str(w.message) for w in caught), [str(w.message) for w in caught]\n"
        "assert calls == ['x', 'x'], calls\n"
        "print('ok')\n"
    )
    pytest.importorskip("jax")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_inside_jax_transforms_tracers_take_the_general_path(counted, jnp):
    """Called inside the caller's jax.jit, grad or vmap, the values are tracers (not concrete
    arrays): they are converted (as before) and the results agree with the closed form."""
    import jax

    compiled = tc.compile(tc.parse("sum(x.^3)", ORDERS), backend="jax")
    x = jnp.asarray(_values()["x"])
    np.testing.assert_allclose(float(jax.jit(lambda x: compiled(x=x))(x)), float(np.sum(np.asarray(x) ** 3)))
    np.testing.assert_allclose(np.asarray(jax.grad(lambda x: compiled(x=x))(x)), 3 * np.asarray(x) ** 2, rtol=1e-12)
    rows = jnp.stack([x, 2 * x])
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda x: compiled(x=x))(rows)), np.sum(np.asarray(rows) ** 3, 1))
    assert counted.counts["convert"] == 3 and counted.counts["jitted"] == 3


def test_a_backend_not_loaded_converts_every_value(counted, jnp):
    """A JaxBackend made by hand (never loaded: the concrete array type unknown) passes
    nothing unconverted, and computes the same."""
    compiled = tc.compile(tc.gradient(tc.parse("sum(x.^3)", ORDERS), "x"), backend=JaxBackend())
    x = jnp.asarray(_values()["x"])
    np.testing.assert_allclose(np.asarray(compiled(x=x)), 3 * np.asarray(x) ** 2, rtol=1e-12)
    assert counted.counts["convert"] == 1 and counted.counts["jitted"] == 1


def test_unchecked_jitted_is_the_program_a_call_runs_and_refuses_other_shapes():
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    jax.config.update("jax_enable_x64", True)
    f = tc.parse("sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)")
    run = tc.compile([f, tc.gradient(f, "x")], backend="jax")
    x = jax.numpy.asarray(np.linspace(-1.0, 2.0, 7))
    function = run.unchecked_jitted(x=x)
    assert function is run._last[2].unchecked  # the program __call__ runs, without its linalg flags
    value, grad = function(x)
    expected = run(x=x)
    np.testing.assert_array_equal(np.asarray(value), np.asarray(expected[0]))
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(expected[1]))
    with pytest.raises(tc.EvaluationError, match=r"bound to the input shapes \(\(7,\),\), not \(\(8,\),\)"):
        function(jax.numpy.ones(8))  # jit would trace the 7-entry program again for 8 entries
    np.testing.assert_allclose(np.asarray(run(x=np.ones(8))[1]), np.zeros(8), atol=1e-12)  # the call binds anew


LINALG = "sum(inv(A) *(ij,jk->ik) B)"


def _linalg_run(jax):
    jax.config.update("jax_enable_x64", True)
    run = tc.compile(tc.parse(LINALG, {"A": 2, "B": 2}), backend="jax")
    values = {"A": 2 * np.eye(3), "B": np.ones((3, 4))}
    return run, values, run.jitted(values)


def test_jitted_computes_what_a_call_computes_through_the_same_jit_function(counted):
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    run, values, function = _linalg_run(jax)
    a, b = (jax.numpy.asarray(values[name]) for name in run.inputs)
    before = counted.counts["jitted"]
    assert float(function(a, b)) == float(run(A=a, B=b)) == 6.0  # sum of inv(2 I) ones(3, 4)
    assert counted.counts["jitted"] == before + 2  # one whole-program call each: jit kept
    f = tc.parse(F, ORDERS)  # keys: a tuple in the keys' order, as unchecked_jitted returns
    keyed = tc.compile({"g": tc.gradient(f, "y"), "f": f}, backend="jax")
    given = _values()
    got = keyed.jitted(given)(*[given[name] for name in keyed.inputs])
    expected = keyed(given)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(expected["g"]))
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(expected["f"]))


@pytest.mark.parametrize("special", [np.nan, np.inf])
def test_jitted_refuses_a_non_finite_input_matrix_as_a_call_does(special):
    """The raw jax.jit function returns NaN here without a word: the checked one names A."""
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    run, values, function = _linalg_run(jax)
    bad = values["A"].copy()
    bad[2, 1] = special
    message = "inv(A): the matrix A has an entry that is not finite (NaN or inf)"
    for a in (bad, jax.numpy.asarray(bad)):
        with pytest.raises(tc.EvaluationError) as by_call:
            run(A=a, B=values["B"])
        with pytest.raises(tc.EvaluationError) as by_jitted:
            function(a, values["B"])
        assert str(by_jitted.value) == str(by_call.value) == message
    assert np.isnan(float(run.unchecked_jitted(values)(bad, values["B"])))  # the escape hatch: JAX's NaN


SINGULAR = np.outer([1.0, 2.0, 3.0], [2.0, 4.0, 6.0])  # rank 1, exact in binary


@pytest.mark.parametrize(
    ("text", "bad", "message"),
    [
        ("sum(inv(A) *(ij,jk->ik) B)", SINGULAR, "inv(A): the matrix A is singular"),
        ("sum(inv(A + A) *(ij,jk->ik) B)", SINGULAR, "inv(A + A): the matrix A + A is singular"),
        ("log(det(exp(A))) *(,ij->ij) B", np.diag([1.0, 1e3, 1.0]), "det(exp(A)): the matrix exp(A) has an entry"),
        ("sum(adj(A *(ij,->ij) c))", np.eye(3), "adj(A *(ij,->ij) c): the matrix A *(ij,->ij) c has an entry"),
    ],
)
def test_a_jitted_program_reads_its_linalg_flags_as_every_runner_checks(text, bad, message):
    """A singular inv and a computed matrix with an inf entry (exp(1000), inf * 1): JAX's
    program returned inf and NaN without a word; its flags make the call and the checked
    jitted function raise the words of every other runner."""
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    jax.config.update("jax_enable_x64", True)
    run = tc.compile(tc.parse(text, {"A": 2, "B": 2, "c": 0}), backend="jax")
    good = {"A": 2 * np.eye(3), "B": np.ones((3, 4)), "c": np.float64(2.0)}
    good = {name: good[name] for name in run.inputs}
    values = dict(good, A=bad, c=np.float64(np.inf))
    values = {name: values[name] for name in run.inputs}
    function = run.jitted(good)
    eager = tc.compile(tc.parse(text, {"A": 2, "B": 2, "c": 0}), backend="jax", jit=False)
    with pytest.raises(tc.EvaluationError) as by_eager:
        eager(values)
    with pytest.raises(tc.EvaluationError) as by_call:
        run(values)
    with pytest.raises(tc.EvaluationError) as by_jitted:
        function(*values.values())
    assert str(by_call.value) == str(by_jitted.value) == str(by_eager.value)
    assert str(by_call.value).startswith(message)
    assert np.isfinite(np.asarray(run(good))).all()  # the flags pass a good matrix


def test_the_flags_are_no_output_of_a_program_without_linalg_nor_read_under_the_callers_transforms():
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    jax.config.update("jax_enable_x64", True)
    plain = tc.compile(tc.parse("sum(x.^3)", ORDERS), backend="jax")
    x = np.linspace(0.5, 1.5, 4)
    plain(x=x)
    assert plain._last[2].flagged(x)[1] is None  # no flags array: nothing more to return or read
    assert _linalg_run(jax)[0]._last[2].flagged(2 * np.eye(3), np.ones((3, 4)))[1].shape == (2,)  # one inv: 2
    run, values, function = _linalg_run(jax)
    b = values["B"]
    grad = jax.grad(lambda a: function(a, b))(values["A"])  # traced: the flags are tracers, not read
    np.testing.assert_allclose(np.asarray(grad), -np.ones((3, 3)))  # d sum(inv(A) B) = -inv(A)ᵀ 1 1ᵀ inv(A)ᵀ at 2 I
    stacked = jax.vmap(lambda a: run(A=a, B=b))(np.stack([values["A"], 4 * np.eye(3)]))
    np.testing.assert_allclose(np.asarray(stacked), [6.0, 3.0])


def test_jitted_checks_the_number_shapes_and_dtypes_of_its_arrays():
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    run, values, function = _linalg_run(jax)
    with pytest.raises(tc.EvaluationError, match=r"takes 2 arrays, the values of A, B in that order; got 1"):
        function(values["A"])
    with pytest.raises(tc.EvaluationError, match=r"bound to the input shapes \(\(3, 3\), \(3, 4\)\), not"):
        function(np.eye(4), np.ones((4, 4)))  # the raw function would trace a program for these
    with pytest.raises(tc.EvaluationError, match="the value of 'B' has dtype <U1; numbers are needed"):
        function(values["A"], np.full((3, 4), "a"))
    narrow = function(values["A"].astype(np.float32), values["B"].astype(np.float32))
    assert narrow.dtype == np.float32 and float(narrow) == 6.0  # float32 in, float32 out, as a call


def test_jitted_refuses_a_value_breaking_its_declaration():
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    jax.config.update("jax_enable_x64", True)
    expr = tc.parse("y *(i,ij->j) K *(j,j->) y", {"K": 2, "y": 1})
    run = tc.compile(expr, backend="jax", assumptions={"K": "symmetric"})
    values = {"K": np.eye(2), "y": np.ones(2)}
    function = run.jitted(values)
    bad = np.array([[1.0, 2.0], [3.0, 1.0]])
    order = [bad if name == "K" else values[name] for name in run.inputs]
    with pytest.raises(tc.EvaluationError, match="'K' is declared symmetric but its value is not"):
        function(*order)


def test_jitted_under_the_callers_jit_checks_shapes_at_trace_time_and_nothing_on_the_data():
    """What the docstring says: a tracer has no values (JAX's NaN comes back), but shapes
    and the number of arrays are refused when the caller's jit traces."""
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    run, values, function = _linalg_run(jax)
    outer = jax.jit(function)
    assert float(outer(values["A"], values["B"])) == 6.0
    np.testing.assert_allclose(np.asarray(jax.grad(lambda a: function(a, values["B"]))(values["A"])), -np.ones((3, 3)))
    bad = values["A"].copy()
    bad[0, 0] = np.nan
    assert np.isnan(float(outer(bad, values["B"])))
    with pytest.raises(tc.EvaluationError, match="bound to the input shapes"):
        outer(np.eye(4), np.ones((4, 4)))


def test_jitted_needs_a_whole_program_compiler():
    run = tc.compile(tc.parse("x *(i,i->) x", {"x": 1}))
    for method in (run.jitted, run.unchecked_jitted):
        with pytest.raises(tc.EvaluationError, match="backend 'numpy' compiles no whole program"):
            method(x=np.ones(3))


def test_repeated_calls_of_the_latest_shapes_go_straight_to_the_jitted_function(jnp, monkeypatch):
    """After a call that handed its arrays to the jitted function as they are, a call with
    arrays of the same shapes goes to that function directly (no ``_evaluate``), with the
    same results; other shapes, values that need converting and the first call take the
    general path, and ``jitted`` still hands out the program of its own call."""
    compiled = tc.compile(_exprs(), backend="jax")
    counter = Counter()
    monkeypatch.setattr(compiled, "_evaluate", counter.wrap("general", compiled._evaluate))
    small = {name: jnp.asarray(value) for name, value in _values().items()}
    large = {name: jnp.asarray(value) for name, value in _values(5, 2).items()}
    first = compiled(small)
    again = [compiled(small) for _ in range(3)]
    assert counter.counts == {"general": 1}
    for got in again:
        for a, b in zip(first, got):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    compiled(large)  # new shapes: bound on the general path, then straight again
    compiled(large)
    assert counter.counts == {"general": 2}
    as_integers = {**small, "y": np.array([1, 2, 3])}  # converted: the general path each time
    compiled(as_integers)
    compiled(as_integers)
    assert counter.counts == {"general": 4}
    assert compiled._whole(large, {})[0] == tuple(tuple(large[name].shape) for name in compiled.inputs)
    with pytest.raises(EvaluationError, match="no value given for variable 'A'"):
        compiled({name: value for name, value in large.items() if name != "A"})


def test_a_matrix_declared_symmetric_is_checked_on_every_call_on_the_general_path(jnp, monkeypatch):
    compiled = tc.compile(
        tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}), backend="jax", assumptions={"A": "symmetric"}
    )
    counter = Counter()
    monkeypatch.setattr(compiled, "_evaluate", counter.wrap("general", compiled._evaluate))
    values = {"x": jnp.ones(3), "A": jnp.asarray(np.eye(3) * 2.0)}
    for _ in range(3):
        compiled(values)
    assert counter.counts == {"general": 3}
    with pytest.raises(EvaluationError, match="'A' is declared symmetric"):
        compiled({**values, "A": jnp.asarray(np.triu(np.ones((3, 3))))})


@pytest.mark.parametrize("text", ["log(det(A))", "sum(inv(A))", "sum(adj(A))"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_bad_linalg_matrix_on_the_straight_path_raises_what_every_runner_says(jnp, text, bad):
    """The matrix of an inv, det or adj is read by no host check before the program: its flags
    say it, after it ran, in the words of tc.evaluate, also on the straight path (LAPACK gets
    zeros in its place: adj's SVD of an inf entry never returned)."""
    compiled = tc.compile(tc.parse(text, {"A": 2}), backend="jax")
    good = jnp.asarray(np.eye(3) * 2.0 + 0.1)
    expected = compiled(A=good)
    np.testing.assert_array_equal(np.asarray(compiled(A=good)), np.asarray(expected))
    assert compiled._direct is not None
    value = np.eye(3) * 2.0
    value[1, 2] = bad
    with pytest.raises(EvaluationError) as raised:
        tc.evaluate(tc.parse(text, {"A": 2}), {"A": value})
    with pytest.raises(EvaluationError) as jitted:
        compiled(A=jnp.asarray(value))
    assert str(jitted.value) == str(raised.value)
