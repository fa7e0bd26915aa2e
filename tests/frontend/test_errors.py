"""Malformed and meaningless inputs: exact messages, positions and carets.

Positions are 0-based character offsets counted by hand in each text; the message
shows the 1-based line and column, the source line, and a caret under the column.
"""

from __future__ import annotations

import pytest

import tenscalc as tc

ORDERS = {"A": 2, "B": 2, "x": 1, "y": 1, "w": 1, "c": 0, "T": 3, "a": 1, "b": 1}

STRICT = " (the letter rule is off: every name must be declared)"
OPERAND = "an operand (a number, a variable, a function or '(')"
OPERATOR = "an operator ('+', '-', '*(', '/', '^')"

# (text, error class, reason (the message without the location), position)
CASES = [
    # missing operands
    ("x +", tc.ParseError, f"expected {OPERAND} but found the end of the input", 3),
    ("x + * y", tc.ParseError, f"expected {OPERAND} but found '*'", 4),
    ("", tc.ParseError, f"expected {OPERAND} but found the end of the input", 0),
    ("x ^", tc.ParseError, f"expected {OPERAND} but found the end of the input", 3),
    ("x / ", tc.ParseError, f"expected {OPERAND} but found the end of the input", 3),  # right after '/',
    ("x *(i,i->)", tc.ParseError, f"expected {OPERAND} but found the end of the input", 10),
    ("*(i,i->) x", tc.ParseError, f"expected {OPERAND} but found '*'", 0),
    ("x^-*", tc.ParseError, f"expected {OPERAND} but found '*'", 3),  # exponent is a signed atom (x^-1 reads)
    ("x^-", tc.ParseError, f"expected {OPERAND} but found the end of the input", 3),  # x^-1 is x^(-1)
    # unbalanced parentheses
    ("(x + y", tc.ParseError, "expected ')' but found the end of the input", 6),
    ("x + y)", tc.ParseError, f"expected {OPERATOR} or the end of the expression but found ')'", 5),
    ("(a+)b)", tc.ParseError, f"expected {OPERAND} but found ')'", 3),
    ("()", tc.ParseError, "expected an expression inside the parentheses but found ')'", 1),
    ("sin(x, y)", tc.ParseError, "expected ')' closing sin( but found ','", 5),
    ("x^(c", tc.ParseError, "expected ')' closing the exponent but found the end of the input", 4),
    # two operands without an operator
    ("x y", tc.ParseError, f"expected {OPERATOR} or the end of the expression but found name 'y'", 2),
    ("x^2 3", tc.ParseError, f"expected {OPERATOR} or the end of the expression but found number '3'", 4),
    # products
    # `A * x` is matrix notation now (tests/frontend/test_matrix_notation.py); a mismatch is a meaning error
    (
        "x * A",
        tc.SemanticError,
        "cannot multiply `x` (a column vector) by `A` (a matrix) with '*': the columns of the left operand "
        "must meet the rows of the right one (a vector is a column, x' a row)",
        2,
    ),
    ("A *(ij,j) x", tc.ParseError, "expected '->' after the input index strings but found ')'", 8),
    ("A *(ij,j-i) x", tc.ParseError, "expected '>' completing '->' but found name 'i'", 9),
    ("A *(ij j->i) x", tc.ParseError, "expected ',' between the two input index strings but found '-'", 8),
    ("A *(ij,j->i x", tc.ParseError, "expected ')' closing the index spec but found the end of the input", 13),
    ("A *(iJ,j->i) x", tc.ParseError, "index strings are lowercase letters, found 'J' in 'iJ'", 5),
    ("A *(ij,j->I) x", tc.ParseError, "index strings are lowercase letters, found 'I' in 'I'", 10),
    ("A *(i_,j->i) x", tc.ParseError, "index strings are lowercase letters, found '_' in 'i_'", 5),  # names may hold _
    # a letter with digits is one index (`i2`), as the printer writes letters past the 26th
    ("A *(i2,j->i) x", tc.SemanticError, "index string 'i2' has 1 letter but `A` has order 2", 2),
    ("A *(i,j->i) x", tc.SemanticError, "index string 'i' has 1 letter but `A` has order 2", 2),
    ("A *(ij,jk->i) x", tc.SemanticError, "index string 'jk' has 2 letters but `x` has order 1", 2),
    ("x + A *(ijk,j->i) x", tc.SemanticError, "index string 'ijk' has 3 letters but `A` has order 2", 6),
    ("A *(ij,j->k) x", tc.SemanticError, "output index 'k' of *(ij,j->k) occurs in neither input", 2),
    # orders
    ("x + A", tc.SemanticError, "cannot add expressions of different orders: `x` has order 1 but `A` has order 2", 4),
    (
        "x - y + A *(ij,jk->ik) B",
        tc.SemanticError,
        "cannot add expressions of different orders: `x` has order 1 but `A *(ij,jk->ik) B` has order 2",
        8,
    ),
    (
        "x / A",
        tc.SemanticError,
        "cannot divide expressions of different orders: `x` has order 1 but `A` has order 2",
        4,
    ),
    (
        "delta(1) + x",
        tc.SemanticError,
        "cannot add expressions of different orders: `delta(1)` has order 2 but `x` has order 1",
        11,
    ),
    ("x^y", tc.SemanticError, "the exponent `y` has order 1; exponents must be of order 0", 2),
    ("x^(y + w)", tc.SemanticError, "the exponent `y + w` has order 1; exponents must be of order 0", 3),
    ("c^A + 1", tc.SemanticError, "the exponent `A` has order 2; exponents must be of order 0", 2),
    ("inv(x)", tc.SemanticError, "inv needs a square matrix (order 2), but `x` has order 1", 0),
    ("c + det(x)", tc.SemanticError, "det needs a square matrix (order 2), but `x` has order 1", 4),
    ("adj(T)", tc.SemanticError, "adj needs a square matrix (order 2), but `T` has order 3", 0),
    # names
    # (these cases run with letter_rule=False: every name must be declared)
    (
        "z + x",
        tc.SemanticError,
        f"variable 'z' is not declared{STRICT}; declare it (`declare z 1 expression ...`) or pass orders={{'z': 1}}",
        0,
    ),
    (
        "x + X",
        tc.SemanticError,
        f"variable 'X' is not declared{STRICT}; declare it (`declare X 1 expression ...`) or pass orders={{'X': 1}}",
        4,
    ),  # names are case-sensitive
    # lexical
    ("x $ y", tc.ParseError, "unexpected character '$'", 2),
    ("x @ y", tc.ParseError, "unexpected character '@'", 2),
    ("x + é", tc.ParseError, "unexpected character 'é'", 4),
    ("1e", tc.ParseError, "expected digits in the exponent of a number", 2),
    ("x + 2e+", tc.ParseError, "expected digits in the exponent of a number", 7),
    # functions and delta
    ("log()", tc.ParseError, "expected an argument for 'log' but found ')'", 4),
    ("sin x", tc.ParseError, "expected '(' after the function name 'sin' but found name 'x'", 4),
    ("delta(1.5)", tc.ParseError, "expected a natural number n in delta(n) but found number '1.5'", 6),
    ("delta(x)", tc.ParseError, "expected a natural number n in delta(n) but found name 'x'", 6),
    ("delta(1", tc.ParseError, "expected ')' closing delta(n) but found the end of the input", 7),
    # problems
    (
        "declare a 1 b 1 expression a derivative wrt a b",
        tc.ParseError,
        "expected exactly one variable after 'wrt' but found a second one, 'b'",
        46,
    ),
    (
        "declare a 1 expression a derivative x",
        tc.ParseError,
        "expected 'wrt' after 'derivative' but found name 'x'",
        36,
    ),
    (
        "declare a 1 expression a derivative wrt",
        tc.ParseError,
        "expected the name of the variable to differentiate by but found the end of the input",
        39,
    ),
    ("declare a 1 a 2 expression a", tc.ParseError, "variable 'a' is declared twice", 12),
    ("declare exp 1 expression x", tc.ParseError, "'exp' is reserved and cannot name a variable", 8),
    ("declare Sin 1 expression x", tc.ParseError, "'Sin' is reserved and cannot name a variable", 8),
    ("declare x 1 wrt 1 expression x", tc.ParseError, "'wrt' is reserved and cannot name a variable", 12),
    ("declare delta 2 expression delta", tc.ParseError, "'delta' is reserved and cannot name a variable", 8),
    ("declare a x expression a", tc.ParseError, "expected the order (a natural number) of 'a' but found name 'x'", 10),
    (
        "declare a 1.5 expression a",
        tc.ParseError,
        "expected the order (a natural number) of 'a' but found number '1.5'",
        10,
    ),
    ("declare a 1 a", tc.ParseError, "expected the order (a natural number) of 'a' but found the end of the input", 13),
    ("declare a 1 x + a", tc.ParseError, "expected the order (a natural number) of 'x' but found '+'", 14),
    ("declare a 1", tc.ParseError, "expected 'expression' after the declarations but found the end of the input", 11),
    (
        "declare a 1 derivative wrt a",
        tc.ParseError,
        "expected 'expression' after the declarations but found keyword 'derivative'",
        12,
    ),
    ("declare a 1 expression", tc.ParseError, f"expected {OPERAND} but found the end of the input", 22),
]


