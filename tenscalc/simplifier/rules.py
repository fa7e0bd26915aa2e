"""The simplifier's rule table: the rule lists of every node kind.

The lists live with their subject (``rules_products``, ``rules_sums``,
``rules_functions``, ``rules_slices``); within a list, rules are tried in order.
"""

from __future__ import annotations

from .context import Rule
from .rules_functions import ADJ_RULES, DET_RULES, FUNC_RULES, INV_RULES, POW_RULES
from .rules_products import MUL_RULES, mul_distribute_cancelling_sum, mul_divide_sum
from .rules_slices import EMBED_RULES, SLICE_RULES
from .rules_sums import ADD_RULES

RULES: dict[str, list[Rule]] = {
    "var": [],
    "const": [],
    "delta": [],
    "add": ADD_RULES,
    "mul": MUL_RULES,
    "func": FUNC_RULES,
    "pow": POW_RULES,
    "inv": INV_RULES,
    "det": DET_RULES,
    "adj": ADJ_RULES,
    "slice": SLICE_RULES,
    "embed": EMBED_RULES,
}

#: Rules the driver holds back until the others reach a fixed point: they reshape a
#: product and a sum together, which pays only once both are in their final form
#: (distributing ``e`` over a sum that add_cancel_over_square would still shrink to
#: ``-q^-2`` gives a longer result than either alone).
LATE_RULES: frozenset[Rule] = frozenset({mul_distribute_cancelling_sum, mul_divide_sum})
