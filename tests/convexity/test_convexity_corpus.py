"""The correctness corpus of the convexity checker: functions whose curvature is known.

Every verdict must agree with the truth ("unknown" is allowed, but counted); the
cases certified today must stay certified (regressions are caught), and the
refutations the issue asks for must come with counterexamples.  Each check also
runs the numeric search against what was proven (``verify=True``): a
counterexample to a proof would be a bug and fails the test.

Run with ``-s`` to see the table and the counts.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

# name, problem text, orders, wrt, assumptions, values for the search, (truly convex, truly concave),
# the verdict the checker gives today ("" when it is only required to be consistent)
CASES = [
    (
        "least squares",
        "(A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b)",
        {"A": 2, "x": 1, "b": 1},
        "x",
        None,
        None,
        (True, False),
        "convex",
    ),
    (
        "logistic regression",
        "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1",
        {"X": 2, "y": 1, "w": 1},
        "w",
        None,
        None,
        (True, False),
        "convex",
    ),
    ("log-sum-exp", "log(exp(x) *(i,i->) 1)", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("xᵀAᵀAx", "x *(j,ij->i) A *(i,ik->k) A *(k,k->) x", {"x": 1, "A": 2}, "x", None, None, (True, False), "convex"),
    (
        "xᵀAx, A indefinite",
        "x *(i,ij->j) A *(j,j->) x",
        {"x": 1, "A": 2},
        "x",
        None,
        {"A": np.array([[1.0, 0.0], [0.0, -1.0]])},
        (False, False),
        "neither",
    ),
    ("xᵀPx, P psd", "x *(i,ij->j) P *(j,j->) x", {"x": 1, "P": 2}, "x", {"P": "psd"}, None, (True, False), "convex"),
    ("-log det X, X pd", "-log(det(X))", {"X": 2}, "X", {"X": ("symmetric", "pd")}, None, (True, False), "convex"),
    ("-log det X, no assumption", "-log(det(X))", {"X": 2}, "X", None, None, (False, False), ""),
    ("log det X, X pd", "log(det(X))", {"X": 2}, "X", {"X": "pd"}, None, (False, True), "concave"),
    (
        "-log det X, X diagonal pd",
        "-log(det(X))",
        {"X": 2},
        "X",
        {"X": ("diagonal", "pd")},
        None,
        (True, False),
        "convex",
    ),
    ("x⁴", "x^4 *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("x³", "x^3 *(i,i->) 1", {"x": 1}, "x", None, None, (False, False), "neither"),
    ("x³, x >= 0", "x^3 *(i,i->) 1", {"x": 1}, "x", {"x": "nonnegative"}, None, (True, False), "convex"),
    ("exp(x)²", "exp(x)^2 *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("Σ exp(x) + ‖x‖²", "exp(x) *(i,i->) 1 + x *(i,i->) x", {"x": 1}, "x", None, None, (True, False), "convex"),
    (
        "x log x, x > 0",
        "x *(i,i->i) log(x) *(i,i->) 1",
        {"x": 1},
        "x",
        {"x": "positive"},
        None,
        (True, False),
        "convex",
    ),
    (
        "negative entropy (domain from log)",
        "x *(i,i->i) log(x) *(i,i->) 1",
        {"x": 1},
        "x",
        None,
        None,
        (True, False),
        "convex",
    ),
    ("1/x, x > 0", "1 / x *(i,i->) 1", {"x": 1}, "x", {"x": "positive"}, None, (True, False), "convex"),
    ("1/x, no assumption", "1 / x *(i,i->) 1", {"x": 1}, "x", None, None, (False, False), ""),
    ("1/x², no assumption", "x^(-2) *(i,i->) 1", {"x": 1}, "x", None, None, (False, False), ""),
    (
        "negative harmonic mean",
        "-(1 / ((1 / x) *(i,i->) 1))",
        {"x": 1},
        "x",
        {"x": "positive"},
        None,
        (True, False),
        "convex",
    ),
    (
        "negative geometric mean",
        "-exp((log(x) *(i,->) 1) / ((x / x) *(i,->) 1))",
        {"x": 1},
        "x",
        None,
        None,
        (True, False),
        "convex",
    ),
    (
        "multinomial logistic regression",
        "log(exp(X *(ij,jk->ik) W) *(ik,k->i) 1) *(i,i->) 1 - (X *(ij,jk->ik) W) *(ik,ik->) Y",
        {"X": 2, "W": 2, "Y": 2},
        "W",
        None,
        None,
        (True, False),
        "convex",
    ),
    ("3-norm", "(abs(x)^3 *(i,i->) 1)^(1/3)", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("3-norm on x > 0", "(x^3 *(i,i->) 1)^(1/3)", {"x": 1}, "x", {"x": "positive"}, None, (True, False), "convex"),
    (
        "‖A − UVᵀ‖² in V",
        "(A - U *(ik,jk->ij) V) *(ij,ij->) (A - U *(ik,jk->ij) V)",
        {"A": 2, "U": 2, "V": 2},
        "V",
        None,
        None,
        (True, False),
        "convex",
    ),
    (
        "‖A − UVᵀ‖² jointly in U, V",
        "(A - U *(ik,jk->ij) V) *(ij,ij->) (A - U *(ik,jk->ij) V)",
        {"A": 2, "U": 2, "V": 2},
        ["U", "V"],
        None,
        None,
        (False, False),
        "",
    ),
    ("sin", "sin(x) *(i,i->) 1", {"x": 1}, "x", None, None, (False, False), ""),
    ("tanh", "tanh(x) *(i,i->) 1", {"x": 1}, "x", None, None, (False, False), ""),
    ("relu(x)²", "relu(x)^2 *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("−relu(x)", "-relu(x) *(i,i->) 1", {"x": 1}, "x", None, None, (False, True), "concave"),
    ("abs(x)", "abs(x) *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("−abs(x)", "-abs(x) *(i,i->) 1", {"x": 1}, "x", None, None, (False, True), "concave"),
    (
        "ReLU model squared loss, y > 0",
        "(y - relu(X *(ij,j->i) w))^2 *(i,i->) 1",
        {"X": 2, "y": 1, "w": 1},
        "w",
        {"y": "positive"},
        None,
        (False, False),
        "",
    ),
    (
        "ridge regression",
        "(A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b) + lam *(,i->i) x *(i,i->) x",
        {"A": 2, "x": 1, "b": 1, "lam": 0},
        "x",
        {"lam": "positive"},
        None,
        (True, False),
        "convex",
    ),
    (
        "elastic net",
        "(A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b) + lam *(,i->i) abs(x) *(i,i->) 1"
        " + mu *(,i->i) x *(i,i->) x",
        {"A": 2, "x": 1, "b": 1, "lam": 0, "mu": 0},
        "x",
        {"lam": "positive", "mu": "positive"},
        None,
        (True, False),
        "convex",
    ),
    ("−√x", "-(x^(1/2) *(i,i->) 1)", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("√x", "x^(1/2) *(i,i->) 1", {"x": 1}, "x", None, None, (False, True), "concave"),
    ("log(x)", "log(x) *(i,i->) 1", {"x": 1}, "x", None, None, (False, True), "concave"),
    (
        "log barrier of Ax <= b",
        "-(log(b - A *(ij,j->i) x) *(i,i->) 1)",
        {"A": 2, "b": 1, "x": 1},
        "x",
        None,
        None,
        (True, False),
        "convex",
    ),
    ("softplus", "log(1 + exp(x)) *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("−log(1 − ‖x‖²)", "-log(1 - x *(i,i->) x)", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("√(1 + x²)", "(1 + x^2)^(1/2) *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("affine", "a *(i,i->) x + c", {"a": 1, "x": 1, "c": 0}, "x", None, None, (True, True), "affine"),
    ("trace", "X *(ii,->) 1", {"X": 2}, "X", None, None, (True, True), "affine"),
    ("‖x − y‖² jointly", "(x - y) *(i,i->) (x - y)", {"x": 1, "y": 1}, ["x", "y"], None, None, (True, False), "convex"),
    ("xᵀy jointly", "x *(i,i->) y", {"x": 1, "y": 1}, ["x", "y"], None, None, (False, False), ""),
    ("x²/y jointly, y > 0", "x^2 / y", {"x": 0, "y": 0}, ["x", "y"], {"y": "positive"}, None, (True, False), "convex"),
    (
        "logistic regression with bias, jointly",
        "log(exp(-(y *(i,i->i) (X *(ij,j->i) w + c *(,i->i) 1))) + 1) *(i,i->) 1",
        {"X": 2, "y": 1, "w": 1, "c": 0},
        ["w", "c"],
        None,
        None,
        (True, False),
        "convex",
    ),
    (
        "relu(x − y) jointly",
        "relu(x - y) *(i,i->) 1",
        {"x": 1, "y": 1},
        ["x", "y"],
        None,
        None,
        (True, False),
        "convex",
    ),
    ("Σ |x|³", "abs(x)^3 *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("exp(−x²)", "exp(-(x^2)) *(i,i->) 1", {"x": 1}, "x", None, None, (False, False), ""),
    ("abs(abs(x) − 1)", "abs(abs(x) - 1) *(i,i->) 1", {"x": 1}, "x", None, None, (False, False), ""),
    ("(x²)^(1/2) = |x|", "(x^2)^(1/2) *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), "convex"),
    ("−(x²)^(1/2)", "-((x^2)^(1/2) *(i,i->) 1)", {"x": 1}, "x", None, None, (False, True), "concave"),
    ("(|x|^(1/2))² = |x|", "(abs(x)^(1/2))^2 *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), ""),
    ("−(|x|^(1/2))²", "-((abs(x)^(1/2))^2 *(i,i->) 1)", {"x": 1}, "x", None, None, (False, True), ""),
    ("x sign(x) = |x|", "x *(i,i->i) sign(x) *(i,i->) 1", {"x": 1}, "x", None, None, (True, False), ""),
    ("−x sign(x)", "-(x *(i,i->i) sign(x) *(i,i->) 1)", {"x": 1}, "x", None, None, (False, True), ""),
    ("tr(inv(X)), X pd", "inv(X) *(ii,->) 1", {"X": 2}, "X", {"X": "pd"}, None, (True, False), ""),
    (
        "xᵀ inv(Y) x jointly, Y pd",
        "x *(i,ij->j) inv(Y) *(j,j->) x",
        {"x": 1, "Y": 2},
        ["x", "Y"],
        {"Y": "pd"},
        None,
        (True, False),
        "",
    ),
]

CONSISTENT = {
    "convex": lambda cv, cc: cv,
    "concave": lambda cv, cc: cc,
    "affine": lambda cv, cc: cv and cc,
    "not convex": lambda cv, cc: not cv,
    "not concave": lambda cv, cc: not cc,
    "neither": lambda cv, cc: not cv and not cc,
    "unknown": lambda cv, cc: True,
}

# the refutations the issue names must come with a counterexample
MUST_REFUTE_CONVEXITY = {
    "xᵀAx, A indefinite",
    "x³",
    "‖A − UVᵀ‖² jointly in U, V",
    "sin",
    "tanh",
    "−relu(x)",
    "−abs(x)",
    "ReLU model squared loss, y > 0",
}


def _run(case):
    name, text, orders, wrt, assumptions, values, truth, expected = case
    return tc.check_convexity(tc.parse(text, orders), wrt, assumptions, values=values, verify=True)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_verdict_is_never_wrong(case):
    name, text, orders, wrt, assumptions, values, truth, expected = case
    result = _run(case)
    assert CONSISTENT[result.verdict](*truth), f"{name}: wrong verdict {result.verdict!r}\n{result.explain()}"
    if expected in ("convex", "concave", "affine"):
        assert result.verdict == expected, f"{name}: regression, no longer certified\n{result.explain()}"
        assert result.certificate is not None
    elif expected:
        assert result.verdict == expected, result.explain()
    if name in MUST_REFUTE_CONVEXITY:
        assert result.convex_counterexample is not None, result.explain()


def test_corpus_size_and_counts(capsys):
    assert len(CASES) >= 30
    rows, counts = [], {"certified": 0, "refuted": 0, "unknown": 0}
    convex_total = convex_certified = 0
    for case in CASES:
        result = _run(case)
        if result.certified:
            counts["certified"] += 1
        elif result.verdict == "unknown":
            counts["unknown"] += 1
        else:
            counts["refuted"] += 1
        if case[6][0] and not case[6][1]:
            convex_total += 1
            convex_certified += result.verdict == "convex"
        rows.append(f"  {case[0]:42s} {result.summary()}")
    with capsys.disabled():
        print("\nconvexity corpus:")
        print("\n".join(rows))
        print(
            f"{len(CASES)} functions: {counts['certified']} certified, {counts['refuted']} refuted, "
            f"{counts['unknown']} unknown; truly convex (not affine) certified convex: "
            f"{convex_certified}/{convex_total}"
        )
    assert convex_certified >= 30
