"""Keep freed heap memory between calls: an opt-in speed-up for glibc's malloc.

A compiled derivative allocates its intermediates afresh on every call and frees
them when the call ends.  glibc's ``malloc`` gives freed memory at the top of its
heap back to the system once more than a threshold is free (by default twice the
largest array freed so far), so the next call takes a page fault on every page of
every intermediate again.  For arrays of 100 KiB to a few MiB that is a large part
of the time.  Measured on one core (2026-11-24, this project's 2-core machine), a
fresh process per problem, tenscalc / hand-written NumPy, ms per call:

* the 8-layer network's gradients (256x64 arrays): 2.30 / 1.93 by default,
  1.55 / 1.56 with :func:`keep_freed_memory`;
* the 3-layer network's Hessian-vector product (512x256 arrays): 19.5 / 18.3,
  then 12.0 / 11.3.

:func:`keep_freed_memory` sets glibc's ``M_TOP_PAD`` (the heap grows by that much
extra and keeps that much free memory when it shrinks) and ``M_MMAP_THRESHOLD``
(arrays up to ``pad``, at most 32 MiB, come from the heap rather than from a fresh
mapping each: setting any of these options switches off glibc's adaptive
threshold, and with ``M_TOP_PAD`` alone every array above 128 KiB would be mapped
and unmapped on each call).  It is process-wide (NumPy, SciPy, JAX and everything
else in the process allocate through the same ``malloc``) and the process keeps up
to ``pad`` bytes it would otherwise give back, so tenscalc never sets it by itself.
The environment variables ``MALLOC_TOP_PAD_=67108864 MALLOC_MMAP_THRESHOLD_=33554432``
do the same from outside the process.

Call it once, early, in a program that calls compiled functions many times::

    import tenscalc as tc
    tc.keep_freed_memory()          # 64 MiB; False where malloc is not glibc's
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading

from .errors import TensCalcError

M_TOP_PAD = -2  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
_DEFAULT_MMAP_THRESHOLD = 128 * 2**10
_MAX_MMAP_THRESHOLD = 32 * 2**20  # the largest glibc accepts on 64-bit systems
_MAX_PAD = 2**31 - 1  # mallopt takes a C int
_lock = threading.Lock()


def _glibc() -> ctypes.CDLL | None:
    """The process's C library if it is glibc (it has ``gnu_get_libc_version``)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return None  # musl, macOS, Windows: no mallopt with these options
    return libc


def keep_freed_memory(pad: int = 64 * 2**20) -> bool:
    """Ask glibc's ``malloc`` to keep ``pad`` bytes of freed heap memory for reuse
    instead of returning it to the system (``mallopt`` of ``M_TOP_PAD`` and
    ``M_MMAP_THRESHOLD``).

    Makes repeated calls of compiled functions whose intermediates are 100 KiB or
    more faster (up to a third on this project's benchmarks, for NumPy code that
    is not tenscalc's too; nothing changes where arrays are small); see the module
    docstring for what it costs.  Returns True when set, False where the C library
    is not glibc (nothing is changed there).  ``pad=0`` asks for no extra memory.

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.keep_freed_memory(-1)
    Traceback (most recent call last):
    ...
    tenscalc.errors.TensCalcError: keep_freed_memory needs a number of bytes from 0 to 2147483647, not -1
    """
    if isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad <= _MAX_PAD:
        raise TensCalcError(f"keep_freed_memory needs a number of bytes from 0 to {_MAX_PAD}, not {pad!r}")
    libc = _glibc()
    if libc is None:
        return False
    # glibc stops adapting its mmap threshold once any of these is set: without a
    # threshold of our own every array above 128 KiB would be mapped afresh per call
    threshold = min(max(pad, _DEFAULT_MMAP_THRESHOLD), _MAX_MMAP_THRESHOLD)
    with _lock:
        return bool(libc.mallopt(M_TOP_PAD, pad)) and bool(libc.mallopt(M_MMAP_THRESHOLD, threshold))
