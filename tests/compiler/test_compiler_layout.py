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


def test_compiler_modules_import_no_cycle() -> None:
    graph = {path.stem: _imported_modules(path) for path in COMPILER.glob("*.py") if path.stem != "__init__"}
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == 2:
            return
        assert state.get(name) != 1, f"import cycle: {' -> '.join(trail + [name])}"
        state[name] = 1
        for other in sorted(graph.get(name, ())):
            if other in graph:
                visit(other, trail + [name])
        state[name] = 2

    for name in sorted(graph):
        visit(name, [])


def test_generated_code_spells_functions_from_one_table() -> None:
    from tenscalc.compiler.numpy_names import NUMPY_FUNCTIONS, numpy_call

    assert "numpy_names" in _imported_modules(COMPILER / "codegen.py")
    assert "numpy_names" in _imported_modules(COMPILER / "source.py")
    assert numpy_call("sqrt", "_t1") == "_np.sqrt(_t1)"
    assert numpy_call("relu", "_t1") == "_np.maximum(_t1, 0.0)"
    for path in COMPILER.glob("*.py"):
        if path.stem != "numpy_names":
            assert "NUMPY_FUNCTIONS = {" not in path.read_text(encoding="utf-8"), path.name
    assert NUMPY_FUNCTIONS["exp"] == "_np.exp"


def test_dispatch_tables_cover_every_kind() -> None:
    from tenscalc.compiler.codegen import CODEGEN_RULES
    from tenscalc.compiler.plan import PLAN_RULES
    from tenscalc.compiler.program import BIND_RULES
    from tenscalc.compiler.source import SOURCE_RULES
    from tenscalc.core.nodes import NODE_KINDS

    assert set(CODEGEN_RULES) == set(NODE_KINDS)
    # constants and deltas never get a step of their own: they are absorbed or bound once
    assert set(PLAN_RULES) == set(NODE_KINDS) - {"const", "delta"}
    step_kinds = {"constant", "product", "add", "func", "pow", "inv", "det", "slice", "embed"}
    assert set(BIND_RULES) == step_kinds  # inputs are bound by the program itself
    assert {"constant", "product", "add", "func", "pow", "inv", "det"} <= set(SOURCE_RULES)


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
