"""The extended convexity corpus of issue 15: one or more functions of every group the
checker missed (item 2 of the issue), with their truth, in the format of
``test_convexity_corpus.CASES``.  ``benchmarks/cvxpy_compare.py`` reads this list
beside the original corpus and the look-alike squares.

Every verdict must agree with the truth; the ones certified today must stay so.
"""

from __future__ import annotations

import pytest

import tenscalc as tc

R = "(A *(ij,j->i) x - b)"  # a residual, affine in x

# name, text, orders, wrt, assumptions, values, (truly convex, truly concave), verdict today ("" = consistent)
EXTENDED = [
    # affine precomposition inside the norm and log-sum-exp templates
    ("‖Ax − b‖₂", f"({R} *(i,i->) {R})^(1/2)", {"A": 2, "x": 1, "b": 1}, "x", None, None, (True, False), "convex"),
    (
        "LSE(Ax + b)",
        "log(exp(A *(ij,j->i) x + b) *(i,->) 1)",
        {"A": 2, "x": 1, "b": 1},
        "x",
        None,
        None,
        (True, False),
        "convex",
    ),
    # joint Gram forms: broadcast scalars, a ones column
    ("‖x‖²/t", "(x *(i,i->) x) / t", {"x": 1, "t": 0}, ["x", "t"], {"t": "positive"}, None, (True, False), "convex"),
    (
        "‖Ax − b‖²/t",
        f"({R} *(i,i->) {R}) / t",
        {"A": 2, "x": 1, "b": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        None,
        (True, False),
        "convex",
    ),
    (
        "ridge with bias in (w, c)",
        "(X *(ij,j->i) w + c *(,i->i) 1 - y) *(i,i->) (X *(ij,j->i) w + c *(,i->i) 1 - y) + lam *(,->) (w *(i,i->) w)",
        {"X": 2, "w": 1, "c": 0, "y": 1, "lam": 0},
        ["w", "c"],
        {"lam": "positive"},
        None,
        (True, False),
        "convex",
    ),
    (
        "‖Xw − y‖² in (w, y)",
        "(X *(ij,j->i) w - y) *(i,i->) (X *(ij,j->i) w - y)",
        {"X": 2, "w": 1, "y": 1},
        ["w", "y"],
        None,
        None,
        (True, False),
        "convex",
    ),
    # perspectives
    (
        "t·LSE(x/t)",
        "t *(,->) log(exp(x *(i,->i) t^(-1)) *(i,->) 1)",
        {"x": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        None,
        (True, False),
        "convex",
    ),
    (
        "−log(t² − ‖x‖²)",
        "-log(t^2 - x *(i,i->) x)",
        {"x": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        None,
        (True, False),
        "",
    ),
    # rank-one-plus-diagonal templates in other orientations
    ("(Σ√x)²", "(x^(1/2) *(i,->) 1)^2", {"x": 1}, "x", None, None, (False, True), "concave"),
    ("−log(−LSE(x))", "-log(-log(exp(x) *(i,->) 1))", {"x": 1}, "x", None, None, (True, False), "convex"),
    (
        "softmax cross-entropy, log of a quotient",
        "-log(exp(x *(i,i->) e) / (exp(x) *(i,->) 1))",
        {"x": 1, "e": 1},
        "x",
        None,
        None,
        (True, False),
        "convex",
    ),
    # matrix-inverse kernels
    (
        "xᵀY⁻¹x in Y",
        "x *(i,ij->j) inv(Y) *(j,j->) x",
        {"x": 1, "Y": 2},
        "Y",
        {"Y": "pd"},
        None,
        (True, False),
        "convex",
    ),
    (
        "tr(A X⁻¹ Aᵀ)",
        "A *(ij,jk->ik) inv(X) *(ik,ik->) A",
        {"A": 2, "X": 2},
        "X",
        {"X": "pd"},
        None,
        (True, False),
        "convex",
    ),
    # domains cut out by entrywise concave constraints
    ("Σ log(1 − x²)", "log(1 - x^2) *(i,->) 1", {"x": 1}, "x", None, None, (False, True), "concave"),
    # signs needing a common factor
    (
        "Σ x eˣ on x ≥ −2",
        "x *(i,i->i) exp(x) *(i,->) 1",
        {"x": 1},
        "x",
        {"x": (-2, None)},
        None,
        (True, False),
        "convex",
    ),
    # cusps on the domain boundary with non-affine arguments
    ("√(1 − ‖x‖²)", "(1 - x *(i,i->) x)^(1/2)", {"x": 1}, "x", None, None, (False, True), "concave"),
    # kinks: Huber regression (the adjoint vanishes at the kink) and kinks that cancel
    (
        "Huber regression",
        f"((abs({R}) - relu(abs({R}) - 1))^2 + 2 *(,i->i) relu(abs({R}) - 1)) *(i,->) 1",
        {"A": 2, "x": 1, "b": 1},
        "x",
        None,
        None,
        (True, False),
        "convex",
    ),
    (
        "|x| − relu(x) − relu(−x) ≡ 0",
        "(abs(x) - relu(x) - relu(-x)) *(i,->) 1",
        {"x": 1},
        "x",
        None,
        None,
        (True, True),
        "affine",
    ),
    # neither: look-alikes of the groups above
    (
        "sin(Ax + b)",
        "sin(A *(ij,j->i) x + b) *(i,->) 1",
        {"A": 2, "x": 1, "b": 1},
        "x",
        None,
        None,
        (False, False),
        "neither",
    ),
    (
        "‖x‖² t",
        "(x *(i,i->) x) *(,->) t",
        {"x": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        None,
        (False, False),
        "neither",
    ),
    ("Σ x eˣ", "x *(i,i->i) exp(x) *(i,->) 1", {"x": 1}, "x", None, None, (False, False), "neither"),
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


@pytest.mark.parametrize("case", EXTENDED, ids=[c[0] for c in EXTENDED])
def test_extended_corpus(case):
    name, text, orders, wrt, assumptions, values, truth, expected = case
    result = tc.check_convexity(tc.parse(text, orders), wrt, assumptions, values=values)
    assert CONSISTENT[result.verdict](*truth), f"{name}: wrong verdict {result.verdict!r}\n{result.explain()}"
    if expected:
        assert result.verdict == expected, f"{name}\n{result.explain()}"
