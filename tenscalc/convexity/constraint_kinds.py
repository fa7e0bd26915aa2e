"""The kinds of domain constraint, each declared once.

An expression restricts where it is defined (``log(u)`` needs ``u > 0``); each
restriction is a :class:`~tenscalc.convexity.assumptions.Constraint` of one of the
kinds below.  Everything the checker needs to know about a kind lives in its
entry: how it is written, the interval of entries it implies, whether numbers
satisfy it (the numeric search) and whether proven facts imply it (the domain
proof).  Adding a kind means adding one entry here.

>>> from tenscalc.convexity.constraint_kinds import CONSTRAINT_KINDS
>>> CONSTRAINT_KINDS["positive"].text
'> 0'
>>> import numpy as np
>>> CONSTRAINT_KINDS["unit"].holds(np.array([0.5, -1.0]))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .facts import Interval

if TYPE_CHECKING:
    from ..core.nodes import Expr
    from .analysis import Analyzer

INVERTIBLE_CONDITION = 1e12
"""A sampled matrix with a larger condition number counts as singular in the numeric search."""


@dataclass(frozen=True)
class ConstraintKind:
    """One kind of domain constraint.

    ``text`` follows the constrained node in descriptions (``u > 0``);
    ``interval`` is the interval every entry must lie in, where the kind is one;
    ``holds`` reads sampled values (already checked finite unless ``allows_nonfinite``);
    ``covered`` says whether the facts an :class:`Analyzer` proves imply the constraint;
    the set it cuts out is convex when the node is affine (``sublevel_of_affine``) or
    entrywise concave (``superlevel_of_concave``) in the variables.
    """

    text: str
    holds: Callable[[np.ndarray], bool]
    covered: Callable[[Analyzer, Expr], bool]
    interval: Callable[[], Interval] | None = None
    allows_nonfinite: bool = False
    sublevel_of_affine: bool = False
    superlevel_of_concave: bool = False


def _invertible_holds(u: np.ndarray) -> bool:
    return u.ndim == 2 and bool(np.all(np.isfinite(u))) and bool(np.linalg.cond(u) <= INVERTIBLE_CONDITION)


def _definite(an: Analyzer, node: Expr) -> bool:
    # a symmetric definite matrix is invertible
    curv = an.curvature(node)
    return curv is not None and curv.symmetric and (curv.pd or curv.nd)


def _inside_half_pi(an: Analyzer, node: Expr) -> bool:
    iv = an.interval(node)
    return iv.lo > -math.pi / 2 and iv.hi < math.pi / 2


CONSTRAINT_KINDS: dict[str, ConstraintKind] = {
    "positive": ConstraintKind(
        "> 0",
        lambda u: bool(np.all(u > 0)),
        lambda an, node: an.interval(node).pos,
        Interval.positive,
        sublevel_of_affine=True,
        superlevel_of_concave=True,
    ),
    "nonnegative": ConstraintKind(
        ">= 0",
        lambda u: bool(np.all(u >= 0)),
        lambda an, node: an.interval(node).nonneg,
        Interval.nonnegative,
        sublevel_of_affine=True,
        superlevel_of_concave=True,
    ),
    "nonzero": ConstraintKind(
        "!= 0", lambda u: bool(np.all(u != 0)), lambda an, node: an.interval(node).pos or an.interval(node).neg
    ),
    "unit": ConstraintKind(
        "in [-1, 1]",
        lambda u: bool(np.all(np.abs(u) <= 1)),
        lambda an, node: an.interval(node).lo >= -1 and an.interval(node).hi <= 1,
        lambda: Interval.closed(-1, 1),
        sublevel_of_affine=True,
    ),
    "invertible": ConstraintKind("invertible", _invertible_holds, _definite, allows_nonfinite=True),
    "cos_nonzero": ConstraintKind(
        "not an odd multiple of pi/2", lambda u: bool(np.all(np.abs(np.cos(u)) > 1e-12)), _inside_half_pi
    ),
}
"""Every constraint kind, by the name a :class:`Constraint` carries."""
