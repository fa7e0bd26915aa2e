"""The scalar fast path: a plan whose every value is a number, run as Python floats.

On problems whose inputs and intermediates are all scalars (the vertex-elimination
Jacobians of ``benchmarks/elimination.py``: RoeFlux-1d, robot arms), the NumPy program
of :mod:`.program` pays a ufunc call (~1-2 µs on a 0-d array) per step.  When every
step of a plan bound to shapes has shape ``()``, :func:`scalar_program` writes the plan
as one straight-line Python function over floats and the ``math`` module (~50 ns per
operation), compiled once with :func:`compile` and kept beside the NumPy program.

The function computes exactly what the NumPy program computes, in the same order,
because it is written from that program's records, not from the plan again: its
lowered ops in their order (:mod:`.lowered`), the plan as bound (squares folded,
shared factors taken out), each sum's, function's and power's ufunc chain as the
binder describes it (``Op.inline``: its calls spelled by :func:`float_spelling`), and
each term's :class:`~.terms.TermPlan` (the path a product multiplies along, where
the factor goes, the order-0 constants after) that the binder made and kept in the
resolver.  Wherever Python's float semantics would differ from
NumPy's, the call falls back to the NumPy program (same values, same warnings):

* an input that is not a float64 number, or not finite (complex, float32, nan, inf);
* ``math`` raising where NumPy returns inf or nan with a warning (``log(-1)``,
  ``1 / 0``, ``exp(1000)``, ``sqrt(-1)``);
* a result that is not finite (a multiplication that overflowed: Python is silent,
  NumPy warns), or an inf reaching a step that could turn it into a finite number
  (``1 / inf``, ``exp(-inf)``, ``tanh``), where NumPy would have warned earlier.

A program with an op this module cannot write (a constant with axes, a function
NumPy runs as no ufunc, a shared pair or band) is never given the fast path.  Results are handed out as the NumPy
program hands them out (0-d arrays, through the backend's ``finish``).

>>> import numpy as np, tenscalc as tc
>>> x, y = tc.var("x", 0), tc.var("y", 0)
>>> run = tc.compile([tc.sin(x * y), tc.derivative(tc.sin(x * y), x)])
>>> value, dx = run(x=np.float64(0.5), y=np.float64(2.0))
>>> type(run._last[1]).__name__, float(value), float(dx)
('ScalarProgram', 0.8414709848078965, 1.0806046117362795)
>>> run(x=np.float64(np.nan), y=np.float64(2.0))  # a nan input: the NumPy program answers
(array(nan), array(nan))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

import numpy as np

from ..core.functions import FUNCTIONS
from .fused import Chain, Const, Same, Slot, Temp
from .lowered import Op
from .plan import Plan, Step, Term, step_reads
from .program import Program, ShapeResolver, _items_of, _terms_of
from .source import literal
from .terms import TermPlan

__all__ = ["ScalarProgram", "scalar_program", "scalar_source"]

#: plans with more steps than this keep the NumPy program (compiling the source of a
#: huge function costs more than it saves on a few calls)
MAX_STEPS = 20_000
#: summands written in one statement (longer sums continue in the next statement;
#: Python's compiler recurses on a long chain of ``+``)
CHUNK = 64


class ScalarFallback(ArithmeticError):
    """Raised inside the generated function where NumPy's answer is needed."""


def _sign(x: float) -> float:
    """``np.sign``: -1, 0 or 1, ``0.0`` for ``-0.0``, nan for nan."""
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0 if x == 0.0 else x


def _maximum(x: float, y: float) -> float:
    """``np.maximum(x, y)``: the first nan, else ``y`` unless ``x > y`` (``maximum(-0.0, 0.0)``
    is ``0.0``, ``maximum(0.0, -0.0)`` is ``-0.0``, as NumPy's).

    >>> _maximum(-0.0, 0.0), _maximum(0.0, -0.0), _maximum(-2.0, 0.0), _maximum(3.0, 0.0)
    (0.0, -0.0, 0.0, 3.0)
    """
    if x != x:
        return x
    if y != y:
        return y
    return x if x > y else y


