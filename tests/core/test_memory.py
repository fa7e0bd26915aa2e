"""Long sessions do not grow: every expression that was parsed, differentiated,
evaluated and compiled is freed once the caller drops it (issue 14, item 1).

The measures are independent of how the library caches internally: live
``Expr`` objects are counted through the garbage collector, memory is the
process's resident set size.
"""

from __future__ import annotations

import gc
import os
import resource

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.core.nodes import Expr


def _rss_bytes() -> int:
    """Current resident set size (Linux), else the peak (which must stay flat too)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if os.uname().sysname == "Darwin" else peak * 1024


def _live_exprs() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, Expr))


def _session(start: int, count: int, kept: list) -> None:
    """Parse, differentiate, evaluate and compile ``count`` distinct expressions,
    keeping at most 100 of them alive (as a notebook keeps a few results)."""
    x, y = np.linspace(0.5, 1.5, 3), np.arange(3.0)
    for k in range(start, start + count):
        # the constant k makes every expression new (nothing interned can be reused)
        f = tc.parse(f"sin(x *(i,i->) y) + {k}", {"x": 1, "y": 1})
        g = tc.gradient(f, "x")
        value = tc.evaluate(g, x=x, y=y)
        compiled = tc.compile([f, g])
        _, grad = compiled(x=x, y=y)
        np.testing.assert_allclose(grad, value)
        kept.append((f, g, compiled))
        del kept[:-100]


@pytest.mark.slow  # about a minute of building and freeing
def test_memory_is_flat_over_20000_distinct_expressions():
    kept: list = []
    _session(0, 2_000, kept)  # warm-up: caches fill to their bounds
    nodes_before, rss_before = _live_exprs(), _rss_bytes()
    _session(2_000, 18_000, kept)
    nodes_after, rss_after = _live_exprs(), _rss_bytes()
    # the 100 kept triples hold a few thousand nodes; 18,000 more expressions would
    # add hundreds of thousands if they leaked
    assert nodes_after <= nodes_before + 2_000, (nodes_before, nodes_after)
    assert rss_after - rss_before < 40 * 2**20, (rss_before, rss_after)
    kept.clear()
    assert _live_exprs() < nodes_before
