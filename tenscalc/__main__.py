"""``python -m tenscalc``: the same as the ``tenscalc`` command."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
