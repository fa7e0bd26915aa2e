"""Every example of the documentation runs.

* ``tenscalc`` blocks are problems: parsed, evaluated on random arrays with
  distinct axis lengths and, with ``derivative wrt``, differentiated and checked
  against finite differences;
* ``tenscalc-error`` blocks must be refused with a ``TensCalcError``;
* ``python`` blocks are executed, one namespace per page, in order.

docs/language.md is the language reference: all its blocks are tested.  The
Python blocks of the other hand-written pages run too, and so do the README's, where
a line ``expression  # value`` must also show what ``repr(expression)`` prints.
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


README = DOCS.parent / "README.md"
# `tc.evaluate(f, values)    # array(27.)`: an expression statement, then what it shows
SHOWN = re.compile(r"^(?P<code>[^#\s][^#]*?)\s+#\s*(?P<comment>.*)$")
LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"|-?\d[\d.e+-]*")


def shown_value(comment: str) -> str | None:
    """The value a comment shows at its start: ``array(...)`` (parentheses balanced), a string or a number."""
    if comment.startswith("array("):
        depth = 0
        for end, char in enumerate(comment):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and char == ")":
                return comment[: end + 1]
        return None
    match = LITERAL.match(comment)
    return match[0] if match else None


def readme_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [body for lang, body in FENCE.findall(text) if lang == "python"]


# a README block that uses an optional package runs only where it is installed (the
# README's test command installs the test extra, which has neither JAX nor PyTorch)
OPTIONAL = {'backend="jax"': "jax", 'backend="torch"': "torch", 'backend="dask"': "dask", "scipy": "scipy"}


def _missing(source: str) -> list[str]:
    import importlib.util

    needed = {module for marker, module in OPTIONAL.items() if marker in source}
    return sorted(module for module in needed if importlib.util.find_spec(module) is None)


def test_readme_python_blocks_run_and_show_what_they_print():
    namespace: dict = {"__name__": "docs_readme"}
    checked = 0
    for k, source in enumerate(readme_blocks()):
        if _missing(source):
            continue  # so later blocks must not need the names such a block defines
        try:
            exec(compile(source, f"README.md block {k}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"README.md, python block {k} failed:\n{source}") from exc
        # after the block: its names keep their final values (the README does not rebind them)
        for line in source.splitlines():
            match = SHOWN.match(line)
            expected = shown_value(match["comment"]) if match else None
            if expected is None or "=" in match["code"].replace("==", ""):
                continue
            shown = repr(eval(match["code"], namespace))  # noqa: S307 - the README's own code
            assert "".join(shown.split()) == "".join(expected.split()), (line, shown)
            checked += 1
    assert checked >= 5  # matrix notation, and the values of f, its gradient and its Hessian at the least
