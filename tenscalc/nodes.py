"""Interned, immutable expression nodes: the DAG every other module works on.

Every node is created through :func:`make`, which looks its structural key up in a
weak-value cache.  Structurally equal expressions are therefore the *same* object:
equality is ``is``, hashing is O(1) and common subexpressions are shared from the
moment they are built.  The factory also brings nodes into a canonical form
(product index letters renumbered by first appearance, sum operands sorted by a
structural digest) and infers and checks the order of every node, so an invalid
node never exists.

Node kinds (``op``) and their ``arg``:

========  =============================================  ==========================
op        arg                                            children
========  =============================================  ==========================
var       ``(name, order)``                              ()
const     ``(value, order)``: tensor filled with value   ()
delta     ``n``: the order-2n identity                   ()
add       coefficients, one per child                    summands
mul       ``(input specs, output spec)`` of an einsum    operands
func      elementwise function name (``"sin"`` ...)      (x,)
pow       None (elementwise power)                       (base, exponent)
inv       None (matrix inverse)                          (X,)
det       None (determinant)                             (X,)
========  =============================================  ==========================

Index specs are tuples of small ints, never strings.  Negation and scaling are an
``add`` with one child and a coefficient; subtraction is an ``add`` with a
coefficient ``-1``.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .errors import SemanticError

Spec = tuple[int, ...]

ELEMENTWISE_FUNCTIONS = (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "tanh", "exp", "log", "abs", "sign", "relu",
)
MATRIX_FUNCTIONS = ("inv", "det", "adj")
NODE_KINDS = ("var", "const", "delta", "add", "mul", "func", "pow", "inv", "det")
#: the most axes a variable, constant or delta may have (NumPy's limit on array
#: dimensions; evaluation checks every other node, which internal helpers may build
#: larger, e.g. an outer product of many terms for one axis graph)
MAX_ORDER = 64

_cache: weakref.WeakValueDictionary[tuple, Expr] = weakref.WeakValueDictionary()
_serials = itertools.count()
# look-up and insertion must be one step, or two threads building the same new node
# get two different objects and `is`-equality breaks
_cache_lock = threading.Lock()


class Expr:
    """One node of a tensor expression DAG.  Create nodes with the builder API
    (:func:`tenscalc.var`, operators, :func:`tenscalc.einsum` ...) or by parsing.

    Attributes
    ----------
    op : str
        The node kind (see the module docstring).
    children : tuple[Expr, ...]
        Operands, in order (a tuple: ``x*x`` has two children).
    arg : object
        Kind-specific payload: name, constant, index specs, coefficients.
    order : int
        Number of axes of the tensor this node stands for.
    serial : int
        Creation number, stable within a process; used for printing and drawing.

    Examples
    --------
    >>> import tenscalc as tc
    >>> e = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    >>> e.op, e.order, [c.op for c in e.children]
    ('mul', 1, ['var', 'var'])
    >>> e is tc.parse("A *(ab,b->a) x", {"A": 2, "x": 1})   # interned: equal means identical
    True
    """

    __slots__ = ("op", "children", "arg", "order", "digest", "serial", "varset", "__weakref__")

    op: str
    children: tuple[Expr, ...]
    arg: Any
    order: int
    digest: bytes
    serial: int
    varset: frozenset[tuple[str, int]]

    def __init__(self, op: str, children: tuple[Expr, ...], arg: Any, order: int, digest: bytes):
        set_ = object.__setattr__
        set_(self, "op", op)
        set_(self, "children", children)
        set_(self, "arg", arg)
        set_(self, "order", order)
        set_(self, "digest", digest)
        set_(self, "serial", next(_serials))
        # the variables below this node, computed once from the children so that
        # asking for them is O(1) (rules ask often; a walk each time is quadratic)
        if op == "var":
            varset = frozenset((arg,))
        else:
            sets = {c.varset for c in children}
            varset = sets.pop() if len(sets) == 1 else frozenset().union(*sets)
        set_(self, "varset", varset)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("tenscalc expressions are immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("tenscalc expressions are immutable")

    def __reduce__(self):
        # pickling rebuilds through the factory, keeping interning intact; the DAG goes
        # as one flat table (children before parents), so depth costs no recursion
        return (_from_table, (_to_table(self),))

    def __copy__(self) -> Expr:  # immutable and interned: a copy is the node itself
        return self

    def __deepcopy__(self, memo: dict) -> Expr:
        return self

    # -- introspection -------------------------------------------------------------------
    @property
    def variables(self) -> dict[str, int]:
        """Every variable the expression contains, name -> order, sorted by name.

        >>> import tenscalc as tc
        >>> tc.parse("x *(i,ij->j) A", {"x": 1, "A": 2}).variables
        {'A': 2, 'x': 1}
        """
        return dict(sorted(self.varset))

    def __str__(self) -> str:
        from .printing import to_text

        return to_text(self)

    def __repr__(self) -> str:
        from .printing import text_length, to_text

        variables = ", ".join(f"{k}:{v}" for k, v in self.variables.items())
        text = to_text(self) if text_length(self) < 20_000 else f"... ({count_nodes(self)} nodes)"
        if len(text) > 200:
            text = text[:197] + "..."
        return f"<Expr order={self.order} vars={{{variables}}}: {text}>"

    def __bool__(self) -> bool:
        return True

    # -- builder operators (defined in builder.py to keep this module free of policy) ----
    def __add__(self, other):
        from . import builder

        return builder.add(self, other)

    def __radd__(self, other):
        from . import builder

        return builder.add(other, self)

    def __sub__(self, other):
        from . import builder

        return builder.sub(self, other)

    def __rsub__(self, other):
        from . import builder

        return builder.sub(other, self)

    def __mul__(self, other):
        from . import builder

        return builder.multiply(self, other)

    def __rmul__(self, other):
        from . import builder

        return builder.multiply(other, self)

    def __truediv__(self, other):
        from . import builder

        return builder.divide(self, other)

    def __rtruediv__(self, other):
        from . import builder

        return builder.divide(other, self)

    def __pow__(self, other):
        from . import builder

        return builder.power(self, other)

    def __rpow__(self, other):
        from . import builder

        return builder.power(other, self)

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    # notebooks ---------------------------------------------------------------------------
    def _repr_pretty_(self, p, cycle) -> None:  # IPython plain-text display
        p.text(repr(self))

    def to_latex(self, notation: str = "auto") -> str:
        """The expression in LaTeX (see :func:`tenscalc.latex`)."""
        from .latex_printer import latex

        return latex(self, notation)

    def _repr_latex_(self) -> str | None:
        from .latex_printer import notebook_latex

        return notebook_latex(self)

    def _repr_svg_(self) -> str | None:  # a drawing of the DAG (needs Graphviz)
        from .viz import svg

        return svg(self)

    def _repr_html_(self) -> str | None:  # text and drawing; None falls back to LaTeX
        from .viz import html

        return html(self)


# --------------------------------------------------------------------------------------
# the factory
# --------------------------------------------------------------------------------------


def _to_table(root: Expr) -> list[tuple[str, Any, tuple[int, ...]]]:
    """The DAG under ``root`` as rows ``(op, arg, child row numbers)``, children first."""
    nodes = topological(root)
    row = {id(node): k for k, node in enumerate(nodes)}
    return [(n.op, n.arg, tuple(row[id(c)] for c in n.children)) for n in nodes]


def _from_table(table: Sequence[tuple[str, Any, tuple[int, ...]]]) -> Expr:
    """Rebuild a pickled table through :func:`make` (its last row is the root)."""
    built: list[Expr] = []
    for op, arg, children in table:
        built.append(make(op, [built[k] for k in children], arg))
    return built[-1]



def make(op: str, children: Sequence[Expr], arg: Any = None) -> Expr:
    """Return the unique node ``(op, children, arg)``, creating it if needed.

    The arguments are first brought into canonical form and checked; an invalid
    combination raises :class:`SemanticError`.  Prefer the small constructors below
    (:func:`var`, :func:`const`, :func:`mul` ...) which document each kind's ``arg``.
    """
    children = tuple(children)
    canon = _CANONICALIZERS.get(op)
    if canon is None:
        raise SemanticError(f"unknown node kind {op!r}")
    result = canon(children, arg)
    if isinstance(result, Expr):  # the canonical form is an existing node
        return result
    children, arg, order = result
    key = (op, _arg_key(op, arg), children)
    with _cache_lock:
        node = _cache.get(key)
        if node is None:
            node = Expr(op, children, arg, order, _digest(op, arg, children))
            _cache[key] = node
    return node


def _arg_key(op: str, arg: Any) -> Any:
    # 1 == 1.0 in Python; the type keeps the integer and the float constant apart.
    if op == "const":
        value, order = arg
        return (type(value).__name__, value, order)
    if op == "add":
        return tuple((type(c).__name__, c) for c in arg)
    return arg


def _digest(op: str, arg: Any, children: tuple[Expr, ...]) -> bytes:
    h = hashlib.blake2b(digest_size=12)
    h.update(repr((op, _arg_key(op, arg))).encode())
    for child in children:
        h.update(child.digest)
    return h.digest()


def _natural(value: Any, what: str) -> int:
    """``value`` as a Python int in 0 .. MAX_ORDER (bools are refused: ``True`` would
    be interned as a key equal to 1 and print as ``True`` wherever 1 is used later)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ORDER:
        raise SemanticError(f"{what} must be a natural number of at most {MAX_ORDER}, not {value!r}")
    return int(value)


