"""Drawings of expression DAGs with Graphviz.

``to_dot`` draws one or more expressions as a directed graph: one box per
node (operation, index spec, order and, when shapes or values are given, the
shape), one arrow per use, from an operand up to the node that uses it.  A
node with several parents is drawn once, with a double border, so sharing is
visible.  With ``derivative_wrt`` the expression and its derivative are drawn
side by side; derivative nodes that are nodes of the expression (the forward
values a reverse sweep reuses) stay in the expression's box, so the arrows that
cross over show what the derivative reuses.  With ``colour_pullbacks`` every
derivative node takes the colour of the expression node whose pullback rule
created it.

The output is deterministic: nodes are named ``n0, n1, ...`` in a traversal
order that depends only on the expressions' structure.

The Python package ``graphviz`` builds the graph and the ``dot`` program (Debian
package ``graphviz``) renders it.  Without them ``to_dot`` returns the DOT
source text (a ``DotSource``) with a hint how to install them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.checks import require_exprs
from ..core.face import PRINTERS
from ..core.nodes import Expr, topological
from ..core.text import format_number as _number
from ..errors import TensCalcError
from .text import letters_for, slice_text

INSTALL_HINT = (
    "Drawing needs the Python package 'graphviz' (pip install graphviz, or "
    "pip install 'tenscalc[viz]') and Graphviz's 'dot' program (Debian/Ubuntu: "
    "apt-get install graphviz; macOS: brew install graphviz)."
)

KIND_COLOURS = {
    "var": "#cfe2f3",
    "const": "#eeeeee",
    "delta": "#eeeeee",
    "add": "#d9ead3",
    "mul": "#fff2cc",
    "func": "#fce5cd",
    "pow": "#fce5cd",
    "inv": "#f4cccc",
    "det": "#f4cccc",
    "adj": "#f4cccc",
    "slice": "#d0e0e3",
    "embed": "#d0e0e3",
}
# a qualitative palette (ColorBrewer Set3) for pullback contributions
PALETTE = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
    "#d9d9d9",
)
MAX_NODES = 2000


class DotSource(str):
    """DOT source text, returned when Graphviz is not installed.

    It is a ``str`` (write it to a file and run ``dot -Tsvg``); ``hint`` says how
    to install what is missing.
    """

    hint: str = INSTALL_HINT

    @property
    def source(self) -> str:
        """The DOT text (``graphviz.Source.source``)."""
        return str(self)

    def render(self, *args: Any, **kwargs: Any) -> str:
        """What ``graphviz.Source.render`` does needs Graphviz: a clear error naming what to install."""
        from ..errors import TensCalcError

        raise TensCalcError(f"cannot render the drawing: {self.hint} The DOT text is this string (str(drawing)).")

    view = pipe = save = render

    def _repr_html_(self) -> str:
        import html

        return f"<p><em>{html.escape(self.hint)}</em></p><pre>{html.escape(str(self))}</pre>"


def graphviz_available() -> bool:
    """Whether the ``graphviz`` package and the ``dot`` program are both installed."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


# --------------------------------------------------------------------- attribution


def pullback_sources(expr: Expr, wrt: str | Expr) -> tuple[Expr, dict[int, Expr]]:
    """The raw reverse-mode derivative and, for each of its new nodes, the node of
    ``expr`` whose pullback rule created it.

    It runs the reverse sweep of ``tenscalc.calculus.sweep`` with an observer
    that notes, after each rule, which nodes appeared.  The seed is
    attributed to the root, the sum of a node's contributions to the node itself.

    Returns
    -------
    (derivative, sources)
        ``derivative`` is the unsimplified derivative DAG; ``sources`` maps
        ``id(node)`` of each derivative node that is not a node of ``expr`` to the
        node of ``expr`` it comes from.
    """
    from ..calculus.api import resolve_wrt
    from ..calculus.sweep import reverse_sweep

    x = resolve_wrt(expr, wrt)
    original = set(topological(expr))
    # keyed by id(node), not by node: that is the documented return value
    sources: dict[int, Expr] = {}

    def claim(root: Expr, owner: Expr) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node in original or id(node) in sources:
                continue
            sources[id(node)] = owner
            stack.extend(node.children)

    return reverse_sweep(expr, x, expr.order, observe=claim), sources


# ------------------------------------------------------------------------- labels


def _title_var(node: Expr) -> str:
    return node.arg[0]


def _title_const(node: Expr) -> str:
    return _number(node.arg[0])


