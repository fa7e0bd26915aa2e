"""The package's layout holds: the foundation at the bottom, no import cycle.

The import graph is read from the source with ``ast`` (every ``import`` statement,
including the deferred ones inside functions), so the test sees what a reader sees.
The only upward references of the foundation are the deferred imports of
``tenscalc/core/face.py`` (``Expr``'s operators, ``str`` and ``repr``), listed in its
docstrings.  They close one documented cycle (the face, the nodes, the builder, the
NumPy-style API and the text printer), which is measured here, not skipped: it must
stay the only cycle and stay within ``FACE_CYCLE_LIMIT`` modules.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "tenscalc"
FACE = "tenscalc.core.face"
# the modules the foundation may import besides its own
FOUNDATION_FLOOR = {"tenscalc.errors", "tenscalc.limits", "tenscalc.progress"}  # progress: logging, for every stage
# the most modules the face's cycle may hold (LaTeX and drawings are registered, not imported)
FACE_CYCLE_LIMIT = 7
# the pipeline's stages, left to right: a stage never imports one to its right
PIPELINE = ("core", "frontend", "calculus", "simplifier")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imports(name: str) -> list[tuple[str, bool]]:
    """(imported tenscalc module, deferred?) for every import statement of ``name``."""
    tree = ast.parse(MODULES[name].read_text())
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        deferred = id(node) not in top_level
        if isinstance(node, ast.Import):
            found += [(a.name, deferred) for a in node.names if a.name in MODULES]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if _is_package(name) else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1] + ([node.module] if node.module else [])
                target = ".".join(base)
            else:
                target = node.module or ""
            if target not in MODULES:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in MODULES else target, deferred))
    return found


def _graph(skip_face_deferred: bool = True) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name in MODULES:
        for target, deferred in _imports(name):
            if target == name or (skip_face_deferred and name == FACE and deferred):
                continue
            graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _package_graph(skip_face_deferred: bool) -> dict[str, set[str]]:
    graph = _graph(skip_face_deferred)
    # the package's __init__ gathers the public API from every module; a module that
    # reads ``tenscalc.__version__`` from it would otherwise tie it into a cycle
    for name in graph:
        graph[name].discard("tenscalc")
    return graph


def test_the_import_graph_has_no_cycle_but_the_face():
    assert _cycles(_package_graph(skip_face_deferred=True)) == []


def test_the_face_cycle_is_the_only_one_and_small():
    """Counting the face's deferred imports, there is one cycle, through the face, of at
    most ``FACE_CYCLE_LIMIT`` modules (34 when the face imported LaTeX and drawings)."""
    cycles = _cycles(_package_graph(skip_face_deferred=False))
    assert len(cycles) == 1, cycles
    assert FACE in cycles[0]
    assert len(cycles[0]) <= FACE_CYCLE_LIMIT, cycles[0]


def _stage(name: str) -> int:
    """A module's place in ``PIPELINE`` (the foundation's floor counts as ``core``); modules
    of the later stages (interpreter, compiler, printing, convexity, the front doors) are
    all to the right of the simplifier."""
    if name in FOUNDATION_FLOOR:
        return 0
    part = name.split(".")[1] if name.count(".") else ""
    return PIPELINE.index(part) if part in PIPELINE else len(PIPELINE)


def test_no_stage_imports_one_to_its_right():
    """frontend never imports the calculus, the calculus never the compiler, and so on.
    By design the calculus returns simplified derivatives, so it may import the simplifier."""
    upward = {
        (name, target)
        for name, targets in _package_graph(skip_face_deferred=True).items()
        for target in targets
        if _stage(target) > _stage(name) < len(PIPELINE) - 1
        and not (name.startswith("tenscalc.calculus") and target == "tenscalc.simplifier")
    }
    assert upward == set()


def test_the_foundation_imports_nothing_above_it():
    upward = {
        (name, target)
        for name, targets in _graph().items()
        if name.startswith("tenscalc.core")
        for target in targets
        if not target.startswith("tenscalc.core") and target not in FOUNDATION_FLOOR
    }
    assert upward == set()


def test_the_face_lists_its_deferred_imports():
    """Every deferred import of ``Expr``'s face is named in its docstrings, and no other
    module of the foundation defers an import."""
    tree = ast.parse(MODULES[FACE].read_text())
    docstring = "\n".join(
        ast.get_docstring(node) or "" for node in [tree, *tree.body] if isinstance(node, (ast.Module, ast.ClassDef))
    )
    deferred = {target for target, is_deferred in _imports(FACE) if is_deferred}
    assert deferred, "the face has no deferred imports: drop this test's exception"
    for target in deferred:
        assert target.removeprefix("tenscalc.") in docstring, f"{target} is not listed in face.py's docstring"
    for name in MODULES:
        if name.startswith("tenscalc.core") and name != FACE:
            assert not any(d for _, d in _imports(name)), f"{name} has a deferred import (only face.py may)"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.count(".") >= 1))
def test_every_module_has_a_docstring(name):
    assert ast.get_docstring(ast.parse(MODULES[name].read_text())), f"{name} has no module docstring"


def test_the_architecture_page_names_every_module():
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`(tenscalc/[\w/]+\.py)`", page))
    missing = sorted(
        str(p.relative_to(PACKAGE.parent))
        for p in MODULES.values()
        if p.name != "__init__.py" and str(p.relative_to(PACKAGE.parent)) not in named
    )
    assert missing == []
