"""A clock-free cost model for the tests: how many functions a piece of work calls.

Wall-clock bounds fail on a loaded machine and pass on a fast one whatever the code
does; the number of function calls (Python and built-in) a computation makes is the
same on every machine and under any load, and it grows with the work: a quadratic
loop shows as a quadratic count.  Tests compare counts at two sizes (a doubling
ratio): linear work doubles, quadratic work quadruples.

>>> calls(lambda: None)
0
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable


def calls(work: Callable[[], object]) -> int:
    """The number of function calls (Python and C) that ``work()`` makes in this thread."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call" or event == "c_call":
            count += 1

    gc.collect()  # a collection inside the work would call __del__s that belong to earlier work
    previous = sys.getprofile()
    if threading.current_thread() is threading.main_thread():
        sys.setprofile(profile)
        try:
            work()
        finally:
            sys.setprofile(previous)
    else:  # pragma: no cover - the tests call it from the main thread
        raise RuntimeError("calls() counts the main thread only")
    # the call to `work` itself and the setprofile call that stops counting are not the work's
    return count - 2


def growth(build: Callable[[int], Callable[[], object]], small: int) -> tuple[int, int, float]:
    """Calls of ``build(small)()`` and ``build(2 * small)()``, and their ratio.

    ``build(n)`` prepares the work of size ``n`` (outside the count) and returns it.
    """
    first = calls(build(small))
    second = calls(build(2 * small))
    return first, second, second / first


def traced_peak(work: Callable[[], object], warm: int = 1) -> int:
    """The peak bytes tracemalloc traces (NumPy's buffers included) above what was
    traced before, during one ``work()`` after ``warm`` untraced calls (binding, the
    fused function, imports).  A tracemalloc already running (``python -X
    tracemalloc``) is left as it was found.

    >>> import numpy as np
    >>> traced_peak(lambda: np.ones(1 << 16)) >= 8 << 16
    True
    """
    import tracemalloc

    for _ in range(warm):
        work()
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        work()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        if not already:
            tracemalloc.stop()
