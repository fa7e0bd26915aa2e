"""Printing and parsing are linear in the depth of an expression (issue 30 item 5).

Each printer used to format every node's whole text into its parent's, copying the
text once per ancestor: ``str()`` of a 20,000-deep ``sin(`` (100 KB of text) peaked
at 1,008 MiB.  The peaks are measured with ``tracemalloc`` (a cost model, not a
clock): doubling the depth must about double them, not quadruple them.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

import tenscalc as tc

DEPTHS = (10_000, 20_000)


def _deep(depth: int) -> tc.Expr:
    e = tc.var("x", 1)
    for _ in range(depth):
        e = tc.sin(e)
    return e


def _text(depth: int) -> str:
    return "sin(" * depth + "x" + ")" * depth


def _peak(work: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


PRINTERS = {
    "str": str,
    "repr": repr,
    "to_text with temporaries": lambda e: tc.to_text(e, temporaries=True),
    "matrix notation": tc.to_matrix_notation,
}


@pytest.mark.parametrize("name", PRINTERS)
def test_printing_memory_is_linear_in_depth(name):
    printer = PRINTERS[name]
    peaks = []
    for depth in DEPTHS:
        e = _deep(depth)
        peaks.append(_peak(lambda e=e: printer(e)))
        if name != "repr":
            assert printer(e) == _text(depth)
    # linear: about 2x (dicts grow in powers of two: up to 3x); quadratic was 4x, and
    # 1 GB at 20,000 levels; now a few MB
    assert peaks[1] < 3 * peaks[0], peaks
    assert peaks[1] < 40 * 2**20, peaks


LATEX = {
    "latex": tc.latex,
    "latex with temporaries": lambda e: tc.latex(e, temporaries=True),
    "latex in index notation": lambda e: tc.latex(e, notation="index"),
}


@pytest.mark.parametrize("name", LATEX)
def test_latex_memory_is_linear_in_depth(name):
    # a formula is refused beyond 200,000 characters (about 10,000 levels of sin):
    # 4,000 and 8,000 levels (8,000 took 520 MiB, now 6 MiB)
    printer = LATEX[name]
    peaks = []
    for depth in (4_000, 8_000):
        e = _deep(depth)
        peaks.append(_peak(lambda e=e: printer(e)))
        text = printer(e)
        assert text.count("\\sin") == depth and text.endswith("\\right)" * depth) and "\x00" not in text
    assert peaks[1] < 3 * peaks[0], peaks
    assert peaks[1] < 40 * 2**20, peaks


def test_parsing_memory_is_linear_in_depth():
    peaks = [_peak(lambda depth=depth: tc.parse(_text(depth), {"x": 1})) for depth in DEPTHS]
    assert peaks[1] < 3 * peaks[0], peaks
    assert peaks[1] < 100 * 2**20, peaks
    assert tc.parse(_text(DEPTHS[0]), {"x": 1}) is _deep(DEPTHS[0])


def test_a_long_text_used_twice_is_written_out_twice():
    # long texts are marks filled in at the end: a shared one must appear at every use
    inner = _deep(300)
    e = inner * inner + tc.cos(inner)
    text = str(e)
    assert text.count(_text(300)) == 3 and "\x00" not in text
    assert tc.parse(text, {"x": 1}) is e
    named = tc.to_text(e, temporaries=True)
    assert named.count(_text(300)) == 1 and "\x00" not in named
