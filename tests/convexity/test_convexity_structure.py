"""The structure of ``tenscalc/convexity``: its modules form layers (no two import
each other, directly or through a cycle), and its rule tables cover every node kind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tenscalc.convexity
from tenscalc.convexity.assumptions import DOMAIN_RULES, FUNCTION_DOMAINS
from tenscalc.convexity.congruence import SYMMETRIC_MATRIX_RULES
from tenscalc.convexity.curvature import CURVATURE_RULES
from tenscalc.convexity.intervals import INTERVAL_RULES
from tenscalc.core import nodes as N

PACKAGE = Path(tenscalc.convexity.__file__).parent


def convexity_imports() -> dict[str, set[str]]:
    """module -> the convexity modules it imports (anywhere in the file, lazily or
    for type checking included)."""
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module is None:  # from . import x
                    found.update(a.name for a in node.names if a.name in modules)
                else:
                    found.add(node.module.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tenscalc.convexity."):
                found.add(node.module.split(".")[2])
        graph[path.stem] = found & modules - {path.stem}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the import graph as a list of modules, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state:
                cycle = visit(n)
                if cycle:
                    return cycle
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = visit(m)
            if cycle:
                return cycle
    return None


def test_the_import_graph_sees_the_known_edges():
    graph = convexity_imports()
    assert "congruence" in graph["curvature"] and "curvature" in graph["analysis"]
    assert "compose" in graph["check"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_two_convexity_modules_import_each_other():
    cycle = find_cycle(convexity_imports())
    assert cycle is None, f"import cycle in tenscalc/convexity: {' -> '.join(cycle)}"


KIND_TABLES = {
    "intervals": INTERVAL_RULES,
    "curvature": CURVATURE_RULES,
    "implied domain": DOMAIN_RULES,
    "symmetric matrices": SYMMETRIC_MATRIX_RULES,
}


@pytest.mark.parametrize("table", sorted(KIND_TABLES))
def test_every_node_kind_has_a_convexity_rule(table):
    """Each kind has an entry (an explicit "not applicable" one where no rule reads it)."""
    missing = [kind for kind in N.NODE_KINDS if kind not in KIND_TABLES[table]]
    unknown = set(KIND_TABLES[table]) - set(N.NODE_KINDS)
    assert not missing and not unknown, f"{table}: missing {missing}, unknown {unknown}"


def test_function_domains_name_known_functions():
    assert set(FUNCTION_DOMAINS) <= set(N.ELEMENTWISE_FUNCTIONS)