def _title_delta(node: Expr) -> str:
    return f"delta({node.arg})"


def _title_add(node: Expr) -> str:
    if len(node.children) == 1:
        return f"scale ×{_number(node.arg[0])}"
    if all(c == 1 for c in node.arg):
        return "add +"
    return "add " + " ".join(("+" if c > 0 else "−") + _number(abs(c)) for c in node.arg)


def _title_mul(node: Expr) -> str:
    ins, out = node.arg
    return "mul " + ",".join(letters_for(s) for s in ins) + "->" + letters_for(out)


def _title_func(node: Expr) -> str:
    return node.arg


def _title_kind(node: Expr) -> str:
    return node.op


def _title_adj(node: Expr) -> str:
    return "adj" if node.arg == 1 else f"adj, k = {node.arg}"


def _title_slice(node: Expr) -> str:
    return f"slice [{slice_text(node.arg)}]"


def _title_embed(node: Expr) -> str:
    return f"embed [{slice_text(node.arg[0])}]"


#: node kind -> the first line of a node's label
DRAWING_TITLES: dict[str, Callable[[Expr], str]] = {
    "var": _title_var,
    "const": _title_const,
    "delta": _title_delta,
    "add": _title_add,
    "mul": _title_mul,
    "func": _title_func,
    "pow": _title_kind,
    "inv": _title_kind,
    "det": _title_kind,
    "adj": _title_adj,
    "slice": _title_slice,
    "embed": _title_embed,
}


def node_title(node: Expr) -> str:
    """First label line: the operation and its argument (name, value, index spec)."""
    return DRAWING_TITLES[node.op](node)


def _edge_label_mul(parent: Expr, k: int) -> str:
    return letters_for(parent.arg[0][k]) or "·"


def _edge_label_pow(parent: Expr, k: int) -> str:
    return "base" if k == 0 else "exponent"


def _edge_label_add(parent: Expr, k: int) -> str:
    if len(parent.children) > 1 and parent.arg[k] != 1:
        return _number(parent.arg[k])
    return ""


#: parent kind -> the label of the arrow from its operand ``k`` (kinds not listed: none)
DRAWING_EDGE_LABELS: dict[str, Callable[[Expr, int], str]] = {
    "mul": _edge_label_mul,
    "pow": _edge_label_pow,
    "add": _edge_label_add,
}


def _edge_label(parent: Expr, k: int) -> str:
    rule = DRAWING_EDGE_LABELS.get(parent.op)
    return rule(parent, k) if rule is not None else ""


def _node_shapes(roots: Sequence[Expr], shapes: Mapping[str, Sequence[int]]) -> dict[Expr, tuple[int, ...]]:
    """Shape of every node whose axis lengths the given variable shapes fix."""
    from ..core.axes import axis_graph

    found: dict[Expr, tuple[int, ...]] = {}
    for root in roots:
        graph = axis_graph(root)
        lengths: dict[int, int] = {}
        for name, _order, axis, slot in graph.var_slots:
            shape = shapes.get(name)
            if shape is not None and axis < len(shape):
                lengths.setdefault(graph.find(slot), int(shape[axis]))
        for node in graph.nodes:
            if node in found:
                continue
            classes = graph.classes(node)
            if all(c in lengths for c in classes):
                found[node] = tuple(lengths[c] for c in classes)
    return found


def _label(node: Expr, shape: tuple[int, ...] | None) -> str:
    second = f"order {node.order}"
    if shape is not None and node.order > 0:
        second += " · " + "×".join(str(n) for n in shape)
    return f"{node_title(node)}\n{second}"


# ------------------------------------------------------------------------ drawing


