"""Printing a DAG back in the tenscalc language.

``to_text(parse(s))`` re-parses (with the same orders) to the identical node.
A constant or delta whose axis lengths its context would not give back when the
text is parsed again is written with its dimensions (``1{X.0}``, ``delta(1){x.0}``,
``0{X.0, X.1}`` for a zero of X's shape); see ``written_dimensions``.
Products with more than two operands (made by the builder or the simplifier)
print as nested binary products, which re-parse to an equivalent expression.
Printing is iterative; shared subexpressions are printed once per use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..core import nodes as N
from ..core.nodes import Expr, chain_specs, topological
from ..core.text import (  # noqa: F401 - part of this module's API
    LETTERS,
    format_exact,
    format_number,
    letter_for,
    letters_for,
)

# precedence levels of the grammar: sum < product/quotient < unary minus < power < atom
SUM, TERM, FACTOR, POWER, ATOM = 0, 1, 2, 3, 4


def text_length(root: Expr) -> int:
    """Length the printed text would have, computed without building it.

    Shared subexpressions are printed once per use, so a DAG with heavy sharing
    can have exponentially long text; callers check this first.
    """
    lengths: dict[Expr, int] = {}
    for node in topological(root):
        lengths[node] = 12 + sum(lengths[c] + 8 for c in node.children)
    return lengths[root]


MAX_TEXT = 50_000_000


def to_text(root: Expr, max_length: int = MAX_TEXT, temporaries: bool = False) -> str:
    """The expression in the tenscalc language.

    With ``temporaries=True`` every subexpression that the text would repeat (and
    that is at least ``TEMPORARY_MIN_LENGTH`` characters long) is printed once, on
    its own line ``t0 = ...`` before the expression, and named where it is used.
    That text is for reading: the language itself has no assignments.

    Examples
    --------
    >>> import tenscalc as tc
    >>> str(tc.parse("A *(ab,b->a) x - 2 *(,i->i) y", {"A": 2, "x": 1, "y": 1}))
    'A *(ij,j->i) x - 2 *(,i->i) y'
    >>> f = tc.parse("tanh(A *(ij,j->i) x + b) *(i,i->) tanh(A *(ij,j->i) x + b)", {"A": 2, "x": 1, "b": 1})
    >>> print(tc.to_text(f, temporaries=True))
    t0 = tanh(b + A *(ij,j->i) x)
    t0 *(i,i->) t0
    """
    estimate = text_length(root)
    if estimate > max_length:
        from ..errors import TensCalcError

        nodes = topological(root)
        shared = sum(len(n.children) for n in nodes) > len(nodes) - 1
        why = ", because shared subexpressions are repeated in text" if shared else ""
        raise TensCalcError(
            f"the expression is too large to print as text (about {estimate:,} characters{why}); "
            "draw it or count its nodes instead"
        )
    if temporaries:
        return _with_temporaries(root)
    texts = Templates()
    flexible: dict[Expr, bool] = {}
    written = written_dimensions(root)
    for node in topological(root):
        texts[node] = _print_node(node, texts, written)
        flexible[node] = node not in written and _order_from_context(node, flexible)
    text = texts.text(root)
    if flexible[root] and root.order > 0:
        # Only constants: as text its order would default to 0.  Scaling a ones
        # tensor of the right order states the order (products fix their operands'
        # orders, so this can only happen at the root).
        letters = letters_for(tuple(range(root.order)))
        text = f"({text}) *(,{letters}->{letters}) 1"
    return text


#: a mark in a template: where the text of another template goes
MARK = "\x00"
#: texts up to this length are copied into their parents' templates; longer ones are marked
INLINE = 256


class Templates(Mapping[Expr, tuple[str, int]]):
    """The printed nodes as templates: a parent's text holds a mark where a long
    child's text goes, and the marks are filled in once, at the end.

    Formatting each node's whole text into its parent's copied every text once
    per ancestor: memory and time quadratic in depth (a 20,000-deep ``sin(``
    needed 1 GB).  Reading ``templates[node]`` gives ``(text, precedence)`` as the
    printers expect, the text being the node's own for short texts and a mark
    otherwise (its first and last characters, the rest a key between two
    ``MARK``s); ``text(node)`` writes the whole text, in time linear in its length.

    >>> import tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> texts = Templates()
    >>> texts[x] = ("x" * 300, ATOM)
    >>> texts[x][0] == "x" * 300, texts[x][0][0], texts[x][0][-1]
    (False, 'x', 'x')
    >>> texts.text(x) == "x" * 300
    True
    """

    def __init__(self) -> None:
        self._templates: dict[int, str] = {}
        self._entries: dict[Expr, tuple[str, int]] = {}
        self._lengths: dict[int, int] = {}

    def add(self, template: str) -> tuple[str, int]:
        """(what a parent writes for ``template``, its expanded length)."""
        length = self.expanded_length(template)
        if length <= INLINE:
            return template, length
        # the first and last characters stay visible, so that a printer can still ask
        # whether a text starts with "-" or ends with "'" (neither is ever a mark: a
        # nested mark shows its own first and last characters)
        key = len(self._templates)
        self._templates[key] = template[1:-1]
        self._lengths[key] = length - 2
        return f"{template[0]}{MARK}{key}{MARK}{template[-1]}", length

    def expanded_length(self, template: str) -> int:
        """The length of ``template`` once its marks are filled in."""
        if MARK not in template:
            return len(template)
        parts = template.split(MARK)
        return sum(len(p) for p in parts[::2]) + sum(self._lengths[int(k)] for k in parts[1::2])

    def __setitem__(self, node: Expr, entry: tuple[str, int]) -> None:
        self._entries[node] = (self.add(entry[0])[0], entry[1])

    def __getitem__(self, node: Expr) -> tuple[str, int]:
        return self._entries[node]

    def __iter__(self) -> Iterator[Expr]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def length(self, node: Expr) -> int:
        """The length of ``node``'s whole text."""
        return self.expanded_length(self._entries[node][0])

    def text(self, node: Expr) -> str:
        return self.expand(self._entries[node][0])

    def expand(self, template: str) -> str:
        """``template`` with every mark filled in (iteratively: no recursion in depth)."""
        out: list[str] = []
        stack = [(template.split(MARK), 0)]
        while stack:
            parts, i = stack.pop()
            while i < len(parts):
                if i % 2:
                    stack.append((parts, i + 1))
                    parts, i = self._templates[int(parts[i])].split(MARK), 0
                    continue
                out.append(parts[i])
                i += 1
        return "".join(out)


def _print_node(node: Expr, texts: Mapping[Expr, tuple[str, int]], written: set[Expr]) -> tuple[str, int]:
    """The text of ``node`` from its children's, with its dimensions where they are written."""
    text, precedence = TEXT_PRINTERS[node.op](node, texts)
    return (text + dimensions_text(node), precedence) if node in written else (text, precedence)


def dimensions_text(node: Expr) -> str:
    """``{X.0, x.0}``: the dimensions of a constant (one per axis) or delta (one per pair)."""
    dims = node.dims if node.op == "const" else node.dims[: node.arg]
    return "{" + ", ".join(str(d) if N.is_known(d) else "_" for d in dims) + "}"


def written_dimensions(root: Expr) -> set[Expr]:
    """The constants and deltas of ``root`` that must be printed with their dimensions.

    Parsing gives a constant or delta written without dimensions the dimensions of
    its context, exactly as the node factory specialises an unknown dimension.  So
    the question "would the text give this length back?" is answered by the
    factory itself: rebuild the DAG with every constant's and delta's known
    dimensions replaced by a mark of its own, and see which marks survive.  Those
    nodes are written with their dimensions; repeat until nothing is left open
    (writing one can settle others through a shared index).
    """
    leaves = [n for n in topological(root) if n.op in N.DIMENSIONED_LEAVES and any(map(N.is_known, n.dims))]
    written: set[Expr] = set()
    while leaves:
        tags = {n.serial: n for n in leaves if n not in written}
        if not tags:
            break
        open_marks = _surviving_marks(root, written)
        settled = [tags[t] for t in open_marks if t in tags]
        if not settled:
            break
        written.update(settled)
    return written


def _surviving_marks(root: Expr, written: set[Expr]) -> set[int]:
    """Rebuild ``root`` with the dimensions of unwritten constants and deltas
    replaced by marks (their serial numbers); the marks nothing resolved."""
    rebuilt: dict[Expr, Expr] = {}
    for node in topological(root):
        if node.op in N.DIMENSIONED_LEAVES:
            if node in written or not any(map(N.is_known, node.dims)):
                new = node
            else:
                count = node.order if node.op == "const" else node.arg
                new = N.make(node.op, (), node.arg, (node.serial,) * count)
        else:
            children = [rebuilt[c] for c in node.children]
            new = node if all(a is b for a, b in zip(children, node.children)) else N.rebuild(node, children)
        rebuilt[node] = new
    return {d for n in topological(rebuilt[root]) if n.op in N.DIMENSIONED_LEAVES for d in n.dims if type(d) is int}


TEMPORARY_MIN_LENGTH = 24


def _with_temporaries(root: Expr) -> str:
    """``t0 = ...`` lines for the repeated subexpressions, then the expression.

    Parents are judged first, so the largest repeated piece gets a name; a part
    of it that is also used elsewhere gets its own.
    """
    nodes = topological(root)
    written = written_dimensions(root)
    taken = {name for name, _ in root.varset}
    prefix = "t" if not any(name.startswith("t") and name[1:].isdigit() for name in taken) else "tmp"
    flexible: dict[Expr, bool] = {}
    full = Templates()
    for node in nodes:
        flexible[node] = node not in written and _order_from_context(node, flexible)
        full[node] = _print_node(node, full, written)
    named: set[Expr] = set()
    uses: dict[Expr, int] = {root: 1}
    for node in reversed(nodes):  # parents before children
        if (
            node is not root
            and node.op not in ("var", "const", "delta")
            and not flexible[node]
            and uses.get(node, 0) >= 2
            and full.length(node) >= TEMPORARY_MIN_LENGTH
        ):
            named.add(node)
        times = 1 if node in named else uses.get(node, 0)
        for child in node.children:
            uses[child] = uses.get(child, 0) + times
    texts = Templates()
    lines = []
    for node in nodes:
        texts[node] = _print_node(node, texts, written)
        if node in named:
            name = f"{prefix}{len(lines)}"
            lines.append(f"{name} = {texts.text(node)}")
            texts[node] = (name, ATOM)
    lines.append(texts.text(root))
    return "\n".join(lines)


def _order_from_context(node: Expr, flexible: dict[Expr, bool]) -> bool:
    """Whether the printed text of ``node`` takes its order from its context
    (it is built of constants only, without a product or a variable)."""
    if node.op == "const":
        return True
    if node.op in ("add", "func"):
        return all(flexible[c] for c in node.children)
    if node.op == "pow":
        return flexible[node.children[0]]
    return False


def _wrap(entry: tuple[str, int], minimum: int) -> str:
    text, prec = entry
    return text if prec >= minimum else f"({text})"


def _print_var(node, texts):
    return node.arg[0], ATOM


def _print_const(node, texts):
    value = node.arg[0]
    text = format_exact(value) if node.order == 0 else format_number(value)  # (1/3); a tensor may carry {dims}
    return (text, FACTOR) if text.startswith("-") else (text, ATOM)


def _print_delta(node, texts):
    return f"delta({node.arg})", ATOM


def _print_func(node, texts):
    return f"{node.arg}({texts[node.children[0]][0]})", ATOM


def _print_matrix_func(node, texts):
    return f"{node.op}({texts[node.children[0]][0]})", ATOM


def _print_adj(node, texts):
    k = "" if node.arg == 1 else f", {node.arg}"
    return f"adj({texts[node.children[0]][0]}{k})", ATOM


def _print_pow(node, texts):
    base, exponent = (texts[c] for c in node.children)
    exp_text = exponent[0] if exponent[1] >= ATOM else f"({exponent[0]})"
    return f"{_wrap(base, ATOM)}^{exp_text}", POWER


def _print_add(node, texts):
    parts: list[str] = []
    for i, (child, coef) in enumerate(zip(node.children, node.arg)):
        entry = texts[child]
        if coef == 1 and i > 0:
            parts.append(" + " + _wrap(entry, TERM))
        elif coef == 1:
            parts.append(_wrap(entry, TERM))
        elif coef == -1 and i > 0:
            parts.append(" - " + _wrap(entry, TERM))
        elif coef == -1:
            parts.append("-" + _wrap(entry, POWER))
        else:
            spec = letters_for(tuple(range(child.order)))
            magnitude = format_exact(abs(coef))
            scaled = f"{magnitude} *(,{spec}->{spec}) {_wrap(entry, FACTOR)}"
            if i == 0:
                parts.append(("-" if coef < 0 else "") + (scaled if coef > 0 else f"({scaled})"))
            else:
                parts.append((" - " if coef < 0 else " + ") + scaled)
    if len(node.children) == 1:
        return "".join(parts), FACTOR if node.arg[0] == -1 else TERM
    return "".join(parts), SUM


def _is_quotient(node: Expr) -> bool:
    if len(node.children) != 2:
        return False
    (s1, s2), out = node.arg
    denominator = node.children[1]
    return (
        s1 == s2 == out
        and len(set(out)) == len(out)
        and denominator.op == "pow"
        and denominator.children[1].op == "const"
        and denominator.children[1].arg[0] == -1
        and type(denominator.children[1].arg[0]) is int
    )


def _print_mul(node, texts):
    if _is_quotient(node):
        numerator = texts[node.children[0]]
        denominator = texts[node.children[1].children[0]]
        return f"{_wrap(numerator, TERM)} / {_wrap(denominator, FACTOR)}", TERM
    ins, out = node.arg
    if len(node.children) == 1:  # unary product: write it with a scalar 1
        operand = texts[node.children[0]]
        return f"{_wrap(operand, TERM)} *({letters_for(ins[0])},->{letters_for(out)}) 1", TERM
    # n operands: print as a left-nested chain of binary products, in an order
    # that keeps the intermediates small (re-parsed text should evaluate well)
    order = chain_order(ins, out)
    children = [node.children[k] for k in order]
    ins = [ins[k] for k in order]
    left_text = _wrap(texts[children[0]], TERM)
    left_spec = ins[0]
    for k, result in enumerate(chain_specs(ins, out), start=1):
        right_spec = ins[k]
        right_text = _wrap(texts[children[k]], FACTOR)
        left_text = (
            f"{left_text} *({letters_for(left_spec)},{letters_for(right_spec)}->{letters_for(result)}) {right_text}"
        )
        left_spec = result
    return left_text, TERM


def _letters_after(k: int, current: set, ins, out, remaining: list[int]) -> int:
    """Letters the intermediate keeps if operand ``k`` is contracted next."""
    later = set(out).union(*(ins[j] for j in remaining if j != k))
    return len((current | set(ins[k])) & later)


def chain_order(ins, out) -> list[int]:
    """Greedy operand order for printing: start with the largest operand, then
    always take the operand that leaves the fewest letters in the intermediate."""
    if len(ins) <= 2:
        return list(range(len(ins)))
    remaining = list(range(len(ins)))
    first = max(remaining, key=lambda k: (len(set(ins[k])), -k))
    chosen = [first]
    remaining.remove(first)
    current = set(ins[first])
    while remaining:
        best = min(
            remaining,
            key=lambda k: (_letters_after(k, current, ins, out, remaining), -len(current & set(ins[k])), k),
        )
        chosen.append(best)
        remaining.remove(best)
        later = set(out).union(*(ins[j] for j in remaining))
        current = (current | set(ins[best])) & later
    return chosen


def slice_text(items) -> str:
    """``1:, 0, ::2``: slice items as written between brackets."""
    parts = []
    for item in items:
        if isinstance(item, int):
            parts.append(str(item))
            continue
        parts.append(N.slice_item_text(item))
    return ", ".join(parts)


def _print_slice(node, texts):
    return f"{_wrap(texts[node.children[0]], ATOM)}[{slice_text(node.arg)}]", POWER


def _print_embed(node, texts):
    items, dims = node.arg
    written = ", ".join(str(d) if N.is_known(d) else "_" for d in dims)
    return f"embed({texts[node.children[0]][0]})[{slice_text(items)}]{{{written}}}", ATOM


TEXT_PRINTERS = {
    "var": _print_var,
    "const": _print_const,
    "delta": _print_delta,
    "add": _print_add,
    "mul": _print_mul,
    "func": _print_func,
    "pow": _print_pow,
    "inv": _print_matrix_func,
    "det": _print_matrix_func,
    "adj": _print_adj,
    "slice": _print_slice,
    "embed": _print_embed,
}
