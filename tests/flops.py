"""Counting the arithmetic a NumPy program performs, by intercepting its calls.

The compiler's cost model (:mod:`tenscalc.compiler.cost`) says what a call should cost;
this module measures what a NumPy program actually does, the same way for every form
of it (``tc.compile``'s loop of closures, its fused function, the module that
``tc.to_python`` writes), so the tests can compare the forms with each other and with
the model.

How: an ndarray subclass, :class:`Counted`.  The inputs are handed to the program as
``Counted`` views, and NumPy passes every call involving one to the subclass
(``__array_ufunc__`` for ufuncs, which covers ``+ - * /``, ``@``, ``x.sum()`` and
``out=`` calls; ``__array_function__`` for ``np.dot``, ``np.einsum``, ``np.linalg``
...).  The subclass records the call from the operand shapes, computes it on plain
views and hands back ``Counted`` arrays, so results carry the counting on.  This was
chosen over the alternatives because it sees the calls the program makes *however it
spells them*: patching module attributes misses ``a @ b`` and ``x.sum()`` (no module
lookup) and the references the binder captured before the patch (``matmul =
np.matmul``), and a profiler sees neither ufuncs (not built-in functions) nor
operators.

Two gaps, each closed: (1) arrays a program *creates* (``np.zeros``, ``np.empty``,
``np.full``, ``np.asarray`` of an input, which drops a subclass ...) would be plain
ndarrays whose later arithmetic NumPy would not pass to us; while counting, the
creating functions in the ``numpy`` namespace are replaced by ones returning
``Counted`` arrays, so build the program (bind, fuse, ``exec`` the module) inside
:func:`counting` too: the constants it makes and the functions it captures are then the
counting ones.  (2) whatever is still computed on plain arrays is *detected*, not
silently missed: a plain ndarray (ndim >= 1) reaching any intercepted call, or written
into a ``Counted`` array, is recorded in :attr:`Tally.leaks`; and an array function
this module does not know to be free of arithmetic (a view, a copy, metadata) or to
pass its work on to ufuncs is recorded under ``unknown``.  Tests assert both are empty.

What is counted (:class:`Record` kinds):

* ``contraction``: multiply-adds of ``matmul`` / ``@``, ``np.dot``, ``vdot``,
  ``inner``, ``tensordot``, and ``einsum`` of two or more operands with a summed
  letter (the product of all its letters' lengths, times operands - 1);
* ``elementwise``: entries written by a ufunc call (its broadcast shape), by
  ``ufunc.outer``, ``np.outer`` and an ``einsum`` of several operands that sums
  nothing (a broadcast product), for results of one axis or more;
* ``scalar``: the same for 0-d results (kept apart: one form's NumPy scalar, e.g.
  ``np.dot`` of two vectors, is another's 0-d array, and arithmetic on NumPy scalars
  is not intercepted at all);
* ``reduction``: entries read by ``ufunc.reduce`` (``x.sum()``, ``min``, ``max``) and
  by an ``einsum`` of one operand that sums a letter;
* ``linalg``: ``n^3`` per matrix for ``np.linalg`` calls (the model's convention).

:attr:`Tally.flops` is opt_einsum's convention, the model's: two per multiply-add,
one per entry written or read, ``n^3`` per inverse or determinant.

>>> import numpy as np
>>> with counting() as tally:
...     a, b = counted(np.ones((3, 4))), counted(np.ones((4, 5)))
...     c = np.exp(a @ b).sum(axis=0) + np.zeros(5)
>>> tally.contraction, tally.elementwise, tally.reduction
(60, 20, 15)
>>> tally.flops, tally.leaks, tally.unknown
(155, [], [])
"""

from __future__ import annotations

import functools
import math
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np

__all__ = ["Counted", "Record", "Tally", "counted", "counting"]


@dataclass(frozen=True)
class Record:
    """One intercepted call: its ``kind`` (see the module docstring), the NumPy
    function's ``name``, the operands' ``shapes``, the ``amount`` counted and the
    ``site`` (file:line of the innermost frame of generated source or of tenscalc)."""

    kind: str
    name: str
    shapes: tuple[tuple[int, ...], ...]
    amount: int
    site: str


