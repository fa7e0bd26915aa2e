"""Run a fuzz campaign: ``python -m tests.fuzz.run --seconds 600 [--seed N] [--json out.json]``.

Cases cycle through three kinds (generated valid problems, mutated examples,
random strings), each from its own seed, so a finding is reproduced by its kind
and seed (``--replay KIND:SEED``).  Each case runs under a time limit (SIGALRM
where the platform has it); a case over it is a ``hang``.

Every case is evaluated by the interpreter, ``tc.compile`` (the closure loop, then the
fused function), the shape-free ``tc.to_python()`` and ``tc.to_python(shapes=)``;
``--backends jax torch dask`` compiles it for those libraries too, and
``--first-length 1`` (or 0) gives the random values an axis of length 1 (or 0).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import pickle
import random
import re
import signal
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import NoReturn

import numpy as np

import tenscalc as tc
from tenscalc.compiler.backends import get_backend
from tenscalc.testing import check_derivative, random_values

from .generate import generate
from .mutate import corpus, mutate, random_string

KINDS = ("generated", "mutated", "random")
CASE_SECONDS = 20.0
#: arrays above this are refused (an EvaluationError): keeps a campaign fast and safe
FUZZ_MEMORY_LIMIT = 256 * 2**20
#: array libraries a campaign can also compile for (``--backends``), each checked against evaluate
BACKENDS = ("jax", "torch", "dask")


@dataclass(frozen=True)
class Options:
    """What a campaign checks besides the NumPy evaluators: ``backends`` also compiled
    for (their arrays in, compared as NumPy arrays out), and ``first_length`` the
    first of the distinct axis lengths of the random values (1 gives every case an
    axis of length 1, which broadcasts; 0 an empty one)."""

    backends: tuple[str, ...] = ()
    first_length: int = 2


@dataclass
class Finding:
    """One problem found: ``crash`` (an exception that is not a TensCalcError),
    ``hang`` (over the time limit), ``mismatch`` (evaluators or finite differences
    disagree) or ``refused`` (a generated valid problem got a TensCalcError)."""

    kind: str
    case: str  # "generated:17": replay with --replay
    stage: str
    text: str
    orders: dict | None
    error: str

    def short(self) -> str:
        text = self.text if len(self.text) < 160 else self.text[:157] + "..."
        return f"[{self.kind}] {self.case} at {self.stage}: {self.error}\n    input: {text!r} orders={self.orders}"


@dataclass
class Summary:
    cases: Counter = field(default_factory=Counter)
    parsed: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)  # TensCalcErrors of mutated and random input
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def report(self) -> str:
        kinds = Counter(f.kind for f in self.findings)
        lines = [
            f"{sum(self.cases.values())} cases in {self.seconds:.0f} s: "
            + ", ".join(f"{self.cases[k]} {k} ({self.parsed[k]} parsed)" for k in KINDS),
            f"refused with a TensCalcError (expected for bad input): {dict(self.refused)}",
            f"findings: {sum(kinds.values())} "
            + (", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) if kinds else "(none)"),
        ]
        lines += [f.short() for f in self.findings[:50]]
        return "\n".join(lines)


class Hang(BaseException):  # BaseException: no `except Exception` in the library swallows it
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    if not hasattr(signal, "SIGALRM") or seconds <= 0:
        yield
        return

    def on_alarm(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ----------------------------------------------------------------------------- checks


class _Case:
    """Runs the stages of one input, recording findings instead of raising."""

    def __init__(
        self, case: str, text: str, orders: dict | None, summary: Summary, strict: bool, options: Options = Options()
    ):
        self.case, self.text, self.orders, self.summary, self.strict = case, text, orders, summary, strict
        self.options = options
        self.declared: dict[str, int] = dict(orders or {})

    def orders_of(self, name: str) -> int:
        return self.declared.get(name, 0)

    def find(self, kind: str, stage: str, error: str) -> None:
        self.summary.findings.append(Finding(kind, self.case, stage, self.text, self.orders, error))

    def stage(self, name: str, fn: Callable[[], object]) -> object | None:
        """Run one stage: a TensCalcError ends the case (a finding only for valid problems)."""
        try:
            return fn()
        except tc.TensCalcError as exc:
            if self.strict:
                self.find("refused", name, f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            raise _Stop() from None
        except (Hang, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - exactly what the fuzzer looks for
            self.crashed(name, exc)

    def crashed(self, name: str, exc: Exception) -> NoReturn:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        self.find("crash", name, f"{type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"[:400])
        raise _Stop() from None

    def must(self, name: str, fn: Callable[[], object]) -> object | None:
        """A stage that must succeed once the earlier ones did (another evaluator of what
        evaluate computed, the re-parsed printed text ...): a TensCalcError is a mismatch."""
        try:
            return fn()
        except tc.TensCalcError as exc:
            self.find(
                "mismatch",
                name,
                f"refused after the earlier stages passed: {type(exc).__name__}: {str(exc).splitlines()[0]}",
            )
            raise _Stop() from None
        except _Stop:
            raise
        except (Hang, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - a crash, reported as it happened: running
            # ``fn`` again would hide one that changed state first (a compiled function
            # that fails while writing its fused form runs the plain loop next time)
            self.crashed(name, exc)

    def agree(self, stage: str, got, expected, rtol: float = 1e-8) -> None:
        got, expected = np.asarray(got), np.asarray(expected)
        if got.shape != expected.shape:
            self.find("mismatch", stage, f"shape {got.shape} != {expected.shape}")
            return
        finite = np.isfinite(expected) & np.isfinite(got)
        if not np.array_equal(np.isfinite(expected), np.isfinite(got)) and np.all(np.isfinite(expected)):
            self.find("mismatch", stage, "non-finite entries where evaluate has finite ones")
            return
        scale = max(1.0, float(np.max(np.abs(expected[finite]), initial=0.0)))
        error = float(np.max(np.abs(got[finite] - expected[finite]), initial=0.0)) / scale
        if error > rtol:
            self.find("mismatch", stage, f"relative difference {error:.3g}")


class _Stop(Exception):
    pass


def _evaluators(case: _Case, exprs: list, values: Mapping, label: str) -> list:
    """Evaluate ``exprs`` with evaluate, compile, to_python (shape-free and for these
    shapes) and the campaign's backends; check they agree."""
    results = case.stage(f"evaluate {label}", lambda: [tc.evaluate(e, values) for e in exprs])
    run = case.must(f"compile {label}", lambda: tc.compile(exprs))
    compiled = case.must(f"compile {label}", lambda: run(values))  # binds, runs the loop of steps
    for k, (a, b) in enumerate(zip(compiled, results)):
        case.agree(f"compile {label}[{k}]", a, b)
    fused = case.must(f"compile, second call {label}", lambda: run(values))  # the fused function (float64)
    for k, (a, b) in enumerate(zip(fused, compiled)):
        case.agree(f"compile, second call {label}[{k}]", a, b)
    namespace: dict = {}
    case.must(f"to_python {label}", lambda: exec(tc.to_python(exprs), namespace))  # noqa: S102 - our own code
    # the generated function takes every variable whose values or shape it needs
    names = {n for e in exprs for n in (*e.variables, *e.shape_variables)}
    generated = case.must(f"run to_python {label}", lambda: namespace["f"](**{n: values[n] for n in names}))
    for k, (a, b) in enumerate(zip(generated, results)):
        case.agree(f"to_python {label}[{k}]", a, b)
    # the module for these shapes is compile's own program (issue 26): same values
    shapes = {n: np.shape(values[n]) for n in names}
    namespace = {}
    case.must(f"to_python(shapes=) {label}", lambda: exec(tc.to_python(exprs, shapes=shapes), namespace))  # noqa: S102
    shaped = case.must(f"run to_python(shapes=) {label}", lambda: namespace["f"](**{n: values[n] for n in names}))
    for k, (a, b) in enumerate(zip(shaped, results)):
        case.agree(f"to_python(shapes=) {label}[{k}]", a, b)
    for backend in case.options.backends:
        library = get_backend(backend)  # its own conversions both ways (a dask result computed)
        run_on = case.must(f"compile {label}, {backend}", lambda backend=backend: tc.compile(exprs, backend=backend))
        native = {n: library.from_numpy(np.asarray(v)) for n, v in values.items()}
        got = case.must(f"run {label}, {backend}", lambda run_on=run_on, native=native: run_on(native))
        for k, (a, b) in enumerate(zip(got, results)):
            case.agree(f"{backend} {label}[{k}]", library.to_numpy(a), b)
    return results


