"""The foundation's own tables, and the one-way arrow between builder and NumPy API.

The import graph as a whole (no cycle, nothing upward from ``tenscalc/core/``,
``face.py``'s deferred imports listed) is checked by ``tests/test_architecture.py``;
the node-kind tables of every layer by ``tests/test_rule_tables.py``.
"""

from __future__ import annotations

import pytest
from test_architecture import _imports

from tenscalc.core import nodes, vocabulary
from tenscalc.frontend import typecheck


def test_builder_does_not_import_numpy_api():
    modules = [module for module, _ in _imports("tenscalc.frontend.builder")]
    assert "tenscalc.frontend.builder" in {m for m, _ in _imports("tenscalc.frontend.numpy_api")}
    assert not any(m.startswith("tenscalc.frontend.numpy_api") for m in modules), modules


def test_leaf_tables_cover_the_dimensioned_leaves():
    assert tuple(nodes.LEAF_SPECIALIZERS) == vocabulary.DIMENSIONED_LEAVES
    assert set(nodes.DIMENSION_RULES) == set(vocabulary.NODE_KINDS) - set(vocabulary.DIMENSIONED_LEAVES)


@pytest.mark.parametrize(
    "table",
    [typecheck._NATURAL_RULES, typecheck._CHILD_ORDER_RULES, typecheck._CONSTRUCT_RULES],
    ids=["natural orders", "child orders", "constructors"],
)
def test_syntax_kind_tables_have_every_kind(table):
    assert tuple(table) == typecheck.SYNTAX_KINDS