@pytest.mark.parametrize("text, cls, reason, position", CASES)
def test_error_message_and_position(text, cls, reason, position):
    orders = None if text.startswith("declare") else ORDERS
    with pytest.raises(cls) as info:
        tc.parse_problem(text, orders, letter_rule=False)
    err = info.value
    assert isinstance(err, tc.TensCalcError)
    assert isinstance(err, ValueError)
    # a message that blames a name's order ends with where that order came from (the notes are
    # checked word for word in tests/frontend/test_order_origins.py)
    notes = err.reason[len(reason) :]
    assert err.reason.startswith(reason)
    assert all(note.startswith("`") and "from orders={" in note for note in notes.split("; ")[1:]), notes
    assert notes == "" or notes.startswith("; `"), notes
    reason = err.reason
    assert err.position == position
    assert err.text == text
    # single-line texts: line 1, column position + 1, the line and a caret under it
    column = position + 1
    assert str(err) == f"{reason} (line 1, column {column})\n  {text}\n  {' ' * position}^"


def test_wrt_naming_an_undeclared_variable():
    text = "declare a 1 expression a derivative wrt b"
    with pytest.raises(tc.SemanticError) as info:
        tc.parse_problem(text)
    assert info.value.reason == "'derivative wrt b' names a variable that is not declared"
    assert info.value.position == 40
    assert str(info.value).splitlines()[2] == "  " + " " * 40 + "^"


