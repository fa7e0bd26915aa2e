"""The picture of a certificate: the Hessian DAG coloured by proven sign, with the
counterexample's direction in the caption."""

from __future__ import annotations

import re

import tenscalc as tc
from tenscalc.convexity.picture import COLOURS
from tenscalc.printing import drawing as viz


def _fill_of_root(dot: str) -> str:
    # the roots are drawn with penwidth 2
    line = next(line for line in dot.splitlines() if 'penwidth="2"' in line)
    return re.search(r'fillcolor="([^"]+)"', line).group(1)


def test_certified_root_is_coloured_psd_and_says_so():
    result = tc.check_convexity(tc.parse("log(exp(x) *(i,->) 1)", {"x": 1}), "x")
    dot = result.dot_source()
    assert _fill_of_root(dot) == COLOURS["psd"]
    assert "as a matrix positive semidefinite" in dot
    assert "green: PSD" in dot  # the legend


def test_concave_root_is_coloured_nsd():
    result = tc.check_convexity(tc.parse("log(x) *(i,->) 1", {"x": 1}), "x")
    assert result.verdict == "concave"
    assert _fill_of_root(result.dot_source()) == COLOURS["nsd"]


def test_refuted_picture_shows_the_counterexample_direction_and_no_psd_root():
    result = tc.check_convexity(tc.parse("X *(ij,ji->) X", {"X": 2}), "X")
    dot = result.dot_source()
    assert "counterexample against convexity: negative curvature, direction v: X =" in dot
    assert _fill_of_root(dot) != COLOURS["psd"]


def test_html_carries_the_drawing_when_graphviz_is_there():
    result = tc.check_convexity(tc.parse("log(exp(x) *(i,->) 1)", {"x": 1}), "x")
    html = result._repr_html_()
    assert "explanation" in html
    assert ("<svg" in html) == viz.graphviz_available()


def test_viz_colouring_hook_overrides_kind_colours():
    f = tc.parse("x + 1", {"x": 1})
    dot = tc.dot_source(f) if hasattr(tc, "dot_source") else viz.dot_source(f)
    coloured = viz.dot_source(f, node_colours={id(f): "#123456"}, node_notes={id(f): "a note"})
    assert "#123456" not in dot and "#123456" in coloured and "a note" in coloured
