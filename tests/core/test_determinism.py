"""The simplified form of a derivative does not depend on what the process built
before (issue 14, item 4): ties are broken by structural digests, never by id()."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys, tenscalc as tc
junk = [tc.constant(k) for k in range(int(sys.argv[1]))]  # shifts ids and creation order
junk += [tc.parse(f"sin(a) + {k}", {"a": 0}) for k in range(int(sys.argv[1]))]
texts = [
    "(exp(b) *(,->) b)^(tanh(a))",
    "sin(a *(,->) b) *(,->) cos(b) + b *(,->) exp(a *(,->) b)",
    "(x *(i,i->) y)^(a) + x *(i,i->) x *(,->) b",
    "log(b *(,->) a + exp(b)) *(,->) tanh(b)^(a)",
    "x *(i,ij->j) A *(j,j->) x + b *(,i->i) x *(i,i->) y",
]
for text in texts:
    e = tc.parse(text, {"a": 0, "b": 0, "x": 1, "y": 1, "A": 2})
    for name, order in sorted(e.variables.items()):
        x = tc.var(name, order)
        print(tc.derivative(e, x))
        if order <= 1:
            print(tc.derivative(tc.derivative(e, x), x))
"""


def _run(junk: int) -> str:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(junk)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return result.stdout


def test_derivatives_print_the_same_whatever_was_built_before():
    first = _run(0)
    assert first.count("\n") > 10
    for junk in (1, 7, 50):
        assert _run(junk) == first
