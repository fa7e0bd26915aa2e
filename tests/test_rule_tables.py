"""Every node kind and every function has an entry in every rule table.

Adding a node kind or a function without a derivative rule, an evaluator, a
printer, a simplifier entry or an exact-oracle entry must fail here, not deep
inside a user's computation.
"""

import pytest

from tenscalc import oracle
from tenscalc.calculus.pullbacks import FUNCTION_DERIVATIVES, PULLBACK_RULES
from tenscalc.core import nodes as N
from tenscalc.interpreter import ELEMENTWISE, EVALUATORS
from tenscalc.printing import text as printing
from tenscalc.simplifier import RULES, rules_functions

KIND_TABLES = {
    "derivative rules": PULLBACK_RULES,
    "evaluators": EVALUATORS,
    "printers": printing._PRINTERS,
    "simplifier rules": RULES,
    "exact oracle": oracle._EXPANDERS,
}

FUNCTION_TABLES = {
    "derivatives": FUNCTION_DERIVATIVES,
    "evaluators": ELEMENTWISE,
    "exact oracle": oracle._SYMPY_FUNCTIONS,
    "constant folding": rules_functions._NUMERIC,
}


@pytest.mark.parametrize("table", sorted(KIND_TABLES))
def test_every_node_kind_has_an_entry(table):
    missing = [kind for kind in N.NODE_KINDS if kind not in KIND_TABLES[table]]
    assert not missing, f"node kinds without {table}: {missing}"


@pytest.mark.parametrize("table", sorted(FUNCTION_TABLES))
def test_every_elementwise_function_has_an_entry(table):
    missing = [name for name in N.ELEMENTWISE_FUNCTIONS if name not in FUNCTION_TABLES[table]]
    assert not missing, f"functions without {table}: {missing}"


def test_no_table_knows_a_kind_the_dag_does_not_have():
    for table, entries in KIND_TABLES.items():
        unknown = set(entries) - set(N.NODE_KINDS)
        assert not unknown, f"{table} has entries for unknown kinds {unknown}"
