"""Random valid problems from the grammar, built as text.

Every generated expression is smooth where it is evaluated (random arrays from
:func:`tenscalc.testing.random_values`), so its derivatives can be compared with
finite differences: logarithms and non-integer powers only see ``2 + cos(...)``,
inverses and determinants only ``3 delta(1) + 0.1 M``.  Products get random index
specs (shared, summed, repeated and numbered letters such as ``i1``), so axis
lengths are tied in many ways; every letter of a product is carried by an operand
with a variable, so all lengths are fixed by the variables.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# names a user may pick that collide with Python and NumPy in generated code
NAMES = ["x", "y", "A", "B", "t", "W", "v1", "float", "np", "ValueError", "e", "len"]
LETTERS = ["i", "j", "k", "l", "m", "n", "p", "q", "i1", "j2"]
MAX_ORDER = 3


@dataclass
class Problem:
    text: str
    orders: dict[str, int]


class Generator:
    def __init__(self, rng: random.Random):
        self.rng = rng
        count = rng.randint(1, 3)
        names = rng.sample(NAMES, count)
        self.orders = {name: rng.choice([0, 1, 1, 2, 2]) for name in names}

    def problem(self) -> Problem:
        order = min(self.rng.choice([0, 0, 0, 1, 1, 2]), 2 * self.top)
        text = self.expr(order, self.rng.randint(1, 4))
        return Problem(text, dict(self.orders))

    # --------------------------------------------------------------------- pieces
    def number(self) -> str:
        return self.rng.choice(["2", "0.5", "3", "1.25", "0.1", "4"])

    @property
    def top(self) -> int:
        return max(self.orders.values())

    def leaf(self, order: int) -> str:
        """A variable of ``order``: one of that order, one of a higher order summed
        down by a product, or (past the highest order) an outer product of two."""
        rng = self.rng
        exact = [n for n, o in self.orders.items() if o == order]
        if exact and rng.random() < 0.7:
            return rng.choice(exact)
        higher = [n for n, o in self.orders.items() if o >= order]
        if higher:
            name = rng.choice(higher)
            ins = self.letters(self.orders[name])
            distinct = list(dict.fromkeys(ins))
            if len(distinct) >= order:
                out = rng.sample(distinct, order)
                return f"({name} *({''.join(ins)},->{''.join(out)}) {self.number()})"
            return name if self.orders[name] == order else self.leaf(order)
        left = self.top
        a, b = LETTERS[:left], LETTERS[left:order]
        return f"({self.leaf(left)} *({''.join(a)},{''.join(b)}->{''.join(a + b)}) {self.leaf(order - left)})"

    def letters(self, count: int) -> list[str]:
        pool = list(LETTERS)
        self.rng.shuffle(pool)
        picked = pool[:count]
        if count >= 2 and self.rng.random() < 0.1:
            picked[1] = picked[0]  # a repeated letter: a diagonal (square axes)
        return picked

    # --------------------------------------------------------------------- expressions
    def expr(self, order: int, depth: int) -> str:
        rng = self.rng
        if depth <= 0:
            return self.leaf(order)
        kind = rng.choice(["product", "product", "sum", "func", "power", "quotient", "neg", "leaf", "matrix", "shift"])
        sub = depth - 1
        if kind == "product":
            return self.product(order, sub)
        if kind == "sum":
            left = self.expr(order, sub)
            if rng.random() < 0.3:
                return f"{left} {rng.choice('+-')} {self.number()}"
            return f"({left}) {rng.choice('+-')} ({self.expr(order, sub)})"
        if kind == "func":
            inner = self.expr(order, sub)
            shape = rng.choice(
                [
                    "sin({})",
                    "cos({})",
                    "tanh({})",
                    "arctan({})",
                    "exp(0.3 * tanh({}))",
                    "log(2 + cos({}))",
                    "(2 + sin({}))^0.5",
                ]
            )
            letters = "".join(LETTERS[:order])
            return shape.replace("0.3 *", f"0.3 *(,{letters}->{letters})").format(inner)
        if kind == "power":
            inner = self.expr(order, sub)
            scalars = [n for n, o in self.orders.items() if o == 0]
            if scalars and rng.random() < 0.4:
                return f"(2 + cos({inner}))^({rng.choice(scalars)})"
            return f"(tanh({inner}))^{rng.choice(['2', '3'])}"  # bounded: differences stay meaningful
        if kind == "quotient":
            return f"({self.expr(order, sub)}) / (2 + cos({self.expr(order, sub)}))"
        if kind == "neg":
            return f"-({self.expr(order, sub)})"
        if kind == "shift" and order == 0 and self.top:
            return self.shifted_pair()
        if kind == "matrix" and order in (0, 2) and self.top:
            m = self.expr(2, sub)
            well_conditioned = f"3 *(,ij->ij) delta(1) + 0.1 *(,ij->ij) ({m})"
            if order == 0:
                return f"det({well_conditioned})"
            return f"inv({well_conditioned})"
        return self.leaf(order)

    def shifted_pair(self) -> str:
        """Neighbours along the first axis of a variable, ``v[1:] . f(v[:-1])``: slices
        whose derivatives are embeddings and banded (shifted diagonal) Hessians."""
        rng = self.rng
        name = rng.choice([n for n, o in self.orders.items() if o >= 1])
        rest = ", :" * (self.orders[name] - 1)
        letters = "".join(LETTERS[: self.orders[name]])
        func = rng.choice(["sin", "tanh", "cos"])
        return f"{name}[1:{rest}] *({letters},{letters}->) {func}({name}[:-1{rest}])"

    def product(self, order: int, depth: int) -> str:
        rng = self.rng
        most = MAX_ORDER - 1 if self.top else 0
        a, b = rng.randint(0, most), rng.randint(0, most)
        pool = list(LETTERS)
        rng.shuffle(pool)
        out = pool[:order]
        rest = pool[order:]
        left = [rng.choice(out + rest[:2]) for _ in range(a)]
        right = [rng.choice(out + rest[:2]) for _ in range(b)]
        missing = [letter for letter in out if letter not in left and letter not in right]
        # every output letter must come from an input
        for letter in missing:
            if rng.random() < 0.5:
                left.append(letter)
            else:
                right.append(letter)
        if len(left) > MAX_ORDER or len(right) > MAX_ORDER or (not self.top and (left or right)):
            return self.leaf(order)
        if rng.random() < 0.15 and not right:
            # a scalar factor: the one place a constant is an operand
            return f"({self.expr(len(left), depth)}) *({''.join(left)},->{''.join(out)}) {self.number()}"
        spec = f"*({''.join(left)},{''.join(right)}->{''.join(out)})"
        return f"({self.expr(len(left), depth)}) {spec} ({self.expr(len(right), depth)})"


def generate(seed: int) -> Problem:
    """One random valid problem (deterministic in ``seed``)."""
    return Generator(random.Random(seed)).problem()