class _Decline(Exception):
    """The plan has a step the scalar writer does not handle: keep the NumPy program."""


class ScalarSource:
    """Writes the statements of a bound program whose every slot is a number, op by op
    from the program's own records: its lowered ops (:mod:`.lowered`, in their order),
    the steps of the plan as bound, the sums' ufunc chains (``Op.inline``) and the
    terms' records (:class:`.terms.TermPlan`: path, factor placement, order-0 constants)
    that the binder made, looked up, never decided again."""

    def __init__(self, program: Program, resolver: ShapeResolver):
        assert program.bound_plan is not None
        self.program = program
        self.plan = program.bound_plan
        self.resolver = resolver
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        #: the generated function's globals besides math and the helpers: numbers that
        #: Python source cannot spell (inf, nan)
        self.namespace: dict[str, float] = {}
        #: names known to hold finite numbers here (inputs are checked on entry)
        self.finite: set[str] = set()

    def number(self, value: Any) -> str:
        """Source for one float64 number (raises ``_Decline`` for one float64 cannot hold)."""
        try:
            value = float(value)
        except (OverflowError, TypeError, ValueError):
            raise _Decline from None
        if math.isfinite(value):
            return literal(value)
        name = f"_K{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def guard(self, name: str) -> None:
        """Fall back when ``name`` holds an inf or nan (the next step could hide it)."""
        if name not in self.finite:
            self.lines.append(f"if not _isfinite({name}): raise _Fallback")
            self.finite.add(name)

    def write(self) -> list[str]:
        steps = self.plan.steps
        for slot in self.plan.inputs.values():
            if self.program.dense[slot] != ():  # an array input (a program of no ops hands it out)
                raise _Decline
            self.names[slot] = f"_s{slot}"
            self.finite.add(self.names[slot])
        for op in self.program.ops:  # the binder's ops, in the order the loop runs them
            rule = SCALAR_RULES.get(op.kind)
            if rule is None or op.shape != () or op.slot >= len(steps) or steps[op.slot].index != op.slot:
                raise _Decline  # a pair, band, twin, accumulate, factor ...: not a number's op
            step = steps[op.slot]
            if any(self.program.dense[slot] != () for slot in step_reads(step)):
                raise _Decline
            name = f"_s{op.slot}"
            rule(self, step, op, name)
            self.names[op.slot] = name
        return self.lines

    # ------------------------------------------------------------------ steps
    def _constant(self, step: Step, op: Op, name: str) -> None:
        value = np.asarray(self.resolver.constant(step.node, ()))
        if value.dtype != np.float64:  # the NumPy program would hand out its own dtype
            raise _Decline
        self.lines.append(f"{name} = {self.number(value)}")

    def _func(self, step: Step, op: Op, name: str) -> None:
        # the op's call (closures._func, from its record: the function's ufunc, relu's maximum); a
        # function NumPy runs as no ufunc is described by none and keeps the NumPy program
        if not isinstance(op.inline, Chain):
            raise _Decline
        self._calls(name, op.inline)

    def _pow(self, step: Step, op: Op, name: str) -> None:
        # the op's calls (closures._pow, from its record: x*x, 1/x, 1/(x*x), sqrt, power), as floats:
        # math.pow raises where np.power gives nan or inf; Python's ** would give a complex number
        if isinstance(op.inline, Chain):
            self._calls(name, op.inline)
        elif isinstance(op.inline, Same):  # x^1: the binder hands out x itself
            self.lines.append(f"{name} = {self.names[op.inline.slot]}")
        else:  # pragma: no cover - closures._pow describes every other power of NumPy's
            raise _Decline

    def _add(self, step: Step, op: Op, name: str) -> None:
        items = _items_of(step)
        if any(it.kind not in ("slot", "scalar") and not (it.kind == "delta" and it.n == 0) for it in items):
            raise _Decline  # an embedding or a delta(n>0) has axes
        chain = op.inline
        if isinstance(chain, Chain):  # the record's own ufunc calls, in its order (sums.sum_chain)
            self._calls(name, chain)
            return
        if chain is not None:
            raise _Decline
        # no chain: the sum is one summand as it is, or a number only
        arrays = [it for it in items if it.kind == "slot"]
        scalar = sum(it.coef for it in items if it.kind != "slot")
        if not arrays:
            self.lines.append(f"{name} = {self.number(scalar)}")
        elif len(arrays) == 1 and arrays[0].coef == 1 and scalar == 0:
            self.lines.append(f"{name} = {self.names[arrays[0].slot]}")
        else:  # pragma: no cover - closures._sum describes every other sum of numbers as a chain
            raise _Decline

    def _calls(self, name: str, chain: Chain) -> None:
        """``name = `` the chain's calls as float arithmetic; every :data:`CHUNK` calls the
        running value is stored (Python's compiler recurses on a long nesting)."""
        if any(guarded(call.ufunc) for call in chain.calls):  # 1 / inf is 0, 1 / (inf * inf) too:
            for call in chain.calls:  # an overflow to inf must not pass unseen
                for arg in call.args:
                    if isinstance(arg, Slot):
                        self.guard(self.names[arg.index])
        texts: list[str] = []
        for k, call in enumerate(chain.calls):
            spelling = float_spelling(call.ufunc)
            if spelling is None or spelling.count("{}") != len(call.args):
                raise _Decline
            text = spelling.format(*[self._arg(arg, texts) for arg in call.args])
            if (k + 1) % CHUNK == 0 and k + 1 < len(chain.calls):
                self.lines.append(f"{name} = {text}")
                text = name
            texts.append(text)
        self.lines.append(f"{name} = {texts[-1]}")

    def _arg(self, arg: Any, texts: list[str]) -> str:
        if isinstance(arg, Slot):
            return self.names[arg.index]
        if isinstance(arg, Temp):
            return texts[arg.index]
        if isinstance(arg, Const):
            return self.number(arg.value)
        raise _Decline  # pragma: no cover - a chain's arguments are these three

    def _product(self, step: Step, op: Op, name: str) -> None:
        # the terms summed left to right, as program._bind_product adds their closures
        terms = [self._term(term) for term in _terms_of(step)]
        self._chain(name, terms[0], [f" + {text}" for text in terms[1:]])

    def _chain(self, name: str, head: str, parts: list[str]) -> None:
        """``name = head`` followed by ``parts`` (`` + x``), left to right, in statements
        of at most :data:`CHUNK` parts."""
        self.lines.append(f"{name} = {head}{''.join(parts[:CHUNK])}")
        for start in range(CHUNK, len(parts), CHUNK):
            self.lines.append(f"{name} = {name}{''.join(parts[start : start + CHUNK])}")

    def _term(self, term: Term) -> str:
        """One term as its closure (.closures) computes it at shape (), from its record."""
        record = bound_record(self.resolver, term, self.program.dense)
        if record is None or record.gram is not None or record.diagonal_out or record.broadcast:
            raise _Decline
        if record.fill is not None:
            return self.number(record.fill)
        texts = []
        for operand in record.operands:
            if operand.letters or operand.diagonal is not None:
                raise _Decline  # pragma: no cover - letters with lengths: not a number
            if operand.constant is None:
                texts.append(self.names[cast("int", operand.slot)])
            else:  # a product of constants only: they are the operands
                texts.append(self.number(self.resolver.constant(term.constants[operand.constant][0], ())))
        factor = record.factor
        if record.scale_at is not None and record.scale_at >= 0:
            texts[record.scale_at] = f"({texts[record.scale_at]} * {self.number(factor)})"
        # multiplied along the binder's path (multiplication does not associate)
        stack = list(texts)
        for positions in record.path:
            picked = [stack.pop(p) for p in sorted(positions, reverse=True)]
            stack.append(picked[0] if len(picked) == 1 else f"({picked[0]} * {picked[1]})")
        (text,) = stack
        if record.scale_at == -1:
            text = f"({text} * {self.number(factor)})"
        after = 1.0  # the order-0 constants, after the contraction, in the record's order
        for number in record.scalars:
            after = after * float(self.resolver.constant(term.constants[number][0], ()))
        if after != 1.0:
            text = f"({text} * {self.number(after)})"
        return text


