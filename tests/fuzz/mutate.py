"""Inputs for the lenient checks: mutations of the documented examples and of the
texts the tests parse, and random strings."""

from __future__ import annotations

import ast
import functools
import pathlib
import random
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(tenscalc[\w-]*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
PARSE_CALL = re.compile(r"""parse(?:_problem)?\(\s*"([^"\\\n]+)"\s*(?:,\s*(\{[^{}\n]*\}))?""")

# pieces random strings and insertions are made of: the language's tokens, and a
# few characters that must be refused cleanly (unicode digits, a NUL, a formula sign)
TOKENS = [
    "x",
    "y",
    "A",
    "B",
    "c",
    "t",
    " ",
    " ",
    "(",
    ")",
    "*(",
    ",",
    "->",
    "-",
    ">",
    "+",
    "/",
    "^",
    "i",
    "j",
    "ij",
    "ji",
    "k",
    "ii",
    "i1",
    "1",
    "2",
    "0",
    "0.5",
    "1e3",
    ".",
    "e",
    "#",
    "\n",
    "sin(",
    "log(",
    "exp(",
    "det(",
    "inv(",
    "adj(",
    "delta",
    "delta(1)",
    "delta(0)",
    "declare ",
    "expression ",
    "derivative wrt ",
    "abs(",
    "relu(",
    "sign(",
    "tanh(",
    "psd",
    " (0, 1)",
    "²",
    "٣",
    "\x00",
    "∑",
    "É",
    "_",
    "'",
    '"',
    "\\",
    "{",
    "}",
]
HOSTILE_NUMBERS = [
    "1e400",
    "1e-400",
    "9" * 350,
    "9" * 320,
    "2^2222",
    "2^2824331246",
    "0",
    "-0.0",
    "1e308",
    "10^300",
    "0^(-1)",
    "(-8)^0.5",
    "4294967296",
    "65",
    "64",
    "33",
]


def _examples_from_docs() -> list[tuple[str, dict | None]]:
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for _kind, body in FENCE.findall(page.read_text(encoding="utf-8")):
            found.append((body, None))
    return found


def _examples_from_tests() -> list[tuple[str, dict | None]]:
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for text, orders in PARSE_CALL.findall(path.read_text(encoding="utf-8")):
            try:
                parsed = ast.literal_eval(orders) if orders else None
            except (ValueError, SyntaxError):
                parsed = None
            if parsed is None or (isinstance(parsed, dict) and all(isinstance(v, int) for v in parsed.values())):
                found.append((text, parsed))
    return found


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[tuple[str, dict | None], ...]:
    """The seed inputs: every tenscalc block of the docs and every literal the tests parse."""
    return tuple(_examples_from_docs() + _examples_from_tests())


def random_string(rng: random.Random) -> str:
    return "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 25)))


def mutate(text: str, rng: random.Random) -> str:
    """One to three random edits of ``text``."""
    for _ in range(rng.randint(1, 3)):
        text = rng.choice(_MUTATIONS)(text, rng)
    return text


def _position(text: str, rng: random.Random) -> int:
    return rng.randint(0, len(text))


def _delete(text, rng):
    a = _position(text, rng)
    return text[:a] + text[a + rng.randint(1, 4) :]


def _insert(text, rng):
    a = _position(text, rng)
    return text[:a] + rng.choice(TOKENS) + text[a:]


def _replace_number(text, rng):
    numbers = list(re.finditer(r"\d+(\.\d*)?(e-?\d+)?", text))
    if not numbers:
        return _insert(text, rng)
    m = rng.choice(numbers)
    return text[: m.start()] + rng.choice(HOSTILE_NUMBERS) + text[m.end() :]


def _duplicate(text, rng):
    a = _position(text, rng)
    b = min(len(text), a + rng.randint(1, 20))
    return text[:b] + text[a:b] + text[b:]


def _nest(text, rng):
    """Wrap a random variable or the whole text in many levels of a function or parentheses."""
    depth = rng.choice([50, 400, 1500])
    opener = rng.choice(["(", "sin(", "-(", "exp(", "tanh("])
    names = list(re.finditer(r"\b[A-Za-z]\w*\b", text))
    names = [m for m in names if m.group() not in ("declare", "expression", "derivative", "wrt", "delta")]
    if names and rng.random() < 0.7:
        m = rng.choice(names)
        return text[: m.start()] + opener * depth + m.group() + ")" * depth + text[m.end() :]
    return opener * depth + text + ")" * depth


def _swap_letters(text, rng):
    specs = list(re.finditer(r"\*\(([^)]*)\)", text))
    if not specs:
        return _insert(text, rng)
    m = rng.choice(specs)
    inner = list(m.group(1))
    letters = [k for k, ch in enumerate(inner) if ch.isalpha()]
    if letters:
        k = rng.choice(letters)
        inner[k] = rng.choice(["i", "j", "k", "z", "I", "²", "1", "i1", ""])
    return text[: m.start(1)] + "".join(inner) + text[m.end(1) :]


def _change_order(text, rng):
    declared = list(re.finditer(r"(declare[^\n]*?\b[A-Za-z]\w*\s+)(\d+)", text))
    if not declared:
        return _replace_number(text, rng)
    m = rng.choice(declared)
    return text[: m.start(2)] + rng.choice(["0", "1", "2", "3", "14", "33", "64", "65", "99999"]) + text[m.end(2) :]


_MUTATIONS = [_delete, _insert, _replace_number, _duplicate, _nest, _swap_letters, _change_order, _insert]
