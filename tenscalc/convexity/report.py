"""The result of a convexity check: verdict, certificate, counterexample, explanation.

A :class:`ConvexityResult` prints as a readable explanation (``str``), shows as
Markdown or HTML in a notebook, and exposes everything as attributes for
scripts: ``verdict``, ``strict``, ``strong``, ``modulus``, ``certificate``,
``counterexample``, ``assumptions``, ``implied_domain``, ``hessian``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from ..core.checks import count_nodes
from ..core.nodes import Expr
from ..core.text import short

VERDICTS = ("convex", "concave", "affine", "not convex", "not concave", "neither", "unknown")

MEANING = {
    "convex": "convex: proven from the Hessian",
    "concave": "concave: proven from the Hessian",
    "affine": "affine: proven convex and concave",
    "not convex": "not convex: refuted by a counterexample (concavity neither proven nor refuted)",
    "not concave": "not concave: refuted by a counterexample (convexity neither proven nor refuted)",
    "neither": "neither convex nor concave: both refuted by counterexamples",
    "unknown": "unknown: nothing was proven or refuted (this is not a claim that the function is not convex)",
}
"""What each verdict means, in words (the explanation and the web page print it)."""


@dataclass
class ProofStep:
    """One node on the proof path: the fact established and the rule that did it."""

    node: str
    fact: str
    rule: str
    detail: str = ""

    def describe(self) -> str:
        text = f"{self.node}\n    {self.fact}  [{self.rule}]"
        if self.detail:
            text += f"\n    {self.detail}"
        return text


@dataclass
class Certificate:
    """Why the function is convex (or concave)."""

    claim: str
    hessian_text: str
    steps: list[ProofStep]
    kinks: list[str] = field(default_factory=list)
    domain: list[str] = field(default_factory=list)
    method: str = "Hessian DAG"

    def describe(self) -> str:
        want = "PSD" if self.claim == "convex" else "NSD"
        lines = [f"certificate ({self.method}): the Hessian is {want} on the domain", "Hessian:"]
        lines.extend("  " + line for line in self.hessian_text.splitlines())
        lines.append("proof (each node: fact [rule]):")
        for step in self.steps:
            lines.extend("  " + line for line in step.describe().splitlines())
        if self.kinks:
            lines.append("non-smooth points (each bends the right way):")
            lines.extend("  " + k for k in self.kinks)
        if self.domain:
            lines.append("domain used:")
            lines.extend("  " + d for d in self.domain)
        return "\n".join(lines)


@dataclass
class ConvexityResult:
    """The outcome of :func:`tenscalc.check_convexity`.

    ``verdict`` is one of ``convex``, ``concave``, ``affine``, ``not convex``,
    ``not concave``, ``neither``, ``unknown``.  ``strict``/``strong`` are True only
    when certified (``modulus`` then bounds the smallest eigenvalue of the
    Hessian, e.g. ``2 lam`` for ridge regression).
    """

    verdict: str
    expression: Expr
    wrt: tuple[str, ...]
    strict: bool = False
    strong: bool = False
    modulus: str | None = None
    modulus_value: float | None = None
    convex_certificate: Certificate | None = None
    concave_certificate: Certificate | None = None
    convex_counterexample: Any = None
    concave_counterexample: Any = None
    assumptions: dict[str, tuple] = field(default_factory=dict)
    implied_domain: list[str] = field(default_factory=list)
    hessian: Any = None
    kinks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    search: Any = None
    method: str = ""
    graph: list = field(default_factory=list, repr=False)  # the DAG the proof read
    graph_facts: dict = field(default_factory=dict, repr=False)  # node -> (category, fact)

    # -- conveniences ----------------------------------------------------------------------
    @property
    def is_convex(self) -> bool | None:
        """True (proven), False (refuted) or None (unknown)."""
        if self.verdict in ("convex", "affine"):
            return True
        if self.verdict in ("not convex", "neither") or self.convex_counterexample is not None:
            return False
        return None

    @property
    def is_concave(self) -> bool | None:
        if self.verdict in ("concave", "affine"):
            return True
        if self.verdict in ("not concave", "neither") or self.concave_counterexample is not None:
            return False
        return None

    @property
    def certified(self) -> bool:
        return self.verdict in ("convex", "concave", "affine")

    @property
    def certificate(self) -> Certificate | None:
        return self.convex_certificate or self.concave_certificate

    @property
    def counterexample(self):
        """The counterexample against convexity, else the one against concavity."""
        return self.convex_counterexample or self.concave_counterexample

    @property
    def hessian_text(self) -> str:
        if isinstance(self.hessian, dict):
            return "\n".join(f"H[{a},{b}] = {h}" for (a, b), h in self.hessian.items())
        return str(self.hessian)

    def summary(self) -> str:
        """One line: the verdict with its flags."""
        wrt = ", ".join(self.wrt)
        flags = []
        if self.strong:
            flags.append(f"strongly (modulus {self.modulus})")
        elif self.strict:
            flags.append("strictly")
        head = f"{' '.join(flags)} {self.verdict}".strip()
        return f"{head} in {wrt}"

    def explain(self) -> str:
        lines = [f"f = {_short(self.expression)}", f"verdict: {self.summary()}", f"  ({MEANING[self.verdict]})"]
        if self.assumptions:
            lines.append(
                "assumptions: " + "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in self.assumptions.items())
            )
        if self.implied_domain:
            lines.append("domain implied by the expression:")
            lines.extend("  " + d for d in self.implied_domain)
        if self.certificate is not None:
            lines.append(self.certificate.describe())
        for label, cex in (
            ("against convexity", self.convex_counterexample),
            ("against concavity", self.concave_counterexample),
        ):
            if cex is not None:
                lines.append(f"counterexample {label}:")
                lines.extend("  " + line for line in cex.describe().splitlines())
        if self.kinks and self.certificate is None:
            lines.append("non-smooth points:")
            lines.extend("  " + k for k in self.kinks)
        for note in self.notes:
            lines.append("note: " + note)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def __repr__(self) -> str:
        return f"<ConvexityResult {self.summary()}: {_short(self.expression, 60)}>"

    # -- the picture -------------------------------------------------------------------------
    def picture_title(self) -> str:
        """The caption of the drawing: verdict, colour legend, counterexample direction."""
        from .picture import LEGEND

        lines = [f"{self.summary()} ({self.method or 'no proof'})", LEGEND]
        for label, cex in (
            ("against convexity", self.convex_counterexample),
            ("against concavity", self.concave_counterexample),
        ):
            if cex is None:
                continue
            if cex.direction is not None:
                lines.append(f"counterexample {label}: {cex.kind}, direction v: " + _values_text(cex.direction))
            else:
                lines.append(f"counterexample {label}: {cex.kind}")
        return "\n".join(lines)

    def dot_source(self) -> str:
        """DOT text of the Hessian DAG coloured by the proven signs (see :mod:`.picture`)."""
        from .picture import dot_text

        return dot_text(self.graph, self.graph_facts, self.picture_title())

    def to_dot(self):
        """The coloured Hessian DAG as a ``graphviz.Digraph`` (DOT text without Graphviz)."""
        from .picture import drawing

        return drawing(self.graph, self.graph_facts, self.picture_title())

    def _repr_markdown_(self) -> str:
        parts = [f"**{html.escape(self.summary())}** &nbsp; `{html.escape(_short(self.expression, 200))}`", ""]
        parts.append(f"*{MEANING[self.verdict]}*")
        parts.append("")
        parts.append("```")
        parts.append(self.explain())
        parts.append("```")
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        color = {"convex": "#1a7f37", "concave": "#1a7f37", "affine": "#1a7f37", "unknown": "#9a6700"}.get(
            self.verdict, "#cf222e"
        )
        from .picture import svg

        drawing = svg(self.graph, self.graph_facts, self.picture_title()) if self.graph else None
        picture = ""
        if drawing is not None:
            start = drawing.find("<svg")
            picture = f"<details open><summary>Hessian DAG by proven sign</summary>{drawing[max(start, 0) :]}</details>"
        return (
            f"<div><b style='color:{color}'>{html.escape(self.summary())}</b> "
            f"<code>{html.escape(_short(self.expression, 200))}</code>{picture}"
            f"<details><summary>explanation</summary><pre>{html.escape(self.explain())}</pre></details></div>"
        )


def _values_text(values) -> str:
    import numpy as np

    parts = []
    for name, value in values.items():
        text = np.array2string(np.asarray(value), precision=3, suppress_small=True, threshold=8, max_line_width=80)
        parts.append(f"{name} = {' '.join(text.split())}")
    return "; ".join(parts)


def _short(node: Any, limit: int = 160) -> str:
    return short(node, limit, fallback="<expression>")  # never raises: too large prints as a placeholder


def safe_text(node: Expr, limit: int = 4000) -> str:
    """A node's text for a certificate, cut to ``limit`` characters (a node count when
    printing fails)."""
    try:
        text = str(node)
    except Exception:  # noqa: BLE001 - too large to print
        return f"<{count_nodes(node)} nodes>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
