"""Printing a DAG back in the tenscalc language.

``to_text(parse(s))`` re-parses (with the same orders) to the identical node.
Products with more than two operands (made by the builder or the simplifier)
print as nested binary products, which re-parse to an equivalent expression.
Printing is iterative; shared subexpressions are printed once per use.
"""

from __future__ import annotations

from .nodes import Expr, chain_specs, topological

# precedence levels of the grammar: sum < product/quotient < unary minus < power < atom
SUM, TERM, FACTOR, POWER, ATOM = 0, 1, 2, 3, 4
LETTERS = "ijklmnopqrstuvwxyzabcdefgh"


def letter_for(k: int) -> str:
    """The index letter for int ``k``: ``i`` .. ``h``, then the same letters with a
    number (``i1`` .. ``h1``, ``i2`` ...), which the parser reads back as one index.

    >>> letter_for(0), letter_for(25), letter_for(26), letter_for(53)
    ('i', 'h', 'i1', 'j2')
    """
    if k < len(LETTERS):
        return LETTERS[k]
    return f"{LETTERS[k % len(LETTERS)]}{k // len(LETTERS)}"


def letters_for(spec: tuple[int, ...]) -> str:
    """Index letters for an int spec (0 -> i, 1 -> j, ...).

    >>> letters_for((0, 1, 27))
    'ijj1'
    """
    return "".join(letter_for(k) for k in spec)


def format_number(value: int | float) -> str:
    """A number as the language writes it (``repr`` keeps floats exact).  ``inf``
    and ``nan`` have no spelling in the language; they print as Python does."""
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def text_length(root: Expr) -> int:
    """Length the printed text would have, computed without building it.

    Shared subexpressions are printed once per use, so a DAG with heavy sharing
    can have exponentially long text; callers check this first.
    """
    lengths: dict[int, int] = {}
    for node in topological(root):
        lengths[id(node)] = 12 + sum(lengths[id(c)] + 8 for c in node.children)
    return lengths[id(root)]


MAX_TEXT = 50_000_000


def to_text(root: Expr, max_length: int = MAX_TEXT) -> str:
    """The expression in the tenscalc language.

    >>> import tenscalc as tc
    >>> str(tc.parse("A *(ab,b->a) x - 2 *(,i->i) y", {"A": 2, "x": 1, "y": 1}))
    'A *(ij,j->i) x - 2 *(,i->i) y'
    """
    estimate = text_length(root)
    if estimate > max_length:
        from .errors import TensCalcError

        nodes = topological(root)
        shared = sum(len(n.children) for n in nodes) > len(nodes) - 1
        why = ", because shared subexpressions are repeated in text" if shared else ""
        raise TensCalcError(
            f"the expression is too large to print as text (about {estimate:,} characters{why}); "
            "draw it or count its nodes instead"
        )
    texts: dict[int, tuple[str, int]] = {}
    flexible: dict[int, bool] = {}
    for node in topological(root):
        texts[id(node)] = _PRINTERS[node.op](node, texts)
        flexible[id(node)] = _order_from_context(node, flexible)
    text = texts[id(root)][0]
    if flexible[id(root)] and root.order > 0:
        # Only constants: as text its order would default to 0.  Scaling a ones
        # tensor of the right order states the order (products fix their operands'
        # orders, so this can only happen at the root).
        letters = letters_for(tuple(range(root.order)))
        text = f"({text}) *(,{letters}->{letters}) 1"
    return text


def _order_from_context(node: Expr, flexible: dict[int, bool]) -> bool:
    """Whether the printed text of ``node`` takes its order from its context
    (it is built of constants only, without a product or a variable)."""
    if node.op == "const":
        return True
    if node.op in ("add", "func"):
        return all(flexible[id(c)] for c in node.children)
    if node.op == "pow":
        return flexible[id(node.children[0])]
    return False


def _wrap(entry: tuple[str, int], minimum: int) -> str:
    text, prec = entry
    return text if prec >= minimum else f"({text})"


def _print_var(node, texts):
    return node.arg[0], ATOM


def _print_const(node, texts):
    value = node.arg[0]
    text = format_number(value)
    return (text, FACTOR) if text.startswith("-") else (text, ATOM)


def _print_delta(node, texts):
    return f"delta({node.arg})", ATOM


def _print_func(node, texts):
    return f"{node.arg}({texts[id(node.children[0])][0]})", ATOM


def _print_matrix_func(node, texts):
    return f"{node.op}({texts[id(node.children[0])][0]})", ATOM


def _print_pow(node, texts):
    base, exponent = (texts[id(c)] for c in node.children)
    exp_text = exponent[0] if exponent[1] >= ATOM else f"({exponent[0]})"
    return f"{_wrap(base, ATOM)}^{exp_text}", POWER


def _print_add(node, texts):
    parts: list[str] = []
    for i, (child, coef) in enumerate(zip(node.children, node.arg)):
        entry = texts[id(child)]
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
            magnitude = format_number(abs(coef))
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
        numerator = texts[id(node.children[0])]
        denominator = texts[id(node.children[1].children[0])]
        return f"{_wrap(numerator, TERM)} / {_wrap(denominator, FACTOR)}", TERM
    ins, out = node.arg
    if len(node.children) == 1:  # unary product: write it with a scalar 1
        operand = texts[id(node.children[0])]
        return f"{_wrap(operand, TERM)} *({letters_for(ins[0])},->{letters_for(out)}) 1", TERM
    # n operands: print as a left-nested chain of binary products, in an order
    # that keeps the intermediates small (re-parsed text should evaluate well)
    order = _chain_order(ins, out)
    children = [node.children[k] for k in order]
    ins = [ins[k] for k in order]
    left_text = _wrap(texts[id(children[0])], TERM)
    left_spec = ins[0]
    for k, result in enumerate(chain_specs(ins, out), start=1):
        right_spec = ins[k]
        right_text = _wrap(texts[id(children[k])], FACTOR)
        left_text = (
            f"{left_text} *({letters_for(left_spec)},{letters_for(right_spec)}->{letters_for(result)}) {right_text}"
        )
        left_spec = result
    return left_text, TERM


def _letters_after(k: int, current: set, ins, out, remaining: list[int]) -> int:
    """Letters the intermediate keeps if operand ``k`` is contracted next."""
    later = set(out).union(*(ins[j] for j in remaining if j != k))
    return len((current | set(ins[k])) & later)


def _chain_order(ins, out) -> list[int]:
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


_PRINTERS = {
    "var": _print_var,
    "const": _print_const,
    "delta": _print_delta,
    "add": _print_add,
    "mul": _print_mul,
    "func": _print_func,
    "pow": _print_pow,
    "inv": _print_matrix_func,
    "det": _print_matrix_func,
}
