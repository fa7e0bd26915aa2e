"""What the web page shows, computed from what the user typed.

Everything here is plain functions from a request (a dict of strings, as the
page sends it) to a JSON-ready dict.  They run in a worker process of
:mod:`tenscalc.web.server` (so a slow input can be stopped) and can be called
directly, which is how most of them are tested.

A bad input is never an exception here: it comes back as
``{"ok": False, "error": {"message": ..., "field": ..., "offset": ...}}``, where
``message`` is the parser's own message with the caret under the offending
character of the field the user typed it in.

>>> from tenscalc.web.compute import analyse
>>> reply = analyse({"expression": "x *(i,ij->j) A *(j,j->) x", "declarations": "x 1 A 2", "wrt": "x", "order": 1})
>>> reply["ok"], reply["derivatives"][0]["label"], reply["derivatives"][0]["order"]
(True, 'gradient wrt x', 1)
>>> analyse({"expression": "x *(i,->) x", "declarations": "x 1"})["error"]["message"].splitlines()[-1]
'    ^'
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..core.checks import count_nodes
from ..core.nodes import Expr
from ..errors import ParseError, SemanticError, TensCalcError
from ..service import derivatives, numeric_check

MAX_INPUT = 20_000
"""Most characters accepted in the expression and declarations together."""
MAX_ORDER = 6
"""Highest derivative order the page computes (the k-th derivative of a tensor
expression has k more groups of axes; beyond this it is neither readable nor quick)."""
MAX_DRAWN_NODES = 400
"""Larger DAGs are not drawn: Graphviz takes long and the drawing is unreadable."""
MAX_TEXT = 200_000
"""Longer printed derivatives are cut (the page would choke on them)."""
PARTS = ("derive", "check", "convexity")


class InputError(TensCalcError):
    """A request the page should not have sent (missing field, bad order, too long)."""


# --------------------------------------------------------------------- requests


def analyse(request: Mapping[str, Any]) -> dict[str, Any]:
    """Compute one part of the page (``request["part"]``, default ``"derive"``).

    The request holds ``expression`` (einsum language, or a whole ``declare ...
    expression ...`` problem), ``declarations`` (``"x 1 A 2"``, assumptions
    allowed), ``wrt`` (``"x"`` or ``"x, A"``; empty: the problem's own or the only
    variable), ``order`` (1 gradient, 2 Hessian, any k up to :data:`MAX_ORDER`) and
    ``defaults`` (give undeclared names matrixcalculus.org's types by letter).

    >>> analyse({"expression": "sin(x)", "declarations": "x 0", "part": "check"})["checks"][0]["ok"]
    True
    """
    try:
        part = str(request.get("part", "derive"))
        if part not in PARTS:
            raise InputError(f"unknown part {part!r}; expected one of {', '.join(PARTS)}")
    except TensCalcError as exc:
        return {"ok": False, "error": describe_error(exc, request), "inputs": input_variables(request)}
    return next(analyse_parts(request, [part]))


def analyse_parts(request: Mapping[str, Any], parts: list[str]) -> Iterator[dict[str, Any]]:
    """The answers to several parts of one input, each as soon as it is computed: the
    input is read and its derivatives computed once for all of them.  An input that
    cannot be read gives one error answer and nothing more.

    >>> [answer["part"] for answer in analyse_parts({"expression": "sin(x)", "declarations": "x 0"}, list(PARTS))]
    ['derive', 'check', 'convexity']
    """
    inputs = input_variables(request)
    try:
        problem = read_problem(request)
    except TensCalcError as exc:
        yield {"ok": False, "part": parts[0], "error": describe_error(exc, request), "inputs": inputs}
        return
    handlers: dict[str, Callable[[Problem], dict[str, Any]]] = {
        "derive": derive,
        "check": check,
        "convexity": convexity,
    }
    for part in parts:
        try:
            yield {"ok": True, "part": part, "inputs": inputs, **handlers[part](problem)}
        except TensCalcError as exc:
            yield {"ok": False, "part": part, "error": describe_error(exc, request), "inputs": inputs}


_TEXT_FIELDS = ("expression", "declarations", "wrt")


def check_request(request: Any) -> None:
    """Refuse (``InputError``) a request no page would send: the server answers 400 to it
    without giving it to a worker.  Mistakes in what the user typed are not checked here.

    >>> check_request({"expression": "x", "order": True})
    Traceback (most recent call last):
    ...
    tenscalc.web.compute.InputError: the order must be a whole number, not True
    """
    if not isinstance(request, Mapping):
        raise InputError("the body must be a JSON object")
    for name in _TEXT_FIELDS:
        _field(request, name)
    if str(request.get("part", "derive")) not in PARTS:
        raise InputError(f"unknown part {request.get('part')!r}; expected one of {', '.join(PARTS)}")
    parts = request.get("parts")
    if parts is not None and not (
        isinstance(parts, list) and parts and all(p in PARTS for p in parts) and len(set(parts)) == len(parts)
    ):
        raise InputError(f"'parts' must list some of {', '.join(PARTS)}, each once")
    read_order(request.get("order"))
    if not isinstance(request.get("defaults", True), bool):
        raise InputError("'defaults' must be true or false")
    session, seq = request.get("session"), request.get("seq")
    if session is not None and not (isinstance(session, str) and len(session) <= 100):
        raise InputError("'session' must be text of at most 100 characters")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < 2**53):
        raise InputError("'seq' must be a whole number from 0 to 2**53")


class Problem:
    """The parsed request: expression, variables to differentiate by, order."""

    def __init__(self, expr: Expr, wrt: list[str], order: int, assumptions: dict):
        self.expr = expr
        self.wrt = wrt
        self.order = order
        self.assumptions = assumptions
        self._derivatives: dict[str, list[Expr]] = {}

    @property
    def symmetric(self) -> list[str]:
        """The matrices declared symmetric (``symmetric``, or ``psd``/``pd``/``diagonal``, which imply it)."""
        return symmetric_names(self)

    def derivatives(self, name: str) -> list[Expr]:
        """The derivatives 1..order by ``name``, simplified with the declared symmetry
        (computed once: the parts of one request share them)."""
        if name not in self._derivatives:
            self._derivatives[name] = derivatives(self.expr, name, self.order, symmetric=self.symmetric)
        return self._derivatives[name]

    def roots(self) -> list[Expr]:
        """The expression (simplified as its derivatives are, so that the exported code
        shares their common subexpressions) and every derivative asked for, in the order
        the Python function returns them."""
        from ..simplifier import simplify

        return [simplify(self.expr, **_symmetric_keyword(self.symmetric))] + [
            d for name in self.wrt for d in self.derivatives(name)
        ]


_SYMMETRIC_WORDS = {"symmetric", "psd", "pd", "diagonal"}


def _symmetric_keyword(names: list[str]) -> dict[str, Any]:
    """``{"symmetric": names}`` where the simplifier takes that keyword (and there are names)."""
    from ..simplifier import simplify

    if not names:
        return {}
    try:
        accepts = "symmetric" in inspect.signature(simplify).parameters
    except (TypeError, ValueError):
        accepts = False
    return {"symmetric": names} if accepts else {}


def _field(request: Mapping[str, Any], name: str) -> str:
    value = request.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"'{name}' must be text, not {type(value).__name__}")
    return value


def read_order(value: Any) -> int:
    """The derivative order asked for: an integer from 1 to :data:`MAX_ORDER`
    (a JSON number without fraction, or its digits as text; ``true``, ``2.7`` and
    ``2.0`` are refused rather than read as 1 or 2).

    >>> read_order("2")
    2
    >>> read_order(9)
    Traceback (most recent call last):
    ...
    tenscalc.web.compute.InputError: the order must be at most 6 (asked: 9)
    >>> read_order(2.7)
    Traceback (most recent call last):
    ...
    tenscalc.web.compute.InputError: the order must be a whole number, not 2.7
    """
    if value is None or value == "":
        return 1
    if isinstance(value, str) and value.strip().isdigit() and len(value) <= 9:
        order = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        order = value
    else:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
        raise InputError(f"the order must be a whole number, not {shown}")
    if order < 1:
        raise InputError(f"the order must be at least 1 (asked: {order})")
    if order > MAX_ORDER:
        raise InputError(f"the order must be at most {MAX_ORDER} (asked: {order})")
    return order


_WHOLE_PROBLEM = re.compile(r"^\s*(declare|expression)\b", re.IGNORECASE)


def problem_text(expression: str, declarations: str) -> tuple[str, dict[str, int]]:
    """The problem text to parse and where each field starts in it.

    A whole problem typed in the expression field is used as it is; otherwise the
    declarations go on a first line and the expression on the second.

    >>> problem_text("A *(ij,j->i) x", "A 2 x 1")
    ('declare A 2 x 1\\nexpression A *(ij,j->i) x', {'declarations': 8, 'expression': 27})
    """
    if _WHOLE_PROBLEM.match(expression) or not declarations.strip():
        return expression, {"expression": 0}
    head = "declare "
    middle = "\nexpression "
    text = head + declarations + middle + expression
    return text, {"declarations": len(head), "expression": len(head) + len(declarations) + len(middle)}


def default_orders(text: str) -> dict[str, int]:
    """matrixcalculus.org's types by letter for the undeclared names of ``text``:
    ``a``–``g`` scalars, other lower-case names vectors, upper-case names matrices.

    Returns ``{}`` when the text does not parse (the parser's message then comes
    from the real parse).

    >>> default_orders("x *(i,ij->j) A *(j,j->) x + c")
    {'A': 2, 'c': 0, 'x': 1}
    """
    from ..frontend.parser import parse_text

    try:
        parsed = parse_text(text)
    except Exception:  # noqa: BLE001 - the real parse reports it
        return {}
    declared = parsed.declarations.orders if parsed.declarations is not None else {}
    names: set[str] = set()
    stack = [parsed.tree]
    while stack:
        syn = stack.pop()
        if getattr(syn, "kind", None) == "name" and isinstance(syn.value, str):
            names.add(syn.value)
        stack.extend(getattr(syn, "children", ()))
    found = {}
    for name in sorted(names - set(declared)):
        first = name[0]
        found[name] = 2 if first.isupper() else 0 if first in "abcdefg" else 1
    return found


def input_variables(request: Mapping[str, Any]) -> dict[str, Any]:
    """The variables the input names, for the page's type control: each with its order as
    declared, or as the letter rule guesses it (``None`` with the rule off), and its
    declared assumptions.  ``whole_problem``: the expression field holds its own
    ``declare`` block (the declarations field is not used).  Works on input that does not
    type-check (``norm2(A*x-b)^2`` with ``b`` a scalar by its letter); empty when it
    does not parse.

    >>> input_variables({"expression": "x'*A*x + c", "declarations": "A 2 symmetric"})["variables"]
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'name': 'x', 'order': 1, 'source': 'letter rule', 'assumptions': []},
     {'name': 'A', 'order': 2, 'source': 'declared', 'assumptions': ['symmetric']},
     {'name': 'c', 'order': 0, 'source': 'letter rule', 'assumptions': []}]
    """
    from ..frontend.matrix_notation import default_order
    from ..frontend.parser import parse_text

    expression, declarations = request.get("expression"), request.get("declarations") or ""
    found: dict[str, Any] = {"variables": [], "whole_problem": False}
    if not isinstance(expression, str) or not isinstance(declarations, str):
        return found
    text, _ = problem_text(expression, declarations)
    found["whole_problem"] = bool(_WHOLE_PROBLEM.match(expression))
    try:
        parsed = parse_text(text)
    except Exception:  # noqa: BLE001 - the real parse reports it
        return found
    declared = parsed.declarations.orders if parsed.declarations is not None else {}
    assumptions = parsed.declarations.assumptions if parsed.declarations is not None else {}
    letters = request.get("defaults", True) is not False
    names: list[str] = []
    stack = [parsed.tree]
    while stack:  # the names in reading order (a depth-first walk, children left to right)
        syn = stack.pop()
        if getattr(syn, "kind", None) == "name" and isinstance(syn.value, str) and syn.value not in names:
            names.append(syn.value)
        stack.extend(reversed(getattr(syn, "children", ()) or ()))
    names = [n for n in names if n != "eye"] + [n for n in declared if n not in names]
    for name in names:
        order: int | None
        if name in declared:
            order, source = declared[name], "declared"
        else:
            order, source = (default_order(name), "letter rule") if letters else (None, "undeclared")
        facts = [_assumption_text(fact) for fact in assumptions.get(name, ())]
        found["variables"].append({"name": name, "order": order, "source": source, "assumptions": facts})
    return found


def _assumption_text(fact: Any) -> str:
    """An assumption as the declarations field spells it: a word, or an interval ``(lo, hi)``."""
    if isinstance(fact, tuple):
        low, high = ("" if end is None else f"{end:g}" for end in fact)
        return f"({low}, {high})"
    return str(fact)


def read_problem(request: Mapping[str, Any]) -> Problem:
    """Parse the request's fields (a ``TensCalcError`` with a caret when they are wrong)."""
    expression = _field(request, "expression")
    declarations = _field(request, "declarations")
    wrt_text = _field(request, "wrt")
    size = len(expression) + len(declarations) + len(wrt_text)
    if size > MAX_INPUT:
        raise InputError(f"the input is too long ({size:,} characters; at most {MAX_INPUT:,})")
    if not expression.strip():
        raise InputError("type an expression, e.g. x *(i,ij->j) A *(j,j->) x")
    order = read_order(request.get("order"))
    text, _ = problem_text(expression, declarations)
    import tenscalc as tc  # the public entry points, so that new notations arrive through them

    # the checkbox "undeclared names: a-g scalars ..." switches matrixcalculus.org's letter rule;
    # the library applies it itself, so that a message blaming a guessed order says so
    problem = tc.parse_problem(text, letter_rule=bool(request.get("defaults", True)))
    expr = problem.expr
    variables = expr.variables
    names = [w for w in re.split(r"[\s,]+", wrt_text.strip()) if w]
    if not names:
        if problem.wrt is not None:
            names = [problem.wrt]
        elif len(variables) == 1:
            names = list(variables)
        else:
            listed = ", ".join(variables) or "none"
            raise InputError(f"name the variable to differentiate by (the expression has: {listed})")
    for name in names:
        if name not in variables:
            position = wrt_text.find(name)
            listed = ", ".join(variables) or "none"
            raise SemanticError(
                f"cannot differentiate by '{name}': it is not a variable of the expression (variables: {listed})",
                wrt_text,
                position if position >= 0 else None,
            )
    return Problem(expr, list(dict.fromkeys(names)), order, dict(problem.assumptions))


