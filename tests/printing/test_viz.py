"""DOT drawings: labels, sharing, determinism, side-by-side derivative and pullback colours."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.calculus.sweep import reverse_sweep
from tenscalc.core.nodes import topological
from tenscalc.printing import drawing as viz

LOGREG = "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1"
LOGREG_ORDERS = {"X": 2, "y": 1, "w": 1}

needs_graphviz = pytest.mark.skipif(not viz.graphviz_available(), reason="graphviz package or dot missing")


def nodes_of(text: str) -> dict[str, str]:
    """node id -> label of every node statement in DOT text."""
    return dict(re.findall(r'^\s*(n\d+) \[label="([^"]*)"', text, flags=re.M))


def edges_of(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^\s*(n\d+) -> (n\d+)", text, flags=re.M)


def test_labels_show_operation_spec_order_and_shape():
    f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    text = tc.dot_source(f, shapes={"A": (3, 4), "x": (4,)})
    labels = set(nodes_of(text).values())
    assert labels == {r"A\norder 2 · 3×4", r"x\norder 1 · 4", r"mul ij,j->i\norder 1 · 3"}
    # without shapes: no shape line
    assert set(nodes_of(tc.dot_source(f)).values()) == {r"A\norder 2", r"x\norder 1", r"mul ij,j->i\norder 1"}


def test_values_give_shapes_too():
    f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    text = tc.dot_source(f, values={"A": np.ones((3, 4)), "x": np.ones(4)})
    assert r"mul ij,j->i\norder 1 · 3" in text


def test_shared_node_is_drawn_once_with_several_parents():
    # (X+1) occurs twice: one node, two arrows out of it, a double border
    f = tc.parse("(X+1) + X *(ij,ij->ij) (X+1)", {"X": 2})
    text = tc.dot_source(f)
    labels = nodes_of(text)
    sums = [n for n, label in labels.items() if label.startswith("add") and "order 2" in label]
    shared = [n for n in sums if sum(1 for child, _ in edges_of(text) if child == n) == 2]
    assert len(shared) == 1
    assert re.search(rf"^\s*{shared[0]} \[.*peripheries=\"2\"", text, flags=re.M)
    assert len(labels) == tc.count_nodes(f)
    assert len(edges_of(text)) == tc.count_edges(f)


def test_edge_labels_name_the_operand_indices():
    f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    text = tc.dot_source(f)
    assert '[label="ij"]' in text and '[label="j"]' in text


def test_deterministic_text_independent_of_creation_order():
    f = tc.parse(LOGREG, LOGREG_ORDERS)
    first = tc.dot_source(f, derivative_wrt="w")
    # a fresh interpreter creates the nodes in another order (other serials, other ids)
    script = (
        "import tenscalc as tc\n"
        "tc.parse('y *(i,i->) w', {'y': 1, 'w': 1})\n"  # create some nodes first
        f"f = tc.parse({LOGREG!r}, {LOGREG_ORDERS!r})\n"
        "print(tc.dot_source(f, derivative_wrt='w'), end='')\n"
    )
    root = str(pathlib.Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=root, env=env)
    out = out.stdout
    assert out == first
    assert tc.dot_source(f, derivative_wrt="w") == first


def test_side_by_side_clusters_share_forward_nodes():
    f = tc.parse(LOGREG, LOGREG_ORDERS)
    text = tc.dot_source(f, derivative_wrt="w")
    assert "subgraph cluster_expression" in text and "subgraph cluster_derivative" in text
    expression_part = text[text.index("cluster_expression") : text.index("cluster_derivative")]
    derivative_part = text[text.index("cluster_derivative") :].split("\n\t}")[0]
    in_expression = set(re.findall(r"(n\d+) \[", expression_part))
    in_derivative = set(re.findall(r"(n\d+) \[", derivative_part))
    assert in_expression and in_derivative and not in_expression & in_derivative
    assert len(in_expression) == tc.count_nodes(f)
    # the gradient reuses exp(-y (X w)) and X from the expression: arrows cross over
    crossing = [(a, b) for a, b in edges_of(text) if a in in_expression and b in in_derivative]
    assert crossing


def test_pullback_attribution_repeats_the_reverse_sweep():
    f = tc.parse(LOGREG, LOGREG_ORDERS)
    raw, sources = viz.pullback_sources(f, "w")
    assert raw is reverse_sweep(f, tc.var("w", 1), 0)
    original = {id(n) for n in topological(f)}
    new = [n for n in topological(raw) if id(n) not in original]
    assert new and all(id(n) in sources for n in new)
    owners = {id(o) for o in sources.values()}
    assert owners <= original


def test_pullback_colours():
    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    text = tc.dot_source(f, derivative_wrt="x", simplify=False, colour_pullbacks=True)
    colours = dict(re.findall(r'^\s*(n\d+) \[.*fillcolor="(#[0-9a-f]+)"', text, flags=re.M))
    palette = set(viz.PALETTE)
    # every derivative node has the colour of an expression node
    derivative_part = text[text.index("cluster_derivative") :]
    for node in re.findall(r"(n\d+) \[", derivative_part):
        assert colours[node] in palette
    with pytest.raises(tc.TensCalcError, match="derivative_wrt"):
        tc.dot_source(f, colour_pullbacks=True)


def test_too_many_nodes_is_an_error():
    x = tc.var("x", 1)
    e = x
    for _ in range(30):
        e = tc.sin(e)
    with pytest.raises(tc.TensCalcError, match="max_nodes"):
        tc.dot_source(e, max_nodes=10)


def test_without_graphviz_the_source_comes_with_a_hint(monkeypatch):
    monkeypatch.setattr(viz, "graphviz_available", lambda: False)
    f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    result = tc.to_dot(f)
    assert isinstance(result, viz.DotSource) and isinstance(result, str)
    assert result == tc.dot_source(f)
    assert "apt-get install graphviz" in result.hint and "pip install graphviz" in result.hint
    assert "<pre>" in result._repr_html_()
    # notebook display methods fall back quietly
    assert f._repr_svg_() is None and f._repr_html_() is None
    assert f._repr_latex_() == "$A x$"


@needs_graphviz
def test_digraph_renders_svg():
    import graphviz

    f = tc.parse(LOGREG, LOGREG_ORDERS)
    graph = tc.to_dot(f, derivative_wrt="w", colour_pullbacks=True, simplify=False)
    assert isinstance(graph, graphviz.Digraph)
    assert graph.source == tc.dot_source(f, derivative_wrt="w", colour_pullbacks=True, simplify=False)
    svg = graph.pipe(format="svg").decode()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg


@needs_graphviz
def test_expr_draws_itself_in_notebooks():
    f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    assert "<svg" in f._repr_svg_()
    html = f._repr_html_()
    assert html.startswith("<div>") and "<svg" in html and "A *(ij,j-&gt;i) x" in html
