"""The ``tenscalc`` command: parse a problem, print it and its derivatives.

The problem comes from the positional argument (the text itself), from
``-f/--file PATH`` or from standard input (no argument, or ``-``).  Exit status:
0 on success, 1 when ``--check`` finds a derivative that disagrees with finite
differences, 2 on bad input (every ``TensCalcError``, unreadable files, bad
options, a problem longer than ``--max-input-size``: 1,000,000 characters by
default, or too large to hold in memory), 3 when ``--check`` finds no random data where the expression is defined
(it says "could not evaluate at random data: <why>"), always with a message on
stderr and never a traceback.

>>> from tenscalc.cli import main
>>> main(["--orders", "x=1", "x *(i,i->) x"])
expression  x *(i,i->) x
order       0
variables   x 1
0
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from . import __version__
from .core import nodes as N
from .core.checks import count_nodes
from .core.nodes import Expr
from .errors import SemanticError, TensCalcError
from .frontend.typecheck import Problem, build_problem
from .interpreter import evaluate
from .limits import MAX_INPUT, check_input_length, read_limited
from .printing.labels import derivative_label
from .progress import verbose
from .service import derivatives, numeric_check

EXAMPLE = "declare x 1 A 2 expression x *(i,ij->j) A *(j,j->) x derivative wrt x"
"""The built-in example of ``--example``: the quadratic form xᵀAx, by x."""

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_EVALUATED = 3  # --check: no random data where the function is defined
EXIT_BROKEN_PIPE = 141  # the reader of standard output went away (128 + SIGPIPE, as a shell reports it)

#: Every subcommand with its one-line description, listed by ``tenscalc --help``.
SUBCOMMANDS = {
    "convexity": "prove or refute convexity from the symbolic Hessian (tenscalc convexity --help)",
}

_COMMANDS = "\n".join(
    ["commands:", f"  {'tenscalc PROBLEM':<30}print a problem and its derivatives (the options below)"]
    + [f"  {'tenscalc ' + name + ' PROBLEM':<30}{line}" for name, line in SUBCOMMANDS.items()]
)

_EPILOG = """\
examples:
  tenscalc --example
  tenscalc 'declare X 2 expression log(det(X)) derivative wrt X'
  tenscalc --orders x=1,A=2 --wrt x --hessian 'x *(i,ij->j) A *(j,j->) x'
  echo 'declare W 2 x 1 expression tanh(W *(ij,j->i) x) derivative wrt W' | tenscalc --check
  tenscalc -f problem.txt --order 3
  tenscalc serve --open        (the web page, on this machine: tenscalc serve --help)
  tenscalc --latex --hessian 'declare X 2 expression log(det(X)) derivative wrt X'
  tenscalc --notation matrix 'declare X 2 expression log(det(X)) derivative wrt X'
  tenscalc --python --example

An expression that starts with '-' must follow '--':  tenscalc --orders x=1 -- '-x'
A problem longer than 1,000,000 characters is refused (exit status 2): raise it with --max-input-size.