def describe_error(exc: TensCalcError, request: Mapping[str, Any]) -> dict[str, Any]:
    """The error as the page shows it: the message with a caret under the field it is in.

    A parse error at offset ``p`` of the composed problem text is moved to the
    field (expression or declarations) and the offset within it.
    """
    reason = getattr(exc, "reason", None)
    position = getattr(exc, "position", None)
    text = getattr(exc, "text", None)
    field, offset, message = None, None, str(exc)
    if reason is not None and position is not None and text is not None:
        expression = request.get("expression") or ""
        declarations = request.get("declarations") or ""
        wrt_text = request.get("wrt") or ""
        if isinstance(expression, str) and isinstance(declarations, str):
            composed, starts = problem_text(expression, declarations)
            if text == composed:
                for name in ("expression", "declarations"):
                    start = starts.get(name)
                    source = expression if name == "expression" else declarations
                    if start is not None and start <= position <= start + len(source):
                        field, offset = name, position - start
                        message = str(ParseError(reason, source, offset))
                        break
            elif text == wrt_text:
                field, offset = "wrt", position
    kind = type(exc).__name__
    return {"message": message, "field": field, "offset": offset, "kind": kind}


# ------------------------------------------------------------------------ parts


def latex_with_temporaries(expr: Expr) -> tuple[str, bool]:
    """``tc.latex(expr, temporaries=True)`` where that keyword exists, else ``tc.latex(expr)``.

    Returns the LaTeX and whether temporaries were asked for.
    """
    import tenscalc as tc

    printer: Any = tc.latex  # its signature depends on the tenscalc version
    try:
        accepts = "temporaries" in inspect.signature(printer).parameters
    except (TypeError, ValueError):
        accepts = False
    if accepts:
        return printer(expr, temporaries=True), True
    return printer(expr), False


