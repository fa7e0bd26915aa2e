"""Unit tests of the convexity checker: facts, rules, assumptions, kinks, counterexamples,
the result object and the command line.  The corpus of functions with known
curvature is in test_convexity_corpus.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.convexity import VERDICTS, ConvexityResult
from tenscalc.convexity.analysis import Analyzer
from tenscalc.convexity.assumptions import implied_constraints, normalize_assumptions
from tenscalc.convexity.cli import main as convexity_main
from tenscalc.convexity.curvature import CURVATURE_RULES
from tenscalc.convexity.facts import Interval, power
from tenscalc.convexity.falsify import Falsifier
from tenscalc.convexity.intervals import FUNCTION_RANGES, INTERVAL_RULES
from tenscalc.core import nodes as N

INF = math.inf


def check(text, orders, wrt, assumptions=None, **kwargs) -> ConvexityResult:
    return tc.check_convexity(tc.parse(text, orders), wrt, assumptions, **kwargs)


# ------------------------------------------------------------------------------- facts


def test_interval_arithmetic_keeps_open_ends():
    assert Interval.positive() * Interval.closed(-2, -1) == Interval(-INF, 0, False, False)
    assert (Interval.closed(-1, 2) ** 2) == Interval(0, 4, True, True)
    assert (Interval.positive() + Interval.nonnegative()).pos
    assert Interval.closed(0, 1).reciprocal() == Interval(1, INF, True, False)
    assert (Interval.positive() ** -1.5).pos
    assert Interval.closed(-1, 1).scale(-2) == Interval.closed(-2, 2)
    assert Interval.nonnegative().intersect(Interval.nonpositive()) == Interval.point(0)


def test_zero_times_an_attained_infinity_is_indeterminate():
    at_kink = power(Interval.point(0), -0.5, kink=True)
    assert at_kink.is_indeterminate
    assert (Interval.point(0) * at_kink).is_indeterminate
    # an infinity that is only approached times 0 is 0
    assert (Interval.point(0) * Interval.positive()).is_zero


@pytest.mark.parametrize("name", sorted(FUNCTION_RANGES))
def test_function_ranges_contain_the_values(name, rng):
    from tenscalc.interpreter import ELEMENTWISE

    for lo, hi in [(-3, 3), (0.1, 0.9), (-0.5, 0.5), (1, 5), (-4, -1)]:
        iv = FUNCTION_RANGES[name](Interval.closed(lo, hi))
        xs = rng.uniform(lo, hi, 200)
        if name in ("arcsin", "arccos"):
            xs = xs[np.abs(xs) <= 1]
        if name == "log":
            xs = xs[xs > 0]
        with np.errstate(all="ignore"):
            ys = ELEMENTWISE[name](xs)
        ys = ys[np.isfinite(ys)]
        assert np.all(ys >= iv.lo - 1e-12) and np.all(ys <= iv.hi + 1e-12), (name, lo, hi, iv)


def test_every_node_kind_and_function_has_rules():
    for kind in N.NODE_KINDS:
        assert kind in INTERVAL_RULES and kind in CURVATURE_RULES
    for name in N.ELEMENTWISE_FUNCTIONS:
        assert name in FUNCTION_RANGES


def test_rational_algebra_sees_the_sign_of_the_logistic_weight():
    # the simplifier now rewrites this weight to -(1+e)^-2 itself (issue 17), so it is built here
    e = tc.exp(-(tc.var("y", 1) * tc.parse("X *(ij,j->i) w", {"X": 2, "w": 1})))
    h = e * (e + 1) ** -2 - (e + 1) ** -1
    an = Analyzer({}, wrt=["w"])
    weights = [n for n in N.topological(h) if n.op == "add" and n.order == 1 and n.arg == (1, -1)]
    assert weights and an.interval(weights[0]).neg  # e (1+e)^-2 - (1+e)^-1 = -(1+e)^-2


# ------------------------------------------------------------------------------- rules


def test_congruence_covers_gram_matrices():
    result = check("(A *(ij,j->i) x) *(i,i->) (A *(ij,j->i) x)", {"A": 2, "x": 1}, "x", falsify=False)
    assert result.verdict == "convex"
    assert "congruence" in result.certificate.describe()


def test_psd_template_certifies_log_sum_exp():
    result = check("log(exp(x) *(i,i->) 1)", {"x": 1}, "x", falsify=False)
    assert result.verdict == "convex"
    assert "Cauchy-Schwarz" in result.certificate.describe()


def test_template_with_generalised_denominator():
    # log(1 + sum exp x): the denominator is 1 + sum(z), b = 1 >= 0
    result = check("log(1 + exp(x) *(i,i->) 1)", {"x": 1}, "x", falsify=False)
    assert result.verdict == "convex"


def test_template_needs_the_right_weights():
    # diag(z)/s - 2 z zᵀ/s² is not PSD; the template must not accept it
    result = check("log(exp(x) *(i,i->) 1) - 0.5 *(,->) (log(exp(x) *(i,i->) 1))^2", {"x": 1}, "x", falsify=False)
    assert result.verdict != "convex"


def test_kronecker_product_on_symmetric_directions():
    result = check("-log(det(X))", {"X": 2}, "X", {"X": "pd"}, falsify=False)
    assert result.verdict == "convex" and result.strict
    assert "symmetric directions" in result.method


def test_strong_convexity_modulus_of_ridge_regression():
    result = check(
        "(A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b) + lam *(,i->i) x *(i,i->) x",
        {"A": 2, "x": 1, "b": 1, "lam": 0},
        "x",
        {"lam": "positive"},
    )
    assert result.verdict == "convex" and result.strong and result.strict
    assert result.modulus == "2 lam"


def test_numeric_modulus_and_strictness():
    result = check("x *(i,i->) x", {"x": 1}, "x")
    assert result.strong and result.modulus == "2"
    exp_sum = check("exp(x) *(i,i->) 1", {"x": 1}, "x")
    assert exp_sum.strict and not exp_sum.strong


def test_joint_convexity_by_gram_form():
    assert check("(x - y) *(i,i->) (x - y)", {"x": 1, "y": 1}, ["x", "y"]).verdict == "convex"
    assert check("x^2 / y", {"x": 0, "y": 0}, ["x", "y"], {"y": "positive"}).verdict == "convex"
    joint = check("(A - U *(ik,jk->ij) V) *(ij,ij->) (A - U *(ik,jk->ij) V)", {"A": 2, "U": 2, "V": 2}, ["U", "V"])
    assert joint.verdict in ("not convex", "neither")


# ------------------------------------------------------------------------------- assumptions


def test_assumptions_are_normalised_and_checked():
    a = normalize_assumptions({"x": "positive", "X": ("symmetric", "pd"), "t": (0, 1)}, {"x": 1, "X": 2, "t": 0})
    assert a["x"].interval.pos
    assert a["X"].tags == {"symmetric", "pd"}
    assert a["t"].interval == Interval.closed(0, 1)
    with pytest.raises(tc.SemanticError, match="unknown assumption"):
        normalize_assumptions({"x": "convex"}, {"x": 1})
    with pytest.raises(tc.SemanticError, match="about matrices"):
        normalize_assumptions({"x": "pd"}, {"x": 1})
    with pytest.raises(tc.SemanticError, match="not a variable"):
        normalize_assumptions({"z": "positive"}, {"x": 1})
    with pytest.raises(tc.SemanticError, match="contradict"):
        normalize_assumptions({"x": ("positive", "negative")}, {"x": 1})


def test_declare_block_carries_assumptions():
    p = tc.parse_problem("declare X 2 pd x 1 positive t 0 (0, 1) c 1 (-inf, 2) d 1 (,3) expression x *(i,->) 1")
    assert p.assumptions == {
        "X": ("pd",),
        "x": ("positive",),
        "t": ((0.0, 1.0),),
        "c": ((None, 2.0),),
        "d": ((None, 3.0),),
    }
    # a word followed by an order is a variable, not an assumption
    q = tc.parse_problem("declare x 1 pd 1 expression x *(i,i->) pd")
    assert q.orders == {"x": 1, "pd": 1} and q.assumptions == {}
    with pytest.raises(tc.ParseError):
        tc.parse_problem("declare x 1 (0, -inf) expression x *(i,->) 1")
    result = tc.check_convexity("declare x 1 positive expression 1 / x *(i,i->) 1", "x")
    assert result.verdict == "convex" and result.assumptions == {"x": ("positive",)}


def test_domain_implied_by_the_expression_is_used_and_reported():
    result = check("x *(i,i->i) log(x) *(i,i->) 1", {"x": 1}, "x")
    assert result.verdict == "convex"
    assert any("x > 0" in d and "log(x)" in d for d in result.implied_domain)
    kinds = {c.kind for c in implied_constraints(tc.parse("x^(1/2) *(i,i->) 1 + 1 / y", {"x": 1, "y": 0}))}
    assert kinds == {"nonnegative", "nonzero"}


def test_a_domain_that_is_not_convex_is_not_certified():
    # 1/x² has a positive Hessian wherever it is defined, but x != 0 is not convex
    result = check("x^(-2) *(i,i->) 1", {"x": 1}, "x")
    assert result.verdict not in ("convex", "affine")


# ------------------------------------------------------------------------------- kinks


@pytest.mark.parametrize(
    "text",
    [
        "-abs(x) *(i,i->) 1",
        "-relu(x) *(i,i->) 1",
        "-((x^2)^(1/2) *(i,i->) 1)",
        "abs(abs(x) - 1) *(i,i->) 1",
        "x *(i,i->i) sign(x) *(i,i->) 1",
    ],
)
def test_kinks_that_bend_down_are_never_certified_convex(text):
    assert check(text, {"x": 1}, "x", falsify=False).verdict not in ("convex", "affine")


def test_relu_model_with_positive_targets_is_not_certified():
    result = check("(y - relu(X *(ij,j->i) w))^2 *(i,i->) 1", {"X": 2, "y": 1, "w": 1}, "w", {"y": "positive"})
    assert result.verdict in ("not convex", "neither")
    assert result.convex_counterexample is not None


def test_a_cusp_with_vanishing_adjoint_is_declined():
    # (|x|^(1/2))^2 = |x|: the adjoint 2|x|^(1/2) vanishes where |x|^(1/2) has infinite slope
    result = check("(abs(x)^(1/2))^2 *(i,i->) 1", {"x": 1}, "x", falsify=False)
    assert result.verdict == "unknown"
    assert result.is_convex is None


# ------------------------------------------------------------------------------- counterexamples


def test_counterexample_for_an_indefinite_quadratic_form():
    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    result = tc.check_convexity(f, "x", values={"A": np.diag([1.0, -1.0])})
    cex = result.convex_counterexample
    assert result.verdict == "neither" and cex.kind == "negative curvature"
    point, v = cex.point, cex.direction["x"]
    h = tc.evaluate(tc.hessian(f, "x"), point)
    assert v @ h @ v / (v @ v) < 0
    assert cex.curvature == pytest.approx(v @ h @ v / (v @ v))
    assert cex.second_difference < 0
    a, b, gap = cex.jensen
    fa, fb = tc.evaluate(f, {**point, **a}), tc.evaluate(f, {**point, **b})
    fm = tc.evaluate(f, {**point, "x": (a["x"] + b["x"]) / 2})
    assert gap == pytest.approx(fm - (fa + fb) / 2) and gap > 0


def test_jensen_triple_for_a_non_smooth_function():
    f = tc.parse("-abs(x) *(i,i->) 1", {"x": 1})
    cex = tc.check_convexity(f, "x").convex_counterexample
    assert cex is not None
    a, b, gap = cex.jensen
    fa, fb = tc.evaluate(f, a), tc.evaluate(f, b)
    fm = tc.evaluate(f, {"x": (a["x"] + b["x"]) / 2})
    assert gap > 0 and fm - (fa + fb) / 2 == pytest.approx(gap)


def test_samples_respect_the_assumptions():
    f = tc.parse("-log(det(X)) + x *(i,i->) 1", {"X": 2, "x": 1})
    assumed = normalize_assumptions({"X": "pd", "x": "positive"}, f.variables)
    falsifier = Falsifier(f, ["X"], assumed, implied_constraints(f), seed=3)
    for scale in (0.3, 1.0, 3.0):
        values = falsifier.sample(scale)
        assert np.all(np.linalg.eigvalsh(values["X"]) > 0) and np.allclose(values["X"], values["X"].T)
        assert np.all(values["x"] > 0)


def test_lanczos_on_hessian_vector_products_never_forms_the_hessian():
    f = tc.parse("(A - U *(ik,jk->ij) V) *(ij,ij->) (A - U *(ik,jk->ij) V)", {"A": 2, "U": 2, "V": 2})
    falsifier = Falsifier(f, ["U", "V"], {}, [], seed=1, dense_limit=0)
    report = falsifier.run(convex=True, concave=False, points=4)
    assert report.convex is not None and report.convex.kind == "negative curvature"
    assert falsifier._blocks is None  # no order-4 Hessian block was built
    assert "Lanczos" in report.method


def test_hessian_vector_products_match_the_dense_hessian(rng):
    f = tc.parse("log(exp(A *(ij,j->i) x) *(i,i->) 1) + x *(i,i->i) x *(i,i->) x", {"A": 2, "x": 1})
    falsifier = Falsifier(f, ["x"], {}, [], seed=2)
    values = falsifier.sample(1.0)
    v = rng.standard_normal(falsifier.size)
    dense = falsifier.dense_hessian(values)
    assert np.allclose(falsifier.hvp(values, v), dense @ v)


def test_numbers_never_certify():
    # x⁴ + 1e-4 sin(x) is not convex near 0 (f'' = 12x² - 1e-4 sin x < 0 for tiny x > 0); sampling
    # is unlikely to see that, but finding no counterexample must not be taken for a proof
    result = check("x^4 *(i,i->) 1 + 0.0001 *(,->) (sin(x) *(i,i->) 1)", {"x": 1}, "x")
    assert result.verdict in ("unknown", "not concave", "not convex", "neither")
    assert result.certificate is None


# ------------------------------------------------------------------------------- the result


def test_result_object_explains_itself():
    result = check("log(exp(x) *(i,i->) 1)", {"x": 1}, "x")
    assert result.verdict in VERDICTS
    text = str(result)
    assert "certificate" in text and "Hessian" in text and "proof" in text
    assert result.hessian_text == str(result.hessian)
    assert "<details>" in result._repr_html_() and result._repr_markdown_().startswith("**")
    assert result.is_convex is True and result.is_concave is False
    assert "convex in x" in repr(result)


def test_unknown_says_it_is_not_a_claim():
    result = check("(abs(x)^(1/2))^2 *(i,i->) 1", {"x": 1}, "x", falsify=False)
    assert result.verdict == "unknown"
    assert "not a claim" in str(result)


def test_wrt_and_order_errors():
    f = tc.parse("x *(i,i->) y", {"x": 1, "y": 1})
    with pytest.raises(tc.SemanticError, match="say which variables"):
        tc.check_convexity(f)
    with pytest.raises(tc.SemanticError, match="not a variable"):
        tc.check_convexity(f, "z")
    with pytest.raises(tc.SemanticError, match="scalar"):
        tc.check_convexity(tc.parse("x", {"x": 1}), "x")


# ------------------------------------------------------------------------------- command line


def test_command_line(capsys):
    assert convexity_main(["--quiet", "declare x 1 expression log(exp(x) *(i,i->) 1)"]) == 0
    assert capsys.readouterr().out.strip() == "convex in x"
    assert convexity_main(["--json", "--assume", "x=positive", "declare x 1 expression 1 / x *(i,i->) 1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "convex" and data["assumptions"] == {"x": ["positive"]}
    assert convexity_main(["--expect", "convex", "--orders", "x=1", "sin(x) *(i,i->) 1"]) == 1
    capsys.readouterr()
    assert convexity_main(["--assume", "x=bogus", "--orders", "x=1", "x *(i,i->) x"]) == 2
    assert "unknown assumption" in capsys.readouterr().err
    assert convexity_main(["--wrt", "x,y", "--assume", "y=0..", "--orders", "x=0,y=0", "x^2 / (y + 1)"]) == 0
    assert "convex in x, y" in capsys.readouterr().out


def test_the_python_examples_of_the_convexity_page_run(capsys):
    import pathlib
    import re

    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "convexity.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        exec(block, namespace)  # noqa: S102 - the page's own examples


def _random_function(r, depth: int) -> str:
    """A random scalar function of the vectors x and y (with data A, b)."""

    def vec(d: int) -> str:
        if d <= 0 or r.random() < 0.25:
            return r.choice(["x", "y", "(A *(ij,j->i) x)", "(x - y)", "(x - b)", "(-x)"])
        a = vec(d - 1)
        choices = [
            f"exp({a})",
            f"log(1 + exp({a}))",
            f"abs({a})",
            f"relu({a})",
            f"({a})^2",
            f"({a})^3",
            f"sin({a})",
            f"tanh({a})",
            f"({a} + {vec(d - 1)})",
            f"({a} - {vec(d - 1)})",
            f"({a} *(i,i->i) {vec(d - 1)})",
            f"(abs({a}) + 1)^(1/2)",
            f"log(({a})^2 + 1)",
            f"abs({a})^(1/2)",
            f"(-{a})",
            f"(sign({a}) *(i,i->i) {a})",
        ]
        return r.choice(choices)

    v = vec(depth)
    return r.choice(
        [
            f"{v} *(i,i->) 1",
            f"log(exp({v}) *(i,i->) 1)",
            f"({v} *(i,i->) {v})^(1/2)",
            f"-log(1 + {v} *(i,i->) {v})",
            f"{v} *(i,i->) {vec(depth)}",
        ]
    )


@pytest.mark.slow  # a random campaign
def test_random_expressions_are_never_misjudged():
    """Fuzzing: whatever is proven must survive the numeric cross-check (a counterexample
    to a proof raises InternalError, which fails this test)."""
    import random

    r = random.Random(20240601)
    proven = 0
    for _ in range(40):
        text = _random_function(r, r.randint(1, 3))
        f = tc.parse(text, {"x": 1, "y": 1, "A": 2, "b": 1})
        wrt = [n for n in ("x", "y") if n in f.variables]
        result = tc.check_convexity(f, wrt, verify=True, points=6)
        assert result.verdict in tc.convexity.VERDICTS, text
        proven += result.certified
    assert proven >= 3


def test_given_arrays_fix_the_shapes_of_the_search():
    rng = np.random.default_rng(5)
    m = rng.standard_normal((250, 250))
    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    result = tc.check_convexity(f, "x", values={"A": m + m.T})
    cex = result.convex_counterexample
    assert cex.point["x"].shape == (250,) and "Lanczos" in result.search.method
    assert cex.curvature < 0