def test_wrt_may_name_a_variable_declared_from_python():
    p = tc.parse_problem("a derivative wrt b", {"a": 1, "b": 1})
    assert p.wrt == "b"


def test_declared_and_python_orders_must_agree():
    text = "declare x 1 expression x"
    with pytest.raises(tc.SemanticError) as info:
        tc.parse(text, {"x": 2})
    assert info.value.reason == "variable 'x' is declared with order 1 but orders= gives 2"
    assert info.value.position == 8


def test_syntax_errors_are_parse_errors_and_meaning_errors_are_semantic():
    for _, cls, _, _ in CASES:
        assert issubclass(cls, tc.TensCalcError)
    assert issubclass(tc.ParseError, tc.TensCalcError)
    assert issubclass(tc.SemanticError, tc.TensCalcError)
    assert issubclass(tc.EvaluationError, tc.TensCalcError)
    assert issubclass(tc.TensCalcError, ValueError)
    assert not issubclass(tc.ParseError, tc.SemanticError)


def test_multi_line_error_shows_the_right_line():
    text = "declare A 2 x 1\nexpression\n    A *(ij,j->i) x +\n  y\nderivative wrt x"
    with pytest.raises(tc.SemanticError) as info:
        tc.parse_problem(text, letter_rule=False)
    err = info.value
    reason = (
        f"variable 'y' is not declared{STRICT}; declare it (`declare y 1 expression ...`) or pass orders={{'y': 1}}"
    )
    assert err.reason == reason
    assert err.position == text.index("  y") + 2
    assert str(err) == f"{reason} (line 4, column 3)\n    y\n    ^"