def symmetric_names(problem: Problem) -> list[str]:
    """The matrices the declarations call symmetric (``symmetric``, ``psd``, ``pd``, ``diagonal``)."""
    words = _SYMMETRIC_WORDS
    return [
        name
        for name, given in problem.assumptions.items()
        if problem.expr.variables.get(name) == 2 and any(word in words for word in given if isinstance(word, str))
    ]


_WHERE = " \\quad\\text{where}\\quad "
_NEXT_DEFINITION = re.compile(r",\\quad (?=t_\{\d+\} = )")


def split_where(formula: str) -> tuple[str, list[str]]:
    r"""The formula without its ``where t₀ = …`` clause, and the clause's definitions
    (none when the printer named no temporary), so the page can put each on its own line.

    >>> split_where(r"y t_{0} \quad\text{where}\quad t_{0} = X w,\quad t_{1} = e^{t_{0}}")
    ('y t_{0}', ['t_{0} = X w', 't_{1} = e^{t_{0}}'])
    >>> split_where("A + B")
    ('A + B', [])
    """
    main, found, clause = formula.partition(_WHERE)
    if not found:
        return formula, []
    return main, _NEXT_DEFINITION.split(clause)


def _latex_entry(expr: Expr) -> dict[str, Any]:
    try:
        formula, _ = latex_with_temporaries(expr)
    except TensCalcError as exc:  # too large for a formula: the page shows the text instead
        return {"latex": None, "where": [], "temporaries": False, "latex_error": str(exc)}
    main, where = split_where(formula)
    # "with named temporaries" only where the printer named some
    return {"latex": main, "where": where, "temporaries": bool(where), "latex_error": None}


