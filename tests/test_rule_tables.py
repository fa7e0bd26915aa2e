"""Every node kind and every function has an entry in every rule table.

Every layer dispatches on a node's kind through a module-level table (kind ->
rule); this file lists all of them, so that adding a node kind or a function
without a derivative rule, an evaluator, a printer, a simplifier entry, an
exact-oracle entry, a convexity rule ... fails here, not deep inside a user's
computation.  ``docs/architecture.md`` ("To add a node kind") is the checklist
this test keeps honest: its table names must be exactly the ones below.
"""

import pathlib
import re

import pytest

from tenscalc import oracle
from tenscalc.calculus.elimination import PARTIAL_RULES
from tenscalc.calculus.pullbacks import FUNCTION_DERIVATIVES, PULLBACK_RULES
from tenscalc.compiler.plan import PLAN_RULES
from tenscalc.convexity.assumptions import DOMAIN_RULES
from tenscalc.convexity.congruence import SYMMETRIC_MATRIX_RULES
from tenscalc.convexity.curvature import CURVATURE_RULES
from tenscalc.convexity.intervals import INTERVAL_RULES
from tenscalc.core import nodes as N
from tenscalc.core.axes import AXIS_RULES
from tenscalc.core.functions import FUNCTIONS, SpecTable
from tenscalc.interpreter import ELEMENTWISE, EVALUATORS
from tenscalc.printing.drawing import DRAWING_TITLES, KIND_COLOURS
from tenscalc.printing.latex_index import LATEX_INDEX_RULES
from tenscalc.printing.latex_pieces import FUNCTION_LATEX
from tenscalc.printing.matrix_forms import MATRIX_RULES
from tenscalc.printing.matrix_notation import MATRIX_NOTATION_PRINTERS
from tenscalc.printing.text import TEXT_PRINTERS
from tenscalc.simplifier import RULES, rules_functions

# table name -> (table, the kinds it may leave out: each such gap is by design)
KIND_TABLES = {
    # the foundation: the factory and axis lengths
    "CANONICALIZERS": (N.CANONICALIZERS, ()),
    "SHARING_RULES": (N.SHARING_RULES, ()),
    "TARGET_RULES": (N.TARGET_RULES, ()),
    "DIMENSION_RULES": (N.DIMENSION_RULES, N.DIMENSIONED_LEAVES),  # leaves take dims from their context
    "AXIS_RULES": (AXIS_RULES, ()),
    # calculus, simplifier, evaluators
    "PULLBACK_RULES": (PULLBACK_RULES, ()),
    "PARTIAL_RULES": (PARTIAL_RULES, ()),
    "RULES": (RULES, ()),
    "EVALUATORS": (EVALUATORS, ()),
    "ORACLE_EXPANDERS": (oracle.ORACLE_EXPANDERS, ()),
    "PLAN_RULES": (PLAN_RULES, ("const", "delta")),  # absorbed into products or bound once
    # printers
    "TEXT_PRINTERS": (TEXT_PRINTERS, ()),
    "MATRIX_NOTATION_PRINTERS": (MATRIX_NOTATION_PRINTERS, ()),
    "MATRIX_RULES": (MATRIX_RULES, ()),
    "LATEX_INDEX_RULES": (LATEX_INDEX_RULES, ()),
    "DRAWING_TITLES": (DRAWING_TITLES, ()),
    "KIND_COLOURS": (KIND_COLOURS, ()),
    # convexity
    "INTERVAL_RULES": (INTERVAL_RULES, ()),
    "CURVATURE_RULES": (CURVATURE_RULES, ()),
    "DOMAIN_RULES": (DOMAIN_RULES, ()),
    "SYMMETRIC_MATRIX_RULES": (SYMMETRIC_MATRIX_RULES, ()),
}

# the tables of function knowledge: each is read from the specs (tenscalc/core/functions.py)
FUNCTION_TABLES = {
    "derivatives": FUNCTION_DERIVATIVES,
    "evaluators": ELEMENTWISE,
    "exact oracle": oracle._SYMPY_FUNCTIONS,
    "constant folding": rules_functions._NUMERIC,
    "LaTeX": FUNCTION_LATEX,
}


@pytest.mark.parametrize("table", sorted(KIND_TABLES))
def test_every_node_kind_has_an_entry(table):
    entries, gaps = KIND_TABLES[table]
    missing = [kind for kind in N.NODE_KINDS if kind not in entries and kind not in gaps]
    assert not missing, f"node kinds without {table}: {missing}"
    assert not set(gaps) & set(entries), f"{table} has entries for kinds it is said to leave out"


@pytest.mark.parametrize("table", sorted(FUNCTION_TABLES))
def test_every_elementwise_function_has_an_entry(table):
    missing = [name for name in N.ELEMENTWISE_FUNCTIONS if name not in FUNCTION_TABLES[table]]
    if table == "LaTeX":
        missing.remove("abs")  # |x|, printed by the LaTeX printers' own rule
    assert not missing, f"functions without {table}: {missing}"


@pytest.mark.parametrize("table", sorted(FUNCTION_TABLES))
def test_function_tables_are_read_from_the_specs(table):
    """No module keeps its own table of function knowledge: each is a view of the specs."""
    assert isinstance(FUNCTION_TABLES[table], SpecTable)


def test_every_language_function_has_a_spec():
    assert sorted(FUNCTIONS) == sorted(N.ELEMENTWISE_FUNCTIONS)


def test_no_table_knows_a_kind_the_dag_does_not_have():
    for table, (entries, _) in KIND_TABLES.items():
        unknown = set(entries) - set(N.NODE_KINDS)
        assert not unknown, f"{table} has entries for unknown kinds {unknown}"


def test_the_checklist_names_every_table():
    page = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    checklist = page[page.index("## To add a node kind") :]
    named = set(re.findall(r"`([A-Z][A-Z_]+)`", checklist))
    assert set(KIND_TABLES) <= named, f"tables missing from the checklist: {sorted(set(KIND_TABLES) - named)}"


def test_every_function_has_a_builder():
    import tenscalc as tc

    assert [name for name in FUNCTIONS if not callable(getattr(tc, name, None))] == []
