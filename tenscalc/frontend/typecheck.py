"""Typing pass: syntax tree -> interned, order-checked DAG.

A number's order comes from its context (docs/language.md): in a sum it takes the other
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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from ..core import nodes as N
from ..core.checks import count_nodes
from ..core.face import OPERATIONS
from ..core.nodes import Expr
from ..core.text import quoted
from ..errors import SemanticError
from ..progress import stage
from . import matrix_notation as M
from .parser import Declarations, ParsedProblem, Syn, parse_text


@dataclass(frozen=True)
class Problem:
    """A parsed problem: the expression, the declared orders and the variable to
    differentiate by (``None`` when the text has no ``derivative wrt``).

    Examples
    --------
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
        """The derivative of the expression by ``wrt`` (default: the problem's own), by
        ``tc.derivative`` (which the calculus registers on the expressions' face: the front
        end does not import the calculus)."""
        name = wrt or self.wrt
        if name is None:
            raise SemanticError("this problem names no variable to differentiate by (no 'derivative wrt')")
        wrt_node = N.var(name, self.orders[name]) if name in self.orders else name
        return OPERATIONS["derivative"](self.expr, wrt_node, symmetric=self.symmetric)  # type: ignore[no-any-return]

    @property
    def symmetric(self) -> list[str]:
        """The matrices declared ``symmetric``, ``psd``, ``pd`` or ``diagonal``: the simplifier
        writes their transposes as themselves (``x'*A*x`` by ``x`` gives ``2Ax``).

        Examples
        --------
        >>> import tenscalc as tc
        >>> p = tc.parse_problem("declare x 1 A 2 symmetric expression x'*A*x derivative wrt x")
        >>> p.symmetric, tc.to_matrix_notation(p.derivative())
        (['A'], '2*(A*x)')
        """
        words = ("symmetric", "psd", "pd", "diagonal")
        return [
            name
            for name, given in self.assumptions.items()
            if self.orders.get(name) == 2 and any(word in words for word in given if isinstance(word, str))
        ]


def build_problem(text: str, orders: dict[str, int] | None = None, *, letter_rule: bool = True) -> Problem:
    """Parse ``text`` and type it; ``orders`` supplies orders not declared in the text.

    With ``letter_rule`` (the default) every name that is neither declared in the
    text nor given in ``orders`` takes matrixcalculus.org's type by its first letter
    (declaring one name does not undeclare the others); ``letter_rule=False``
    requires every name to be declared.  A message that blames an order says
    where the order came from.

    >>> build_problem("declare b 1 expression norm2(A*x - b)^2").orders
    {'b': 1, 'x': 1, 'A': 2}
    """
    with stage("parse", lambda: f"{len(text)} characters") as logged:
        problem = _build_problem(text, orders, letter_rule)
        logged.done(lambda: f"{count_nodes(problem.expr)} nodes")
    return problem


def _build_problem(text: str, orders: dict[str, int] | None, letter_rule: bool) -> Problem:
    parsed = parse_text(text)
    declared = _merge_orders(parsed, orders)
    origins = _given_origins(parsed, orders)
    guessed: dict[str, int] = {}
    if letter_rule:
        guessed = _default_orders(parsed, declared, wrt=not declared and parsed.declarations is None)
        origins.update({name: ("letter", None) for name in guessed})
        declared.update(guessed)
    matrix_mode = _matrix_notation_used(parsed.tree, declared, bool(guessed))
    checker = _TypeChecker(parsed.text, declared, origins, letter_rule, matrix_mode)
    expr = checker.build(parsed.tree)
    if parsed.wrt is not None and parsed.wrt not in declared:
        raise SemanticError(
            f"'derivative wrt {parsed.wrt}' names a variable that is not declared", text, parsed.wrt_pos
        )
    assumptions = dict(parsed.declarations.assumptions) if parsed.declarations is not None else {}
    return Problem(expr=expr, orders=dict(declared), wrt=parsed.wrt, source=text, assumptions=assumptions)


def _given_origins(parsed: ParsedProblem, orders: Mapping[str, int] | None) -> dict[str, tuple[str, int | None]]:
    """Where each given order comes from: ``("declared", position)`` or ``("orders", None)``."""
    origins: dict[str, tuple[str, int | None]] = {name: ("orders", None) for name in orders or {}}
    if parsed.declarations is not None:
        origins.update({name: ("declared", pos) for name, pos in parsed.declarations.positions.items()})
    return origins