def _canon_var(children, arg):
    name, order = arg
    if not isinstance(name, str) or not name.isidentifier():
        raise SemanticError(f"invalid variable name {name!r}")
    order = _natural(order, f"the order of variable {name!r}")
    return (), (name, order), order


def normalize_number(value: Any) -> int | float:
    """Python int or float for a number given by the user (bool and numpy scalars too)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        # beyond float64's range an integer could not be evaluated; it is the
        # infinity float arithmetic would give (2^1024 is the first such power)
        if value.bit_length() > 1000:
            try:
                float(value)
            except OverflowError:
                return math.inf if value > 0 else -math.inf
        return value
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        raise SemanticError(f"a constant must be a real number, not {value!r}") from None
    if isinstance(value, float):
        return value
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "f") in "iu":
        return int(value)
    return as_float


def _canon_const(children, arg):
    value, order = arg
    value = normalize_number(value)
    order = _natural(order, "the order of a constant")
    return (), (value, order), order


def _canon_delta(children, arg):
    arg = _natural(arg, "n in delta(n)")
    if 2 * arg > MAX_ORDER:
        raise SemanticError(f"delta({arg}) would have {2 * arg} axes; tenscalc allows at most {MAX_ORDER}")
    return (), arg, 2 * arg


def _canon_add(children, coefficients):
    if coefficients is None:
        coefficients = (1,) * len(children)
    coefficients = tuple(normalize_number(c) for c in coefficients)
    if len(coefficients) != len(children) or not children:
        raise SemanticError("a sum needs one coefficient per summand and at least one summand")
    order = children[0].order
    for child in children:
        if child.order != order:
            raise SemanticError(
                f"cannot add expressions of different orders: {_short(children[0])} has order "
                f"{order} but {_short(child)} has order {child.order}"
            )
    # A scaled node (one child with a coefficient) is folded into the enclosing sum:
    # this makes a - b, a + -b and -b + a one node and removes double negations.
    terms: list[tuple[Expr, int | float]] = []
    # (unless the product overflows: inf has no spelling, the text would not re-parse)
    for child, c in zip(children, coefficients):
        if child.op == "add" and len(child.children) == 1 and _finite_product(c, child.arg[0]):
            terms.append((child.children[0], c * child.arg[0]))
        else:
            terms.append((child, c))
    if len(terms) == 1 and terms[0][1] == 1:
        return terms[0][0]
    if len(terms) == 1 and terms[0][0].op == "const" and _finite_product(terms[0][1], terms[0][0].arg[0]):
        # -2 is the constant -2, as the parser reads it
        value, const_order = terms[0][0].arg
        return make("const", (), (terms[0][1] * value, const_order))
    # canonical order: positive terms first and constants last (for readable
    # printing), then by structural digest (deterministic across processes)
    terms.sort(key=lambda t: (t[1] < 0, t[0].op == "const", t[0].digest, type(t[1]).__name__, t[1]))
    return tuple(t[0] for t in terms), tuple(t[1] for t in terms), order


def _finite_product(a: int | float, b: int | float) -> bool:
    try:
        return math.isfinite(a * b) or not (math.isfinite(a) and math.isfinite(b))
    except OverflowError:  # two large integers
        return False


def canonical_specs(ins: Sequence[Sequence[int]], out: Sequence[int]) -> tuple[tuple[Spec, ...], Spec]:
    """Renumber index letters by first appearance (inputs left to right, then output)."""
    rename: dict[Any, int] = {}
    new_ins = []
    for spec in ins:
        new_ins.append(tuple(rename.setdefault(letter, len(rename)) for letter in spec))
    new_out = []
    for letter in out:
        if letter not in rename:
            raise SemanticError(f"output index {_letter(letter)} occurs in no input")
        new_out.append(rename[letter])
    return tuple(new_ins), tuple(new_out)


def chain_specs(ins: Sequence[Sequence[Any]], out: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Output specs of the binary products that compute an n-operand product as a
    left-nested chain: step ``k`` (1 .. n-1) keeps the letters of its two inputs
    that a later operand or the output still needs; the last step gives ``out``.

    >>> chain_specs(["i", "ij", "j"], "")
    [('j',), ()]
    """
    results: list[tuple[Any, ...]] = []
    left = tuple(ins[0])
    for k in range(1, len(ins)):
        if k == len(ins) - 1:
            left = tuple(out)
        else:
            later = set(out).union(*ins[k + 1 :])
            left = tuple(dict.fromkeys(x for x in left + tuple(ins[k]) if x in later))
        results.append(left)
    return results