def to_dot(
    expr_or_exprs: Expr | Sequence[Expr],
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Any] | None = None,
    *,
    derivative_wrt: str | Expr | None = None,
    simplify: bool = True,
    colour_pullbacks: bool = False,
    title: str | None = None,
    rankdir: str = "BT",
    max_nodes: int = MAX_NODES,
    node_colours: Mapping[int, str] | None = None,
    node_notes: Mapping[int, str] | None = None,
):
    """Draw expression DAGs with Graphviz.

    Parameters
    ----------
    expr_or_exprs : Expr or sequence of Expr
        What to draw; several expressions share their common nodes.
    shapes : mapping, optional
        Variable name -> shape; every node whose lengths follow is labelled with
        its shape.
    values : mapping, optional
        Variable name -> array; used like ``shapes`` (only the shapes are read).
    derivative_wrt : str or Expr, optional
        Also draw the derivative of each expression by this variable, in a box
        beside the expression's.
    simplify : bool
        With ``derivative_wrt``: draw the simplified derivative (default) or the
        raw reverse-mode DAG (``False``).
    colour_pullbacks : bool
        With ``derivative_wrt``: colour each derivative node like the expression
        node whose pullback created it (most telling with ``simplify=False``:
        simplification rewrites nodes, and new ones stay white).
    title : str, optional
        A caption.
    rankdir : str
        Graphviz layout direction; ``"BT"`` (default) puts operands below the
        nodes that use them, the root on top.
    max_nodes : int
        Refuse larger drawings (they are unreadable and slow to lay out).
    node_colours : mapping, optional
        ``id(node) -> fill colour``, overriding the colour by kind (a hook for
        callers that label nodes, e.g. the convexity certificate's signs).
    node_notes : mapping, optional
        ``id(node) -> text``, added as a last line of the node's label.

    Returns
    -------
    graphviz.Digraph or DotSource
        A ``Digraph`` (shown as SVG in notebooks; ``.render()``, ``.pipe()``) when
        the ``graphviz`` package and the ``dot`` program are installed, else the
        DOT text with an installation hint.

    Examples
    --------
    >>> import tenscalc as tc
    >>> f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    >>> print(tc.dot_source(f).splitlines()[0])
    digraph tenscalc {
    """
    text = dot_source(
        expr_or_exprs,
        shapes,
        values,
        derivative_wrt=derivative_wrt,
        simplify=simplify,
        colour_pullbacks=colour_pullbacks,
        title=title,
        rankdir=rankdir,
        max_nodes=max_nodes,
        node_colours=node_colours,
        node_notes=node_notes,
    )
    if not graphviz_available():
        return DotSource(text)
    import graphviz

    graph = graphviz.Digraph(name="tenscalc")
    # keep the exact, deterministic text built below (Digraph's API would reorder nothing,
    # but building it from our own description keeps one code path for both outputs)
    graph.body[:] = [line + "\n" for line in text.splitlines()[1:-1]]
    return graph


