"""A fuzz harness for tenscalc (issue 14).

Three sources of input, each run through the whole library:

* :mod:`.generate` writes random *valid* problems from the grammar; they are
  checked end to end (parse, print, re-parse, simplify, evaluate, compile,
  ``to_python``, pickling, derivatives of order 1 and 2 against finite
  differences) on random arrays with distinct axis lengths;
* :mod:`.mutate` takes the documented examples (``docs/*.md``) and the texts the
  tests parse, and mutates them (deleted and inserted characters, hostile
  numbers, deep nesting, unicode digits ...);
* random strings over the language's alphabet and a few hostile characters.

Mutated and random inputs must either be refused with a ``TensCalcError`` or go
through every stage with all evaluators agreeing.  Anything else is a finding:
another exception (``crash``), a case over the time limit (``hang``), or a
wrong number (``mismatch``).

Run a campaign with ``python -m tests.fuzz.run --seconds 600`` from the
repository root; ``tests/test_fuzz.py`` runs a short seeded slice in CI.
"""
