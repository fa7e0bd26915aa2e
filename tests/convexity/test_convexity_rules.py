"""The rules added for issue 15, each with functions it must certify and look-alikes it
must not (the truth of every case is stated; a negative case must never be certified on
the wrong side, and where a counterexample is known to exist it must be found).

Every check also runs the numeric cross-check of what was proven: a false proof
raises InternalError and fails the test.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

# name, text, orders, wrt, assumptions, (truly convex, truly concave), required verdict ("" = consistent only)
POSITIVE = [
    # affine precomposition inside the norm and log-sum-exp templates
    (
        "‖Ax − b‖₂",
        "((A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b))^(1/2)",
        {"A": 2, "x": 1, "b": 1},
        "x",
        None,
        "convex",
    ),
    ("LSE(Ax + b)", "log(exp(A *(ij,j->i) x + b) *(i,->) 1)", {"A": 2, "x": 1, "b": 1}, "x", None, "convex"),
    ("−log(c − aᵀx)", "-log(c - a *(i,i->) x)", {"a": 1, "x": 1, "c": 0}, "x", None, "convex"),
    (
        "softmax cross-entropy as a log of a quotient",
        "-log(exp(x *(i,i->) e) / (exp(x) *(i,->) 1))",
        {"x": 1, "e": 1},
        "x",
        None,
        "convex",
    ),
    # joint Gram forms: ones column, broadcast scalar
    (
        "ridge with bias in (w, c)",
        "(X *(ij,j->i) w + c *(,i->i) 1 - y) *(i,i->) (X *(ij,j->i) w + c *(,i->i) 1 - y) + lam *(,->) (w *(i,i->) w)",
        {"X": 2, "w": 1, "c": 0, "y": 1, "lam": 0},
        ["w", "c"],
        {"lam": "positive"},
        "convex",
    ),
    (
        "‖Xw − y‖² in (w, y)",
        "(X *(ij,j->i) w - y) *(i,i->) (X *(ij,j->i) w - y)",
        {"X": 2, "w": 1, "y": 1},
        ["w", "y"],
        None,
        "convex",
    ),
    ("‖x‖²/t", "(x *(i,i->) x) / t", {"x": 1, "t": 0}, ["x", "t"], {"t": "positive"}, "convex"),
    (
        "‖Ax − b‖²/t",
        "((A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b)) / t",
        {"A": 2, "x": 1, "b": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        "convex",
    ),
    ("−‖x‖²/t, t < 0", "(x *(i,i->) x) / t", {"x": 1, "t": 0}, ["x", "t"], {"t": "negative"}, "concave"),
    # precomposition keeps the interval of the affine node: Σ y > 0 for y > 0
    (
        "(Σx)²/(Σy), y > 0",
        "(x *(i,->) 1)^2 / (y *(i,->) 1)",
        {"x": 1, "y": 1},
        ["x", "y"],
        {"y": "positive"},
        "convex",
    ),
    # domains cut out by entrywise concave constraints
    ("Σ log(1 − x²)", "log(1 - x^2) *(i,->) 1", {"x": 1}, "x", None, "concave"),
    ("−Σ log(4 − x²)", "-(log(4 - x^2) *(i,->) 1)", {"x": 1}, "x", None, "convex"),
    # common factors
    ("Σ x eˣ on x ≥ −2", "x *(i,i->i) exp(x) *(i,->) 1", {"x": 1}, "x", {"x": (-2, None)}, "convex"),
    # cusps on the boundary of {u >= 0} with u concave
    ("√(1 − ‖x‖²)", "(1 - x *(i,i->) x)^(1/2)", {"x": 1}, "x", None, "concave"),
    # scalar composition h(g(x))
    ("−log(−LSE(x))", "-log(-log(exp(x) *(i,->) 1))", {"x": 1}, "x", None, "convex"),
    ("−√(−LSE(x))", "-(-log(exp(x) *(i,->) 1))^(1/2)", {"x": 1}, "x", None, "convex"),
    # matrix-inverse kernels: pairings through a transposition of symmetric operands
    ("xᵀY⁻¹x in Y", "x *(i,ij->j) inv(Y) *(j,j->) x", {"x": 1, "Y": 2}, "Y", {"Y": "pd"}, "convex"),
    ("−xᵀY⁻¹x in Y", "-(x *(i,ij->j) inv(Y) *(j,j->) x)", {"x": 1, "Y": 2}, "Y", {"Y": "pd"}, "concave"),
    ("tr(A X⁻¹ Aᵀ)", "A *(ij,jk->ik) inv(X) *(ik,ik->) A", {"A": 2, "X": 2}, "X", {"X": "pd"}, "convex"),
    ("tr(X⁻¹)", "inv(X) *(ii,->) 1", {"X": 2}, "X", {"X": "pd"}, "convex"),
    # rank-one-plus-diagonal the other way: the sum inside the diagonal term is the denominator
    ("(Σ√x)²", "(x^(1/2) *(i,->) 1)^2", {"x": 1}, "x", None, "concave"),
    ("(Σ x^(1/3))³", "(x^(1/3) *(i,->) 1)^3", {"x": 1}, "x", None, "concave"),
    ("−(Σ√x)²", "-((x^(1/2) *(i,->) 1)^2)", {"x": 1}, "x", None, "convex"),
    # vector kinks whose adjoint vanishes at the kink: Huber (|r| = 1 solved from the kink's equation)
    ("Huber", "((abs(x) - relu(abs(x) - 1))^2 + 2 *(,i->i) relu(abs(x) - 1)) *(i,->) 1", {"x": 1}, "x", None, "convex"),
    (
        "Huber regression",
        "((abs(A *(ij,j->i) x - b) - relu(abs(A *(ij,j->i) x - b) - 1))^2"
        " + 2 *(,i->i) relu(abs(A *(ij,j->i) x - b) - 1)) *(i,->) 1",
        {"A": 2, "x": 1, "b": 1},
        "x",
        None,
        "convex",
    ),
    # perspectives t g(x/t), t > 0
    (
        "t·LSE(x/t)",
        "t *(,->) log(exp(x *(i,->i) t^(-1)) *(i,->) 1)",
        {"x": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        "convex",
    ),
    (
        "−t Σ log(x/t) (relative entropy)",
        "t *(,->) (-(log(x *(i,->i) t^(-1)) *(i,->) 1))",
        {"x": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        "convex",
    ),
    # a kink whose adjoint is a sign of the kink node: sign(|x|) is 1 beside x = 0, not 0
    ("||x||", "abs(abs(x)) *(i,->) 1", {"x": 1}, "x", None, "convex"),
    ("−||x||", "-(abs(abs(x)) *(i,->) 1)", {"x": 1}, "x", None, "concave"),
    # kinks that cancel or combine
    ("|x| − relu(x) − relu(−x) ≡ 0", "(abs(x) - relu(x) - relu(-x)) *(i,->) 1", {"x": 1}, "x", None, "affine"),
    ("relu(x) − relu(−x) = x", "(relu(x) - relu(-x)) *(i,->) 1", {"x": 1}, "x", None, "affine"),
    ("|x| − relu(−x) = relu(x)", "(abs(x) - relu(-x)) *(i,->) 1", {"x": 1}, "x", None, "convex"),
    (
        "|x| − 2 relu(x) − relu(−x) = −relu(x)",
        "(abs(x) - 2 *(,i->i) relu(x) - relu(-x)) *(i,->) 1",
        {"x": 1},
        "x",
        None,
        "concave",
    ),
]

NEGATIVE = [
    # look-alikes of the precomposition: the outer function is not convex
    (
        "sin(Ax + b) summed",
        "sin(A *(ij,j->i) x + b) *(i,->) 1",
        {"A": 2, "x": 1, "b": 1},
        "x",
        None,
        (False, False),
        "neither",
    ),
    (
        "−‖Ax − b‖₂",
        "-(((A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b))^(1/2))",
        {"A": 2, "x": 1, "b": 1},
        "x",
        None,
        (False, True),
        "concave",
    ),
    ("(Ax)³ summed", "(A *(ij,j->i) x)^3 *(i,->) 1", {"A": 2, "x": 1}, "x", None, (False, False), "neither"),
    # quadratic over linear look-alikes
    ("‖x‖² t", "(x *(i,i->) x) *(,->) t", {"x": 1, "t": 0}, ["x", "t"], {"t": "positive"}, (False, False), "neither"),
    ("‖x‖²/t, t of any sign", "(x *(i,i->) x) / t", {"x": 1, "t": 0}, ["x", "t"], None, (False, False), "neither"),
    ("‖x‖²/t²", "(x *(i,i->) x) / (t^2)", {"x": 1, "t": 0}, ["x", "t"], {"t": "positive"}, (False, False), "neither"),
    (
        "xᵀy/t",
        "(x *(i,i->) y) / t",
        {"x": 1, "y": 1, "t": 0},
        ["x", "y", "t"],
        {"t": "positive"},
        (False, False),
        "neither",
    ),
    ("x²t scalar", "x^2 *(,->) t", {"x": 0, "t": 0}, ["x", "t"], {"t": "positive"}, (False, False), "neither"),
    # domains: a convex constraint cuts out a non-convex set
    ("Σ log(x² − 1)", "log(x^2 - 1) *(i,->) 1", {"x": 1}, "x", None, (False, False), ""),
    # common factor look-alike: x eˣ on all of R is not convex
    ("Σ x eˣ, no assumption", "x *(i,i->i) exp(x) *(i,->) 1", {"x": 1}, "x", None, (False, False), "neither"),
    ("Σ x eˣ on x ≥ −3", "x *(i,i->i) exp(x) *(i,->) 1", {"x": 1}, "x", {"x": (-3, None)}, (False, False), "neither"),
    # cusp with a convex base: not concave
    ("√(‖x‖² − 1)", "(x *(i,i->) x - 1)^(1/2)", {"x": 1}, "x", None, (False, False), ""),
    # compositions the rules must not accept (h monotone the wrong way, or g of the wrong curvature)
    ("−log ‖x‖²", "-log(x *(i,i->) x)", {"x": 1}, "x", None, (False, False), "neither"),
    ("exp(−‖x‖²)", "exp(-(x *(i,i->) x))", {"x": 1}, "x", None, (False, False), "neither"),
    ("log(1 + ‖x‖²)", "log(1 + x *(i,i->) x)", {"x": 1}, "x", None, (False, False), "neither"),
    ("log LSE(x)", "log(log(exp(x) *(i,->) 1))", {"x": 1}, "x", None, (False, False), "neither"),
    ("1/‖x‖²", "1 / (x *(i,i->) x)", {"x": 1}, "x", None, (False, False), "neither"),
    (
        "(Σx)²/(Σy), y of any sign",
        "(x *(i,->) 1)^2 / (y *(i,->) 1)",
        {"x": 1, "y": 1},
        ["x", "y"],
        None,
        (False, False),
        "neither",
    ),
    ("(Σ√x)³", "(x^(1/2) *(i,->) 1)^3", {"x": 1}, "x", None, (False, False), "neither"),
    (
        "(Σ√x)^(3/2) = ((Σ√x)²)^(3/4), concave",
        "(x^(1/2) *(i,->) 1)^(3/2)",
        {"x": 1},
        "x",
        None,
        (False, True),
        "concave",
    ),
    (
        "Huber with the slope dropping at |x| = 1",
        "((abs(x) - relu(abs(x) - 1))^2 + relu(abs(x) - 1)) *(i,->) 1",
        {"x": 1},
        "x",
        None,
        (False, False),
        "neither",
    ),
    (
        "sin² − 3 sin + 1 (a quadratic with real roots)",
        "(sin(x)^2 - 3 *(,i->i) sin(x) + 1) *(i,->) 1",
        {"x": 1},
        "x",
        None,
        (False, False),
        "neither",
    ),
    # perspective look-alikes
    (
        "t·Σ sin(x/t)",
        "t *(,->) (sin(x *(i,->i) t^(-1)) *(i,->) 1)",
        {"x": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        (False, False),
        "neither",
    ),
    (
        "t·LSE(x/t), t of any sign",
        "t *(,->) log(exp(x *(i,->i) t^(-1)) *(i,->) 1)",
        {"x": 1, "t": 0},
        ["x", "t"],
        None,
        (False, False),
        "neither",
    ),
    (
        "t²·LSE(x/t)",
        "t^2 *(,->) log(exp(x *(i,->i) t^(-1)) *(i,->) 1)",
        {"x": 1, "t": 0},
        ["x", "t"],
        {"t": "positive"},
        (False, False),
        "neither",
    ),
    # a tensor kink whose adjoint reads other entries of the argument is not fixed entry by entry
    ("Σ|x| · Σx", "(abs(x) *(i,->) 1) *(,->) (x *(j,->) 1)", {"x": 1}, "x", None, (False, False), "neither"),
    # sign(u) has derivative 0 almost everywhere but is no affine node to cut at
    (
        "−(Σ sign(x − y))²",
        "-((sign(x - y) *(i,->) 1)^2)",
        {"x": 1, "y": 1},
        ["x", "y"],
        None,
        (False, False),
        "neither",
    ),
    ("Σ sign(x)", "sign(x) *(i,->) 1", {"x": 1}, "x", None, (False, False), "neither"),
    # matrix-inverse look-alikes
    (
        "xᵀY⁻¹x, Y only symmetric",
        "x *(i,ij->j) inv(Y) *(j,j->) x",
        {"x": 1, "Y": 2},
        "Y",
        {"Y": "symmetric"},
        (False, False),
        "neither",
    ),
    ("xᵀY⁻¹x, Y any", "x *(i,ij->j) inv(Y) *(j,j->) x", {"x": 1, "Y": 2}, "Y", None, (False, False), "neither"),
    (
        "xᵀY⁻¹y in Y",
        "x *(i,ij->j) inv(Y) *(j,j->) y",
        {"x": 1, "y": 1, "Y": 2},
        "Y",
        {"Y": "pd"},
        (False, False),
        "neither",
    ),
    (
        "tr(A X⁻¹ B)",
        "A *(ij,jk->ik) inv(X) *(ik,ki->) B",
        {"A": 2, "B": 2, "X": 2},
        "X",
        {"X": "pd"},
        (False, False),
        "neither",
    ),
    # kinks that do not cancel
    ("|x| − 3 relu(x)", "(abs(x) - 3 *(,i->i) relu(x)) *(i,->) 1", {"x": 1}, "x", None, (False, True), "concave"),
    ("relu(x) − |x|", "(relu(x) - abs(x)) *(i,->) 1", {"x": 1}, "x", None, (False, True), "concave"),
    (
        "relu(x) + relu(−x) − 2|x| = −|x|",
        "(relu(x) + relu(-x) - 2 *(,i->i) abs(x)) *(i,->) 1",
        {"x": 1},
        "x",
        None,
        (False, True),
        "concave",
    ),
    ("relu(x) − relu(x − 1)", "(relu(x) - relu(x - 1)) *(i,->) 1", {"x": 1}, "x", None, (False, False), ""),
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


@pytest.mark.parametrize("case", POSITIVE, ids=[c[0] for c in POSITIVE])
def test_rule_certifies(case):
    name, text, orders, wrt, assumptions, expected = case
    result = tc.check_convexity(tc.parse(text, orders), wrt, assumptions)
    assert result.verdict == expected, f"{name}\n{result.explain()}"
    assert result.certificate is not None


@pytest.mark.parametrize("case", NEGATIVE, ids=[c[0] for c in NEGATIVE])
def test_rule_does_not_certify_look_alikes(case):
    name, text, orders, wrt, assumptions, truth, required = case
    result = tc.check_convexity(tc.parse(text, orders), wrt, assumptions)
    assert CONSISTENT[result.verdict](*truth), f"{name}: {result.verdict}\n{result.explain()}"
    if required:
        assert result.verdict == required, f"{name}\n{result.explain()}"


def test_precomposition_certificate_names_the_affine_map():
    f = tc.parse("log(exp(A *(ij,j->i) x + b) *(i,->) 1)", {"A": 2, "x": 1, "b": 1})
    result = tc.check_convexity(f, "x")
    assert result.certificate.method.startswith("affine precomposition")
    assert "aff__0 = b + A *(ij,j->i) x is affine" in result.explain()


def test_precomposed_function_is_convex_numerically():
    """Independent evidence for a precomposition certificate: Jensen holds at random pairs."""
    rng = np.random.default_rng(3)
    f = tc.parse("((A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b))^(1/2)", {"A": 2, "x": 1, "b": 1})
    A, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    for _ in range(50):
        x1, x2, lam = rng.standard_normal(3), rng.standard_normal(3), rng.random()
        values = [float(tc.evaluate(f, {"A": A, "b": b, "x": x})) for x in (x1, x2, lam * x1 + (1 - lam) * x2)]
        assert values[2] <= lam * values[0] + (1 - lam) * values[1] + 1e-12


def test_unknown_note_names_the_kink_that_failed():
    f = tc.parse("(relu(x) - relu(x - 1)) *(i,->) 1", {"x": 1})
    result = tc.check_convexity(f, "x", falsify=False)
    assert result.verdict == "unknown"
    note = next(n for n in result.notes if n.startswith("unknown"))
    assert "kink" in note and "not shown to bend up" in note and "relu" in note


def test_kink_note_when_one_side_is_refuted():
    """Σ c |x| with c a parameter: concavity is refuted (at c = 1), convexity stays open
    because the kink's adjoint c has no sign; the note says so."""
    f = tc.parse("(abs(x) *(i,i->i) c) *(i,->) 1", {"x": 1, "c": 1})
    result = tc.check_convexity(f, "x", values={"c": np.ones(3)})
    assert result.verdict == "not concave"
    note = next(n for n in result.notes if n.startswith("convexity unknown"))
    assert "kink of abs" in note and "not shown to bend up" in note
