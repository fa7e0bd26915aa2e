"""How the printers are laid out: one rule table per printer keyed by node kind, the
matrix-form recogniser apart from the LaTeX entry point, no import cycles."""

from __future__ import annotations

import ast
import pathlib

import tenscalc.printing as printing_package

PRINTING = pathlib.Path(printing_package.__file__).parent


def _imported_modules(path: pathlib.Path) -> set[str]:
    """The sibling modules ``path`` imports (``from .x import ...``), at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
    return found


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