def _text(expr: Expr) -> str:
    from ..printing.text import text_length

    if text_length(expr) > MAX_TEXT:
        return f"(too long to print: about {text_length(expr):,} characters; use the Python code)"
    return str(expr)


def label(k: int, expr_order: int) -> str:
    """What to call the k-th derivative (gradient, Jacobian, Hessian ...)."""
    from ..printing.labels import derivative_label

    return derivative_label(k, expr_order)


def drawing(expr: Expr) -> dict[str, Any]:
    """The DAG as SVG text (Graphviz), or a note saying why there is none."""
    from ..printing.drawing import graphviz_available, to_dot

    if not graphviz_available():
        return {
            "svg": None,
            "note": "Graphviz is not installed: install the 'dot' program "
            "(e.g. apt-get install graphviz) and the Python package 'graphviz' to see the DAG.",
        }
    nodes = count_nodes(expr)
    if nodes > MAX_DRAWN_NODES:
        return {"svg": None, "note": f"not drawn: {nodes} nodes (at most {MAX_DRAWN_NODES} are drawn)"}
    svg = to_dot(expr).pipe(format="svg").decode("utf-8")
    start = svg.find("<svg")
    return {"svg": svg[start:] if start >= 0 else svg, "note": None}


def derive(problem: Problem) -> dict[str, Any]:
    """The expression and its derivatives: text, LaTeX, drawings, Python code."""
    import tenscalc as tc

    expr = problem.expr
    entries = []
    for name in problem.wrt:
        for k, d in enumerate(problem.derivatives(name), start=1):
            # every order up to the one asked for is shown; only the highest is drawn
            shown = drawing(d) if k == problem.order else None
            entries.append(
                {
                    "wrt": name,
                    "k": k,
                    "label": f"{label(k, expr.order)} wrt {name}",
                    "text": _text(d),
                    "order": d.order,
                    "nodes": count_nodes(d),
                    "drawing": shown,
                    **_latex_entry(d),
                }
            )
    # all results in one call: the value and every derivative share their common subexpressions
    source = tc.to_python(problem.roots(), name="f")
    returns = ["f"] + [
        f"d{k}f/d{name}{k}" if k > 1 else f"df/d{name}" for name in problem.wrt for k in range(1, problem.order + 1)
    ]
    return {
        "expression": {
            "text": _text(expr),
            "order": expr.order,
            "nodes": count_nodes(expr),
            "variables": dict(expr.variables),
            "drawing": drawing(expr),
            **_latex_entry(expr),
        },
        "wrt": problem.wrt,
        "order": problem.order,
        "derivatives": entries,
        "python": source,
        "python_returns": returns,
        "script": self_checking_script(problem, source, returns),
    }