@dataclass
class Tally:
    """The records of one counted run."""

    records: list[Record] = field(default_factory=list)
    #: sites where a plain ndarray met the program's arrays (arithmetic that may be uncounted)
    leaks: list[str] = field(default_factory=list)
    #: array functions called that this module cannot account for
    unknown: list[str] = field(default_factory=list)

    def total(self, kind: str) -> int:
        return sum(r.amount for r in self.records if r.kind == kind)

    @property
    def contraction(self) -> int:
        """Multiply-adds of the contraction calls."""
        return self.total("contraction")

    @property
    def elementwise(self) -> int:
        return self.total("elementwise")

    @property
    def reduction(self) -> int:
        return self.total("reduction")

    @property
    def linalg(self) -> int:
        return self.total("linalg")

    @property
    def flops(self) -> int:
        """opt_einsum's convention: 2 per multiply-add, 1 per entry written or read."""
        return 2 * self.contraction + self.elementwise + self.total("scalar") + self.reduction + self.linalg

    def contractions(self) -> Counter:
        """(name, shapes) -> multiply-adds, summed: which contraction calls were made."""
        found: Counter = Counter()
        for r in self.records:
            if r.kind == "contraction":
                found[(r.name, r.shapes)] += r.amount
        return found

    def clear(self) -> None:
        self.records.clear()
        self.leaks.clear()
        self.unknown.clear()


_ACTIVE: Tally | None = None


def _site() -> str:
    """The innermost frame of generated source (a ``<...>`` file) or of tenscalc."""
    frame: FrameType | None = sys._getframe(2)
    fallback = ""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<") and not name.startswith("<frozen"):
            return f"{name}:{frame.f_lineno}"
        if not fallback and "tenscalc" in name and "tests" not in name:
            fallback = f"{name.rsplit('/', 1)[-1]}:{frame.f_lineno}"
        frame = frame.f_back
    return fallback


def _record(kind: str, name: str, operands: Any, amount: int) -> None:
    if _ACTIVE is not None:
        shapes = tuple(tuple(np.shape(x)) for x in operands)
        _ACTIVE.records.append(Record(kind, name, shapes, int(amount), _site()))


def _plain(x: Any) -> Any:
    """``x`` as NumPy computes with it; a plain ndarray here is a leak."""
    if isinstance(x, Counted):
        return x.view(np.ndarray)
    if type(x) is np.ndarray and x.size > 1 and _ACTIVE is not None:
        _ACTIVE.leaks.append(f"{_site()}: plain {x.shape}")
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(y) for y in x)
    return x


def _wrap(x: Any) -> Any:
    if type(x) is np.ndarray:
        return x.view(Counted)
    if isinstance(x, tuple):
        return tuple(_wrap(y) for y in x)
    return x


