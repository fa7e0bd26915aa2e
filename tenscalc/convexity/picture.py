"""The picture of a certificate: the Hessian DAG coloured by what was proven.

Every node of the DAG the proof read (the Hessian, its blocks, or the second
directional derivative ``q(v)``) gets the colour of its fact: green for PSD
matrices and entries ``>= 0``, blue for NSD and ``<= 0``, white for zero, grey for
nodes with no sign.  Its label gains the fact (``as a matrix PSD``, ``entries >
0``).  The caption carries the verdict and the counterexample's direction.  The
drawing itself is :func:`tenscalc.printing.drawing.to_dot`, with its colouring hook.

>>> import tenscalc as tc
>>> r = tc.check_convexity(tc.parse("log(exp(x) *(i,->) 1)", {"x": 1}), "x")
>>> "fillcolor" in r.dot_source()
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.nodes import Expr, topological

if TYPE_CHECKING:
    from .analysis import Analyzer

COLOURS = {
    "psd": "#8fd19e",  # a PSD matrix
    "nonneg": "#d4f0d9",  # entries >= 0
    "nsd": "#8fb8e8",  # an NSD matrix
    "nonpos": "#d6e6f8",  # entries <= 0
    "zero": "#ffffff",
    "unknown": "#e6e6e6",  # no sign known
}
LEGEND = "green: PSD / entries >= 0; blue: NSD / entries <= 0; white: zero; grey: no sign"
MAX_FACT_NODES = 400


def node_facts(an: Analyzer, roots: Sequence[Expr]) -> dict[Expr, tuple[str, str]]:
    """``node -> (category, short fact)`` for the nodes under ``roots`` (a category
    of :data:`COLOURS`); empty for DAGs too large to draw."""
    nodes = topological(list(roots))
    if len(nodes) > MAX_FACT_NODES:
        return {}
    for root in roots:  # label what the proof did not need to (cheap: the DAG is small)
        try:
            an.interval(root)
        except Exception:  # noqa: BLE001 - a node the rules cannot read stays grey
            pass
    matrix: dict[Expr, object] = {}
    for (derived, _perms), d in an.derivations.items():
        if d is not None and (d.curvature.psd or d.curvature.nsd) and derived not in matrix:
            matrix[derived] = d.curvature
    facts: dict[Expr, tuple[str, str]] = {}
    for node in nodes:
        curv = matrix.get(node)
        if curv is not None and node.order > 0:
            if curv.zero:
                facts[node] = ("zero", "zero")
            else:
                facts[node] = ("psd" if curv.psd else "nsd", f"as a matrix {curv.describe()}")
            continue
        iv = an.intervals.get(node)
        if iv is None or iv.empty:
            facts[node] = ("unknown", "")
        elif iv.is_zero:
            facts[node] = ("zero", "= 0")
        elif iv.nonneg:
            facts[node] = ("nonneg", f"entries {iv.describe()}")
        elif iv.nonpos:
            facts[node] = ("nonpos", f"entries {iv.describe()}")
        else:
            facts[node] = ("unknown", "no sign")
    return facts


def _hooks(facts: dict[Expr, tuple[str, str]]) -> tuple[dict[int, str], dict[int, str]]:
    """The colouring and note hooks of the drawing, which are keyed by ``id(node)``
    (the interface of :mod:`tenscalc.printing.drawing`, not an Expr map of ours)."""
    colours = {id(node): COLOURS[cat] for node, (cat, _) in facts.items()}
    notes = {id(node): text for node, (_, text) in facts.items() if text}
    return colours, notes


def dot_text(roots: Sequence[Expr], facts: dict[Expr, tuple[str, str]], title: str, max_nodes: int = 2000) -> str:
    """The DOT text of the coloured DAG (:func:`tenscalc.printing.drawing.dot_source` with the hook)."""
    from ..printing.drawing import dot_source

    colours, notes = _hooks(facts)
    return dot_source(list(roots), title=title, node_colours=colours, node_notes=notes, max_nodes=max_nodes)


def drawing(roots: Sequence[Expr], facts: dict[Expr, tuple[str, str]], title: str):
    """A ``graphviz.Digraph`` (or the DOT text when Graphviz is missing)."""
    from ..printing.drawing import to_dot

    colours, notes = _hooks(facts)
    return to_dot(list(roots), title=title, node_colours=colours, node_notes=notes)


def svg(roots: Sequence[Expr], facts: dict[Expr, tuple[str, str]], title: str, max_nodes: int = 150) -> str | None:
    """SVG text for notebooks, or None (Graphviz missing, too many nodes, a failure)."""
    from ..printing.drawing import graphviz_available

    if not graphviz_available() or not roots or len(topological(list(roots))) > max_nodes:
        return None
    try:
        return drawing(roots, facts, title).pipe(format="svg").decode("utf-8")
    except Exception:  # noqa: BLE001 - a display hook must never raise
        return None