def _matrix_notation_used(tree: Syn, orders: Mapping[str, int], guessed: bool) -> bool:
    """Whether ``^`` of a matrix is the matrix power (matrixcalculus.org) rather than the
    einsum language's entrywise power: yes where the text uses matrix notation's
    operators or functions, no where it uses the einsum language's index specs,
    ``delta`` or written dimensions, and otherwise where a name was typed by its letter."""
    einsum = False
    for syn in _postorder(tree):
        if syn.kind in ("mprod", "ewmul", "ewdiv", "transpose") or (syn.kind == "pow" and syn.value == ".^"):
            return True
        if syn.kind == "call" and syn.value in M.NOTATION_FUNCTIONS:
            return True
        if syn.kind == "name" and syn.value == "eye" and "eye" not in orders:
            return True
        einsum = einsum or syn.kind in ("prod", "delta", "embed") or syn.dims is not None
    return not einsum and guessed


def _merge_orders(parsed: ParsedProblem, orders: dict[str, int] | None) -> dict[str, int]:
    declared: dict[str, int] = {}
    if orders is not None and not isinstance(orders, Mapping):
        raise SemanticError(f"orders must be a mapping such as {{'x': 1}}, not a {type(orders).__name__}")
    for name, order in (orders or {}).items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SemanticError(f"invalid variable name {name!r} in orders")
        if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order <= N.MAX_ORDER:
            raise SemanticError(
                f"the order of {name!r} must be a natural number of at most {N.MAX_ORDER}, got {order!r}"
            )
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


def _default_orders(parsed: ParsedProblem, declared: Mapping[str, int], wrt: bool) -> dict[str, int]:
    """Orders by first letter (see :func:`tenscalc.frontend.matrix_notation.default_order`) of
    every undeclared name in the text (and of the ``wrt`` name when ``wrt``); ``eye`` is left
    to mean the identity."""
    names = [syn.value for syn in _postorder(parsed.tree) if syn.kind == "name" and syn.value != "eye"]
    names += [d[0] for syn in _postorder(parsed.tree) for d in (syn.dims or ()) if d is not None]
    if wrt and parsed.wrt is not None:
        names.append(parsed.wrt)
    found = {name: M.default_order(name) for name in names if name not in declared}
    return {name: order for name, order in found.items() if order is not None}