def _letter(letter: Any) -> str:
    if isinstance(letter, int):
        from .printing import letter_for

        return repr(letter_for(letter))
    return repr(letter)


def _canon_mul(children, arg):
    ins, out = arg
    if len(ins) != len(children) or not children:
        raise SemanticError("a product needs one index spec per operand and at least one operand")
    for child, spec in zip(children, ins):
        if len(spec) != child.order:
            raise SemanticError(
                f"index spec of length {len(spec)} given for {_short(child)}, which has order {child.order}"
            )
    ins, out = canonical_specs(ins, out)
    return children, (ins, out), len(out)


def _canon_func(children, name):
    if name not in ELEMENTWISE_FUNCTIONS or len(children) != 1:
        raise SemanticError(f"unknown elementwise function {name!r}")
    return children, name, children[0].order


def _canon_pow(children, arg):
    if len(children) != 2:
        raise SemanticError("a power has a base and an exponent")
    base, exponent = children
    if exponent.order != 0:
        raise SemanticError(
            f"the exponent {_short(exponent)} has order {exponent.order}; exponents must be of order 0"
        )
    return children, None, base.order


def _canon_inv(children, arg):
    (x,) = children
    if x.order != 2:
        raise SemanticError(f"inv needs a square matrix (order 2), but {_short(x)} has order {x.order}")
    return children, None, 2


