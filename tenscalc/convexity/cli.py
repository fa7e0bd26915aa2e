"""``tenscalc convexity``: check a function for convexity from the command line.

The problem comes from the positional argument, from ``-f/--file PATH`` or from
standard input.  Assumptions can be written in its ``declare`` block
(``declare x 1 positive``) or given with ``--assume``.  The explanation is
printed (``--json`` for a machine-readable summary).  Exit status: 0 when the
check ran (whatever the verdict), 1 when ``--expect`` names another verdict,
2 on bad input.

>>> from tenscalc.convexity.cli import main
>>> main(["--quiet", "declare x 1 expression log(exp(x) *(i,i->) 1)"])
convex in x
0
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import TensCalcError
from ..limits import MAX_INPUT, check_input_length, read_limited
from .assumptions import WORDS
from .check import check_convexity
from .report import VERDICTS

EXIT_OK, EXIT_UNEXPECTED, EXIT_BAD_INPUT = 0, 1, 2

_EPILOG = """\
examples:
  tenscalc convexity 'declare x 1 expression log(exp(x) *(i,i->) 1)'
  tenscalc convexity --orders x=1,A=2 --wrt x 'x *(i,ij->j) A *(j,j->) x'
  tenscalc convexity --assume X=pd 'declare X 2 expression -log(det(X))'
  tenscalc convexity --wrt U,V -f factorization.txt --json
assumptions: NAME=WORD[,WORD...] with WORD one of positive, nonnegative, negative,
nonpositive, symmetric, psd, pd, diagonal, or an interval lo..hi (either end may be
empty: x=0.. means x >= 0)
"""


class _CliError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tenscalc convexity",
        description="Prove or refute convexity of a scalar tensor expression from its symbolic Hessian.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("problem", nargs="?", metavar="PROBLEM", help="the problem text ('-' or none: stdin)")
    parser.add_argument("-f", "--file", metavar="PATH", help="read the problem from PATH")
    parser.add_argument(
        "--max-input-size",
        metavar="CHARS",
        type=int,
        default=MAX_INPUT,
        help=f"refuse a problem longer than CHARS characters (default {MAX_INPUT:,}: 1 MB)",
    )
    parser.add_argument("--orders", metavar="NAME=ORDER,...", action="append", default=[], help="undeclared orders")
    parser.add_argument("--wrt", metavar="NAME[,NAME...]", help="the variable(s); several: joint convexity")
    parser.add_argument(
        "--assume", metavar="NAME=WORD[,WORD]", action="append", default=[], help="an assumption (repeatable)"
    )
    parser.add_argument("--no-search", action="store_true", help="skip the numeric search for counterexamples")
    parser.add_argument("--seed", type=int, default=0, help="seed of the numeric search (default 0)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of the explanation")
    parser.add_argument("--quiet", action="store_true", help="print only the verdict line")
    parser.add_argument("--expect", choices=VERDICTS, help="exit 1 unless the verdict is this one")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tenscalc convexity`` with ``argv`` (without the ``convexity`` word)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        text = _read(args)
        orders = _orders(args.orders)
        assumptions = _assumptions(args.assume)
        from ..frontend.typecheck import build_problem

        problem = build_problem(text, orders or None)
        wrt = [w.strip() for w in args.wrt.split(",") if w.strip()] if args.wrt else None
        if wrt is not None and len(wrt) == 1:
            wrt = wrt[0]
        result = check_convexity(problem, wrt, assumptions, falsify=not args.no_search, seed=args.seed)
    except (TensCalcError, _CliError) as exc:
        print(f"tenscalc convexity: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(to_json(result), indent=2))
    elif args.quiet:
        print(result.summary())
    else:
        print(result.explain())
    if args.expect is not None and result.verdict != args.expect:
        return EXIT_UNEXPECTED
    return EXIT_OK


def _read(args) -> str:
    if args.problem is not None and args.file is not None:
        raise _CliError("give the problem either as text or with --file, not both")
    if args.file is not None and args.file != "-":
        try:
            with open(args.file, encoding="utf-8") as handle:
                return read_limited(handle, args.max_input_size, repr(args.file))
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise _CliError(f"cannot read {args.file!r}: {reason}") from None
    if args.problem is not None and args.problem != "-":
        check_input_length(args.problem, args.max_input_size, "the problem text")
        return args.problem
    if sys.stdin is None or sys.stdin.isatty():
        raise _CliError("no problem given: pass its text, --file PATH, or pipe it on standard input")
    text = read_limited(sys.stdin, args.max_input_size, "standard input")
    if not text.strip():
        raise _CliError("no problem given: standard input is empty")
    return text


def _orders(items: list[str]) -> dict[str, int]:
    orders: dict[str, int] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, value = (p.strip() for p in part.partition("="))
            if not sep or not value.isdigit():
                raise _CliError(f"expected NAME=ORDER pairs such as x=1,A=2, got {part.strip()!r}")
            orders[name] = int(value)
    return orders


def _assumptions(items: list[str]) -> dict[str, list[Any]]:
    """``x=positive``, ``X=symmetric,pd``, ``t=0..1``, ``c=..2`` -> the assumptions mapping."""
    result: dict[str, list[Any]] = {}
    for item in items:
        name, sep, value = (p.strip() for p in item.partition("="))
        if not sep or not name or not value:
            raise _CliError(f"expected NAME=WORD[,WORD] in --assume, got {item!r}")
        for word in (w.strip() for w in value.split(",")):
            if ".." in word:
                lo, _, hi = word.partition("..")
                result.setdefault(name, []).append((_bound(lo), _bound(hi)))
            elif word.lower() in WORDS:
                result.setdefault(name, []).append(word.lower())
            else:
                raise _CliError(f"unknown assumption {word!r}; use {', '.join(WORDS)} or lo..hi")
    return result


def _bound(text: str) -> float | None:
    text = text.strip()
    if text in ("", "inf", "-inf", "+inf"):
        return None
    try:
        return float(text)
    except ValueError:
        raise _CliError(f"{text!r} is not a number") from None


def _array(value: Any) -> Any:
    return np.asarray(value).tolist()


def to_json(result) -> dict[str, Any]:
    """A JSON-serialisable summary of a :class:`ConvexityResult`."""
    out: dict[str, Any] = {
        "verdict": result.verdict,
        "wrt": list(result.wrt),
        "strict": result.strict,
        "strong": result.strong,
        "modulus": result.modulus,
        "assumptions": {k: [list(x) if isinstance(x, tuple) else x for x in v] for k, v in result.assumptions.items()},
        "implied_domain": result.implied_domain,
        "hessian": result.hessian_text,
        "method": result.method,
        "notes": result.notes,
    }
    if result.certificate is not None:
        out["certificate"] = [
            {"node": s.node, "fact": s.fact, "rule": s.rule, "detail": s.detail} for s in result.certificate.steps
        ]
    for key, cex in (
        ("counterexample_convex", result.convex_counterexample),
        ("counterexample_concave", result.concave_counterexample),
    ):
        if cex is not None:
            out[key] = {
                "kind": cex.kind,
                "point": {k: _array(v) for k, v in cex.point.items()},
                "direction": None if cex.direction is None else {k: _array(v) for k, v in cex.direction.items()},
                "curvature": cex.curvature,
                "second_difference": cex.second_difference,
                "gap": cex.gap,
            }
    return out


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
