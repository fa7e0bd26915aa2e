"""Interned, immutable expression nodes: the DAG every other module works on.

Every node is created through ``make``, which looks its structural key up in a
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
adj       ``k``: the k-th derivative of det, of order 2k;    (X,)
          ``adj[j1,i1,..,jk,ik] = d^k det / dX[i1,j1]..``
          (the adjugate for k = 1)
slice     per axis: an index ``k`` or ``(start, stop,    (x,)
          step)``; ``(0, None, 1)`` keeps the axis
embed     ``(items, dims)``: the transpose of a slice:   (part,)
          zeros of ``dims`` with ``part`` at ``items``
========  =============================================  ==========================

A sliced axis (``x[1:]``: "n - 1") has a ``SliceDim`` (``x.0[1:]``) in
``dims``: its length is derived from the sliced axis when arrays are bound
(:mod:`tenscalc.core.axes`).

Every node also carries ``dims``: one *dimension* per axis, the symbolic length of
that axis (see ``Dim``).  A variable's axis ``k`` has the dimension
``Dim(name, order, k)``; every other node's dimensions follow from its children
when it is built (a product takes each output letter's dimension from the
operands carrying that letter), and a constant or ``delta`` takes them from its
context: the factory *specialises* a child whose dimension is still unknown
(``None``) as soon as a sibling knows it (``x + 1``: the ``1`` becomes a ones
vector of ``x``'s length).  Dimensions are part of a constant's identity, so the
same text used at two lengths is two nodes and both evaluate.  Equalities that an
expression implies between different dimensions (``A *(ij,j->i) x`` says
``A.1 = x.0``) are constraints, checked when arrays are bound
(``tenscalc.core.axes``); they never rewrite a node.  A derivative keeps the
dimensions of the variable it came from, so it knows "the length of X's axis 0"
even after X itself has disappeared from it.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from ..errors import SemanticError
from .face import ExprFace
from .text import letter_for, quoted
from .vocabulary import (  # noqa: F401 - MATRIX_FUNCTIONS, NODE_KINDS: still importable from here
    DIMENSIONED_LEAVES,
    ELEMENTWISE_FUNCTIONS,
    MATRIX_FUNCTIONS,
    NODE_KINDS,
)

Spec = tuple[int, ...]


class Dim(NamedTuple):
    """The length of axis ``axis`` of the variable ``name`` (of order ``order``):
    the only kind of known dimension.  It prints as ``name.axis`` (``X.0``).

    Examples
    --------
    >>> Dim("X", 2, 0)
    Dim(name='X', order=2, axis=0)
    """

    name: str
    order: int
    axis: int

    def __str__(self) -> str:
        return f"{self.name}.{self.axis}"


class SliceDim(NamedTuple):
    """The length of a sliced axis: ``len(range(base)[start:stop:step])``, e.g. "n - 1"
    for ``x[1:]``.  It prints as ``x.0[1:]``; ``base`` is a ``Dim`` or a
    ``SliceDim`` (a slice of a slice).  The length is computed when arrays are bound.

    Examples
    --------
    >>> str(SliceDim(Dim("x", 1, 0), 1, None, 1))
    'x.0[1:]'
    """

    base: Any
    start: int
    stop: int | None
    step: int

    def __str__(self) -> str:
        return f"{self.base}[{slice_item_text((self.start, self.stop, self.step))}]"

    def root(self) -> Dim:
        """The variable axis this length is sliced from."""
        base = self.base
        while type(base) is SliceDim:
            base = base.base
        return base


#: One entry of ``Expr.dims``: a known ``Dim`` or ``SliceDim``, ``None`` (unknown: taken from
#: the context the node is used in), or an int *mark* (an unknown that the printer
#: tags to find out whether text would recover it, see ``printing``).
DimSlot = Dim | int | None
Dims = tuple[DimSlot, ...]


_KNOWN = (Dim, SliceDim)


def is_known(d: DimSlot) -> bool:
    """Whether ``d`` is a known dimension (a variable's axis, or a slice of one)."""
    return type(d) in _KNOWN


def _dim_key(d: Dim | SliceDim) -> tuple:
    # variable axes first, in their own order (as before slices existed); then slices
    return (0, d) if type(d) is Dim else (1, str(d))


def merge_dims(candidates: Iterable[DimSlot]) -> DimSlot:
    """The representative of dimensions that must be equal: the least known one
    (a deterministic choice), else ``None``."""
    known = [d for d in candidates if type(d) in _KNOWN]
    if len(known) < 2:
        return known[0] if known else None
    return min(known) if all(type(d) is Dim for d in known) else min(known, key=_dim_key)


def var_dims(name: str, order: int) -> tuple[Dim, ...]:
    """The dimensions of variable ``name``'s axes."""
    return tuple(Dim(name, order, k) for k in range(order))


FULL_AXIS = (0, None, 1)  # a slice item that keeps the whole axis (`:`)
#: the most axes a variable, constant or delta may have (NumPy's limit on array
#: dimensions; evaluation checks every other node, which internal helpers may build
#: larger, e.g. an outer product of many terms for one axis graph)
MAX_ORDER = 64

_cache: weakref.WeakValueDictionary[tuple, Expr] = weakref.WeakValueDictionary()
_serials = itertools.count()
# look-up and insertion must be one step, or two threads building the same new node
# get two different objects and `is`-equality breaks (re-entrant: specialising a
# child builds nodes from inside the factory)
_lock = threading.RLock()


class Expr(ExprFace):
    """One node of a tensor expression DAG.  Create nodes with the builder API
    (``tenscalc.var``, operators, ``tenscalc.einsum`` ...) or by parsing.

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
    dims : tuple
        The length of every axis as a dimension (``Dim``, or ``None`` where
        no variable fixes it yet).
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

    __slots__ = ("op", "children", "arg", "order", "dims", "complete", "digest", "serial", "varset", "__weakref__")

    op: str
    children: tuple[Expr, ...]
    arg: Any
    order: int
    dims: Dims
    complete: bool  # every dimension known: nothing to specialise (the factory's fast path)
    digest: bytes
    serial: int
    varset: frozenset[tuple[str, int]]

    def __init__(self, op: str, children: tuple[Expr, ...], arg: Any, order: int, dims: Dims, digest: bytes):
        set_ = object.__setattr__
        set_(self, "op", op)
        set_(self, "children", children)
        set_(self, "arg", arg)
        set_(self, "order", order)
        set_(self, "dims", dims)
        set_(self, "complete", all(type(d) is Dim for d in dims))
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

        Examples
        --------
        >>> import tenscalc as tc
        >>> tc.parse("x *(i,ij->j) A", {"x": 1, "A": 2}).variables
        {'A': 2, 'x': 1}
        """
        return dict(sorted(self.varset))

    @property
    def shape_variables(self) -> dict[str, int]:
        """Variables whose *shape* the expression needs although their values do
        not occur in it (name -> order): a derivative that lost ``X`` but still has
        an axis of ``X``'s length.  Evaluation needs an array (of the right shape)
        for each of them too.

        Examples
        --------
        >>> import tenscalc as tc
        >>> f = tc.parse("X *(ij,->) 1", {"X": 2})      # the sum of X's entries
        >>> tc.hessian(f, "X").shape_variables           # zero, of X's shape twice
        {'X': 2}
        """
        found = {
            (r.name, r.order)
            for node in topological(self)
            for d in node.dims
            if is_known(d)
            for r in ((d if type(d) is Dim else d.root()),)
        }
        return dict(sorted(found - set(self.varset)))

    def __bool__(self) -> bool:
        return True


# --------------------------------------------------------------------------------------
# the factory
# --------------------------------------------------------------------------------------


def _to_table(root: Expr) -> list[tuple[str, Any, tuple[int, ...], Dims | None]]:
    """The DAG under ``root`` as rows ``(op, arg, child row numbers, leaf dimensions)``,
    children first."""
    nodes = topological(root)
    row = {node: k for k, node in enumerate(nodes)}
    return [
        (n.op, n.arg, tuple(row[c] for c in n.children), n.dims if n.op in DIMENSIONED_LEAVES else None) for n in nodes
    ]


def _from_table(table: Sequence[tuple]) -> Expr:
    """Rebuild a pickled table through ``make`` (its last row is the root)."""
    built: list[Expr] = []
    for op, arg, children, dims in table:
        built.append(make(op, [built[k] for k in children], arg, dims))
    return built[-1]


def make(op: str, children: Sequence[Expr], arg: Any = None, dims: Sequence[DimSlot] | None = None) -> Expr:
    """Return the unique node ``(op, children, arg)``, creating it if needed.

    The arguments are first brought into canonical form and checked; an invalid
    combination raises ``SemanticError``.  Children whose dimensions are
    unknown where a sibling knows them are specialised first.  ``dims`` is read
    only for constants (one per axis) and deltas (one per pair of axes); ``None``
    there means "unknown: take it from the context".  Prefer the small
    constructors below (``var``, ``const``, ``mul`` ...) which document each
    kind's ``arg``.
    """
    children = tuple(children)
    canon = CANONICALIZERS.get(op)
    if canon is None:
        raise SemanticError(f"unknown node kind {op!r}")
    if children:
        children = _specialize_children(op, children, arg)
    result = canon(children, arg)
    if isinstance(result, Expr):  # the canonical form is an existing node
        return result
    children, arg, order = result
    if op in DIMENSIONED_LEAVES:
        node_dims = _leaf_dims(op, arg, order, dims)
        key: tuple = (op, _arg_key(op, arg), children, node_dims)
    else:
        node_dims = DIMENSION_RULES[op](children, arg)
        key = (op, _arg_key(op, arg), children)
    with _lock:  # look up and insert as one step: two threads must get one node
        node = _cache.get(key)
        if node is None:
            digest = _digest(op, arg, children, node_dims if op in DIMENSIONED_LEAVES else ())
            node = Expr(op, children, arg, order, node_dims, digest)
            _cache[key] = node
    return node


def rebuild(node: Expr, children: Sequence[Expr]) -> Expr:
    """``node`` with new children (same kind and arg; a leaf keeps its dimensions)."""
    return make(node.op, children, node.arg, node.dims if node.op in DIMENSIONED_LEAVES else None)


def _number_key(value: int | float) -> tuple:
    """A key equal for equal numbers only: 1 == 1.0 in Python, so the type keeps the
    integer and the float apart; 0.0 == -0.0, so the sign bit keeps the zeros apart
    (else ``x / 0.0`` would print and evaluate as ``x / -0.0`` while a -0.0 lives);
    nan != nan, so every NaN is one key (else no NaN constant would ever be found)."""
    if isinstance(value, float):
        if value != value:  # sign and payload of a NaN are not kept by arithmetic either
            return ("float", "nan")
        return ("float", value, math.copysign(1.0, value))
    return (type(value).__name__, value)


def _arg_key(op: str, arg: Any) -> Any:
    if op == "const":
        value, order = arg
        return (*_number_key(value), order)
    if op == "add":
        return tuple(_number_key(c) for c in arg)
    return arg


def _digest_arg(op: str, arg: Any) -> Any:
    """The arg as the digest has always read it (the type keeps 1 and 1.0 apart)."""
    if op == "const":
        value, order = arg
        return (type(value).__name__, value, order)
    if op == "add":
        return tuple((type(c).__name__, c) for c in arg)
    return arg


def _digest(op: str, arg: Any, children: tuple[Expr, ...], dims: Dims) -> bytes:
    h = hashlib.blake2b(digest_size=12)
    # known dimensions are part of a leaf's identity; without them the digest is the
    # one v0.1 had, so the canonical order of sums is unchanged for such nodes (repr
    # already tells -0.0 from 0.0, which the intern key needs _number_key for)
    payload = (op, _digest_arg(op, arg), dims) if any(map(is_known, dims)) else (op, _digest_arg(op, arg))
    h.update(repr(payload).encode())
    for child in children:
        h.update(child.digest)
    return h.digest()


# --------------------------------------------------------------------------------------
# dimensions: computed from the children, specialised from the context
# --------------------------------------------------------------------------------------


def _leaf_dims(op: str, arg: Any, order: int, dims: Sequence[DimSlot] | None) -> Dims:
    """A constant has one dimension per axis, a delta one per pair of equal axes."""
    count = order if op == "const" else arg
    given: tuple = (None,) * count if dims is None else tuple(dims)
    if op == "delta" and dims is not None and len(given) == 2 * count:
        given = tuple(merge_dims((given[t], given[count + t])) for t in range(count))
    if len(given) != count:
        what = f"constant of order {order}" if op == "const" else f"delta({arg})"
        raise SemanticError(f"{len(given)} dimension(s) given for a {what}, which needs {count}")
    for d in given:
        if d is not None and not is_known(d) and not isinstance(d, int):
            raise SemanticError(f"not a dimension: {d!r}")
    return given if op == "const" else given + given


def _letter_dims(children: Sequence[Expr], ins: Sequence[Sequence[Any]]) -> dict[Any, DimSlot]:
    """The dimension of every letter of a product: the least known dimension of the
    operand axes it labels, carried across the paired axes of deltas."""
    found: dict[Any, list[DimSlot]] = {}
    for child, spec in zip(children, ins):
        for letter, d in zip(spec, child.dims):
            found.setdefault(letter, []).append(d)
    letters = {letter: merge_dims(ds) for letter, ds in found.items()}
    if any(c.op == "delta" for c in children):
        letters = _propagate_pairs(children, ins, letters)
    return letters


def _needs(child: Expr, target: Sequence[DimSlot]) -> bool:
    """Whether ``child`` has an unknown dimension where ``target`` knows one."""
    return any(type(t) in _KNOWN and type(d) not in _KNOWN for d, t in zip(child.dims, target))


def _specialize_children(op: str, children: tuple[Expr, ...], arg: Any) -> tuple[Expr, ...]:
    """Children with unknown dimensions filled in from their siblings (the context)."""
    if all(c.complete for c in children):
        return children  # the common case: nothing is unknown
    return SHARING_RULES[op](children, arg)


def _share_nothing(children: tuple[Expr, ...], arg: Any) -> tuple[Expr, ...]:
    """Leaves have no children; the children of the other kinds do not share axes."""
    return children


def _share_add(children: tuple[Expr, ...], arg: Any) -> tuple[Expr, ...]:
    """Summands share every axis."""
    if len(children) < 2 or any(c.order != children[0].order for c in children):
        return children  # nothing to share, or invalid (the canonicaliser says why)
    target = tuple(merge_dims(c.dims[p] for c in children) for p in range(children[0].order))
    return tuple(specialize(c, target) if _needs(c, target) else c for c in children)


def _share_mul(children: tuple[Expr, ...], arg: Any) -> tuple[Expr, ...]:
    """Operands share the lengths of the letters they carry (across deltas too)."""
    ins = arg[0] if isinstance(arg, tuple) and len(arg) == 2 else None
    if ins is None or len(ins) != len(children) or any(len(s) != c.order for c, s in zip(children, ins)):
        return children
    letters = _letter_dims(children, ins)
    targets = [tuple(letters[x] for x in spec) for spec in ins]
    return tuple(specialize(c, t) if _needs(c, t) else c for c, t in zip(children, targets))


def _share_square(children: tuple[Expr, ...], arg: Any) -> tuple[Expr, ...]:
    """``inv``, ``det`` and ``adj`` read a square matrix: its two axes share their length."""
    if len(children) != 1 or children[0].order != 2:
        return children
    d = merge_dims(children[0].dims)
    return (specialize(children[0], (d, d)),) if _needs(children[0], (d, d)) else children


#: How the children of each kind of node share their dimensions when it is built.
SHARING_RULES: dict[str, Callable[[tuple[Expr, ...], Any], tuple[Expr, ...]]] = {
    "var": _share_nothing,
    "const": _share_nothing,
    "delta": _share_nothing,
    "add": _share_add,
    "mul": _share_mul,
    "func": _share_nothing,
    "pow": _share_nothing,
    "inv": _share_square,
    "det": _share_square,
    "adj": _share_square,
    "slice": _share_nothing,
    "embed": _share_nothing,
}


def specialize(node: Expr, target: Sequence[DimSlot]) -> Expr:
    """``node`` with its unknown dimensions replaced by the known ones of ``target``.

    Only the part of the DAG that has unknown dimensions is rebuilt (for ``x + 1``
    just the constant).  Iterative, so long chains of constants are no problem.

    Examples
    --------
    >>> one = const(1, 1)
    >>> specialize(one, (Dim("x", 1, 0),)).dims
    (Dim(name='x', order=1, axis=0),)
    """
    memo: dict[tuple[Expr, tuple], Expr] = {}
    root_key = (node, tuple(target))
    stack: list[tuple[Expr, tuple, bool]] = [(node, tuple(target), False)]
    while stack:
        current, want, expanded = stack.pop()
        key = (current, want)
        if key in memo:
            continue
        wanted = _child_targets(current, want)
        if not expanded:
            stack.append((current, want, True))
            for child, child_want in zip(current.children, wanted):
                if child_want is not None and (child, child_want) not in memo:
                    stack.append((child, child_want, False))
            continue
        leaf = LEAF_SPECIALIZERS.get(current.op)
        if leaf is not None:
            memo[key] = leaf(current, want)
        else:
            kids = [
                child if child_want is None else memo[(child, child_want)]
                for child, child_want in zip(current.children, wanted)
            ]
            memo[key] = rebuild(current, kids)
    return memo[root_key]


def _specialize_const(node: Expr, want: tuple) -> Expr:
    """A constant takes every dimension it does not know yet from ``want``."""
    dims = tuple(d if is_known(d) else (t if is_known(t) else d) for d, t in zip(node.dims, want))
    return make("const", (), node.arg, dims)


def _specialize_delta(node: Expr, want: tuple) -> Expr:
    """A delta takes each unknown pair's dimension from either axis of the pair in ``want``."""
    n = node.arg
    dims = tuple(
        node.dims[t] if is_known(node.dims[t]) else merge_dims((want[t], want[n + t])) or node.dims[t] for t in range(n)
    )
    return make("delta", (), n, dims)


#: How a leaf of each kind in DIMENSIONED_LEAVES learns its dimensions; every other
#: kind is rebuilt from its specialised children.
LEAF_SPECIALIZERS: dict[str, Callable[[Expr, tuple], Expr]] = {
    "const": _specialize_const,
    "delta": _specialize_delta,
}


def _child_targets(node: Expr, want: tuple) -> list[tuple | None]:
    """What each child of ``node`` should learn when ``node`` learns ``want``
    (``None``: the child needs nothing)."""
    targets = TARGET_RULES[node.op](node, want)
    return [t if t is not None and _needs(c, t) else None for c, t in zip(node.children, targets)]


def _targets_none(node: Expr, want: tuple) -> list[tuple | None]:
    """The children learn nothing from the node's dimensions."""
    return [None] * len(node.children)


def _targets_same(node: Expr, want: tuple) -> list[tuple | None]:
    """Summands and a function's argument have the node's dimensions."""
    return [want] * len(node.children)


def _targets_pow(node: Expr, want: tuple) -> list[tuple | None]:
    """The base has the node's dimensions; the exponent is a scalar."""
    return [want, None]


def _targets_inv(node: Expr, want: tuple) -> list[tuple | None]:
    """The inverted matrix is square, like the inverse."""
    d = merge_dims(want)
    return [(d, d)]


def _targets_adj(node: Expr, want: tuple) -> list[tuple | None]:
    """Every axis of an adjugate has the length of the (square) matrix."""
    d = merge_dims(want)
    return [(d, d)]


def _targets_mul(node: Expr, want: tuple) -> list[tuple | None]:
    """The operands learn the lengths of the output letters they carry."""
    ins, out = node.arg
    letters = _letter_dims(node.children, ins)
    for letter, d in zip(out, want):
        if is_known(d) and not is_known(letters.get(letter)):
            letters[letter] = d
    if any(c.op == "delta" for c in node.children):  # carry the new letters across deltas
        letters = _propagate_pairs(node.children, ins, letters)
    return [tuple(letters[x] for x in spec) for spec in ins]


#: What the children of each kind of node learn when the node is specialised.
TARGET_RULES: dict[str, Callable[[Expr, tuple], list[tuple | None]]] = {
    "var": _targets_none,
    "const": _targets_none,
    "delta": _targets_none,
    "add": _targets_same,
    "mul": _targets_mul,
    "func": _targets_same,
    "pow": _targets_pow,
    "inv": _targets_inv,
    "det": _targets_none,
    "adj": _targets_adj,
    "slice": _targets_none,
    "embed": _targets_none,
}


def _propagate_pairs(children, ins, letters: dict) -> dict:
    """A delta equates its paired letters: share what one of them knows."""
    pairs = [(spec[t], spec[c.arg + t]) for c, spec in zip(children, ins) if c.op == "delta" for t in range(c.arg)]
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            merged = merge_dims((letters[a], letters[b]))
            if merged is not None and (letters[a] != merged or letters[b] != merged):
                letters[a] = letters[b] = merged
                changed = True
    return letters


def _dims_var(children, arg) -> Dims:
    return var_dims(*arg)


def _dims_add(children, arg) -> Dims:
    return tuple(merge_dims(c.dims[p] for c in children) for p in range(children[0].order))


def _dims_mul(children, arg) -> Dims:
    ins, out = arg
    letters = _letter_dims(children, ins)
    return tuple(letters[x] for x in out)


def _dims_same_as_first(children, arg) -> Dims:
    return children[0].dims


def _dims_inv(children, arg) -> Dims:
    d = merge_dims(children[0].dims)
    return (d, d)


def _dims_adj(children, k) -> Dims:
    d = merge_dims(children[0].dims)
    return (d,) * (2 * k)


def _dims_scalar(children, arg) -> Dims:
    return ()


def _dims_slice(children, items) -> Dims:
    # a kept axis keeps its dimension; a sliced one is derived (None), an index drops it
    return tuple(
        d if item == FULL_AXIS else (SliceDim(d, *item) if is_known(d) else None)
        for d, item in zip(children[0].dims, items)
        if not isinstance(item, int)
    )


def _dims_embed(children, arg) -> Dims:
    items, target = arg
    child = iter(children[0].dims)
    dims = []
    for item, d in zip(items, target):
        own = None if isinstance(item, int) else next(child)
        dims.append(merge_dims((d, own)) if item == FULL_AXIS else d)
    return tuple(dims)


DIMENSION_RULES: dict[str, Callable[[tuple[Expr, ...], Any], Dims]] = {
    "var": _dims_var,
    "add": _dims_add,
    "mul": _dims_mul,
    "func": _dims_same_as_first,
    "pow": _dims_same_as_first,
    "inv": _dims_inv,
    "det": _dims_scalar,
    "adj": _dims_adj,
    "slice": _dims_slice,
    "embed": _dims_embed,
}


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
                f"cannot add expressions of different orders: {quoted(children[0])} has order "
                f"{order} but {quoted(child)} has order {child.order}"
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
        return make("const", (), (terms[0][1] * value, const_order), terms[0][0].dims)
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

    Examples
    --------
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
    return repr(letter_for(letter)) if isinstance(letter, int) else repr(letter)


def _canon_mul(children, arg):
    ins, out = arg
    if len(ins) != len(children) or not children:
        raise SemanticError("a product needs one index spec per operand and at least one operand")
    for child, spec in zip(children, ins):
        if len(spec) != child.order:
            raise SemanticError(
                f"index spec of length {len(spec)} given for {quoted(child)}, which has order {child.order}"
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
        raise SemanticError(f"the exponent {quoted(exponent)} has order {exponent.order}; exponents must be of order 0")
    return children, None, base.order


def _canon_inv(children, arg):
    (x,) = children
    if x.order != 2:
        raise SemanticError(f"inv needs a square matrix (order 2), but {quoted(x)} has order {x.order}")
    return children, None, 2


def _canon_det(children, arg):
    (x,) = children
    if x.order != 2:
        raise SemanticError(f"det needs a square matrix (order 2), but {quoted(x)} has order {x.order}")
    return children, None, 0


def default_start(step: int) -> int:
    """Where a slice with no start begins: 0 going forward, the last entry (-1) going
    backward (``x[::-1]`` is ``x[-1::-1]``, as Python reads it)."""
    return 0 if step > 0 else -1


def slice_item_text(item: tuple[int, int | None, int]) -> str:
    """``1:``, ``::2``, ``::-1``: one slice item as written between brackets (a default
    start or step left out)."""
    start, stop, step = item
    text = ("" if start == default_start(step) else str(start)) + ":" + ("" if stop is None else str(stop))
    return text + ("" if step == 1 else f":{step}")


def _canon_adj(children, arg):
    (x,) = children
    if x.order != 2:
        raise SemanticError(f"adj needs a square matrix (order 2), but {quoted(x)} has order {x.order}")
    k = _natural(arg, "the order k of adj(X, k)")
    if k < 1:
        raise SemanticError("adj(X, k) needs k >= 1 (adj(X, 1) is the adjugate; det(X) is k = 0)")
    if 2 * k > MAX_ORDER:
        raise SemanticError(f"adj(X, {k}) would have {2 * k} axes; tenscalc allows at most {MAX_ORDER}")
    return children, k, 2 * k


def slice_item(item: Any) -> int | tuple[int, int | None, int]:
    """A slice item in canonical form: an int index or ``(start, stop, step)``."""
    if isinstance(item, slice):
        item = (item.start, item.stop, item.step)
    if isinstance(item, bool):
        raise SemanticError(f"not a slice item: {item!r}")
    if isinstance(item, int):
        return item
    if isinstance(item, tuple) and len(item) == 3:
        start, stop, step = item
        step = 1 if step is None else step
        for value in (start, stop, step):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise SemanticError(f"slice bounds are integers, got {value!r}")
        if step == 0:
            raise SemanticError("a slice step cannot be zero")
        start = default_start(step) if start is None else start
        return (start, stop, step)
    raise SemanticError(f"not a slice item: {item!r}")


def _canon_slice(children, items):
    (x,) = children
    items = tuple(slice_item(i) for i in items)
    if len(items) != x.order:
        raise SemanticError(f"{len(items)} slice item(s) given for {quoted(x)}, which has order {x.order}")
    return children, items, sum(1 for i in items if not isinstance(i, int))


def _canon_embed(children, arg):
    (x,) = children
    items, target = arg
    items = tuple(slice_item(i) for i in items)
    target = tuple(target)
    if len(target) != len(items) or sum(1 for i in items if not isinstance(i, int)) != x.order:
        raise SemanticError(f"embed: {len(items)} items and {len(target)} dimensions do not fit {quoted(x)}")
    for d in target:
        if d is not None and not is_known(d) and not isinstance(d, int):
            raise SemanticError(f"not a dimension: {d!r}")
    return children, (items, target), len(items)


CANONICALIZERS = {
    "var": _canon_var,
    "const": _canon_const,
    "delta": _canon_delta,
    "add": _canon_add,
    "mul": _canon_mul,
    "func": _canon_func,
    "pow": _canon_pow,
    "inv": _canon_inv,
    "det": _canon_det,
    "adj": _canon_adj,
    "slice": _canon_slice,
    "embed": _canon_embed,
}


# --------------------------------------------------------------------------------------
# constructors (one per kind) and a few derived ones
# --------------------------------------------------------------------------------------


def var(name: str, order: int) -> Expr:
    """A tensor variable of the given order."""
    return make("var", (), (name, order))


def const(value: float, order: int = 0, dims: Sequence[DimSlot] | None = None) -> Expr:
    """A tensor of the given order filled with ``value``; its axis lengths are
    ``dims`` (one per axis), or taken from the context where it is used."""
    return make("const", (), (value, order), dims)


def const_like(value: float, node: Expr) -> Expr:
    """A constant tensor of ``node``'s order and dimensions (``0`` or ones "like" it)."""
    return make("const", (), (value, node.order), node.dims)


def delta(n: int, dims: Sequence[DimSlot] | None = None) -> Expr:
    """The order-2n identity tensor; ``dims`` gives one dimension per pair of axes
    (or one per axis, paired ones being merged), else the context does."""
    return make("delta", (), n, dims)


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


def slice_(x: Expr, items: Sequence[Any]) -> Expr:
    """``x[items]``: per axis an index or ``(start, stop, step)`` (or a Python ``slice``)."""
    return make("slice", (x,), tuple(slice_item(i) for i in items))


def embed(part: Expr, items: Sequence[Any], dims: Sequence[DimSlot]) -> Expr:
    """Zeros of dimensions ``dims`` with ``part`` written at ``items`` (a slice's transpose)."""
    return make("embed", (part,), (tuple(slice_item(i) for i in items), tuple(dims)))


def adj(x: Expr, k: int = 1) -> Expr:
    """The adjugate of ``x`` (``k = 1``), or the k-th derivative of ``det(x)``: an
    order-2k tensor with ``adj(x, k)[j1, i1, ..., jk, ik] = d^k det(x) / dx[i1, j1] ... dx[ik, jk]``.
    A polynomial in the entries of ``x``: defined (and evaluated exactly) at any rank."""
    return make("adj", (x,), k)


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
    seen: set[Expr] = set()  # nodes hash by identity: interned, equal means identical
    for root in roots:
        if root in seen:
            continue
        # a node and the iterator over its children not yet visited: resuming the
        # iterator continues where the node's walk stopped
        stack: list[tuple[Expr, Iterator[Expr]]] = [(root, iter(root.children))]
        seen.add(root)
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child.children)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order
