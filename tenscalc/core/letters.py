"""A small union-find over index letters (ints): which letters must be equal.

Used wherever a product's letters are merged: a delta joins its paired letters,
inlining a product joins its output letters with the parent's.  (Axis lengths of a
whole DAG use the list-based union-find of :mod:`tenscalc.core.axes`, built for size.)
"""

from __future__ import annotations


class LetterClasses:
    """Letters joined into classes; each class is named by its smallest letter.

    >>> classes = LetterClasses()
    >>> classes.union(3, 1); classes.union(1, 2)
    >>> classes.find(3), classes.find(4)
    (1, 4)
    """

    def __init__(self, parent: dict[int, int] | None = None):
        self.parent = dict(parent or {})

    def find(self, a: int) -> int:
        parent = self.parent
        while parent.get(a, a) != a:
            a = parent[a]
        return a

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def copy(self) -> LetterClasses:
        return LetterClasses(self.parent)