def check(problem: Problem, seed: int = 0) -> dict[str, Any]:
    """Every derivative 1..order by every variable against central finite differences,
    at random data where they are all defined, whose independent axes have distinct
    lengths (2, 3, 4 ...) where the function allows it."""
    from ..testing import axis_lengths

    expr = problem.expr
    shapes: dict[str, list[int]] = {}
    rows = []
    for name in problem.wrt:
        result = numeric_check(expr, name, problem.order, seed=seed)
        shapes = shapes or {n: list(getattr(v, "shape", ())) for n, v in sorted(result.values.items())}
        for k in range(1, problem.order + 1):
            row: dict[str, Any] = {"wrt": name, "k": k, "label": f"{label(k, expr.order)} wrt {name}"}
            if not result.evaluated:
                row.update(ok=False, max_error=None, evaluated=False, method="", message=str(result.reason))
            else:
                report = result.reports[k - 1]
                # JSON has no inf or nan: None where nothing was compared or the error is not finite
                error = float(report.max_error) if math.isfinite(report.max_error) else None
                row.update(
                    ok=bool(report.ok), max_error=error, evaluated=True, method=report.method, message=report.message
                )
            rows.append(row)
    if not shapes:
        shapes = {n: list(shape) for n, shape in sorted(axis_lengths(expr).items())}
    python = check_python(problem, seed)
    ok = all(r["ok"] for r in rows) and python["ok"]
    return {"shapes": shapes, "seed": seed, "checks": rows, "python": python, "all_ok": ok}


