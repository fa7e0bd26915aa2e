"""The simplifier: rewrite rules per node kind, run to a fixed point.

* :mod:`~tenscalc.simplifier.driver`: ``simplify`` and ``simplify_many`` (the fixed point).
* :mod:`~tenscalc.simplifier.context`: what a rule sees (``Rule``, ``Context``) and the
  rewriting of one node.
* :mod:`~tenscalc.simplifier.rules`: the table ``RULES`` of rule lists by node kind, made
  of ``rules_products``, ``rules_sums``, ``rules_functions`` and ``rules_slices``.
"""

from .driver import simplify, simplify_many
from .rules import RULES
from .rules_products import MUL_RULES, mul_distribute_cancelling_sum, mul_distribute_power

__all__ = [
    "MUL_RULES",
    "RULES",
    "mul_distribute_cancelling_sum",
    "mul_distribute_power",
    "simplify",
    "simplify_many",
]
