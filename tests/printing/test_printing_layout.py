"""How the printers are laid out: one rule table per printer keyed by node kind, the
matrix-form recogniser apart from the LaTeX entry point, no import cycles."""

from __future__ import annotations

import ast
import pathlib

import pytest

import tenscalc.printing as printing_package
from tenscalc.core.nodes import NODE_KINDS

PRINTING = pathlib.Path(printing_package.__file__).parent


def _imported_modules(path: pathlib.Path) -> set[str]:
    """The sibling modules ``path`` imports (``from .x import ...``), at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_latex_modules_depend_one_way() -> None:
    # pieces <- index notation, matrix forms <- the latex entry point
    assert _imported_modules(PRINTING / "latex_pieces.py") == set()
    assert {"latex", "latex_index"}.isdisjoint(_imported_modules(PRINTING / "matrix_forms.py"))
    assert "latex" not in _imported_modules(PRINTING / "latex_index.py")
    assert {"latex_index", "matrix_forms", "latex_pieces"} <= _imported_modules(PRINTING / "latex.py")


@pytest.mark.parametrize(
    ("module", "table"),
    [
        ("tenscalc.printing.latex_index", "LATEX_INDEX_RULES"),
        ("tenscalc.printing.matrix_forms", "MATRIX_RULES"),
        ("tenscalc.printing.drawing", "DRAWING_TITLES"),
        ("tenscalc.printing.drawing", "KIND_COLOURS"),
        ("tenscalc.printing.text", "_PRINTERS"),
    ],
)
def test_every_node_kind_has_a_rule(module: str, table: str) -> None:
    import importlib

    rules = getattr(importlib.import_module(module), table)
    assert set(rules) == set(NODE_KINDS)


def test_no_dispatch_by_method_name() -> None:
    for path in PRINTING.glob("*.py"):
        assert 'getattr(self, "_' not in path.read_text(encoding="utf-8"), path.name


def test_latex_module_keeps_its_names() -> None:
    import tenscalc as tc
    from tenscalc.printing.latex import format_name, format_number, latex, matrix_text

    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    assert latex(tc.hessian(f, "x")) == r"A + A^\top"
    assert matrix_text(tc.gradient(f, "x")) == "Aᵀ x + A x"
    assert format_name("alpha") == r"\alpha" and format_number(0.5) == "0.5"
