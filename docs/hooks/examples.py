"""mkdocs hook: every example on the site shows its result, computed at build time.

Run by ``mkdocs build`` (see ``hooks:`` in mkdocs.yml), on the Markdown of every page:

* a ````tenscalc```` block (a problem) is followed by its derivative (with
  ``derivative wrt``) or by the expression itself, in LaTeX (rendered by the
  vendored KaTeX) and as tenscalc text;
* a ````tenscalc-error```` block is followed by the message it is refused with;
  a block that is *not* refused stops the build;
* a ````python```` block is executed (one namespace per page, in order, as the
  tests do) and followed by what it printed; a block that raises stops the build.

So the results on the site are never hand-written: they are what the code of the
checkout prints when the site is built.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import textwrap

FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
# pages whose python blocks are executed and whose output is shown (the tests run the same)
PYTHON_PAGES = {"language.md", "getting-started.md", "differentiation.md", "explore.md", "index.md"}


def _text_block(text: str) -> str:
    return "```text\n" + text.rstrip("\n") + "\n```"


def _problem_result(source: str) -> str:
    import tenscalc as tc

    problem = tc.parse_problem(source)
    if problem.wrt is None:
        expr, title = problem.expr, "Reads as"
    else:
        expr, title = problem.derivative(), f"Its derivative by `{problem.wrt}`"
    formula = tc.latex(expr, temporaries=True)
    return f"{title}:\n\n$$\n{formula}\n$$\n\n{_text_block(str(expr))}"


def _error_result(source: str) -> str:
    import tenscalc as tc
    from tenscalc.testing import random_values

    try:
        problem = tc.parse_problem(source)
        tc.evaluate(problem.expr, random_values(problem.expr))
    except tc.TensCalcError as error:
        return f"Refused with `{type(error).__name__}`:\n\n{_text_block(str(error))}"
    raise RuntimeError(f"a tenscalc-error example is not refused:\n{source}")


def _python_result(source: str, namespace: dict, where: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(source, where, "exec"), namespace)
        except Exception as exc:  # the build must stop: the page would show a broken example
            raise RuntimeError(f"{where} failed:\n{source}") from exc
    printed = out.getvalue()
    return f"Output:\n\n{_text_block(printed)}" if printed.strip() else ""


def render_results(markdown: str, page_name: str) -> str:
    """The page's Markdown with the result of each example inserted after it."""
    namespace: dict = {"__name__": f"docs_{page_name}"}
    run_python = page_name in PYTHON_PAGES
    pieces, last, python_count = [], 0, 0
    for match in FENCE.finditer(markdown):
        lang, body = match.group(1), match.group(2)
        if lang == "tenscalc":
            result = _problem_result(body)
        elif lang == "tenscalc-error":
            result = _error_result(body)
        elif lang == "python" and run_python:
            result = _python_result(body, namespace, f"docs/{page_name} python block {python_count}")
            python_count += 1
        else:
            continue
        pieces.append(markdown[last : match.end()])
        if result:
            pieces.append("\n\n" + textwrap.dedent(result) + "\n")
        last = match.end()
    pieces.append(markdown[last:])
    return "".join(pieces)


def on_page_markdown(markdown: str, page, config, files) -> str:  # mkdocs hook
    return render_results(markdown, page.file.src_uri)


def on_post_page(output: str, page, config) -> str:  # mkdocs hook
    # mkdocs-jupyter's template loads MathJax from `custom_mathjax_url`, empty here:
    # KaTeX renders the notebooks' formulas, so the empty script tag goes
    # and a Sphinx role left in a docstring (mkdocstrings' numpy style does not read
    # them) shows as the plain name
    return strip_sphinx_roles(output.replace('<script src=""> </script>', ""))


_SPHINX_ROLE = re.compile(r":(?:func|class|meth|attr|mod|exc|data):(?=<code>)")


def strip_sphinx_roles(html: str) -> str:
    """Drop a Sphinx role left in a docstring (``:func:`x``` shows as ``x``)."""
    return _SPHINX_ROLE.sub("", html)


def on_config(config):  # mkdocs hook
    # the notebooks' kernels inherit the environment: a non-interactive MPLBACKEND
    # (Agg, set for the test suite) would drop their plots from the pages
    os.environ.pop("MPLBACKEND", None)
    return config
