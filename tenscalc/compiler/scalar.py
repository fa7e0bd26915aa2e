"""The scalar fast path: a plan whose every value is a number, run as Python floats.

On problems whose inputs and intermediates are all scalars (the vertex-elimination
Jacobians of ``benchmarks/elimination.py``: RoeFlux-1d, robot arms), the NumPy program
of :mod:`.program` pays a ufunc call (~1-2 µs on a 0-d array) per step.  When every
step of a plan bound to shapes has shape ``()``, :func:`scalar_program` writes the plan
as one straight-line Python function over floats and the ``math`` module (~50 ns per
operation), compiled once with :func:`compile` and kept beside the NumPy program.

The function computes exactly what the NumPy program computes, in the same order:
sums add their summands in the binder's order, a product multiplies along the same
opt_einsum path, then by the term's factor, then by its order-0 constants
(:func:`.program._bind_term`).  Wherever Python's float semantics would differ from
NumPy's, the call falls back to the NumPy program (same values, same warnings):

* an input that is not a float64 number, or not finite (complex, float32, nan, inf);
* ``math`` raising where NumPy returns inf or nan with a warning (``log(-1)``,
  ``1 / 0``, ``exp(1000)``, ``sqrt(-1)``);
* a result that is not finite (a multiplication that overflowed: Python is silent,
  NumPy warns), or an inf reaching a step that could turn it into a finite number
  (``1 / inf``, ``exp(-inf)``, ``tanh``), where NumPy would have warned earlier.

A plan with a step this module cannot write (a constant with axes, an unknown
function) is never given the fast path.  Results are handed out as the NumPy
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

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..core.functions import FUNCTIONS
from .plan import Plan, Step
from .program import Program, ShapeResolver, _items_of, _terms_of, choose_path, step_shape
from .source import literal

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


def _relu(x: float) -> float:
    """``np.maximum(x, 0.0)``: ``0.0`` for ``-0.0``, nan for nan."""
    if x > 0.0:
        return x
    return 0.0 if x == x else x


class _Decline(Exception):
    """The plan has a step the scalar writer does not handle: keep the NumPy program."""


class ScalarSource:
    """Writes the statements of a plan whose every slot is a number."""

    def __init__(self, plan: Plan, resolver: ShapeResolver):
        self.plan = plan
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
        for step in self.plan.steps:
            if step_shape(step, self.resolver) != ():
                raise _Decline
            if step.kind == "input":
                self.names[step.index] = f"_s{step.index}"
                self.finite.add(self.names[step.index])
                continue
            rule = SCALAR_RULES.get(step.kind)
            if rule is None:
                raise _Decline
            name = f"_s{step.index}"
            rule(self, step, name)
            self.names[step.index] = name
        return self.lines

    # ------------------------------------------------------------------ steps
    def _constant(self, step: Step, name: str) -> None:
        value = np.asarray(self.resolver.constant(step.node, ()))
        if value.dtype != np.float64:  # the NumPy program would hand out its own dtype
            raise _Decline
        self.lines.append(f"{name} = {self.number(value)}")

    def _func(self, step: Step, name: str) -> None:
        spec = FUNCTIONS.get(str(step.data))
        if spec is None:
            raise _Decline
        x = self.names[step.args[0]]
        if spec.float_guard:
            self.guard(x)
        self.lines.append(f"{name} = {spec.float_source.format(x)}")

    def _pow(self, step: Step, name: str) -> None:
        # as program._bind_pow: x*x, 1/x, 1/(x*x), sqrt or pow (math.pow raises where
        # np.power gives nan or inf; Python's ** would give a complex number)
        if len(step.args) == 2:
            a, b = (self.names[slot] for slot in step.args)
            self.guard(a)
            self.guard(b)
            self.lines.append(f"{name} = _m.pow({a}, {b})")
            return
        x, e = self.names[step.args[0]], step.data
        if e == 1:
            text = x
        elif e == 2:
            text = f"{x} * {x}"
        elif e == 0.5:
            text = f"_m.sqrt({x})"
        else:
            self.guard(x)  # 1 / inf is 0: the overflow to inf must not pass unseen
            if e == -1:
                text = f"1.0 / {x}"
            elif e == -2:
                text = f"1.0 / ({x} * {x})"
            else:
                text = f"_m.pow({x}, {self.number(e)})"
        self.lines.append(f"{name} = {text}")

    def _add(self, step: Step, name: str) -> None:
        # as program._bind_add at shape (): the number joins the first summand of
        # coefficient ±1, else it is added last
        items = _items_of(step)
        if any(it.kind not in ("slot", "scalar") and not (it.kind == "delta" and it.n == 0) for it in items):
            raise _Decline  # an embedding or a delta(n>0) has axes
        arrays = [(self.names[it.slot], it.coef) for it in items if it.kind == "slot"]
        scalar = sum(it.coef for it in items if it.kind != "slot")
        if not arrays:
            self.lines.append(f"{name} = {self.number(scalar)}")
            return
        pending = self.number(scalar) if scalar != 0 else None
        (first, coef), rest = arrays[0], arrays[1:]
        if pending is not None and coef in (1, -1):
            head = f"{first} + {pending}" if coef == 1 else f"{pending} - {first}"
            pending = None
        elif coef == 1:
            head = first
        else:
            head = f"-{first}" if coef == -1 else f"{self.number(coef)} * {first}"
        parts = []
        for x, c in rest:
            parts.append(f" + {x}" if c == 1 else (f" - {x}" if c == -1 else f" + {self.number(c)} * {x}"))
        if pending is not None:
            parts.append(f" + {pending}")
        self._chain(name, head, parts)

    def _chain(self, name: str, head: str, parts: list[str]) -> None:
        """``name = head`` followed by ``parts`` (`` + x``), left to right, in statements
        of at most :data:`CHUNK` parts."""
        self.lines.append(f"{name} = {head}{''.join(parts[:CHUNK])}")
        for start in range(CHUNK, len(parts), CHUNK):
            self.lines.append(f"{name} = {name}{''.join(parts[start : start + CHUNK])}")

    def _product(self, step: Step, name: str) -> None:
        terms = [self._term(term) for term in _terms_of(step)]
        self._chain(name, terms[0], [f" + {text}" for text in terms[1:]])

    def _term(self, term) -> str:
        """One term as program._bind_term computes it at shape ()."""
        if term.out or any(spec for _, spec in term.operands) or any(spec for _, spec in term.constants):
            raise _Decline  # letters with lengths: not a plain number
        # letters summed over constants only are length factors, multiplied in the
        # binder's order (the same set, built the same way)
        sizes: dict[int, int] = {}
        for letter, (node, original) in term.refs:
            if letter not in sizes:
                length = self.resolver.letter_length(node, original)
                if length is not None:
                    sizes[letter] = length
        factor = term.factor
        for letter in set(sizes) | {letter for letter, _ in term.refs}:
            if letter not in sizes:
                raise _Decline  # the NumPy binder raises its clear error
            factor *= sizes[letter]
        operands = [self.names[slot] for slot, _ in term.operands]
        after = 1.0
        if operands:  # order-0 constants multiply the contraction after it
            for node, _ in term.constants:
                after = after * float(self.resolver.constant(node, ()))
        else:  # constants only: they are the operands
            operands = [self.number(self.resolver.constant(node, ())) for node, _ in term.constants]
        if factor == 0 or not operands:
            return self.number(0.0 if factor == 0 else factor)
        # multiply along the path the NumPy binder takes (multiplication does not associate)
        path = _number_path(len(operands))
        stack = list(operands)
        for positions in path:
            picked = [stack.pop(p) for p in sorted(positions, reverse=True)]
            stack.append(picked[0] if len(picked) == 1 else f"({picked[0]} * {picked[1]})")
        (text,) = stack
        if factor != 1:
            text = f"({text} * {self.number(factor)})"
        if after != 1.0:
            text = f"({text} * {self.number(after)})"
        return text


@functools.lru_cache(maxsize=64)
def _number_path(count: int) -> tuple[tuple[int, ...], ...]:
    """The contraction path the NumPy binder takes for a product of ``count`` numbers."""
    path, _ = choose_path(",".join([""] * count) + "->", [()] * count, 1)
    return tuple(tuple(positions) for positions in path)


#: step kind -> the method writing its statement (``input`` needs none; ``inv``,
#: ``det``, ``slice`` and ``embed`` always have axes somewhere in their step)
SCALAR_RULES: dict[str, Callable[[ScalarSource, Step, str], None]] = {
    "constant": ScalarSource._constant,
    "func": ScalarSource._func,
    "pow": ScalarSource._pow,
    "add": ScalarSource._add,
    "product": ScalarSource._product,
}


def scalar_source(plan: Plan, resolver: ShapeResolver) -> tuple[str, dict[str, float]] | None:
    """The source of ``_scalar(*inputs)`` for ``plan`` bound by ``resolver`` and the
    numbers it reads from its globals, or None when some step is not a number.

    The function takes the input slots' 0-d arrays in the order of ``plan.inputs``
    and returns the outputs as floats; it raises :class:`ScalarFallback` (an
    ``ArithmeticError``), ``ArithmeticError`` or ``ValueError`` where NumPy's answer
    is needed.

    >>> import tenscalc as tc
    >>> from tenscalc.compiler.program import ShapeResolver
    >>> from tenscalc.core.axes import axis_graph
    >>> f = tc.exp(tc.var("x", 0)) * 2
    >>> source, _ = scalar_source(tc.compile(f).plan, ShapeResolver([axis_graph(f)], {"x": ()}))
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
    if len(plan.steps) > MAX_STEPS:
        return None
    writer = ScalarSource(plan, resolver)
    try:
        body = writer.write()
    except _Decline:
        return None
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
        "_relu": _relu,
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
    """``program`` with the scalar fast path when every step of ``plan`` is a number
    at these shapes and the backend is NumPy; ``program`` itself otherwise."""
    if program.backend.name != "numpy" or resolver.estimate or program.densify:
        return program
    written = scalar_source(plan, resolver)
    if written is None:
        return program
    source, numbers = written
    state = {f.name: getattr(program, f.name) for f in fields(Program) if f.init}
    state["fuse_later"] = None  # its fallback is the loop of closures, as NumPy runs them
    return ScalarProgram(**state, fast=_load(source, numbers), source=source)