class _TypeChecker:
    """The two sweeps over one syntax tree.  Each sweep dispatches on the syntax
    kind through a table (``_NATURAL_RULES``, ``_CHILD_ORDER_RULES``,
    ``_CONSTRUCT_RULES``, one entry per kind in ``SYNTAX_KINDS``).

    Maps over syntax-tree nodes are keyed by ``id(syn)``: ``Syn`` is a frozen
    dataclass whose hash and equality walk its whole subtree (and two equal
    subtrees would share one entry), so the object's identity is the key."""

    def __init__(
        self,
        text: str,
        orders: dict[str, int],
        origins: dict[str, tuple[str, int | None]] | None = None,
        letter_rule: bool = False,
        matrix_mode: bool = False,
    ):
        self.text = text
        self.orders = orders
        self.origins = origins or {}  # name -> ("declared", pos) | ("orders", None) | ("letter", None)
        self.letter_rule = letter_rule
        self.matrix_mode = matrix_mode  # `X^k` of a matrix is the matrix power (see _matrix_notation_used)
        self.matrix_power: dict[int, int] = {}  # id(syn) of `X^k` read as a matrix power -> k
        self.wanted: dict[str, int] = {}  # set before an error: the order a blamed name should have had
        self.natural: dict[int, int | None] = {}  # id(syn) -> natural order
        # matrix notation: whether an order-1 subtree is a row vector (`x'`), by id(syn)
        self.row: dict[int, bool] = {}

    def error(self, message: str, syn: Syn) -> SemanticError:
        return SemanticError(message, self.text, syn.pos)

    def source(self, syn: Syn) -> str:
        return self.text[syn.pos : syn.end].strip()

    def snippet(self, syn: Syn) -> str:
        return quoted(self.source(syn))

    # pass 1: natural orders, bottom-up ------------------------------------------
    def natural_orders(self, root: Syn) -> None:
        for syn in _postorder(root):
            nat = [self.natural[id(c)] for c in syn.children]
            rows = [self.row.get(id(c), False) for c in syn.children]
            try:
                self.natural[id(syn)] = _NATURAL_RULES[syn.kind](self, syn, nat, rows)
            except SemanticError as exc:
                raise self.explained(exc) from None

    def explained(self, exc: SemanticError) -> SemanticError:
        """The error with, for each name it blames, where its order came from and how to change it."""
        notes = [self.origin_note(name) for name in _blamed_names(exc.reason, self.origins)]
        self.wanted = {}
        if not notes:
            return exc
        return SemanticError(exc.reason + "; " + "; ".join(notes), exc.text, exc.position)

    def origin_note(self, name: str) -> str:
        """``b`` is a scalar by the letter rule ...: declare ``b 1`` or pass orders={'b': 1}."""
        order = self.orders[name]
        kind, pos = self.origins[name]
        want = self.wanted.get(name, {0: 1, 1: 0, 2: 1}.get(order, 1))
        if kind == "letter":
            return (
                f"`{name}` is {_KIND[order]} by matrixcalculus.org's letter rule (undeclared names starting "
                f"with a-g are scalars, h-z vectors, A-Z matrices): declare `{name} {want}` or pass "
                f"orders={{'{name}': {want}}} to make it {_KIND.get(want, f'an order-{want} tensor')}"
            )
        if kind == "declared":
            return f"`{name}` is declared with order {order}: change its declaration to change it"
        return f"`{name}` has order {order} from orders={{'{name}': {order}}}: pass another order there"

    def keep_row(self, syn: Syn, rows: list[bool]) -> None:
        """``sin(x')``, ``-x'``, ``x'^2`` stay rows."""
        if syn.children and rows[0]:
            self.row[id(syn)] = True

    def natural_num(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        return None if syn.dims is None else len(syn.dims)  # `1{X.0}` states its order

    def natural_name(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        if syn.value == "eye" and "eye" not in self.orders:
            return 2  # matrixcalculus.org's identity matrix
        if syn.value not in self.orders:
            name, guess = syn.value, M.default_order(syn.value)
            hint = (
                f"declare it (`declare {name} 1 expression ...`) or pass orders={{'{name}': 1}}"
                if guess is None or not self.letter_rule
                else ""
            )
            why = "" if self.letter_rule else " (the letter rule is off: every name must be declared)"
            if guess is None and self.letter_rule:
                why = " (the letter rule types only names that start with a letter)"
            raise self.error(f"variable '{name}' is not declared{why}; {hint}", syn)
        return self.orders[syn.value]

    def natural_delta(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        if syn.dims is not None and len(syn.dims) != syn.value:
            raise self.error(
                f"delta({syn.value}) has {syn.value} pair{'' if syn.value == 1 else 's'} of axes but "
                f"{len(syn.dims)} dimension{'' if len(syn.dims) == 1 else 's'} are written",
                syn,
            )
        return 2 * syn.value

    def natural_call(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        if syn.value in M.NOTATION_FUNCTIONS:
            return self.natural_notation_call(syn, nat, rows)
        self.keep_row(syn, rows)
        if syn.value in ("inv", "det", "adj"):
            if nat[0] not in (None, 2):
                self.wanted = {self.source(syn.children[0]): 2}
                raise self.error(
                    f"{syn.value} needs a square matrix (order 2), but {self.snippet(syn.children[0])} "
                    f"has order {nat[0]}",
                    syn,
                )
            return 0 if syn.value == "det" else 2
        return nat[0]

    def natural_adj(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        if nat[0] not in (None, 2):
            raise self.error(
                f"adj needs a square matrix (order 2), but {self.snippet(syn.children[0])} has order {nat[0]}", syn
            )
        return 2 * cast(int, syn.value)

    def natural_neg(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        self.keep_row(syn, rows)
        return nat[0]

    def natural_pow(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        self.keep_row(syn, rows)
        if nat[1] not in (None, 0):
            raise self.error(
                f"the exponent {self.snippet(syn.children[1])} has order {nat[1]}; exponents must be of order 0",
                syn.children[1],
            )
        if self.matrix_mode and syn.value == "^" and nat[0] == 2:
            self.matrix_power[id(syn)] = self.matrix_exponent(syn)
        return nat[0]

    def matrix_exponent(self, syn: Syn) -> int:
        """``k`` of ``X^k`` in matrix notation: the matrix power (``X^-1`` the inverse)."""
        base, exponent = syn.children
        value = exponent.value if exponent.kind == "num" and exponent.dims is None else None
        if exponent.kind == "neg" and exponent.children[0].kind == "num" and exponent.children[0].dims is None:
            value = -exponent.children[0].value  # type: ignore[operator]
        power = f"{self.source(base)}^{self.source(exponent)}"
        if not isinstance(value, (int, float)) or value != int(value) or value == 0 or abs(value) > 64:
            raise self.error(
                f"`{power}`: in matrix notation ^ of a matrix is the matrix power (X^2 = X*X, X^-1 = inv(X)), "
                f"which needs a nonzero integer exponent up to 64 (eye is X^0); write `{self.source(base)}.^"
                f"{self.source(exponent)}` for the power of each entry",
                exponent,
            )
        return int(value)

    def natural_div(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        if nat[1] == 0 and nat[0] not in (None, 0):
            self.row[id(syn)] = rows[0]
            return nat[0]  # a tensor divided by a scalar: scaled
        return self.equal_orders(syn, nat, "divide")

    def natural_sum(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        self.sum_orientation(syn, nat)
        return self.equal_orders(syn, nat, "add")

    def equal_orders(self, syn: Syn, nat: list, what: str) -> int | None:
        """The common order of operands that must agree (``None``: only numbers)."""
        known = [(o, c) for o, c in zip(nat, syn.children) if o is not None]
        for o, c in known[1:]:
            if o != known[0][0]:
                first = known[0][1]
                self.wanted = {self.source(c): known[0][0], self.source(first): o}
                raise self.error(
                    f"cannot {what} expressions of different orders: {self.snippet(known[0][1])} has "
                    f"order {known[0][0]} but {self.snippet(c)} has order {o}",
                    c,
                )
        return known[0][0] if known else None

    def natural_prod(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
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
                    f"output index '{letter}' of *({''.join(s1)},{''.join(s2)}->{''.join(s3)}) occurs in neither input",
                    self.text,
                    star,
                )
        return len(s3)

    # matrix notation: natural orders, with row orientation recorded
    def natural_slice(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        order, items = nat[0], syn.value
        if order is None or len(items) > order:
            what = "a number" if order is None else f"order {order}"
            raise self.error(f"{len(items)} slice item(s) for {self.snippet(syn.children[0])}, which has {what}", syn)
        dropped = [k for k, item in enumerate(_padded(items, order)) if isinstance(item, int)]
        result = order - len(dropped)
        if result == 1:  # X[0, :] is a row, X[:, 0] a column, as in MATLAB
            self.row[id(syn)] = rows[0] if order == 1 else dropped == [0]
        return result

    def natural_embed(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        items = syn.value
        kept = sum(1 for item in items if not isinstance(item, int))
        if nat[0] is not None and nat[0] != kept:
            raise self.error(
                f"embed places an order-{kept} part but {self.snippet(syn.children[0])} has order {nat[0]}", syn
            )
        if len(syn.dims) != len(items):
            raise self.error(f"embed needs one dimension per item: {len(items)} items, {len(syn.dims)} dimensions", syn)
        return len(items)

    def natural_transpose(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        if nat[0] is not None and nat[0] > 2:
            raise self.error(
                f"transpose (') needs a scalar, vector or matrix, but {self.snippet(syn.children[0])} "
                f"has order {nat[0]}",
                syn,
            )
        self.row[id(syn)] = nat[0] == 1 and not rows[0]
        return nat[0]

    def natural_mprod(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        a, b = (0 if o is None else o for o in nat)
        result = M.matmul_type(a, rows[0], b, rows[1])
        if result is None:
            left, right = syn.children
            raise SemanticError(
                f"cannot multiply {self.snippet(left)} ({M.shape_name(a, rows[0])}) by {self.snippet(right)} "
                f"({M.shape_name(b, rows[1])}) with '*'"
                + (
                    ": the matrix product needs orders up to 2; use an index spec *(...->...)"
                    if max(a, b) > 2
                    else ": the columns of the left operand must meet the rows of the right one "
                    "(a vector is a column, x' a row)"
                ),
                self.text,
                syn.value,
            )
        self.row[id(syn)] = result[1]
        return result[0]

    def natural_elementwise(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        known = [(o, r, c) for o, r, c in zip(nat, rows, syn.children) if o not in (None, 0)]
        if len(known) == 2 and (known[0][0], known[0][1]) != (known[1][0], known[1][1]):
            (oa, ra, a), (ob, rb, b) = known
            op = ".*" if syn.kind == "ewmul" else "./"
            raise SemanticError(
                f"'{op}' needs operands of the same shape (or a scalar), but {self.snippet(a)} is "
                f"{M.shape_name(oa, ra)} and {self.snippet(b)} is {M.shape_name(ob, rb)}",
                self.text,
                syn.value,
            )
        if known:
            self.row[id(syn)] = known[0][1]
            return known[0][0]
        return 0 if 0 in nat else None

    def natural_notation_call(self, syn: Syn, nat: list, rows: list[bool]) -> int | None:
        """The functions of matrix notation."""
        name, order = syn.value, nat[0]
        if name in ("vector", "matrix"):
            if order is not None:
                raise self.error(f"{name}(c) needs a number c, but {self.snippet(syn.children[0])} is not one", syn)
            return 1 if name == "vector" else 2
        if name in ("tr", "logdet") and order not in (None, 2):
            self.wanted = {self.source(syn.children[0]): 2}
            raise self.error(
                f"{name} needs a square matrix (order 2), but {self.snippet(syn.children[0])} has order {order}",
                syn,
            )
        if name == "diag":
            if order not in (1, 2):
                raise self.error(
                    f"diag needs a vector or a matrix, but {self.snippet(syn.children[0])} "
                    f"has order {0 if order is None else order}",
                    syn,
                )
            return 3 - order
        if name == "sqrt":
            self.row[id(syn)] = rows[0]
            return order
        return 0  # sum, norm1, norm2, tr, logdet

    def sum_orientation(self, syn: Syn, nat: list[int | None]) -> None:
        """Rows and columns do not add: ``x' + y`` is refused, ``x' + y'`` is a row."""
        vectors = [(self.row.get(id(c), False), c) for o, c in zip(nat, syn.children) if o == 1]
        for row, c in vectors[1:]:
            if row != vectors[0][0]:
                first = vectors[0][1]
                raise self.error(
                    f"cannot add {self.snippet(first)} ({M.shape_name(1, vectors[0][0])}) and "
                    f"{self.snippet(c)} ({M.shape_name(1, row)}); transpose one of them with '",
                    c,
                )
        if vectors and vectors[0][0]:
            self.row[id(syn)] = True

    # pass 2: required orders top-down, nodes bottom-up -------------------------
    def build(self, root: Syn) -> Expr:
        self.natural_orders(root)
        top = self.natural[id(root)]
        built: dict[int, Expr] = {}  # id(syn) -> its node
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
                built[id(syn)] = _CONSTRUCT_RULES[syn.kind](self, syn, required, kids)
            except SemanticError as exc:
                if exc.text is None:
                    raise SemanticError(exc.reason, self.text, syn.pos) from None
                raise
        return built[id(root)]

    def child_orders(self, syn: Syn, required: int) -> list[int]:
        """The order each child of ``syn`` must have when ``syn`` must have ``required``."""
        return _CHILD_ORDER_RULES[syn.kind](self, syn, required, [self.natural[id(c)] for c in syn.children])

    def orders_none(self, syn: Syn, required: int, nat: list) -> list[int]:
        return []  # a leaf

    def orders_required(self, syn: Syn, required: int, nat: list) -> list[int]:
        return [required] * len(syn.children)

    def orders_pow(self, syn: Syn, required: int, nat: list) -> list[int]:
        return [required, 0]

    def orders_div(self, syn: Syn, required: int, nat: list) -> list[int]:
        if nat[1] == 0 and nat[0] not in (None, 0):
            return [required, 0]  # a tensor divided by a scalar
        return [required, required]

    def orders_prod(self, syn: Syn, required: int, nat: list) -> list[int]:
        (s1, s2, _), _ = syn.value
        return [len(s1), len(s2)]

    def orders_call(self, syn: Syn, required: int, nat: list) -> list[int]:
        if syn.value in M.NOTATION_FUNCTIONS:
            if syn.value in ("vector", "matrix"):
                return [0]
            if syn.value in ("tr", "logdet"):
                return [2]
            if syn.value == "sqrt":
                return [required]
            return [0 if nat[0] is None else nat[0]]
        return [2] if syn.value in ("inv", "det", "adj") else [required]

    def orders_matrix(self, syn: Syn, required: int, nat: list) -> list[int]:
        return [2]

    def orders_products(self, syn: Syn, required: int, nat: list) -> list[int]:
        """``*``, ``.*``, ``./`` of matrix notation: a bare number is a scalar there."""
        if syn.kind != "mprod" and None in nat and nat != [None, None]:
            return [required if o is None else o for o in nat]
        return [0 if o is None else o for o in nat]

    def orders_slice(self, syn: Syn, required: int, nat: list) -> list[int]:
        return [nat[0]]

    def orders_embed(self, syn: Syn, required: int, nat: list) -> list[int]:
        return [sum(1 for item in syn.value if not isinstance(item, int))]

    def construct_num(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return N.const(syn.value, required, self.dimensions(syn))  # pass 1 checked written dimensions

    def construct_name(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        if syn.value == "eye" and "eye" not in self.orders:
            return N.delta(1)
        return N.var(syn.value, self.orders[syn.value])

    def construct_delta(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return N.delta(syn.value, self.dimensions(syn))

    def construct_call(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        name = syn.value
        if name in ("vector", "matrix"):
            if kids[0].op != "const":
                raise self.error(f"{name}(c) needs a number c", syn)
            return N.const(kids[0].arg[0], 1 if name == "vector" else 2)
        if name in M.NOTATION_FUNCTIONS:
            return M.call(name, kids[0])
        if name == "inv":
            return N.inv(kids[0])
        if name == "det":
            return N.det(kids[0])
        if name == "adj":
            return N.adj(kids[0])
        return N.func(name, kids[0])

    def construct_adj(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return N.adj(kids[0], cast(int, syn.value))

    def construct_neg(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return N.neg(kids[0])

    def construct_pow(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        if id(syn) in self.matrix_power:
            return M.matrix_power(kids[0], self.matrix_power[id(syn)])
        return N.power(kids[0], kids[1])

    def construct_sum(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return N.add(kids, syn.value)

    def construct_div(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        if kids[1].order == 0 and kids[0].order > 0:
            return M.scale(kids[0], N.reciprocal(kids[1]))
        return N.divide(kids[0], kids[1])

    def construct_prod(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        (s1, s2, s3), _ = syn.value
        return N.mul(kids, (s1, s2), s3)

    def construct_mprod(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        rows = [self.row.get(id(c), False) for c in syn.children]
        return M.matmul(kids[0], rows[0], kids[1], rows[1])

    def construct_elementwise(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return M.elementwise(kids[0], kids[1], divide=syn.kind == "ewdiv")

    def construct_transpose(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return M.transpose(kids[0])

    def construct_slice(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return N.slice_(kids[0], _padded(syn.value, kids[0].order))

    def construct_embed(self, syn: Syn, required: int, kids: list[Expr]) -> Expr:
        return N.embed(kids[0], syn.value, self.dimensions(syn))

    def dimensions(self, syn: Syn) -> tuple[N.Dim | None, ...] | None:
        """The written dimensions of a number or delta, checked against the declarations."""
        if syn.dims is None:
            return None
        dims: list[N.Dim | None] = []
        for written in syn.dims:
            if written is None:
                dims.append(None)
                continue
            name, axis, pos, slices = written
            order = self.orders.get(name)
            if order is None:
                raise SemanticError(
                    f"the dimension {name}.{axis} names '{name}', which is not declared (declare it, with its "
                    "order, even where only its shape is used)",
                    self.text,
                    pos,
                )
            if axis >= order:
                raise SemanticError(
                    f"the dimension {name}.{axis} names axis {axis} of '{name}', which has order {order} "
                    f"(axes 0 to {order - 1})"
                    if order
                    else f"'{name}' is a scalar: it has no axis {axis}",
                    self.text,
                    pos,
                )
            d: N.Dim | N.SliceDim = N.Dim(name, order, axis)
            for items in slices:
                if len(items) != 1 or isinstance(items[0], int):
                    raise SemanticError(
                        f"a sliced dimension takes one slice such as [1:], at {name}.{axis}", self.text, pos
                    )
                d = N.SliceDim(d, *items[0])
            dims.append(d)
        return tuple(dims)


_T = _TypeChecker
#: The kinds of the syntax tree (see ``Syn``): the language's, then matrix notation's.
SYNTAX_KINDS = ("num", "name", "delta", "call", "adj", "neg", "pow", "sum", "div", "prod") + (
    "mprod", "ewmul", "ewdiv", "transpose", "slice", "embed",
)  # fmt: skip

#: Pass 1: the natural order of a subtree of each kind (None: numbers only, any order).
_NATURAL_RULES: dict[str, Callable[[_TypeChecker, Syn, list, list[bool]], int | None]] = {
    "num": _T.natural_num,
    "name": _T.natural_name,
    "delta": _T.natural_delta,
    "call": _T.natural_call,
    "adj": _T.natural_adj,
    "neg": _T.natural_neg,
    "pow": _T.natural_pow,
    "sum": _T.natural_sum,
    "div": _T.natural_div,
    "prod": _T.natural_prod,
    "mprod": _T.natural_mprod,
    "ewmul": _T.natural_elementwise,
    "ewdiv": _T.natural_elementwise,
    "transpose": _T.natural_transpose,
    "slice": _T.natural_slice,
    "embed": _T.natural_embed,
}

#: Pass 2, top-down: the orders the children of each kind must have.
_CHILD_ORDER_RULES: dict[str, Callable[[_TypeChecker, Syn, int, list], list[int]]] = {
    "num": _T.orders_none,
    "name": _T.orders_none,
    "delta": _T.orders_none,
    "call": _T.orders_call,
    "adj": _T.orders_matrix,
    "neg": _T.orders_required,
    "pow": _T.orders_pow,
    "sum": _T.orders_required,
    "div": _T.orders_div,
    "prod": _T.orders_prod,
    "mprod": _T.orders_products,
    "ewmul": _T.orders_products,
    "ewdiv": _T.orders_products,
    "transpose": _T.orders_required,
    "slice": _T.orders_slice,
    "embed": _T.orders_embed,
}

#: Pass 2, bottom-up: the interned node of each kind, from its children's nodes.
_CONSTRUCT_RULES: dict[str, Callable[[_TypeChecker, Syn, int, list[Expr]], Expr]] = {
    "num": _T.construct_num,
    "name": _T.construct_name,
    "delta": _T.construct_delta,
    "call": _T.construct_call,
    "adj": _T.construct_adj,
    "neg": _T.construct_neg,
    "pow": _T.construct_pow,
    "sum": _T.construct_sum,
    "div": _T.construct_div,
    "prod": _T.construct_prod,
    "mprod": _T.construct_mprod,
    "ewmul": _T.construct_elementwise,
    "ewdiv": _T.construct_elementwise,
    "transpose": _T.construct_transpose,
    "slice": _T.construct_slice,
    "embed": _T.construct_embed,
}


_KIND = {0: "a scalar", 1: "a vector", 2: "a matrix"}


def _blamed_names(reason: str, origins: Mapping[str, object]) -> list[str]:
    """The names a message blames: those quoted alone (`` `b` ``, `` `x'` ``), else the
    names inside its quoted snippets (`` `A*x` ``), in order of appearance."""
    import re

    snippets = re.findall(r"`([^`]*)`", reason)
    alone = [s.strip().rstrip("'") for s in snippets]
    found = [name for name in alone if name in origins]
    if not found:
        found = [name for s in snippets for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", s) if name in origins]
    return list(dict.fromkeys(found))[:3]


def _padded(items: tuple, order: int) -> tuple:
    """Slice items for every axis: missing trailing ones keep their axis (NumPy's rule)."""
    return tuple(items) + (N.FULL_AXIS,) * (order - len(items))


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