def _canon_det(children, arg):
    (x,) = children
    if x.order != 2:
        raise SemanticError(f"det needs a square matrix (order 2), but {_short(x)} has order {x.order}")
    return children, None, 0


_CANONICALIZERS = {
    "var": _canon_var,
    "const": _canon_const,
    "delta": _canon_delta,
    "add": _canon_add,
    "mul": _canon_mul,
    "func": _canon_func,
    "pow": _canon_pow,
    "inv": _canon_inv,
    "det": _canon_det,
}


def _short(node: Expr) -> str:
    text = str(node)
    return f"`{text}`" if len(text) <= 60 else f"`{text[:57]}...`"


# --------------------------------------------------------------------------------------
# constructors (one per kind) and a few derived ones
# --------------------------------------------------------------------------------------


def var(name: str, order: int) -> Expr:
    """A tensor variable of the given order."""
    return make("var", (), (name, order))


def const(value: float, order: int = 0) -> Expr:
    """A tensor of the given order filled with ``value`` (axis lengths from context)."""
    return make("const", (), (value, order))


def delta(n: int) -> Expr:
    """The order-2n identity tensor."""
    return make("delta", (), n)


def add(terms: Iterable[Expr], coefficients: Iterable[float] | None = None) -> Expr:
    """A linear combination of equal-order nodes."""
    terms = tuple(terms)
    coefs = tuple(coefficients) if coefficients is not None else None
    return make("add", terms, coefs)


