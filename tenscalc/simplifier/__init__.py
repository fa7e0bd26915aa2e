"""simplifier"""

from .driver import simplify, simplify_many

__all__ = ["simplify", "simplify_many"]
