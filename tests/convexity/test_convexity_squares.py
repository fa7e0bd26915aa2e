"""Look-alike squares: products of one node that are not squares must never be certified.

``X[i,j] X[j,i]`` (tr(X²)) reads two different entries of X; it was once paired
as a square and tr(X²) certified convex (issue 15).  Every case states the truth
(convex?, concave?) and the verdict must agree with it; the classic look-alikes
must also be refuted with a counterexample.  The true squares next to them
(tr(XᵀX), tr(X²) with X symmetric) must stay certified.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.convexity import InternalError
from tenscalc.convexity.curvature import CURVATURE_RULES
from tenscalc.convexity.derivation import Derivation
from tenscalc.convexity.facts import Curvature

J = np.array([[0.0, 1.0], [-1.0, 0.0]])  # J² = -I: tr(J²) = -2
INDEFINITE = np.array([[1.0, 2.0, 0.0], [2.0, -1.0, 0.5], [0.0, 0.5, 0.3]])

# name, text, orders, wrt, assumptions, values, (truly convex, truly concave), required verdict ("" = consistent)
CASES = [
    ("tr(X²)", "X *(ij,ji->) X", {"X": 2}, "X", None, None, (False, False), "neither"),
    ("−tr(X²)", "-(X *(ij,ji->) X)", {"X": 2}, "X", None, None, (False, False), "neither"),
    ("Σ X ⊙ Xᵀ", "(X *(ij,ji->ij) X) *(ij,ij->) 1", {"X": 2}, "X", None, None, (False, False), "neither"),
    ("−Σ X ⊙ Xᵀ", "-((X *(ij,ji->ij) X) *(ij,ij->) 1)", {"X": 2}, "X", None, None, (False, False), "neither"),
    (
        "tr(A²) ‖x‖², A = J",
        "(A *(ij,ji->) A) *(,->) (x *(i,i->) x)",
        {"A": 2, "x": 1},
        "x",
        None,
        {"A": J},
        (False, True),  # for this A: -2‖x‖²
        "not convex",
    ),
    (
        "tr(A²) ‖x‖², A any",
        "(A *(ij,ji->) A) *(,->) (x *(i,i->) x)",
        {"A": 2, "x": 1},
        "x",
        None,
        None,
        (False, False),
        "",
    ),
    ("tr(XY) jointly", "X *(ij,ji->) Y", {"X": 2, "Y": 2}, ["X", "Y"], None, None, (False, False), "neither"),
    (
        "tr(X²X²)",
        "(X *(ij,jk->ik) X) *(ik,ki->) (X *(ij,jk->ik) X)",
        {"X": 2},
        "X",
        None,
        None,
        (False, False),
        "neither",
    ),
    ("Σ (X ⊙ Xᵀ)²", "(X *(ij,ji->ij) X)^2 *(ij,->) 1", {"X": 2}, "X", None, None, (False, False), "neither"),
    (
        "xᵀAx, A indefinite given",
        "x *(i,ij->j) A *(j,j->) x",
        {"x": 1, "A": 2},
        "x",
        None,
        {"A": INDEFINITE},
        (False, False),
        "neither",
    ),
    (
        "xᵀAx, A symmetric unknown",
        "x *(i,ij->j) A *(j,j->) x",
        {"x": 1, "A": 2},
        "x",
        {"A": "symmetric"},
        None,
        (False, False),
        "",
    ),
    ("c ‖x‖², c of any sign", "c *(,->) (x *(i,i->) x)", {"c": 0, "x": 1}, "x", None, None, (False, False), ""),
    (
        "x_i x_j M_ij, M unknown",
        "(x *(i,j->ij) x) *(ij,ij->) M",
        {"x": 1, "M": 2},
        "x",
        None,
        None,
        (False, False),
        "",
    ),
    (
        "Σ x_i x_(i) reversed",
        "x *(i,i->) (P *(ij,j->i) x)",
        {"x": 1, "P": 2},
        "x",
        None,
        {"P": np.eye(3)[::-1]},
        (False, False),
        "neither",
    ),
    # the true squares beside them
    ("tr(XᵀX)", "X *(ij,ij->) X", {"X": 2}, "X", None, None, (True, False), "convex"),
    ("tr(X²), X symmetric", "X *(ij,ji->) X", {"X": 2}, "X", {"X": "symmetric"}, None, (True, False), "convex"),
    ("−tr(X²), X symmetric", "-(X *(ij,ji->) X)", {"X": 2}, "X", {"X": "symmetric"}, None, (False, True), "concave"),
    ("Σ (X ⊙ X)", "(X *(ij,ij->ij) X) *(ij,ij->) 1", {"X": 2}, "X", None, None, (True, False), "convex"),
    (
        "tr(A²) ‖x‖², A symmetric",
        "(A *(ij,ji->) A) *(,->) (x *(i,i->) x)",
        {"A": 2, "x": 1},
        "x",
        {"A": "symmetric"},
        None,
        (True, False),
        "convex",
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


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_look_alike_squares(case):
    name, text, orders, wrt, assumptions, values, truth, required = case
    result = tc.check_convexity(tc.parse(text, orders), wrt, assumptions, values=values)
    assert CONSISTENT[result.verdict](*truth), f"{name}: wrong verdict {result.verdict!r}\n{result.explain()}"
    if required:
        assert result.verdict == required, f"{name}\n{result.explain()}"
    if not truth[0] and required in ("neither", "not convex"):
        cex = result.convex_counterexample
        assert cex is not None
        # the counterexample is real: the Jensen gap recomputed here, independently of the search
        f = tc.parse(text, orders)
        at_a = {**cex.point, **cex.a}
        at_b = {**cex.point, **cex.b}
        mid = {**cex.point, **{k: (cex.a[k] + cex.b[k]) / 2 for k in cex.a}}
        fa, fb, fm = (float(tc.evaluate(f, v)) for v in (at_a, at_b, mid))
        assert fm - (fa + fb) / 2 > 1e-9 * (abs(fa) + abs(fb) + abs(fm))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_look_alike_squares_without_search(case):
    """The proofs alone (falsify=False, still cross-checked) never claim the false side."""
    name, text, orders, wrt, assumptions, values, truth, _ = case
    result = tc.check_convexity(tc.parse(text, orders), wrt, assumptions, values=values, falsify=False)
    assert result.verdict in ("convex", "concave", "affine", "unknown")
    assert CONSISTENT[result.verdict](*truth), f"{name}: {result.verdict}\n{result.explain()}"


def test_symmetric_square_states_the_permutation():
    f = tc.parse("(A *(ij,ji->) A) *(,->) (x *(i,i->) x)", {"A": 2, "x": 1})
    result = tc.check_convexity(f, "x", {"A": "symmetric"})
    assert result.verdict == "convex"
    assert "A[ji] = A[ij] (A symmetric)" in result.explain()


def test_tr_x_squared_counterexample_is_the_rotation_direction():
    """f(tJ) = -2t² along J = [[0,1],[-1,0]]: the counterexample found has negative curvature."""
    result = tc.check_convexity(tc.parse("X *(ij,ji->) X", {"X": 2}), "X")
    cex = result.convex_counterexample
    v = cex.direction["X"]
    # tr(V²) < 0: the direction has a dominant antisymmetric part
    assert np.trace(v @ v) < 0
    assert cex.curvature < 0


def test_a_false_proof_is_an_internal_error(monkeypatch):
    """A rule that certifies something false is caught by the cross-check, loudly."""

    def liar(an, node, perms):
        return Derivation(Curvature(psd=True, symmetric=True), "a lying rule")

    monkeypatch.setitem(CURVATURE_RULES, "mul", liar)
    monkeypatch.setitem(CURVATURE_RULES, "add", liar)
    f = tc.parse("sin(x) *(i,i->) 1", {"x": 1})
    for falsify in (True, False):
        with pytest.raises(InternalError) as info:
            tc.check_convexity(f, "x", falsify=falsify)
        assert "proven convex" in str(info.value) and info.value.counterexample is not None
        assert isinstance(info.value, tc.TensCalcError)


def test_rounding_level_violations_do_not_overturn_a_proof():
    """A cross-check violation of relative size 1e-12 is rounding, one of size 1e-2 is not."""
    from tenscalc.convexity.check import rounding_level
    from tenscalc.convexity.falsify import Counterexample

    tiny = Counterexample("convex", "Jensen gap", {}, gap=1e-12, values=(1.0, 1.0, 1.0))
    large = Counterexample("convex", "Jensen gap", {}, gap=1e-2, values=(1.0, 1.0, 1.0))
    domain = Counterexample("convex", "domain not convex", {})
    assert rounding_level(tiny) and not rounding_level(large) and not rounding_level(domain)


def test_underflow_does_not_overturn_a_proof():
    """√LSE(sign(softplus(x/t))) is constant (softplus > 0), but exp(-206) underflows and
    sign(log(1 + 0)) = 0 in floating point: that is not a counterexample to the proof."""
    f = tc.parse("(log(exp(sign(log(1 + exp((x *(i,->i) t^(-1)))))) *(i,->) 1))^(1/2)", {"x": 1, "t": 0})
    result = tc.check_convexity(f, ["t"], {"t": "positive"})
    assert result.verdict == "affine"
