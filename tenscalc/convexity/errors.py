"""The checker's own failure: a proof contradicted by numbers.

>>> from tenscalc.convexity.errors import InternalError
>>> import tenscalc as tc
>>> issubclass(InternalError, tc.TensCalcError)
True
"""

from __future__ import annotations

from ..errors import TensCalcError


class InternalError(TensCalcError):
    """A certificate was contradicted by a numeric counterexample: a bug of tenscalc's
    convexity rules, never a verdict.  ``claim`` is what was proven (``"convex"`` or
    ``"concave"``), ``certificate`` and ``counterexample`` are the two sides."""

    def __init__(self, message: str, claim: str = "", certificate=None, counterexample=None):
        self.claim = claim
        self.certificate = certificate
        self.counterexample = counterexample
        super().__init__(message)
