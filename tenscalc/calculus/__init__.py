"""Symbolic differentiation.

* :mod:`~tenscalc.calculus.api`: the public functions (``derivative``, ``gradient``,
  ``jacobian``, ``hessian``, ``nth_derivative``) and ``resolve_wrt``.
* :mod:`~tenscalc.calculus.sweep`: the iterative reverse sweep over the DAG.
* :mod:`~tenscalc.calculus.pullbacks`: the rule tables, one pullback per node kind
  and one derivative per elementwise function.
* :mod:`~tenscalc.calculus.directional`: Hessian-vector products (``hvp``).
* :mod:`~tenscalc.calculus.elimination`: Jacobians of several outputs by vertex
  elimination (forward, reverse, Markowitz order), diagonal partials kept diagonal.
"""