def bound_record(resolver: ShapeResolver, term: Term, dense: Sequence[tuple[int, ...]]) -> TermPlan | None:
    """The record the NumPy binder made for ``term`` at shape ``()`` (:func:`.terms.plan_term`'s
    memo in ``resolver.terms``), or None where it made none: it is read, never made here."""
    key = (term, (), tuple([dense[slot] for slot, _ in term.operands]), True)
    return resolver.terms.get(key)


#: each ufunc of the ops' chains (sums.sum_chain, closures._pow, closures._func)
#: as float source, besides the language's functions (:func:`float_spelling`)
FLOAT_CALLS = {
    np.add: "({} + {})",
    np.subtract: "({} - {})",
    np.negative: "-{}",
    np.multiply: "({} * {})",
    np.divide: "({} / {})",
    np.sqrt: "_m.sqrt({})",
    np.power: "_m.pow({}, {})",
    np.maximum: "_maximum({}, {})",  # relu's call (closures._func)
}
#: calls whose result can hide an inf operand (1 / inf, inf ** -1, maximum(-inf, 0)): their
#: operands are checked; with the functions whose spec says so (``float_guard``)
GUARDED = frozenset({np.divide, np.power, np.maximum})


def _function_specs() -> dict[Any, Any]:
    """The language's functions by their NumPy ufunc (read live: functions registered later count)."""
    return {spec.numpy: spec for spec in FUNCTIONS.values() if isinstance(spec.numpy, np.ufunc)}


