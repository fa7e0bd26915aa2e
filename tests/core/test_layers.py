"""The foundation is a bottom level: ``tenscalc/core/`` imports nothing above it.

Its modules import each other, ``tenscalc.errors`` and ``tenscalc.limits`` (and
third-party packages); the only references upward are the deferred imports of
``core/face.py`` (``Expr``'s operators and display hooks), which its docstring
lists.  The tables that dispatch on a node kind have one entry per kind.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tenscalc.core import axes, face, nodes, vocabulary
from tenscalc.frontend import matrix_notation, typecheck

PACKAGE = Path(__file__).resolve().parent.parent.parent / "tenscalc"
CORE = PACKAGE / "core"
FOUNDATION = {"tenscalc.errors", "tenscalc.limits"}


def imports(path: Path) -> list[tuple[str, bool]]:
    """``(module, deferred)`` for every ``tenscalc`` module ``path`` imports; deferred
    means inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = "tenscalc." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts[:-1])
    top = set(map(id, tree.body))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            folder = PACKAGE.parent.joinpath(*module.split("."))
            # `from ..frontend import builder` imports the module tenscalc.frontend.builder
            names = [f"{module}.{a.name}" if (folder / f"{a.name}.py").is_file() else module for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name.startswith("tenscalc"):
                found.append((name, id(node) not in top and not _in_type_checking(tree, node)))
    return found


def _in_type_checking(tree: ast.Module, target: ast.AST) -> bool:
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            if any(inner is target for inner in ast.walk(node)):
                return True
    return False


def test_the_import_checker_sees_deferred_imports():
    found = imports(CORE / "face.py")
    assert ("tenscalc.frontend.builder", True) in found
    assert ("tenscalc.core.nodes", False) in found  # under TYPE_CHECKING: not a deferred import


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_core_imports_only_core_errors_and_limits(path):
    for module, deferred in imports(path):
        if deferred and path.name == "face.py":
            continue  # the listed upward references
        assert module.startswith("tenscalc.core") or module in FOUNDATION, f"{path.name} imports {module}"
        assert not deferred or path.name != "nodes.py", f"nodes.py defers an import of {module}"


def test_face_lists_every_module_it_defers_to():
    deferred = {module for module, is_deferred in imports(CORE / "face.py") if is_deferred}
    assert deferred
    for module in deferred:
        assert module in face.ExprFace.__doc__, f"face.py imports {module} without listing it"


def test_builder_does_not_import_numpy_api():
    modules = [module for module, _ in imports(PACKAGE / "frontend" / "builder.py")]
    assert not any(m.startswith("tenscalc.frontend.numpy_api") for m in modules), modules


@pytest.mark.parametrize(
    "table",
    [
        axes.AXIS_RULES,
        nodes._SHARING_RULES,
        nodes._TARGET_RULES,
        nodes._CANONICALIZERS,
        matrix_notation._MATRIX_PRINTERS,
    ],
    ids=["axes", "sharing", "targets", "canonicalizers", "matrix printers"],
)
def test_node_kind_tables_have_every_kind(table):
    assert tuple(table) == vocabulary.NODE_KINDS


def test_leaf_tables_cover_the_dimensioned_leaves():
    assert tuple(nodes._LEAF_SPECIALIZERS) == vocabulary.DIMENSIONED_LEAVES
    assert set(nodes._DIMENSION_RULES) == set(vocabulary.NODE_KINDS) - set(vocabulary.DIMENSIONED_LEAVES)


@pytest.mark.parametrize(
    "table",
    [typecheck._NATURAL_RULES, typecheck._CHILD_ORDER_RULES, typecheck._CONSTRUCT_RULES],
    ids=["natural orders", "child orders", "constructors"],
)
def test_syntax_kind_tables_have_every_kind(table):
    assert tuple(table) == typecheck.SYNTAX_KINDS
