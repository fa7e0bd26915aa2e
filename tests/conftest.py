"""Shared pytest setup: make the package importable from a checkout and give tests a seeded RNG."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator, so a failing numeric test fails the same way every time."""
    return np.random.default_rng(20240601)


# ---------------------------------------------------------------------------------------
# Every derivative the suite computes must print to text that parses back, with the
# orders of its variables, to an expression with the same values (the axis-lengths
# issue).  The derivatives are recorded while a test runs and checked after it, at
# random data with distinct axis lengths; each test checks at most CHECKED_PER_TEST.

CHECKED_PER_TEST = 25
MAX_TEXT = 4_000


@pytest.fixture(autouse=True)
def derivatives_print_and_parse_back(monkeypatch):
    import tenscalc as tc
    from tenscalc.calculus import api

    recorded: list = []
    original = api.derivative

    def recording_derivative(expr, wrt, *, simplify=True, **options):
        result = original(expr, wrt, simplify=simplify, **options)
        # by a list of variables: a dict name -> derivative
        for d in result.values() if isinstance(result, dict) else (result,):
            if len(recorded) < CHECKED_PER_TEST:
                recorded.append(d)
        return result

    monkeypatch.setattr(api, "derivative", recording_derivative)
    monkeypatch.setattr(tc, "derivative", recording_derivative)
    yield
    monkeypatch.undo()
    for d in recorded:
        problem = parse_back_problem(d)
        if problem:
            pytest.fail(problem, pytrace=False)


def parse_back_problem(d) -> str | None:
    """Why ``parse(str(d))`` differs from ``d`` in value, or None when it does not."""
    import math

    import tenscalc as tc
    from tenscalc.core.nodes import topological
    from tenscalc.errors import TensCalcError
    from tenscalc.printing.text import text_length
    from tenscalc.testing import random_values

    if text_length(d) > MAX_TEXT:
        return None  # printing such a DAG repeats shared parts: covered by the printer's own tests
    if any(n.op == "const" and not math.isfinite(n.arg[0]) for n in topological(d)):
        return None  # inf and nan have no spelling in the language
    text = str(d)
    orders = {**d.variables, **d.shape_variables}
    try:
        again = tc.parse(text, orders)
    except TensCalcError as exc:
        return f"a derivative prints to text that does not parse back:\n  {text}\n  {exc}"
    try:
        values = random_values([d, again], seed=3)
    except TensCalcError:
        return None  # no consistent lengths (the expression itself cannot be evaluated)
    outcomes = []
    for e in (d, again):
        try:
            with np.errstate(all="ignore"):
                outcomes.append(np.asarray(tc.evaluate(e, values)))
        except TensCalcError as exc:
            outcomes.append(type(exc).__name__)
    a, b = outcomes
    if isinstance(a, str) or isinstance(b, str):
        return None if a == b else f"`{text}`: evaluating the derivative gave {a!r}, its text parsed back {b!r}"
    if a.shape != b.shape or not np.allclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True):
        return f"`{text}` parsed back evaluates differently (shapes {a.shape} / {b.shape})"
    return None