def float_spelling(ufunc: np.ufunc) -> str | None:
    """The float source of one call of a binder's chain: ``FLOAT_CALLS``, or the function
    spec's ``float_source`` (:mod:`tenscalc.core.functions`) of the function that is this ufunc.

    >>> float_spelling(np.tanh), float_spelling(np.multiply), float_spelling(np.matmul) is None
    ('_m.tanh({})', '({} * {})', True)
    """
    if ufunc in FLOAT_CALLS:
        return FLOAT_CALLS[ufunc]
    spec = _function_specs().get(ufunc)
    return None if spec is None else spec.float_source


def guarded(ufunc: np.ufunc) -> bool:
    """Whether the float call of ``ufunc`` can turn an inf operand into a finite number."""
    if ufunc in GUARDED:
        return True
    spec = _function_specs().get(ufunc)
    return spec is not None and spec.float_guard


#: op kind -> the method writing its statement (``input`` needs none; every other op
#: kind, ``pair``, ``band``, ``accumulate``, ``inv`` ..., has axes somewhere)
SCALAR_RULES: dict[str, Callable[[ScalarSource, Step, Op, str], None]] = {
    "constant": ScalarSource._constant,
    "func": ScalarSource._func,
    "pow": ScalarSource._pow,
    "add": ScalarSource._add,
    "product": ScalarSource._product,
}


