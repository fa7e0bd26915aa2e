"""What a generated module imports: the libraries it needs, and those it tries where installed.

A generated module needs NumPy (and opt_einsum for a shape-free contraction); it imports
tenscalc's ``EvaluationError`` inside ``try: ... except ImportError:`` so that
``except tc.EvaluationError`` catches its errors where tenscalc is installed, falling back
to ``ValueError`` where it is not.
"""

from __future__ import annotations

import ast


def module_imports(source: str) -> tuple[set[str], set[str]]:
    """(the top-level packages ``source`` imports unconditionally, those it imports only
    inside a ``try`` whose handler catches ``ImportError``)."""
    tree = ast.parse(source)
    guarded = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Try) and any(getattr(h.type, "id", None) == "ImportError" for h in node.handlers)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    required: set[str] = set()
    optional: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found = {(node.module or "").split(".")[0]}
        else:
            continue
        (optional if id(node) in guarded else required).update(found)
    return required, optional
