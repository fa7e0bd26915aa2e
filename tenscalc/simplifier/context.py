"""What a rule sees and how one node is rewritten.

A rule is a function ``rule(node, ctx) -> Expr | None`` returning the rewritten
node, or ``None`` when it does not apply.  :class:`Context` tells a rule how many
parents each node has; ``rewrite_locally`` applies a node kind's rules to one
node until none applies (the driver calls it on every node of a pass, and the
rule that distributes products over sums on the products it builds).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.nodes import Expr
from ..errors import TensCalcError

#: ``rule(node, ctx)``: the rewritten node, or None when the rule does not apply
Rule = Callable[[Expr, "Context"], "Expr | None"]
MAX_LOCAL_REWRITES = 200


@dataclass
class Context:
    """What rules may know beyond the node: how many parents each node has, and the
    variables declared symmetric (rewrites using ``Aᵀ = A`` hold where they are)."""

    uses: dict[Expr, int] = field(default_factory=dict)
    symmetric: frozenset[str] = frozenset()

    def single_use(self, node: Expr) -> bool:
        """Whether ``node`` has at most one parent (inlining it duplicates no work)."""
        return self.uses.get(node, 0) <= 1


def _overflowed(node: Expr) -> bool:
    """Whether ``node`` or a direct child is a constant (or coefficient) that is not finite."""
    if node.op == "const":
        return not math.isfinite(node.arg[0])
    if node.op == "add" and not all(math.isfinite(c) for c in node.arg):
        return True
    return any(c.op == "const" and not math.isfinite(c.arg[0]) for c in node.children)


def rewrite_locally(node: Expr, table: dict[str, list[Rule]], ctx: Context) -> Expr:
    """Apply ``table``'s rules for ``node``'s kind, the first that applies each time, until none does."""
    for _ in range(MAX_LOCAL_REWRITES):
        for rule in table.get(node.op, ()):
            replacement = rule(node, ctx)
            if replacement is not None and replacement is not node:
                if _overflowed(replacement) and not _overflowed(node):
                    continue  # folding overflowed to inf, which has no spelling: keep the unfolded form
                if replacement.order != node.order:
                    raise AssertionError(f"rule {rule.__name__} changed the order of a node")
                node = replacement
                break
        else:
            return node
    raise TensCalcError("simplification of one node did not terminate (a rule loop)")