def scalar_source(program: Program, resolver: ShapeResolver) -> tuple[str, dict[str, float]] | None:
    """The source of ``_scalar(*inputs)`` for ``program`` (bound by ``resolver``, the
    NumPy backend) and the numbers it reads from its globals, or None when some op is
    not a number.

    The function takes the input slots' 0-d arrays in the order of ``plan.inputs``
    and returns the outputs as floats; it raises :class:`ScalarFallback` (an
    ``ArithmeticError``), ``ArithmeticError`` or ``ValueError`` where NumPy's answer
    is needed.

    >>> import tenscalc as tc
    >>> from tenscalc.compiler.backends import get_backend
    >>> from tenscalc.compiler.program import ShapeResolver, bind
    >>> from tenscalc.core.axes import axis_graph
    >>> f = tc.exp(tc.var("x", 0)) * 2
    >>> resolver = ShapeResolver([axis_graph(f)], {"x": ()})
    >>> source, _ = scalar_source(bind(tc.compile(f).plan, resolver, get_backend("numpy")), resolver)
    >>> print(source)  # doctest: +NORMALIZE_WHITESPACE
    def _scalar(_a0):
        if _a0.dtype is not _F64: raise _Fallback
        _s0 = _float(_a0)
        if not (_isfinite(_s0)): raise _Fallback
        _s1 = _m.exp(_s0)
        _s2 = (_s1 * 2.0)
        _r = (_s2,)
        if not (_isfinite(_s2)): raise _Fallback
        return _r
    """
    if len(program.ops) > MAX_STEPS or program.bound_plan is None:
        return None
    writer = ScalarSource(program, resolver)
    try:
        body = writer.write()
    except _Decline:
        return None
    plan = writer.plan
    slots = list(plan.inputs.values())
    params = [f"_a{k}" for k in range(len(slots))]
    lines = [f"def _scalar({', '.join(params)}):"]
    if params:
        # float64 numbers only (complex, float32, longdouble: NumPy's types decide)
        lines.append(f"    if {' or '.join(f'{p}.dtype is not _F64' for p in params)}: raise _Fallback")
        for slot, param in zip(slots, params):
            lines.append(f"    _s{slot} = _float({param})")
        lines.append(f"    if not ({' and '.join(f'_isfinite(_s{slot})' for slot in slots)}): raise _Fallback")
    lines += [f"    {line}" for line in body]
    outputs = [writer.names[slot] for slot in plan.outputs]
    lines.append(f"    _r = ({', '.join(outputs)},)")
    distinct = list(dict.fromkeys(outputs))
    lines.append(f"    if not ({' and '.join(f'_isfinite({x})' for x in distinct)}): raise _Fallback")
    lines.append("    return _r")
    return "\n".join(lines) + "\n", writer.namespace


def _load(source: str, numbers: dict[str, float]) -> Callable[..., tuple[float, ...]]:
    namespace: dict[str, Any] = {
        "__builtins__": {"abs": abs},
        "_m": math,
        "_isfinite": math.isfinite,
        "_float": float,
        "_F64": np.dtype(np.float64),
        "_Fallback": ScalarFallback,
        "_sign": _sign,
        "_maximum": _maximum,
        **numbers,
    }
    exec(compile(source, "<tenscalc scalar program>", "exec"), namespace)  # noqa: S102 - source written above
    return namespace["_scalar"]


@dataclass
class ScalarProgram(Program):
    """A NumPy :class:`~.program.Program` whose every slot is a number, with a
    straight-line float function tried first on each call."""

    fast: Callable[..., tuple[float, ...]] | None = None
    source: str = ""

    def run(self, arrays, like=None):
        try:
            values = self.fast(*arrays)  # type: ignore[misc]
        except (ArithmeticError, ValueError):  # NumPy's inf, nan and warnings
            return Program.run(self, arrays, like)
        return tuple(map(self.backend.finish, values))


def scalar_program(plan: Plan, resolver: ShapeResolver, program: Program) -> Program:
    """``program`` (``plan`` bound by ``resolver``) with the scalar fast path when every
    op of it is a number and the backend is NumPy; ``program`` itself otherwise.  The
    float function is written from ``program``'s own records (its bound plan, ops and
    term records), so it runs the operations the NumPy program runs, in its order."""
    if not program.backend.runs_numpy_source or resolver.estimate or program.densify:
        return program
    written = scalar_source(program, resolver)
    if written is None:
        return program
    source, numbers = written
    state = {f.name: getattr(program, f.name) for f in fields(Program) if f.init}
    state["fuse_later"] = None  # its fallback is the loop of closures, as NumPy runs them
    return ScalarProgram(**state, fast=_load(source, numbers), source=source)