def _texts(case: _Case, e, label: str) -> None:
    # printing may refuse a huge text or formula (a TensCalcError): not a finding
    case.stage(f"str/repr/latex {label}", lambda: (str(e), repr(e), tc.latex(e)))
    if case.must(f"pickle {label}", lambda: pickle.loads(pickle.dumps(e))) is not e:
        case.find("mismatch", f"pickle {label}", "unpickled to another node")


def check_problem(case: _Case, expr, wrt_names: list[str], seed: int, derivative_orders: tuple[int, ...]) -> None:
    """Every stage for one parsed expression (shared by valid and lenient inputs)."""
    orders = dict(expr.variables)
    _texts(case, expr, "expression")
    first = case.options.first_length
    values = case.stage("random values", lambda: random_values(expr, seed=seed, first_length=first))
    for name in wrt_names:  # variables that the derivative needs but the expression lost
        values.setdefault(name, random_values(tc.var(name, case.orders_of(name)), seed=seed, first_length=first)[name])
    (value,) = _evaluators(case, [expr], values, "expression")
    simplified = case.must("simplify", lambda: tc.simplify(expr))
    case.agree("simplify", case.must("evaluate simplified", lambda: tc.evaluate(simplified, values)), value)
    reparsed = case.must("re-parse the printed text", lambda: tc.parse(str(expr), {**orders, **expr.shape_variables}))
    case.agree("re-parse", case.must("evaluate re-parsed", lambda: tc.evaluate(reparsed, values)), value)
    for name in wrt_names:
        _check_derivatives(case, expr, tc.var(name, case.orders_of(name)), values, orders, derivative_orders)
    if len(wrt_names) > 1 or 2 in derivative_orders:
        # compiled together: derivatives by different variables share one plan (its
        # value numbering once handed out the Hessian of x.x for that of y.y)
        together = [expr]
        for name in wrt_names:
            x = tc.var(name, case.orders_of(name))
            together.append(case.must(f"derivative by {name}", lambda x=x: tc.derivative(expr, x)))
            if 2 in derivative_orders:
                together.append(case.must(f"second derivative by {name}", lambda x=x: tc.derivative(together[-1], x)))
        _evaluators(case, together, values, "all derivatives together")


