"""The documentation site: offline formulas, results shown, a complete API page.

``mkdocs build --strict`` (in .ci/run) runs the hook ``docs/hooks/examples.py``
on every page; these tests check the pieces that can be checked without a build.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pathlib
import re

import pytest

import tenscalc as tc

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MKDOCS = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def _hook():
    spec = importlib.util.spec_from_file_location("docs_examples_hook", DOCS / "hooks" / "examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assets(key: str) -> list[str]:
    block = re.search(rf"^{key}:\n((?:  - .*\n)+)", MKDOCS, re.M)
    assert block, f"mkdocs.yml has no {key}"
    return [line.strip()[2:] for line in block.group(1).splitlines()]


def test_formulas_need_no_network():
    assets = _assets("extra_javascript") + _assets("extra_css")
    assert any("katex.min.js" in a for a in assets)
    for asset in assets:
        assert "://" not in asset, f"{asset} is loaded from the network"
        assert (DOCS / asset).is_file(), f"docs/{asset} is missing"
    # every font the stylesheet asks for first (woff2) is vendored
    css = (DOCS / "vendor" / "katex" / "katex.min.css").read_text(encoding="utf-8")
    fonts = set(re.findall(r"url\((fonts/[^)]+\.woff2)\)", css))
    assert fonts and all((DOCS / "vendor" / "katex" / font).is_file() for font in fonts)
    assert "highlightjs: false" in MKDOCS  # the theme would fetch highlight.js from a CDN


@pytest.mark.parametrize("page", ["language.md", "differentiation.md", "explore.md"])
def test_every_example_shows_its_result(page):
    hook = _hook()
    markdown = (DOCS / page).read_text(encoding="utf-8")
    rendered = hook.render_results(markdown, page)
    problems = [body for lang, body in hook.FENCE.findall(markdown) if lang == "tenscalc"]
    errors = [body for lang, body in hook.FENCE.findall(markdown) if lang == "tenscalc-error"]
    assert rendered.count("Its derivative by") + rendered.count("Reads as:") == len(problems)
    assert rendered.count("Refused with `") == len(errors)
    for source in problems:
        problem = tc.parse_problem(source)
        shown = problem.derivative() if problem.wrt else problem.expr
        assert str(shown) in rendered  # the derivative itself, as text, under its example
    prints = sum(body.count("print(") for lang, body in hook.FENCE.findall(markdown) if lang == "python")
    assert rendered.count("Output:") >= (1 if prints else 0)


def test_a_block_that_is_not_refused_stops_the_build():
    with pytest.raises(RuntimeError, match="not refused"):
        _hook().render_results("```tenscalc-error\ndeclare x 1 expression x\n```\n", "x.md")


def test_sphinx_roles_are_dropped_from_rendered_pages():
    assert _hook().strip_sphinx_roles("see :func:<code>tc.latex</code>") == "see <code>tc.latex</code>"


def _api_entries() -> list[str]:
    return re.findall(r"^::: ([\w.]+)", (DOCS / "api.md").read_text(encoding="utf-8"), re.M)


def _object(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_public_name_has_an_api_entry():
    listed = {entry.rsplit(".", 1)[-1] for entry in _api_entries()}
    assert sorted(set(tc.__all__) - listed) == []
    assert {"ConvexityResult", "DerivativeCheck", "Cost"} <= listed


def _check_docstring(where: str, doc: str) -> None:
    assert not re.search(r":(func|class|meth|attr|mod|exc):`", doc), f"{where}: a Sphinx role"
    if ">>>" in doc:
        examples = re.search(r"^Examples\n-{3,}\n", doc, re.M)
        assert examples and examples.start() < doc.index(">>>"), f"{where}: doctest outside an Examples section"


# resolved when the module is collected, before any fixture wraps a function (a
# wrapper would hide the docstring mkdocstrings shows)
API_OBJECTS = {entry: _object(entry) for entry in _api_entries()}


@pytest.mark.parametrize("entry", _api_entries())
def test_api_docstrings_render_as_numpy_style(entry):
    obj = API_OBJECTS[entry]
    doc = inspect.getdoc(obj) or ""
    assert doc, f"{entry} has no docstring"
    if obj.__module__.startswith("tenscalc.convexity"):
        return  # docstrings of the convexity package: the hook strips their roles
    _check_docstring(entry, doc)
    if inspect.isclass(obj):  # its public methods and properties are on the page too
        for name, member in vars(obj).items():
            if not name.startswith("_"):
                _check_docstring(f"{entry}.{name}", inspect.getdoc(member) or "")


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_lists_start_after_a_blank_line(page):
    # Markdown reads a list right under a paragraph line as part of the paragraph
    previous, fenced = "", False
    for number, line in enumerate((DOCS / page).read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"[*-] ", line):
            assert not previous.strip() or re.match(r"\s*([*-] |\s)", previous), f"docs/{page}:{number}"
        previous = line
