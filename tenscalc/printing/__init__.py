"""Printers: a DAG as text, matrix notation, LaTeX or a drawing.

* :mod:`~tenscalc.printing.text`: the einsum language (parses back to the same node);
* :mod:`~tenscalc.printing.matrix_reading`: the one recogniser of matrix structure in a
  product, whose reading both matrix printers render (so they agree);
* :mod:`~tenscalc.printing.matrix_notation`: matrixcalculus.org's notation where it exists;
* :mod:`~tenscalc.printing.latex`: LaTeX, the entry point; it writes matrix forms with
  :mod:`~tenscalc.printing.matrix_forms` and falls back to
  :mod:`~tenscalc.printing.latex_index` (index notation), both spelling through
  :mod:`~tenscalc.printing.latex_pieces`;
* :mod:`~tenscalc.printing.drawing`: Graphviz drawings of the DAG;
* :mod:`~tenscalc.printing.labels`: what the k-th derivative is called.
"""