def dot_source(
    expr_or_exprs: Expr | Sequence[Expr],
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Any] | None = None,
    *,
    derivative_wrt: str | Expr | None = None,
    simplify: bool = True,
    colour_pullbacks: bool = False,
    title: str | None = None,
    rankdir: str = "BT",
    max_nodes: int = MAX_NODES,
    node_colours: Mapping[int, str] | None = None,
    node_notes: Mapping[int, str] | None = None,
) -> str:
    """The DOT text that ``to_dot`` draws (same arguments), always as a string.

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.dot_source(tc.parse("x + 1", {"x": 1})).splitlines()[0]
    'digraph tenscalc {'
    """
    roots = require_exprs(expr_or_exprs, "to_dot")
    if not roots or not all(isinstance(r, Expr) for r in roots):
        raise TensCalcError("to_dot needs a tenscalc expression or a sequence of them")
    if rankdir not in ("TB", "BT", "LR", "RL"):
        raise TensCalcError(f"rankdir must be TB, BT, LR or RL, not {rankdir!r}")
    all_shapes: dict[str, tuple[int, ...]] = {k: tuple(v) for k, v in (shapes or {}).items()}
    if values:
        import numpy as np

        for name, value in values.items():
            all_shapes.setdefault(name, np.shape(value))

    derivatives: list[Expr] = []
    sources: dict[int, Expr] = {}
    if derivative_wrt is not None:
        from ..calculus.api import derivative

        for root in roots:
            if colour_pullbacks:
                _, found = pullback_sources(root, derivative_wrt)
                sources.update(found)
            derivatives.append(derivative(root, derivative_wrt, simplify=simplify))
    elif colour_pullbacks:
        raise TensCalcError("colour_pullbacks needs derivative_wrt (the variable of the derivative)")

    original = topological(roots)
    original_set = set(original)
    extra = [n for n in topological(derivatives) if n not in original_set] if derivatives else []
    total = len(original) + len(extra)
    if total > max_nodes:
        raise TensCalcError(
            f"the drawing would have {total} nodes (more than max_nodes={max_nodes}); "
            "draw a part of the expression or raise max_nodes"
        )
    names = {n: f"n{k}" for k, n in enumerate(original + extra)}
    node_shapes = _node_shapes(roots + derivatives, all_shapes) if all_shapes else {}

    parents: dict[Expr, int] = {}
    for node in original + extra:
        for child in node.children:
            parents[child] = parents.get(child, 0) + 1
    # pullback colours: one per expression node that created derivative nodes
    owner_colour: dict[Expr, str] = {}
    if colour_pullbacks:
        owner_set = set(sources.values())
        owners = [n for n in original if n in owner_set]
        owner_colour = {n: PALETTE[k % len(PALETTE)] for k, n in enumerate(owners)}

    # node_colours, node_notes and sources are keyed by id(node): the documented
    # arguments and the return value of pullback_sources
    def fill(node: Expr) -> str:
        if node_colours and id(node) in node_colours:
            return node_colours[id(node)]
        if colour_pullbacks:
            if node in owner_colour:
                return owner_colour[node]
            owner = sources.get(id(node))
            return owner_colour[owner] if owner is not None else "#ffffff"
        return KIND_COLOURS[node.op]

    def node_line(node: Expr, indent: str) -> str:
        label = _label(node, node_shapes.get(node))
        if node_notes and id(node) in node_notes:
            label += "\n" + node_notes[id(node)]
        attrs = {
            "label": label,
            "fillcolor": fill(node),
        }
        if parents.get(node, 0) > 1:
            attrs["peripheries"] = "2"
        if any(node is r for r in roots) or any(node is d for d in derivatives):
            attrs["penwidth"] = "2"
        return f"{indent}{names[node]} [{_attrs(attrs)}]"

    lines = ["digraph tenscalc {", f"\trankdir={rankdir}"]
    lines.append('\tnode [shape=box style="rounded,filled" fontname="Helvetica" fontsize=11]')
    lines.append('\tedge [fontname="Helvetica" fontsize=9 color="#555555"]')
    if title:
        lines.append(f"\tlabel={_quote(title)} labelloc=t fontname=Helvetica")
    if derivatives:
        assert derivative_wrt is not None  # derivatives are drawn only for a variable
        wrt_name = derivative_wrt if isinstance(derivative_wrt, str) else derivative_wrt.arg[0]
        lines.append("\tsubgraph cluster_expression {")
        lines.append('\t\tlabel="expression" style=rounded color="#999999"')
        lines.extend(node_line(n, "\t\t") for n in original)
        lines.append("\t}")
        kind = "simplified" if simplify else "raw reverse-mode"
        lines.append("\tsubgraph cluster_derivative {")
        lines.append(f'\t\tlabel={_quote(f"derivative by {wrt_name} ({kind})")} style=rounded color="#999999"')
        lines.extend(node_line(n, "\t\t") for n in extra)
        lines.append("\t}")
    else:
        lines.extend(node_line(n, "\t") for n in original)
    for node in original + extra:
        for k, child in enumerate(node.children):
            label = _edge_label(node, k)
            attrs = f" [{_attrs({'label': label})}]" if label else ""
            lines.append(f"\t{names[child]} -> {names[node]}{attrs}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs: Mapping[str, str]) -> str:
    return " ".join(f"{key}={_quote(value)}" for key, value in attrs.items())


# ---------------------------------------------------------------- notebook display

NOTEBOOK_MAX_NODES = 150


def svg(expr: Expr, max_nodes: int = NOTEBOOK_MAX_NODES) -> str | None:
    """The drawing as SVG text, or None (Graphviz missing or too many nodes)."""
    if not graphviz_available():
        return None
    from ..core.checks import count_nodes

    if count_nodes(expr) > max_nodes:
        return None
    try:
        return to_dot(expr).pipe(format="svg").decode("utf-8")
    except Exception:  # noqa: BLE001 - a display hook must never raise
        return None


def html(expr: Expr) -> str | None:
    """HTML for notebooks: the expression's text and its drawing (when available)."""
    import html as html_module

    from .text import text_length, to_text

    drawing = svg(expr)
    if drawing is None:
        return None
    # repeated subexpressions named once (t0 = ...), as tc.latex(..., temporaries=True) does
    text = to_text(expr, temporaries=True) if text_length(expr) < 2_000 else f"({expr.op} node of order {expr.order})"
    variables = ", ".join(f"{k}: {v}" for k, v in expr.variables.items())
    code = html_module.escape(text).replace("\n", "<br>")
    caption = f"<code>{code}</code><br><small>order {expr.order}; variables {{{variables}}}</small>"
    start = drawing.find("<svg")
    return f"<div>{caption}<br>{drawing[start:] if start >= 0 else drawing}</div>"


# the face of every Expr (to_latex and the notebook hooks) reads these
PRINTERS.update(svg=svg, html=html)