def scale(x: Expr, coefficient: float) -> Expr:
    """``coefficient * x`` as a one-term sum."""
    return make("add", (x,), (coefficient,))


def neg(x: Expr) -> Expr:
    """``-x``."""
    return scale(x, -1)


def mul(operands: Sequence[Expr], ins: Sequence[Sequence[int]], out: Sequence[int]) -> Expr:
    """The einsum of ``operands`` labelled by ``ins`` into ``out`` (letters as ints)."""
    return make("mul", operands, (tuple(tuple(s) for s in ins), tuple(out)))


def func(name: str, x: Expr) -> Expr:
    """An elementwise function applied to ``x``."""
    return make("func", (x,), name)


def power(base: Expr, exponent: Expr) -> Expr:
    """Elementwise ``base ^ exponent`` for an order-0 exponent."""
    return make("pow", (base, exponent), None)


def inv(x: Expr) -> Expr:
    return make("inv", (x,), None)


def det(x: Expr) -> Expr:
    return make("det", (x,), None)


def adj(x: Expr) -> Expr:
    """The adjugate, built as ``det(X) *(,ij->ij) inv(X)``."""
    return mul((det(x), inv(x)), ((), (0, 1)), (0, 1))


def elementwise_product(a: Expr, b: Expr) -> Expr:
    """``a *(s,s->s) b`` for operands of equal order."""
    spec = tuple(range(a.order))
    return mul((a, b), (spec, spec), spec)


def reciprocal(x: Expr) -> Expr:
    """``x ^ (-1)``: how a quotient's denominator is represented."""
    return power(x, const(-1, 0))


def divide(a: Expr, b: Expr) -> Expr:
    """``a / b`` entry by entry, represented as ``a *(s,s->s) b^(-1)``."""
    return elementwise_product(a, reciprocal(b))


def is_const(node: Expr, value: float | None = None) -> bool:
    """Whether ``node`` is a constant (equal to ``value`` when given)."""
    return node.op == "const" and (value is None or node.arg[0] == value)


def is_zero(node: Expr) -> bool:
    return node.op == "const" and node.arg[0] == 0


# --------------------------------------------------------------------------------------
# traversal (iterative: deep expressions must not hit the recursion limit)
# --------------------------------------------------------------------------------------


def walk(root: Expr) -> Iterator[Expr]:
    """Every node reachable from ``root`` once, children before parents."""
    return iter(topological(root))


def topological(roots: Expr | Sequence[Expr]) -> list[Expr]:
    """Nodes reachable from ``roots`` in an order where children precede parents."""
    if isinstance(roots, Expr):
        roots = (roots,)
    order: list[Expr] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        stack: list[tuple[Expr, int]] = [(root, 0)]
        seen.add(id(root))
        while stack:
            node, i = stack[-1]
            if i < len(node.children):
                stack[-1] = (node, i + 1)
                child = node.children[i]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order


def count_nodes(roots: Expr | Sequence[Expr]) -> int:
    """Number of distinct nodes in the DAG (shared subexpressions count once).

    >>> import tenscalc as tc
    >>> tc.count_nodes(tc.parse("(x + 1) *(i,i->) (x + 1)", {"x": 1}))
    4
    """
    from .checks import require_exprs

    return len(topological(require_exprs(roots, "count_nodes")))


def count_edges(roots: Expr | Sequence[Expr]) -> int:
    """Number of parent-child edges in the DAG (a child used twice counts twice).

    >>> import tenscalc as tc
    >>> tc.count_edges(tc.parse("(x + 1) *(i,i->) (x + 1)", {"x": 1}))
    4
    """
    from .checks import require_exprs

    return sum(len(n.children) for n in topological(require_exprs(roots, "count_edges")))