def _check_derivatives(case: _Case, expr, x, values: Mapping, orders: dict, derivative_orders: tuple[int, ...]) -> None:
    name = x.arg[0]
    d = case.stage(f"derivative by {name}", lambda: tc.derivative(expr, x))
    _texts(case, d, f"d/d{name}")
    _, d_value = _evaluators(case, [expr, d], values, f"d/d{name}")
    back = case.must(f"re-parse d/d{name}", lambda: tc.parse(str(d), {**orders, **d.shape_variables, name: x.order}))
    back_value = case.must(f"evaluate re-parsed d/d{name}", lambda: tc.evaluate(back, values))
    case.agree(f"re-parse d/d{name}", back_value, d_value)
    for order in derivative_orders:
        stage = f"finite differences d{order}/d{name}{order}"
        # a sharply curved function (cos of a large argument) has a truncation error that
        # shrinks with the step; a wrong derivative is wrong at every step
        for h in (1e-6, 1e-7, 1e-8, 1e-9):
            check = functools.partial(check_derivative, expr, x, order, values, h=h, tolerance=1e-4)
            report = case.stage(stage, check)
            if report.ok:
                break
        if not report.ok and not _complex_step_agrees(expr, x, order, values):
            case.find("mismatch", stage, report.message)


def _complex_step_agrees(expr, x, order: int, values: Mapping) -> bool:
    """The derivative against the complex-step Jacobian (Im f(x + ih e_k) / h: no
    cancellation, exact to rounding for analytic functions; evaluate keeps complex
    input).  Decides the cases where finite differences cannot resolve the curvature."""
    name = x.arg[0]
    target = expr
    for _ in range(order - 1):
        target = tc.derivative(target, x)
    try:
        symbolic = np.asarray(tc.evaluate(tc.derivative(target, x), values))
        point = np.asarray(values[name], dtype=complex)
        columns = []
        for index in np.ndindex(*point.shape):
            shifted = point.copy()
            shifted[index] += 1e-30j
            columns.append(np.asarray(tc.evaluate(target, {**values, name: shifted})).imag / 1e-30)
    except tc.TensCalcError:
        return False
    numeric = np.stack(columns, axis=-1).reshape(symbolic.shape)
    scale = max(1.0, float(np.max(np.abs(numeric), initial=0.0)))
    return bool(np.max(np.abs(symbolic - numeric), initial=0.0) / scale < 1e-8)


