"""The front end: text or Python in, an interned, order-checked DAG out.

* :mod:`~tenscalc.frontend.lexer` -> :mod:`~tenscalc.frontend.parser` (recursive descent,
  syntax tree with positions) -> :mod:`~tenscalc.frontend.typecheck` (orders and the DAG);
* :mod:`~tenscalc.frontend.matrix_notation`: matrixcalculus.org's notation as DAG nodes;
* :mod:`~tenscalc.frontend.builder`: the same DAG built from Python (``tc.var``, ``tc.exp`` ...);
* :mod:`~tenscalc.frontend.numpy_api`: NumPy spellings (``A @ x``, ``A.T``, ``x.sum()``).
"""
