"""How the compiler's modules depend on each other: no import cycles, one table of
NumPy spellings, dispatch by explicit tables keyed by node or step kind."""

from __future__ import annotations

import ast
import pathlib

import tenscalc.compiler as compiler_package

COMPILER = pathlib.Path(compiler_package.__file__).parent


def _imported_modules(path: pathlib.Path) -> set[str]:
    """The sibling modules ``path`` imports (``from .x import ...``), at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def test_generated_code_spells_functions_from_one_table() -> None:
    from tenscalc.compiler.numpy_names import numpy_call

    assert "numpy_names" in _imported_modules(COMPILER / "codegen.py")
    assert "numpy_names" in _imported_modules(COMPILER / "source.py")
    assert numpy_call("sqrt", "_t1") == "_np.sqrt(_t1)"
    assert numpy_call("relu", "_t1") == "_np.maximum(_t1, 0.0)"
    assert numpy_call("exp", "_t1") == "_np.exp(_t1)"
    for path in COMPILER.glob("*.py"):  # the spelling is the spec's, never a table of the compiler
        assert '"_np.exp' not in path.read_text(encoding="utf-8"), path.name


def test_no_dispatch_by_method_name() -> None:
    for path in COMPILER.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert 'getattr(self, "_' not in text, path.name


def test_backends_and_cost_are_the_compilers_own() -> None:
    """Outside the compiler, backends and costs are reached through tenscalc.compiler only."""
    package = COMPILER.parent
    for path in package.rglob("*.py"):
        if path.parent == COMPILER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                assert not ("compiler" in parts and {"backends", "cost"} & set(parts)), path
