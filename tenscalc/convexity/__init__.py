"""Convexity certificates from Hessians (Klaus, Merk, Wiedom, Laue, Giesen, NeurIPS 2022).

:func:`check_convexity` proves convexity or concavity by labelling the symbolic
Hessian DAG with interval and semidefiniteness facts, and refutes it with
numeric counterexamples.  See ``docs/convexity.md``.

>>> import tenscalc as tc
>>> tc.check_convexity("declare x 1 expression log(exp(x) *(i,i->) 1)", "x").verdict
'convex'
"""

from .check import check_convexity
from .errors import InternalError
from .report import VERDICTS, Certificate, ConvexityResult

__all__ = ["check_convexity", "ConvexityResult", "Certificate", "VERDICTS", "InternalError"]
