"""The foundation: what every other layer builds on, importing nothing above it.

* :mod:`~tenscalc.core.vocabulary`: node kinds, function names, the language's words;
* :mod:`~tenscalc.core.functions`: one spec per elementwise function, read by every stage;
* :mod:`~tenscalc.core.nodes`: the interned, immutable DAG node ``Expr`` and its one factory;
* :mod:`~tenscalc.core.face`: ``Expr``'s operators and display hooks (the only deferred
  imports of the foundation, listed there);
* :mod:`~tenscalc.core.letters`: the union-find over index letters;
* :mod:`~tenscalc.core.products`: the product algebra (flattening n-ary einsum products,
  absorbing deltas);
* :mod:`~tenscalc.core.axes`: which axes must have equal lengths, and how long they are;
* :mod:`~tenscalc.core.checks`: argument checks and node counts;
* :mod:`~tenscalc.core.text`: index letters, numbers and short quotes for messages.
"""