exit status: 0 ok; 1 --check found a derivative that disagrees with finite differences;
2 bad input (a bad expression or option, an unreadable or too large input);
3 --check could not evaluate at random data (no draw where the expression is defined)
"""


class CliError(Exception):
    """Bad use of the command itself (missing input, unreadable file, ...)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default ``sys.argv[1:]``) and return its exit status.

    >>> from tenscalc.cli import main
    >>> main(["--orders", "c=0", "c + 1"])
    expression  c + 1
    order       0
    variables   c 0
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["convexity"]:  # `tenscalc convexity ...` has its own options
        from .convexity.cli import main as convexity_main

        return convexity_main(argv[1:])
    if argv[:1] == ["serve"]:  # `tenscalc serve [--port N] [--open] [--host H]`: the web page
        from .web.server import main as serve_main

        return serve_main(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors: argparse already printed
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        with verbose(("info", "debug")[min(args.verbose, 2) - 1] if args.verbose else None):
            return run(args, sys.stdout)
    except (TensCalcError, CliError) as exc:
        # The message of a TensCalcError already shows the source line and a caret.
        print(f"tenscalc: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (MemoryError, RecursionError):  # what the input limit lets through and this machine cannot hold
        print("tenscalc: error: the problem is too large to process on this machine", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader went away (`tenscalc ... | head -1`): stop quietly
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tenscalc`` command."""
    parser = argparse.ArgumentParser(
        prog="tenscalc",
        description="Parse a tensor expression problem and print it with its exact derivatives.\n\n" + _COMMANDS,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "problem",
        nargs="?",
        metavar="PROBLEM",
        help="the problem text, e.g. 'declare x 1 expression x *(i,i->) x derivative wrt x' "
        "(default, or '-': read standard input)",
    )
    parser.add_argument("-f", "--file", metavar="PATH", help="read the problem from PATH ('-': standard input)")
    parser.add_argument("--example", action="store_true", help=f"run the built-in example: {EXAMPLE}")
    parser.add_argument(
        "--max-input-size",
        metavar="CHARS",
        type=positive_int,
        default=MAX_INPUT,
        help=f"refuse a problem longer than CHARS characters (default {MAX_INPUT:,}: 1 MB)",
    )
    parser.add_argument(
        "--orders",
        metavar="NAME=ORDER,...",
        action="append",
        type=parse_orders,
        default=[],
        help="orders of variables not declared in the text, e.g. x=1,A=2",
    )
    parser.add_argument(
        "--no-letter-rule",
        action="store_true",
        help="every name must be declared (by default undeclared names take matrixcalculus.org's types by "
        "their first letter: a-g scalars, h-z vectors, A-Z matrices)",
    )
    parser.add_argument("--wrt", metavar="NAME", help="differentiate by NAME (overrides 'derivative wrt')")
    how_many = parser.add_mutually_exclusive_group()
    how_many.add_argument("--hessian", action="store_true", help="also print the second derivative")
    how_many.add_argument("--order", metavar="N", type=positive_int, help="print the derivatives up to the N-th")
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare the derivatives with finite differences at random data where the expression is defined "
        "(well-conditioned inv/det arguments, finite values); exit 1 if they disagree, 3 if no such data "
        "was found ('could not evaluate at random data: <why>')",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random data of --check (default 0)")
    parser.add_argument(
        "--latex",
        action="store_true",
        help="print LaTeX formulas (matrix notation where one exists, shared parts named t_{0}, t_{1}, ...)",
    )
    parser.add_argument(
        "--notation",
        choices=("matrix", "einsum"),
        help="matrix: matrix notation (x^T A x) where the expression has one, else the einsum language; "
        "einsum: the einsum language (default), or index notation with --latex",
    )
    parser.add_argument(
        "--python",
        action="store_true",
        help="also print a standalone NumPy function (tc.to_python) computing the expression and its derivatives",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="say on standard error what the work is doing: each stage (parse, differentiate, simplify, compile) "
        "with its sizes and time; -vv also each simplifier pass",
    )
    parser.add_argument("--version", action="version", version=f"tenscalc {__version__}")
    return parser


def parse_orders(text: str) -> dict[str, int]:
    """Parse ``"x=1,A=2"`` into ``{"x": 1, "A": 2}`` (an ``--orders`` value).

    >>> parse_orders("x=1, A=2")
    {'x': 1, 'A': 2}
    """
    orders: dict[str, int] = {}
    for item in text.split(","):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not item.strip():
            continue
        if not sep or not name or not (value.isascii() and value.isdigit()):
            raise argparse.ArgumentTypeError(f"expected NAME=ORDER pairs such as x=1,A=2, got {item.strip()!r}")
        orders[name] = int(value)
    return orders


def positive_int(text: str) -> int:
    """An integer of at least 1 (the value of ``--order``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Do what the parsed command line asks, writing to ``out``; return the exit status."""
    orders: dict[str, int] = {}
    for given in args.orders:
        orders.update(given)
    problem = build_problem(read_problem(args), orders or None, letter_rule=not args.no_letter_rule)
    count = derivative_count(args)
    name = args.wrt or problem.wrt
    if name is None and (count or args.check):
        raise CliError("nothing to differentiate by: add 'derivative wrt NAME' to the problem or pass --wrt NAME")
    wrt = None if name is None else wrt_variable(problem, name)  # checked before anything is printed
    show = Shower(args.latex, args.notation)
    show_expression(problem.expr, out, show)
    found = (
        [] if name is None or wrt is None else derivatives(problem.expr, wrt, count or 1, symmetric=problem.symmetric)
    )
    for k, d in enumerate(found, start=1):
        show_derivative(k, problem.expr, str(name), d, out, show)
    if args.python:
        from .compiler.codegen import to_python

        out.write("\ngenerated code (NumPy and opt_einsum only):\n\n")
        # the declarations reach the code: a pd matrix's inv and det through one Cholesky factor
        out.write(to_python([problem.expr, *found], name="f", assumptions=problem.assumptions))
        out.write("\n")
    if name is None or wrt is None:
        return EXIT_OK
    if args.check:
        return check(problem.expr, wrt, name, len(found), args.seed, out)
    return EXIT_OK


def read_problem(args: argparse.Namespace) -> str:
    """The problem text the command line names: ``--example``, the argument, a file or stdin."""
    if args.example:
        if args.problem is not None or args.file is not None:
            raise CliError("--example takes no problem text and no --file")
        return EXAMPLE
    if args.problem is not None and args.file is not None:
        raise CliError("give the problem either as text or with --file, not both")
    limit = getattr(args, "max_input_size", MAX_INPUT)
    if args.file is not None and args.file != "-":
        return read_file(args.file, limit)
    if args.file == "-" or args.problem is None or args.problem == "-":
        return read_stdin(limit)
    check_input_length(args.problem, limit, "the problem text")
    return args.problem


def read_file(path: str, limit: int = MAX_INPUT) -> str:
    """The text of the file at ``path`` (at most ``limit`` characters); a clean
    ``CliError`` when it cannot be read, a ``TensCalcError`` when it is longer."""
    try:
        with open(path, encoding="utf-8") as handle:
            return read_limited(handle, limit, repr(path))
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CliError(f"cannot read {path!r}: {reason}") from None


def read_stdin(limit: int = MAX_INPUT) -> str:
    """The problem text on standard input (at most ``limit`` characters)."""
    stream = sys.stdin
    if stream is None or stream.closed:
        raise CliError("no problem given: pass its text, --file PATH, or pipe it on standard input")
    if stream.isatty():
        print("tenscalc: reading a problem from standard input (end it with Ctrl-D)", file=sys.stderr)
    text = read_limited(stream, limit, "standard input")
    if not text.strip():
        raise CliError("no problem given: standard input is empty")
    return text


def derivative_count(args: argparse.Namespace) -> int:
    """How many derivatives were asked for (0: the default, one when there is a variable)."""
    if args.order is not None:
        return args.order
    if args.hessian or args.example:
        return 2
    return 0


def wrt_variable(problem: Problem, name: str) -> Expr:
    """The variable node to differentiate by, which must be declared."""
    if name not in problem.orders:
        declared = ", ".join(sorted(problem.orders)) or "none"
        raise SemanticError(f"cannot differentiate by '{name}': it is not declared (declared: {declared})")
    return N.var(name, problem.orders[name])


class Shower:
    """How the command writes an expression: the einsum language (default), plain
    matrix notation (``--notation matrix``) or LaTeX (``--latex``)."""

    def __init__(self, latex: bool = False, notation: str | None = None):
        self.latex, self.notation = latex, notation

    def __call__(self, expr: Expr) -> str:
        from .printing.latex import latex

        if self.latex:
            chosen = {"matrix": "auto", "einsum": "index", None: "auto"}[self.notation]
            return latex(expr, notation=chosen, temporaries=True)
        if self.notation == "matrix":  # text that parses back (the einsum language where no matrix form exists)
            from .printing.matrix_notation import to_matrix_notation

            return to_matrix_notation(expr)
        return str(expr)


def show_expression(expr: Expr, out: TextIO, show: Shower | None = None) -> None:
    """Print the expression, its order and its variables."""
    show = show or Shower()
    variables = ", ".join(f"{name} {order}" for name, order in expr.variables.items()) or "none"
    text = _indent_more(show(expr), 12)
    out.write(f"expression  {text}\norder       {expr.order}\nvariables   {variables}\n")


def show_derivative(k: int, expr: Expr, name: str, d: Expr, out: TextIO, show: Shower | None = None) -> None:
    """Print the ``k``-th derivative: a header line, then the expression indented on its own line."""
    show = show or Shower()
    nodes = count_nodes(d)
    size = f"{nodes} node" if nodes == 1 else f"{nodes} nodes"
    label = derivative_label(k, expr.order)
    out.write(f"\n{label} wrt {name} (order {d.order}, {size}):\n  {_indent_more(show(d), 2)}\n")


def _indent_more(text: str, width: int) -> str:
    """Indent the lines after the first (a formula with ``where`` lines)."""
    return text.replace("\n", "\n" + " " * width)


def check(expr: Expr, wrt: Expr, name: str, count: int, seed: int, out: TextIO) -> int:
    """Compare derivatives 1..``count`` with finite differences; EXIT_CHECK_FAILED if one disagrees."""
    result = numeric_check(expr, wrt, count, seed=seed)
    if not result.evaluated:
        out.write(f"\ncheck: {result.reason}\n")
        return EXIT_NOT_EVALUATED
    values = result.values
    shapes = ", ".join(f"{name} {_shape(values[name])}" for name in sorted(values)) or "none"
    out.write(f"\ncheck at random data (seed {seed}; shapes: {shapes}):\n")
    out.write(f"  value                {_describe(evaluate(expr, values))}\n")
    for k, report in enumerate(result.reports, start=1):
        verdict = "ok" if report.ok else "FAILED"
        label = f"{derivative_label(k, expr.order)} wrt {name}"
        out.write(f"  {label:<20} max relative error {report.max_error:.2e} vs finite differences: {verdict}\n")
    return EXIT_OK if result.ok else EXIT_CHECK_FAILED


def _shape(array: object) -> str:
    shape = getattr(array, "shape", ())
    return "x".join(str(n) for n in shape) if shape else "scalar"


def _describe(value: object) -> str:
    shape = getattr(value, "shape", ())
    if not shape:
        return f"{float(value):.6g}"  # type: ignore[arg-type]
    return f"array of shape {'x'.join(str(n) for n in shape)}"


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