def check_python(problem: Problem, seed: int = 0, tolerance: float = 1e-9) -> dict[str, Any]:
    """Run the Python function the page shows and compare each of its results (value
    and derivatives) with the interpreter's value of the same expression, at random data.

    So the code a user copies is the code whose derivatives were checked.
    """
    import numpy as np

    import tenscalc as tc

    roots = problem.roots()
    values = sample_values(problem, roots, seed)
    namespace: dict[str, Any] = {}
    exec(tc.to_python(roots, name="f"), namespace)  # our own generated code, no user text in it
    produced = namespace["f"](**values)
    worst = 0.0
    # the value against the expression as typed (the export has it simplified)
    for root, result in zip([problem.expr] + roots[1:], produced):
        expected = np.asarray(tc.evaluate(root, values), dtype=float)
        if expected.size:
            scale = max(1.0, float(np.max(np.abs(expected))))
            worst = max(worst, float(np.max(np.abs(np.asarray(result, dtype=float) - expected))) / scale)
    return {
        "ok": bool(worst <= tolerance),
        "max_error": worst,
        "message": f"the Python function's {len(roots)} results against the interpreter at the same random data",
    }


def convexity(problem: Problem) -> dict[str, Any]:
    """The convexity verdict in the variables (jointly), with certificate or counterexample."""
    import tenscalc as tc

    from ..convexity.report import MEANING

    expr = problem.expr
    if expr.order != 0:
        return {
            "convexity": {
                "applicable": False,
                "note": f"convexity is decided for scalar functions; this one has order {expr.order}",
            }
        }
    result = tc.check_convexity(expr, problem.wrt, problem.assumptions or None)
    return {
        "convexity": {
            "applicable": True,
            "verdict": result.verdict,
            "summary": result.summary(),
            "meaning": MEANING.get(result.verdict, ""),
            "certified": result.certified,
            "explanation": result.explain(),
        }
    }


