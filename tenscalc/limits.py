"""The memory limit: evaluation refuses, before allocating, an array larger than it.

A Hessian of ``x·x`` at ``len(x) = 300,000`` asks for 671 GiB; without a check NumPy
raises a bare ``MemoryError`` (or the machine swaps).  Every evaluator compares the
size of each result and intermediate with the limit first and raises an
:class:`~tenscalc.errors.EvaluationError` that states the shape and the bytes.

The default is half of the physical memory.  Change it with
:func:`set_memory_limit` or the environment variable ``TENSCALC_MEMORY_LIMIT``
(bytes, or a number with a suffix ``K``, ``M``, ``G``, ``T``: ``TENSCALC_MEMORY_LIMIT=8G``).

>>> import tenscalc as tc
>>> old = tc.set_memory_limit(2**20)   # 1 MiB
>>> import numpy as np
>>> try:
...     tc.evaluate(tc.parse("x *(i,j->ij) x", {"x": 1}), x=np.ones(1000))
... except tc.EvaluationError as error:
...     print(str(error).split(" (tc.")[0])
the value of a mul node of shape (1000, 1000) needs 7.63 MiB, more than the memory limit of 1 MiB
>>> _ = tc.set_memory_limit(old)
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence

from .errors import EvaluationError, TensCalcError

MAX_AXES = 64  # NumPy's limit on array dimensions
_SUFFIXES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_limit: int | None = None  # None: the default (environment variable or half the memory)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return 16 * 2**30


def _parse_bytes(text: str) -> int:
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    number, suffix = (text[:-1], text[-1]) if text and text[-1] in _SUFFIXES else (text, "")
    try:
        value = float(number) * _SUFFIXES[suffix]
    except ValueError:
        raise TensCalcError(f"TENSCALC_MEMORY_LIMIT must be a number of bytes such as 8G, not {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise TensCalcError(f"TENSCALC_MEMORY_LIMIT must be positive, not {text!r}")
    return int(value)


def memory_limit() -> int:
    """The largest array, in bytes, that evaluation may allocate."""
    if _limit is not None:
        return _limit
    return _default_limit(os.environ.get("TENSCALC_MEMORY_LIMIT"))


@functools.lru_cache(maxsize=4)
def _default_limit(text: str | None) -> int:  # cached: checked before every array
    return _parse_bytes(text) if text else _physical_memory() // 2


def set_memory_limit(limit: int | None) -> int:
    """Set the largest array (in bytes) evaluation may allocate; ``None`` restores
    the default.  Returns the limit that was in force, to restore it later.

    Examples
    --------
    >>> import tenscalc as tc
    >>> old = tc.set_memory_limit(10 * 2**30)
    >>> tc.set_memory_limit(old) == 10 * 2**30
    True
    """
    global _limit
    previous = memory_limit()
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
        raise TensCalcError(f"the memory limit must be a positive number of bytes, not {limit!r}")
    _limit = limit
    return previous


def _human(size: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "bytes" or size == int(size) else f"{size:.3g} {unit}"
        size /= 1024
    raise AssertionError  # unreachable


def check_shape(shape: Sequence[int], itemsize: int = 8, what: str = "an array") -> None:
    """Raise :class:`EvaluationError` if an array of ``shape`` would exceed the limit."""
    if len(shape) > MAX_AXES:
        raise EvaluationError(f"{what} would have {len(shape)} axes; NumPy arrays have at most {MAX_AXES}")
    needed = math.prod(shape) * itemsize
    limit = memory_limit()
    if needed > limit:
        raise EvaluationError(
            f"{what} of shape {tuple(shape)} needs {_human(needed)}, more than the memory limit of "
            f"{_human(limit)} (tc.set_memory_limit or TENSCALC_MEMORY_LIMIT raise it)"
        )


def check_entries(entries: int, itemsize: int = 8, what: str = "an intermediate array") -> None:
    """Like :func:`check_shape` for a count of entries (a contraction's intermediate)."""
    needed = entries * itemsize
    limit = memory_limit()
    if needed > limit:
        raise EvaluationError(
            f"{what} of {entries:,} entries needs {_human(needed)}, more than the memory limit of "
            f"{_human(limit)} (tc.set_memory_limit or TENSCALC_MEMORY_LIMIT raise it)"
        )


#: the longest problem text the command line reads, in characters (1 MB); a problem
#: of that size prints and parses in seconds, and ``-f /dev/zero`` is refused at once
MAX_INPUT = 1_000_000


def read_limited(stream, limit: int, what: str) -> str:
    """At most ``limit`` characters of ``stream``; a :class:`TensCalcError` if it holds more.

    >>> import io
    >>> read_limited(io.StringIO("x + 1"), 10, "standard input")
    'x + 1'
    >>> read_limited(io.StringIO("x" * 11), 10, "standard input")
    Traceback (most recent call last):
    ...
    tenscalc.errors.TensCalcError: standard input is longer than the input limit of 10 characters; raise ...
    """
    text = stream.read(limit + 1)
    check_input_length(text, limit, what)
    return text


def check_input_length(text: str, limit: int, what: str) -> None:
    """A :class:`TensCalcError` when ``text`` is longer than ``limit`` characters."""
    if len(text) > limit:
        raise TensCalcError(
            f"{what} is longer than the input limit of {limit:,} characters; "
            "raise the limit with --max-input-size CHARS"
        )