def test_multi_line_parse_error_caret():
    text = "declare x 1\nexpression\n  x *(i,i-) x\n"
    with pytest.raises(tc.ParseError) as info:
        tc.parse_problem(text)
    err = info.value
    # '-' at column 10 of line 3, then ')' where '>' was expected at column 11
    assert err.reason == "expected '>' completing '->' but found ')'"
    assert err.position == text.index("-)") + 1
    lines = str(err).splitlines()
    assert lines == [
        "expected '>' completing '->' but found ')' (line 3, column 11)",
        "    x *(i,i-) x",
        "  " + " " * 10 + "^",
    ]
    assert lines[1][lines[2].index("^")] == ")"  # the caret is under the offending token


def test_end_of_input_is_reported_after_the_last_token():
    # problems read from files end with a newline, often with comments after the expression
    text = "declare x 1\nexpression\n  (x + 1\n\n# the end\n"
    with pytest.raises(tc.ParseError) as info:
        tc.parse_problem(text)
    err = info.value
    assert err.reason == "expected ')' but found the end of the input"
    assert err.position == text.index("1\n\n") + 1
    assert str(err).splitlines() == [
        "expected ')' but found the end of the input (line 3, column 9)",
        "    (x + 1",
        "  " + " " * 8 + "^",
    ]
    with pytest.raises(tc.ParseError) as info:
        tc.parse("x +  # comment\n\n", {"x": 1})
    assert info.value.position == 3
    with pytest.raises(tc.ParseError) as info:
        tc.parse("  # nothing but a comment\n", {"x": 1})
    assert info.value.position == 0


def test_caret_with_tabs():
    text = "x\t+\t$"
    with pytest.raises(tc.ParseError) as info:
        tc.parse(text, {"x": 1})
    lines = str(info.value).splitlines()
    assert info.value.position == 4
    assert lines[0].endswith("(line 1, column 5)")
    assert lines[1][lines[2].index("^")] == "$"


def test_error_in_a_long_expression_points_at_the_offending_summand():
    text = " + ".join(["x"] * 50) + " + A"
    with pytest.raises(tc.SemanticError) as info:
        tc.parse(text, ORDERS)
    assert info.value.position == len(text) - 1
    lines = str(info.value).splitlines()
    assert lines[1][lines[2].index("^")] == "A"


def test_python_api_errors():
    with pytest.raises(tc.ParseError):
        tc.parse(5)  # type: ignore[arg-type]
    with pytest.raises(tc.SemanticError):
        tc.parse("x", {"x": -1})
    with pytest.raises(tc.SemanticError):
        tc.parse("x", {"x": 1.0})  # type: ignore[dict-item]
    with pytest.raises(tc.SemanticError):
        tc.parse("x", {"x": True})
    with pytest.raises(tc.SemanticError):
        tc.parse("x", {"not a name": 1})


def test_problem_without_wrt_cannot_differentiate():
    p = tc.parse_problem("declare x 1 expression x")
    with pytest.raises(tc.SemanticError):
        p.derivative()


def test_errors_are_value_errors():
    # callers that catch ValueError catch every tenscalc input error
    for text in ("x +", "_z", "x + A", "A *(i,j->i) x"):
        with pytest.raises(ValueError):
            tc.parse(text, ORDERS)