# --------------------------------------------------------- self-checking script


def sample_values(problem: Problem, roots: list[Expr], seed: int = 0) -> dict[str, Any]:
    """Random data for every variable (``tenscalc.testing.random_values``: every independent
    axis its own length, inside the expression's domain), with declared symmetric matrices
    made symmetric and declared diagonal ones diagonal (their derivatives assume it)."""
    import numpy as np

    from ..testing import random_values

    values = random_values(roots, seed=seed)
    for name, facts in problem.assumptions.items():
        value = values.get(name)
        if not isinstance(value, np.ndarray) or value.ndim != 2 or value.shape[0] != value.shape[1]:
            continue
        if "diagonal" in facts:
            values[name] = np.diag(np.diag(value))
        elif _SYMMETRIC_WORDS & set(facts):
            # random_values adds n I to square matrices: the symmetric part stays positive definite
            values[name] = (value + value.T) / 2
    return values


_SCRIPT = """

def _finite_differences(function, values, name, step=1e-6):
    \"\"\"Central differences of function(**values) by values[name]: the derivative's
    axes are the value's axes followed by the variable's.\"\"\"
    point = _np.asarray(values[name], dtype=float)
    columns = []
    for index in _np.ndindex(point.shape):
        shift = _np.zeros_like(point)
        shift[index] = step
        plus = _np.asarray(function(**{{**values, name: point + shift}}), dtype=float)
        minus = _np.asarray(function(**{{**values, name: point - shift}}), dtype=float)
        columns.append((plus - minus) / (2 * step))
    stacked = _np.stack(columns, axis=-1) if columns else _np.zeros((0,))
    return stacked.reshape(stacked.shape[:-1] + point.shape)


if __name__ == "__main__":
    # random data, every independent axis its own length (a transposed axis cannot pass)
    values = {{
{values}
    }}
    results = f(**values)
    failed = 0
    # each derivative against central differences of the one before it (the first: of f)
    for name, label, position, previous in {checks!r}:
        numeric = _finite_differences(lambda **v: f(**v)[previous], values, name)
        exact = _np.asarray(results[position], dtype=float)
        scale = max(1.0, float(_np.max(_np.abs(numeric), initial=0.0)))
        error = float(_np.max(_np.abs(exact - numeric), initial=0.0)) / scale
        verdict = "agrees" if error <= 1e-5 else "DISAGREES"
        failed += verdict != "agrees"
        print(f"{{label}}: max relative error {{error:.1e}} against finite differences: {{verdict}}")
    raise SystemExit(1 if failed else 0)
"""


def self_checking_script(problem: Problem, source: str, returns: list[str], seed: int = 0) -> str:
    """``source`` (the function ``f``) made a script that checks itself when run: random
    data with distinct axis lengths, and every derivative against central finite
    differences of the result before it (the gradient against ``f``, the Hessian against
    the gradient ...).  It exits with status 1 when one disagrees.

    >>> problem = read_problem({"expression": "sin(x) *(i,i->) x", "wrt": "x"})
    >>> script = self_checking_script(problem, "def f(*, x): ...", ["f", "df/dx"])
    >>> 'if __name__ == "__main__":' in script and "_finite_differences" in script
    True
    """
    import json

    import numpy as np

    values = sample_values(problem, problem.roots(), seed)
    lines = []
    for name, value in sorted(values.items()):
        array = np.asarray(value, dtype=float)
        shape = "x".join(map(str, array.shape)) or "scalar"
        lines.append(f"        {name!r}: _np.array({json.dumps(array.tolist())}),  # {shape}")
    checks = []
    position = 1
    for name in problem.wrt:
        for k in range(1, problem.order + 1):
            checks.append((name, returns[position], position, 0 if k == 1 else position - 1))
            position += 1
    return source.rstrip("\n") + "\n" + _SCRIPT.format(values="\n".join(lines), checks=checks)