def run_generated(seed: int, summary: Summary, options: Options = Options()) -> None:
    problem = generate(seed)
    case = _Case(f"generated:{seed}", problem.text, problem.orders, summary, strict=True, options=options)
    expr = case.stage("parse", lambda: tc.parse(problem.text, problem.orders))
    summary.parsed["generated"] += 1
    wrt = [n for n in sorted(expr.variables)]
    rng = random.Random(seed)
    wrt = rng.sample(wrt, min(2, len(wrt)))
    second = (1, 2) if expr.order == 0 and all(problem.orders[n] <= 1 for n in wrt) else (1,)
    check_problem(case, expr, wrt, seed, second)


def run_lenient(kind: str, seed: int, summary: Summary, options: Options = Options()) -> None:
    rng = random.Random(seed)
    if kind == "mutated":
        text, orders = rng.choice(corpus())
        text = mutate(text, rng)
    else:
        text, orders = random_string(rng), None
    if orders is None and "declare" not in text.lower():
        names = set(re.findall(r"\b[A-Za-z]\w*\b", text))
        orders = {n: rng.choice([0, 1, 1, 2]) for n in sorted(names) if n.isidentifier()}
    case = _Case(f"{kind}:{seed}", text, orders, summary, strict=False, options=options)
    problem = case.stage("parse", lambda: tc.parse_problem(text, orders))
    summary.parsed[kind] += 1
    case.declared = dict(problem.orders)
    wrt = [problem.wrt] if problem.wrt else sorted(problem.expr.variables)[:1]
    check_problem(case, problem.expr, wrt, seed, ())


def run_case(
    kind: str, seed: int, summary: Summary, seconds: float = CASE_SECONDS, options: Options = Options()
) -> None:
    summary.cases[kind] += 1
    before = len(summary.findings)
    try:
        with time_limit(seconds), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if kind == "generated":
                run_generated(seed, summary, options)
            else:
                run_lenient(kind, seed, summary, options)
    except _Stop:
        if len(summary.findings) == before and kind != "generated":
            summary.refused[kind] += 1
    except Hang:
        text = generate(seed).text if kind == "generated" else "(replay to see the input)"
        summary.findings.append(Finding("hang", f"{kind}:{seed}", "whole case", text, None, f"over {seconds} s"))


def campaign(
    seconds: float | None = None,
    cases: int | None = None,
    seed: int = 0,
    case_seconds: float = CASE_SECONDS,
    options: Options = Options(),
) -> Summary:
    """Run cases round-robin over the kinds until ``seconds`` or ``cases`` is reached
    (with JAX among the backends, its 64-bit mode is switched on: the values are float64)."""
    if "jax" in options.backends:
        import jax

        jax.config.update("jax_enable_x64", True)
    summary = Summary()
    old_limit = tc.set_memory_limit(FUZZ_MEMORY_LIMIT)
    start = time.monotonic()
    try:
        k = 0
        while True:
            if cases is not None and k >= cases:
                break
            if seconds is not None and time.monotonic() - start > seconds:
                break
            kind = KINDS[k % len(KINDS)]
            run_case(kind, seed * 1_000_003 + k // len(KINDS), summary, case_seconds, options)
            k += 1
    finally:
        tc.set_memory_limit(old_limit)
    summary.seconds = time.monotonic() - start
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to run (default 60)")
    parser.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--case-seconds", type=float, default=CASE_SECONDS, help="a case over this is a hang")
    parser.add_argument("--replay", help="run one case, e.g. mutated:1234, and print its input")
    parser.add_argument("--json", help="write the findings to this file")
    parser.add_argument("--backends", nargs="*", default=[], choices=BACKENDS, help="also compile for these")
    parser.add_argument("--first-length", type=int, default=2, help="the first axis length (1: broadcasting, 0: empty)")
    args = parser.parse_args(argv)
    options = Options(tuple(args.backends), args.first_length)
    if args.replay:
        kind, _, seed = args.replay.partition(":")
        summary = Summary()
        tc.set_memory_limit(FUZZ_MEMORY_LIMIT)
        run_case(kind, int(seed), summary, args.case_seconds, options)
    else:
        summary = campaign(args.seconds, args.cases, args.seed, args.case_seconds, options)
    print(summary.report())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([asdict(x) for x in summary.findings], f, indent=1)
    return 1 if summary.findings else 0


if __name__ == "__main__":
    sys.exit(main())
