"""Every example of the documentation runs.

* ``tenscalc`` blocks are problems: parsed, evaluated on random arrays with
  distinct axis lengths and, with ``derivative wrt``, differentiated and checked
  against finite differences;
* ``tenscalc-error`` blocks must be refused with a ``TensCalcError``;
* ``python`` blocks are executed, one namespace per page, in order.

docs/language.md is the language reference: all its blocks are tested.  The
Python blocks of the other hand-written pages run too.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import check_derivative, random_values

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
PYTHON_PAGES = ["language.md", "getting-started.md", "differentiation.md", "explore.md", "index.md"]
PYTHON_PAGES += ["from-matrixcalculus-and-numpy.md"]


def blocks(page: str, kind: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return [body for lang, body in FENCE.findall(text) if lang == kind]


LANGUAGE_PROBLEMS = blocks("language.md", "tenscalc")
LANGUAGE_ERRORS = blocks("language.md", "tenscalc-error")


def test_the_reference_has_examples():
    assert len(LANGUAGE_PROBLEMS) >= 20
    assert len(LANGUAGE_ERRORS) >= 5
    assert len(blocks("language.md", "python")) >= 8


@pytest.mark.parametrize("source", LANGUAGE_PROBLEMS, ids=[f"problem{k}" for k in range(len(LANGUAGE_PROBLEMS))])
def test_language_problem(source):
    problem = tc.parse_problem(source)
    values = random_values(problem.expr, seed=7)
    value = tc.evaluate(problem.expr, values)
    assert np.all(np.isfinite(value))
    if problem.wrt is not None:
        report = check_derivative(problem.expr, problem.wrt, values=values)
        assert report.ok, report.message
        # the derivative prints back to the language, and the text means the same
        derivative = problem.derivative()
        reparsed = tc.parse(str(derivative), problem.orders)
        np.testing.assert_allclose(tc.evaluate(reparsed, values), tc.evaluate(derivative, values), rtol=1e-10)


@pytest.mark.parametrize("source", LANGUAGE_ERRORS, ids=[f"error{k}" for k in range(len(LANGUAGE_ERRORS))])
def test_language_error(source):
    with pytest.raises(tc.TensCalcError):
        problem = tc.parse_problem(source)
        tc.evaluate(problem.expr, random_values(problem.expr))


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks(page):
    if not (DOCS / page).exists():
        pytest.skip(f"docs/{page} does not exist")
    namespace: dict = {"__name__": f"docs_{page}"}
    for k, source in enumerate(blocks(page, "python")):
        try:
            exec(compile(source, f"docs/{page} block {k}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"docs/{page}, python block {k} failed:\n{source}") from exc
