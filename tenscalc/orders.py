"""Typing pass: syntax tree -> interned, order-checked DAG.

A number's order comes from its context (LANGUAGE.md): in a sum it takes the other
summand's order, in a product the length of its index string, under an
elementwise function the order required of the function's result; where nothing
fixes it, it is a scalar.  This needs two sweeps over the tree:

1. bottom-up, the *natural* order of every subtree (``None`` when it is made of
   constants only and can take any order), checking consistency;
2. top-down, the *required* order, with which the interned nodes are built
   bottom-up.

Both sweeps are iterative, so a 2,000-deep nesting is no problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from . import nodes as N
from .errors import SemanticError
from .nodes import Expr
from .parser import Declarations, ParsedProblem, Syn, parse_text


@dataclass(frozen=True)
class Problem:
    """A parsed problem: the expression, the declared orders and the variable to
    differentiate by (``None`` when the text has no ``derivative wrt``).

    >>> import tenscalc as tc
    >>> p = tc.parse_problem("declare x 1 A 2 expression x *(i,ij->j) A *(j,j->) x derivative wrt x")
    >>> p.wrt, p.expr.order
    ('x', 0)
    """

    expr: Expr
    orders: dict[str, int]
    wrt: str | None = None
    source: str | None = None
    assumptions: dict[str, tuple] = field(default_factory=dict)

    def derivative(self, wrt: str | None = None) -> Expr:
        """The derivative of the expression by ``wrt`` (default: the problem's own)."""
        from .differentiate import derivative

        name = wrt or self.wrt
        if name is None:
            raise SemanticError("this problem names no variable to differentiate by (no 'derivative wrt')")
        return derivative(self.expr, N.var(name, self.orders[name]) if name in self.orders else name)


def build_problem(text: str, orders: dict[str, int] | None = None) -> Problem:
    """Parse ``text`` and type it; ``orders`` supplies orders not declared in the text."""
    parsed = parse_text(text)
    declared = _merge_orders(parsed, orders)
    expr = _TypeChecker(parsed.text, declared).build(parsed.tree)
    if parsed.wrt is not None and parsed.wrt not in declared:
        raise SemanticError(
            f"'derivative wrt {parsed.wrt}' names a variable that is not declared", text, parsed.wrt_pos
        )
    assumptions = dict(parsed.declarations.assumptions) if parsed.declarations is not None else {}
    return Problem(expr=expr, orders=dict(declared), wrt=parsed.wrt, source=text, assumptions=assumptions)


def _merge_orders(parsed: ParsedProblem, orders: dict[str, int] | None) -> dict[str, int]:
    declared: dict[str, int] = {}
    if orders is not None and not isinstance(orders, Mapping):
        raise SemanticError(f"orders must be a mapping such as {{'x': 1}}, not a {type(orders).__name__}")
    for name, order in (orders or {}).items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SemanticError(f"invalid variable name {name!r} in orders")
        if isinstance(order, bool) or not isinstance(order, int) or order < 0:
            raise SemanticError(f"the order of {name!r} must be a natural number, got {order!r}")
        declared[name] = order
    decl: Declarations | None = parsed.declarations
    if decl is not None:
        for name, order in decl.orders.items():
            if name in declared and declared[name] != order:
                raise SemanticError(
                    f"variable '{name}' is declared with order {order} but orders= gives {declared[name]}",
                    parsed.text,
                    decl.positions[name],
                )
            declared[name] = order
    return declared


class _TypeChecker:
    def __init__(self, text: str, orders: dict[str, int]):
        self.text = text
        self.orders = orders
        self.natural: dict[int, int | None] = {}

    def error(self, message: str, syn: Syn) -> SemanticError:
        return SemanticError(message, self.text, syn.pos)

    def snippet(self, syn: Syn) -> str:
        text = self.text[syn.pos : syn.end].strip()
        return f"`{text}`" if len(text) <= 60 else f"`{text[:57]}...`"

    # pass 1: natural orders, bottom-up ------------------------------------------
    def natural_orders(self, root: Syn) -> None:
        for syn in _postorder(root):
            self.natural[id(syn)] = self.natural_order(syn)

    def natural_order(self, syn: Syn) -> int | None:
        kind = syn.kind
        nat = [self.natural[id(c)] for c in syn.children]
        if kind == "num":
            return None
        if kind == "name":
            if syn.value not in self.orders:
                raise self.error(f"variable '{syn.value}' is not declared", syn)
            return self.orders[syn.value]
        if kind == "delta":
            return 2 * syn.value
        if kind == "call":
            if syn.value in ("inv", "det", "adj"):
                if nat[0] not in (None, 2):
                    raise self.error(
                        f"{syn.value} needs a square matrix (order 2), but {self.snippet(syn.children[0])} "
                        f"has order {nat[0]}",
                        syn,
                    )
                return 0 if syn.value == "det" else 2
            return nat[0]
        if kind == "neg":
            return nat[0]
        if kind == "pow":
            if nat[1] not in (None, 0):
                raise self.error(
                    f"the exponent {self.snippet(syn.children[1])} has order {nat[1]}; "
                    "exponents must be of order 0",
                    syn.children[1],
                )
            return nat[0]
        if kind in ("sum", "div"):
            known = [(o, c) for o, c in zip(nat, syn.children) if o is not None]
            for o, c in known[1:]:
                if o != known[0][0]:
                    what = "add" if kind == "sum" else "divide"
                    raise self.error(
                        f"cannot {what} expressions of different orders: {self.snippet(known[0][1])} has "
                        f"order {known[0][0]} but {self.snippet(c)} has order {o}",
                        c,
                    )
            return known[0][0] if known else None
        if kind == "prod":
            (s1, s2, s3), star = syn.value
            for spec, operand, o in ((s1, syn.children[0], nat[0]), (s2, syn.children[1], nat[1])):
                if o is not None and len(spec) != o:
                    raise SemanticError(
                        f"index string '{''.join(spec)}' has {len(spec)} letter{'' if len(spec) == 1 else 's'} but "
                        f"{self.snippet(operand)} has order {o}",
                        self.text,
                        star,
                    )
            for letter in s3:
                if letter not in s1 and letter not in s2:
                    raise SemanticError(
                        f"output index '{letter}' of *({''.join(s1)},{''.join(s2)}->{''.join(s3)}) "
                        "occurs in neither input",
                        self.text,
                        star,
                    )
            return len(s3)
        raise AssertionError(kind)

    # pass 2: required orders top-down, nodes bottom-up -------------------------
    def build(self, root: Syn) -> Expr:
        self.natural_orders(root)
        top = self.natural[id(root)]
        built: dict[int, Expr] = {}
        stack: list[tuple[Syn, int, bool]] = [(root, 0 if top is None else top, False)]
        while stack:
            syn, required, expanded = stack.pop()
            if not expanded:
                stack.append((syn, required, True))
                for child, child_order in zip(syn.children, self.child_orders(syn, required)):
                    stack.append((child, child_order, False))
                continue
            kids = [built.pop(id(c)) for c in syn.children]
            try:
                built[id(syn)] = self.construct(syn, required, kids)
            except SemanticError as exc:
                if exc.text is None:
                    raise SemanticError(exc.reason, self.text, syn.pos) from None
                raise
        return built[id(root)]

    def child_orders(self, syn: Syn, required: int) -> list[int]:
        kind = syn.kind
        if kind == "call":
            return [2] if syn.value in ("inv", "det", "adj") else [required]
        if kind == "neg":
            return [required]
        if kind == "pow":
            return [required, 0]
        if kind in ("sum", "div"):
            return [required] * len(syn.children)
        if kind == "prod":
            (s1, s2, _), _ = syn.value
            return [len(s1), len(s2)]
        return []

    def construct(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        kind = syn.kind
        if kind == "num":
            return N.const(syn.value, required)
        if kind == "name":
            return N.var(syn.value, self.orders[syn.value])
        if kind == "delta":
            return N.delta(syn.value)
        if kind == "call":
            name = syn.value
            if name == "inv":
                return N.inv(kids[0])
            if name == "det":
                return N.det(kids[0])
            if name == "adj":
                return N.adj(kids[0])
            return N.func(name, kids[0])
        if kind == "neg":
            return N.neg(kids[0])
        if kind == "pow":
            return N.power(kids[0], kids[1])
        if kind == "sum":
            return N.add(kids, syn.value)
        if kind == "div":
            return N.divide(kids[0], kids[1])
        if kind == "prod":
            (s1, s2, s3), _ = syn.value
            return N.mul(kids, (s1, s2), s3)
        raise AssertionError(kind)


def _postorder(root: Syn) -> list[Syn]:
    out: list[Syn] = []
    stack: list[tuple[Syn, bool]] = [(root, False)]
    while stack:
        syn, expanded = stack.pop()
        if expanded:
            out.append(syn)
        else:
            stack.append((syn, True))
            stack.extend((c, False) for c in syn.children)
    return out
