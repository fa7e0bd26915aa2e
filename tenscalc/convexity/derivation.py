"""What the certification rules share: the facts they read and the facts they state.

The rule modules (:mod:`.intervals`, :mod:`.curvature`, :mod:`.congruence`,
:mod:`.expansion`, :mod:`.psd_templates`) are functions of a :class:`FactSource`
(in practice the :class:`~.analysis.Analyzer` that calls them, passed in) and a
node.  A matrix rule answers with a :class:`Derivation`: a
:class:`~.facts.Curvature` and the rule, detail and premises that showed it, so
the proof can be printed.  This module imports no other rule module, so the
analyzer and the rules can both build on it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..core.nodes import Expr
from ..core.text import short
from .facts import Curvature, Interval

Perm = tuple[int, ...]
"""A permutation of the last ``k`` axes of an order-``2k`` node read as a matrix."""


class FactSource(Protocol):
    """The facts a rule may read about other nodes (implemented by :class:`~.analysis.Analyzer`)."""

    kink_mode: bool
    beside: FactSource | None
    wrt_names: set[str]

    def variable_interval(self, name: str) -> Interval: ...

    def matrix_tags(self, name: str) -> set[str]: ...

    def interval(self, node: Expr) -> Interval: ...

    def derive(self, node: Expr, perms: tuple | None = None) -> Derivation | None: ...

    def curvature(self, node: Expr, perms: tuple | None = None) -> Curvature | None: ...


@dataclass
class Derivation:
    """A matrix fact and how it was shown."""

    curvature: Curvature
    rule: str
    detail: str = ""
    premises: list[Expr] = field(default_factory=list)
    terms: list[tuple[float, Expr]] = field(default_factory=list)  # for expansions


def identity_perm(k: int) -> Perm:
    """The identity permutation of ``k`` axes."""
    return tuple(range(k))


def short_text(node: Expr, limit: int = 70) -> str:
    """A node's text, cut to ``limit`` characters for a certificate (never raises)."""
    return short(node, limit, fallback=f"<{node.op} node>")