def _matmul_macs(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    return math.prod(batch) * a2[-2] * a2[-1] * b2[-1]


def _dot_macs(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    if not a or not b:
        return 0  # a scalar times an array: recorded as elementwise by the caller
    if len(b) == 1:
        return math.prod(a)
    return math.prod(a) * math.prod(b) // b[-2]


def _einsum(args: tuple) -> tuple[str, int]:
    """The kind and amount of ``np.einsum(eq, *operands)`` run without optimisation."""
    eq, *operands = args
    if not isinstance(eq, str) or "..." in eq:
        raise NotImplementedError(f"tests/flops.py counts explicit einsum equations only, not {eq!r}")
    lhs, _, out = eq.replace(" ", "").partition("->")
    sizes: dict[str, int] = {}
    for spec, x in zip(lhs.split(","), operands):
        sizes.update(zip(spec, np.shape(x)))
    every = math.prod(sizes.values())
    summed = set(sizes) - set(out)
    if len(operands) == 1:
        return ("reduction", every) if summed else ("view", 0)
    return ("contraction" if summed else "elementwise"), every * (len(operands) - 1)


def _linalg(x: Any) -> int:
    shape = np.shape(x)
    return math.prod(shape[:-2]) * shape[-1] ** 3 if len(shape) >= 2 else 0


def _pairwise(kind: str, macs: Callable[[tuple, tuple], int]) -> Callable[[tuple], tuple[str, int]]:
    def count(args: tuple) -> tuple[str, int]:
        a, b = np.shape(args[0]), np.shape(args[1])
        if not a or not b:
            return "elementwise" if max(len(a), len(b)) else "scalar", max(math.prod(a), math.prod(b))
        return kind, macs(a, b)

    return count


def _tensordot(args: tuple, axes: Any = 2) -> tuple[str, int]:
    a, b = np.shape(args[0]), np.shape(args[1])
    if len(args) > 2:
        axes = args[2]
    if isinstance(axes, int):
        inner = math.prod(b[:axes])
    else:
        inner = math.prod(b[k] for k in np.atleast_1d(axes[1]))
    return "contraction", math.prod(a) * math.prod(b) // max(inner, 1)


#: array functions that do arithmetic in C without passing it on: counted here
LEAVES: dict[Callable, Callable[..., tuple[str, int]]] = {
    np.dot: _pairwise("contraction", _dot_macs),
    np.vdot: lambda args: ("contraction", np.size(args[0])),
    np.inner: _pairwise("contraction", lambda a, b: math.prod(a) * math.prod(b) // b[-1]),
    np.tensordot: _tensordot,
    np.einsum: _einsum,
    np.outer: lambda args: ("elementwise", np.size(args[0]) * np.size(args[1])),
}
#: np.linalg's functions: n^3 per matrix (they compute on plain arrays inside)
LINALG = {getattr(np.linalg, name) for name in ("inv", "det", "slogdet", "solve", "cholesky", "eigh", "pinv")}
#: array functions that do no arithmetic (views, copies, metadata) or do it through
#: ufunc calls on the operands as given (counted there)
FREE = {
    getattr(np, name)
    for name in (
        "broadcast_to broadcast_arrays result_type ndim shape size may_share_memory shares_memory concatenate "
        "stack copyto reshape transpose diagonal squeeze expand_dims moveaxis swapaxes ravel atleast_1d "
        "atleast_2d empty_like zeros_like ones_like full_like copy array_equal can_cast iscomplexobj isrealobj "
        "sum prod amax amin max min any all"
    ).split()
}


class Counted(np.ndarray):
    """An ndarray whose arithmetic is recorded in the active :class:`Tally`."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        args = [_plain(x) for x in inputs]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        shapes = [np.shape(x) for x in args]
        if ufunc is np.matmul and method == "__call__":
            _record("contraction", "matmul", args, _matmul_macs(shapes[0], shapes[1]))
        elif method in ("reduce", "accumulate", "reduceat", "at"):
            _record("reduction" if method == "reduce" else "elementwise", f"{ufunc.__name__}.{method}", args,
                    math.prod(shapes[0]))  # fmt: skip
        else:
            written = np.broadcast_shapes(*shapes) if method == "__call__" else tuple(d for s in shapes for d in s)
            if out is not None:
                written = np.broadcast_shapes(written, *[np.shape(o) for o in kwargs["out"]])
            name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
            _record("elementwise" if written else "scalar", name, args, math.prod(written))
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:  # the caller's own buffers, as NumPy returns them
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(
        self, func: Callable, types: Iterable[Any], args: Iterable[Any], kwargs: Mapping[str, Any]
    ) -> Any:
        if func in LEAVES or func in LINALG:
            plain_args, plain_kwargs = _plain(tuple(args)), {k: _plain(v) for k, v in kwargs.items()}
            if func in LINALG:
                kind, amount = "linalg", _linalg(plain_args[0])
            elif func is np.einsum and plain_kwargs.get("optimize", False) is not False:
                raise NotImplementedError("tests/flops.py counts np.einsum without optimize= only")
            else:
                kind, amount = LEAVES[func](plain_args, **({"axes": kwargs["axes"]} if "axes" in kwargs else {}))
            if kind != "view":
                operands = plain_args[1:] if func is np.einsum else plain_args[:2]
                _record(kind, func.__name__, operands, amount)
            return _wrap(func(*plain_args, **plain_kwargs))
        if func not in FREE and _ACTIVE is not None:
            _ACTIVE.unknown.append(f"{func.__module__}.{func.__name__} at {_site()}")
        _plain(args)  # a plain operand among them is a leak
        return _wrap(super().__array_function__(func, types, args, kwargs))

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, _plain(value))  # a plain array copied in was computed unseen


def counted(x: Any) -> Counted:
    """``x`` (an array or a number) as a program's input: a ``Counted`` view (a number: 0-d,
    as ``tc.compile`` converts it)."""
    return np.asarray(x).view(Counted)


#: the numpy functions that create arrays (from shapes, lists or other arrays,
#: dropping a subclass): replaced while counting by ones returning Counted arrays
CREATORS = (
    "empty zeros ones full eye identity array asarray ascontiguousarray asfortranarray arange linspace bincount "
    "tri broadcast_to empty_like zeros_like ones_like full_like frombuffer"
).split()


def _creator(make: Callable) -> Callable:
    @functools.wraps(make)
    def create(*args: Any, **kwargs: Any) -> Any:
        made = make(*args, **kwargs)
        return _wrap(made) if _ACTIVE is not None else made

    create.counted_original = make  # type: ignore[attr-defined]
    return create


@contextmanager
def counting() -> Iterator[Tally]:
    """Record the arithmetic on :class:`Counted` arrays into a new :class:`Tally`;
    NumPy's array-creating functions return ``Counted`` arrays meanwhile.  Not
    reentrant, one thread."""
    global _ACTIVE
    if _ACTIVE is not None:
        raise RuntimeError("counting() is already active")
    originals = {name: getattr(np, name) for name in CREATORS}
    tally = Tally()
    for name, make in originals.items():
        setattr(np, name, _creator(getattr(make, "counted_original", make)))
    _ACTIVE = tally
    try:
        yield tally
    finally:
        _ACTIVE = None
        for name, make in originals.items():
            setattr(np, name, make)
