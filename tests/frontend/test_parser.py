"""Golden tests of the parser and typing pass: every grammar piece, every function,
the problem form, constants' orders, and the print -> parse round trip.

Expected values are written by hand from docs/language.md (index letters are renumbered
0, 1, 2 ... by first appearance, inputs left to right then the output, and print as
i, j, k ...), never copied from the code's output.
"""

from __future__ import annotations

import pytest

import tenscalc as tc
from tenscalc.core import nodes as N
from tenscalc.errors import ParseError

ORDERS = {"A": 2, "B": 2, "X": 2, "W": 2, "x": 1, "y": 1, "w": 1, "v": 1, "c": 0, "d": 0, "T": 3, "Q": 4}


def P(text: str):
    return tc.parse(text, ORDERS)


A, B, X, W = (N.var(n, 2) for n in "ABXW")
x, y, w, v = (N.var(n, 1) for n in "xywv")
c, d = N.var("c", 0), N.var("d", 0)
T, Q = N.var("T", 3), N.var("Q", 4)


def terms(e) -> dict:
    """A sum as {summand: coefficient} (summand order inside a sum is canonical, not textual)."""
    assert e.op == "add"
    assert len(set(e.children)) == len(e.children)
    return dict(zip(e.children, e.arg))


def const(value, order=0, dims=None):
    node = N.const(value, order, dims)
    assert type(node.arg[0]) is type(value)
    return node


# ------------------------------------------------------------------------ atoms


@pytest.mark.parametrize(
    "text, value",
    [
        ("12", 12),
        ("0", 0),
        ("1.5", 1.5),
        (".5", 0.5),
        ("2.", 2.0),
        ("1e-3", 0.001),
        ("2.5E+4", 25000.0),
        ("1E3", 1000.0),
        ("3e2", 300.0),
        (".25e1", 2.5),
    ],
)
def test_numbers(text, value):
    e = P(text)
    assert e.op == "const"
    assert e.order == 0  # nothing fixes its order: a scalar
    assert e.arg == (value, 0)
    assert type(e.arg[0]) is type(value)  # `12` is an int, `2.` a float
    assert e.children == ()


def test_integer_and_float_spellings_are_distinct_constants():
    assert P("1") is not P("1.0")
    assert P("1.0") is P("1.") is P("1.000") is P("10e-1")


def test_variable():
    e = P("x")
    assert (e.op, e.arg, e.children, e.order) == ("var", ("x", 1), (), 1)
    assert P("T").order == 3 and P("Q").order == 4 and P("c").order == 0


def test_variable_names_letters_and_digits():
    orders = {"w1": 1, "tensor0test": 2, "Xy2z": 0}
    assert tc.parse("w1", orders) is N.var("w1", 1)
    assert tc.parse("tensor0test", orders) is N.var("tensor0test", 2)
    assert tc.parse("Xy2z", orders) is N.var("Xy2z", 0)


def test_variable_names_are_case_sensitive():
    e = tc.parse("X *(ij,j->i) x", {"X": 2, "x": 1})
    assert e.children == (X, x)


@pytest.mark.parametrize(
    "name", ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "tanh", "exp", "log", "abs", "sign", "relu"]
)
def test_elementwise_functions(name):
    for arg, node in (("x", x), ("A", A), ("c", c), ("T", T)):
        e = P(f"{name}({arg})")
        assert (e.op, e.arg, e.children, e.order) == ("func", name, (node,), node.order)
        assert str(e) == f"{name}({arg})"
    # function names are case-insensitive, as in the 2022 thesis tool
    assert P(f"{name.upper()}(x)") is P(f"{name}(x)")
    assert P(f"{name.capitalize()}(x)") is P(f"{name}(x)")
    assert P(f"{name} ( x )") is P(f"{name}(x)")


def test_inv():
    e = P("inv(A)")
    assert (e.op, e.arg, e.children, e.order) == ("inv", None, (A,), 2)
    assert P("INV(A)") is e
    assert str(e) == "inv(A)"


def test_det():
    e = P("det(A)")
    assert (e.op, e.arg, e.children, e.order) == ("det", None, (A,), 0)
    assert P("Det(A)") is e
    assert str(e) == "det(A)"


def test_adj_is_a_node_of_its_own():
    # adj(X, k) is the k-th derivative of det (a polynomial): not det(A) inv(A), which
    # is undefined where A is singular
    e = P("adj(A)")
    assert (e.op, e.arg, e.children, e.order) == ("adj", 1, (A,), 2)
    assert P("ADJ(A)") is e and P("adj(A, 1)") is e
    assert str(e) == "adj(A)"
    second = P("adj(A, 2)")
    assert (second.op, second.arg, second.order) == ("adj", 2, 4)
    assert str(second) == "adj(A, 2)"


@pytest.mark.parametrize(
    "text, message",
    [("adj(A, 0)", "a whole number k from 1"), ("adj(A, x)", "a whole number k"), ("adj(A, 2.5)", "a whole number")],
)
def test_adj_needs_a_whole_order(text, message):
    with pytest.raises(ParseError, match=message):
        P(text)


def test_matrix_functions_of_expressions():
    e = P("inv(A *(ij,jk->ik) B)")
    assert e.op == "inv" and e.children == (P("A *(ik,kj->ij) B"),)
    assert P("det(inv(A))").children == (P("inv(A)"),)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_delta(n):
    e = P(f"delta({n})")
    assert (e.op, e.arg, e.children, e.order) == ("delta", n, (), 2 * n)
    assert str(e) == f"delta({n})"
    assert P(f"DELTA({n})") is e


def test_bare_delta_is_delta_0():
    assert P("delta") is P("delta(0)")
    assert P("delta").order == 0
    assert P("Delta + c") is P("delta(0) + c")


# -------------------------------------------------------------------- operators


def test_sum_and_difference():
    assert terms(P("x + y")) == {x: 1, y: 1}
    e = P("x - y")
    assert e.children == (x, y) and e.arg == (1, -1)  # positive terms first
    assert str(e) == "x - y"
    assert terms(P("x + y - w")) == {x: 1, y: 1, w: -1}
    assert P("x + y - w").order == 1


def test_sum_is_flat_and_left_to_right():
    # expr = term { (+|-) term }: one sum node with one coefficient per term
    e = P("x - y + w - v")
    assert terms(e) == {x: 1, y: -1, w: 1, v: -1}


def test_unary_minus():
    e = P("-x")
    assert (e.op, e.children, e.arg, e.order) == ("add", (x,), (-1,), 1)
    assert str(e) == "-x"
    assert P("--x") is x
    assert P("---x") is e
    assert P("- x") is e
    assert P("-(x)") is e


def test_negative_number_is_a_constant():
    e = P("-2")
    assert e is const(-2)
    assert P("-2.5") is const(-2.5)
    assert P("--2") is const(2)


def test_minus_binds_looser_than_power():
    # `-x^2` is `-(x^2)`
    e = P("-x^2")
    assert e.op == "add" and e.arg == (-1,)
    assert e.children == (N.power(x, const(2)),)
    assert P("-x^2") is P("-(x^2)")
    assert P("-x^2") is not P("(-x)^2")
    assert str(e) == "-x^2"
    assert str(P("(-x)^2")) == "(-x)^2"
    # the same for numbers: -2^2 is -(2^2), not (-2)^2
    assert P("-2^2") is N.neg(N.power(const(2), const(2)))


def test_power_with_atom_exponent():
    e = P("x^2")
    assert (e.op, e.arg, e.children, e.order) == ("pow", None, (x, const(2)), 1)
    assert P("x^c").children == (x, c)
    assert P("x^2.5").children == (x, const(2.5))
    assert P("A^det(A)").children == (A, P("det(A)"))
    assert P("x^sin(c)").children == (x, P("sin(c)"))
    assert P("x ^ 2") is e
    assert str(e) == "x^2"


def test_power_with_parenthesised_exponent():
    e = P("x^(c + 1)")
    assert e.op == "pow" and e.children[0] is x
    assert terms(e.children[1]) == {c: 1, const(1): 1}
    assert P("x^(-1)").children == (x, const(-1))
    assert P("x^(-c)").children == (x, N.neg(c))
    assert P("x^(x *(i,i->) y)").children == (x, P("x *(i,i->) y"))
    assert str(P("x^(-1)")) == "x^(-1)"


def test_chained_power_is_left_associative():
    e = P("x^2^3")
    assert e is N.power(N.power(x, const(2)), const(3))
    assert e is P("(x^2)^3")
    assert e is not P("x^(2^3)")
    assert P("x^(2^3)") is N.power(x, N.power(const(2), const(3)))
    assert P("x^c^d") is N.power(N.power(x, c), d)


def test_power_binds_tighter_than_products():
    assert P("x^2 *(i,i->) y") is N.mul((N.power(x, const(2)), y), ((0,), (0,)), ())
    assert P("x *(i,i->) y^2") is N.mul((x, N.power(y, const(2))), ((0,), (0,)), ())


# (text, canonical input specs, canonical output spec, order, printed form)
PRODUCT_TABLE = [
    ("x *(i,i->) y", ((0,), (0,)), (), 0, "x *(i,i->) y"),  # inner product
    ("x *(i,j->ij) y", ((0,), (1,)), (0, 1), 2, "x *(i,j->ij) y"),  # outer product
    ("x *(i,i->i) y", ((0,), (0,)), (0,), 1, "x *(i,i->i) y"),  # elementwise (vectors)
    ("A *(ij,ij->ij) B", ((0, 1), (0, 1)), (0, 1), 2, "A *(ij,ij->ij) B"),  # elementwise (matrices)
    ("A *(ij,j->i) x", ((0, 1), (1,)), (0,), 1, "A *(ij,j->i) x"),  # matrix-vector
    ("A *(ik,kj->ij) B", ((0, 1), (1, 2)), (0, 2), 2, "A *(ij,jk->ik) B"),  # matrix-matrix
    ("A *(ij,->ji) 1", ((0, 1), ()), (1, 0), 2, "A *(ij,->ji) 1"),  # transpose
    ("A *(ii,->) 1", ((0, 0), ()), (), 0, "A *(ii,->) 1"),  # trace
    ("x *(i,->ii) 1", ((0,), ()), (0, 0), 2, "x *(i,->ii) 1"),  # diagonal matrix
    ("c *(,ij->ij) A", ((), (0, 1)), (0, 1), 2, "c *(,ij->ij) A"),  # scalar times tensor
    ("x *(i,ij->j) A", ((0,), (0, 1)), (1,), 1, "x *(i,ij->j) A"),  # vector-matrix
    ("A *(ij,ik->jk) B", ((0, 1), (0, 2)), (1, 2), 2, "A *(ij,ik->jk) B"),  # A^T B
    ("T *(ijk,k->ij) x", ((0, 1, 2), (2,)), (0, 1), 2, "T *(ijk,k->ij) x"),  # order 3
    ("T *(ijk,jk->i) A", ((0, 1, 2), (1, 2)), (0,), 1, "T *(ijk,jk->i) A"),
    ("Q *(ijkl,lkji->) Q", ((0, 1, 2, 3), (3, 2, 1, 0)), (), 0, "Q *(ijkl,lkji->) Q"),  # order 4
    ("x *(i,jk->ijk) A", ((0,), (1, 2)), (0, 1, 2), 3, "x *(i,jk->ijk) A"),
    ("A *(ab,b->a) x", ((0, 1), (1,)), (0,), 1, "A *(ij,j->i) x"),  # any letters
    ("A *(ji,i->j) x", ((0, 1), (1,)), (0,), 1, "A *(ij,j->i) x"),
    ("c *(,->) d", ((), ()), (), 0, "c *(,->) d"),
]


@pytest.mark.parametrize("text, ins, out, order, printed", PRODUCT_TABLE)
def test_products(text, ins, out, order, printed):
    e = P(text)
    assert e.op == "mul"
    assert e.arg == (ins, out)
    assert e.order == order
    assert str(e) == printed
    assert len(e.children) == 2


def test_product_operands():
    assert P("A *(ij,j->i) x").children == (A, x)
    assert P("A *(ij,->ji) 1").children == (A, const(1))
    assert P("x *(i,->ii) 1").children == (x, const(1))
    assert P("c *(,ij->ij) A").children == (c, A)


def test_spaces_inside_index_specs():
    e = P("A *(ij,j->i) x")
    for text in (
        "A *(ij, j -> i) x",
        "A *( ij , j -> i ) x",
        "A *(ij,j- >i) x",
        "A *(ij,j - > i) x",
        "A *(i j,j->i) x",
        "A * (ij,j->i) x",
        "A*(ij,j->i)x",
    ):
        assert P(text) is e, text


def test_index_letters_may_spell_reserved_words():
    # ixs = { lowercase letter }: `abs`, `exp`, `wrt` in an index string are just letters
    assert P("T *(abs,s->ab) x") is P("T *(ijk,k->ij) x")
    assert P("T *(exp,p->xe) x") is P("T *(ijk,k->ji) x")
    assert P("T *(wrt,->trw) 1") is P("T *(ijk,->kji) 1")
    assert P("A *(de,elt->dlt) T") is P("A *(ij,jkl->ikl) T")


def test_products_are_left_associative():
    e = P("x *(i,j->ij) y *(ij,jk->ik) A")
    inner = P("x *(i,j->ij) y")
    assert e.children == (inner, A)
    assert e.arg == (((0, 1), (1, 2)), (0, 2))
    assert P("x *(i,ij->j) A *(j,j->) x").children == (P("x *(i,ij->j) A"), x)


def test_product_binds_tighter_than_sum():
    e = P("x + A *(ij,j->i) y")
    assert terms(e) == {x: 1, P("A *(ij,j->i) y"): 1}
    e = P("(x + y) *(i,i->) w")
    assert e.children == (P("x + y"), w)


def test_product_right_operand_is_a_factor():
    # the right operand is a factor: `-y` and `y^2` are allowed, a sum needs parentheses
    assert P("x *(i,i->) -y").children == (x, N.neg(y))
    assert P("x *(i,i->) y + c") is N.add((P("x *(i,i->) y"), c))


def test_division():
    e = P("x / y")
    assert e.op == "mul" and e.order == 1
    assert e.children == (x, N.power(y, const(-1)))
    assert e.arg == (((0,), (0,)), (0,))
    assert str(e) == "x / y"
    # x / y is exactly x *(i,i->i) y^(-1)
    assert P("x *(i,i->i) y^(-1)") is e


def test_division_is_left_associative_and_mixes_with_products():
    assert P("x / y / w") is N.divide(N.divide(x, y), w)
    assert P("x / (y / w)") is N.divide(x, N.divide(y, w))
    assert P("x / y *(i,i->) w") is N.mul((N.divide(x, y), w), ((0,), (0,)), ())
    assert P("x *(i,i->i) y / w") is N.divide(P("x *(i,i->i) y"), w)


def test_division_by_a_number_broadcasts():
    assert P("A / 2") is N.divide(A, const(2, 2))
    assert P("2 / A") is N.divide(const(2, 2), A)


def test_parentheses():
    assert P("(x)") is x
    assert P("((((x))))") is x
    assert P("(x + y) / w") is N.divide(P("x + y"), w)
    assert P("x + (y + w)") is N.add((x, N.add((y, w))))  # parentheses keep the grouping
    assert P("x - (y - w)") is N.add((x, N.add((y, w), (1, -1))), (1, -1))


def test_comments():
    e = P("x *(i,i->) y")
    assert P("x # the first vector\n *(i,i->) y # and the second") is e
    assert P("# leading comment\nx *(i,i->) y") is e
    assert P("x *(i,i->) # comment between tokens\n y\n#") is e
    assert P("x *(i, # comment inside the index spec\n i->) y") is e


def test_whitespace_and_newlines_everywhere():
    e = P("A *(ij,j->i) x + sin(y)^2")
    assert P("\n\tA\n*\n(\ni\nj\n,\nj\n-\n>\ni\n)\nx\n+\nsin\n(\ny\n)\n^\n2\n") is e
    assert P("   A   *(ij,j->i)   x+sin(y)^2   ") is e
    assert P("A*(ij,j->i)x+sin(y)^2") is e
    assert P("\r\nA *(ij,j->i) x\r\n+ sin(y)^2\r\n") is e


# ------------------------------------------------------------- problems


def test_declare_expression_derivative():
    text = """
    declare   A 2   x 1
    expression
        x *(i,ij->j) A *(j,j->) x
    derivative wrt x
    """
    p = tc.parse_problem(text)
    assert isinstance(p, tc.Problem)
    assert p.orders == {"A": 2, "x": 1}
    assert p.wrt == "x"
    assert p.expr is N.mul((N.mul((x, A), ((0,), (0, 1)), (1,)), x), ((0,), (0,)), ())
    assert p.expr.order == 0
    assert p.source == text
    assert tc.parse(text) is p.expr


def test_problem_without_derivative():
    p = tc.parse_problem("declare X 2 expression log(det(X))")
    assert p.wrt is None
    assert p.orders == {"X": 2}
    assert p.expr is N.func("log", N.det(X))


def test_declare_every_order():
    p = tc.parse_problem("declare c 0 x 1 A 2 T 3 Q 4 expression c")
    assert p.orders == {"c": 0, "x": 1, "A": 2, "T": 3, "Q": 4}
    assert p.expr is c


def test_expression_keyword_without_declare():
    p = tc.parse_problem("expression x + y", {"x": 1, "y": 1})
    assert p.expr is N.add((x, y))


def test_keywords_are_case_insensitive():
    p = tc.parse_problem("DECLARE X 2 y 1 EXPRESSION EXP(X *(ij,j->i) y) DERIVATIVE WRT y")
    assert p.orders == {"X": 2, "y": 1}
    assert p.wrt == "y"
    assert p.expr is N.func("exp", P("X *(ij,j->i) y"))
    q = tc.parse_problem("Declare X 2 y 1 Expression exp(X *(ij,j->i) y) Derivative Wrt y")
    assert q.expr is p.expr and q.wrt == "y"


def test_orders_from_python_and_declarations_combine():
    p = tc.parse_problem("declare A 2 expression A *(ij,j->i) x", {"x": 1})
    assert p.orders == {"A": 2, "x": 1}
    assert p.expr is P("A *(ij,j->i) x")
    # a repeated, agreeing order is fine
    assert tc.parse("declare x 1 expression x", {"x": 1}) is x


def test_bare_expression_with_orders_from_python():
    e = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    assert e is N.mul((A, x), ((0, 1), (1,)), (0,))
    assert e.variables == {"A": 2, "x": 1}
    assert tc.parse("2 + 3") is N.add((const(2), const(3)))  # no variables, no orders needed


def test_thesis_examples():
    # docs/language.md, "Examples"
    examples = {
        "declare x 1 A 2 expression x *(i,ij->j) A *(j,j->) x": 0,
        "declare X 2 y 1 w 1 expression log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1": 0,
        "declare T 2 U 2 V 2 expression (T - U *(ik,jk->ij) V) *(ij,ij->) (T - U *(ik,jk->ij) V)": 0,
        "declare X 2 expression log(det(X))": 0,
        "declare W 2 X 2 v 1 expression tanh(X *(mj,hj->mh) W) *(mh,h->) v": 0,
    }
    for text, order in examples.items():
        assert tc.parse(text).order == order
    e = tc.parse("declare W 2 X 2 v 1 expression tanh(X *(mj,hj->mh) W) *(mh,h->) v")
    assert str(e) == "tanh(X *(ij,kj->ik) W) *(ij,j->) v"
    e = tc.parse("declare T 2 U 2 V 2 expression (T - U *(ik,jk->ij) V) *(ij,ij->) (T - U *(ik,jk->ij) V)")
    assert e.children[0] is e.children[1]  # the repeated factor is one node
    assert str(e) == "(T - U *(ij,kj->ik) V) *(ij,ij->) (T - U *(ij,kj->ik) V)"


# ------------------------------------------------------------- orders of constants


def test_constant_in_a_sum_takes_the_other_summands_order():
    e = P("X + 1")
    assert e.order == 2
    # ... and the other summand's dimensions: the 1 is a ones matrix of X's shape
    assert terms(e) == {X: 1, const(1, 2, X.dims): 1}
    assert P("1 + X") is e
    assert terms(P("1 - x")) == {const(1, 1, x.dims): 1, x: -1}
    assert terms(P("T + 2.5")) == {T: 1, const(2.5, 3, T.dims): 1}


def test_constant_in_a_nested_sum():
    e = P("(1 + 2) + X")
    inner = N.add((const(1, 2, X.dims), const(2, 2, X.dims)))
    assert terms(e) == {inner: 1, X: 1}


def test_constant_in_a_product_takes_its_index_string_length():
    e = P("(A + 1) *(ij,j->i) 1")
    assert e.order == 1
    left, right = e.children
    assert right is const(1, 1, A.dims[1:])  # a vector of ones, as long as A's rows
    assert terms(left) == {A: 1, const(1, 2, A.dims): 1}
    e = P("1 *(,ij->) X")
    assert e.children == (const(1, 0), X)
    assert e.order == 0
    assert P("x *(i,jk->ijk) 2").children == (x, const(2, 2))


def test_constant_under_an_elementwise_function():
    e = P("X + log(2)")
    assert e.order == 2
    assert terms(e) == {X: 1, N.func("log", const(2, 2, X.dims)): 1}
    assert terms(P("exp(sin(1)) - x")) == {N.func("exp", N.func("sin", const(1, 1, x.dims))): 1, x: -1}
    assert terms(P("-2 + x")) == {x: 1, const(-2, 1, x.dims): 1}


def test_constant_under_a_power_and_a_quotient():
    e = P("X + 2^c")
    assert terms(e) == {X: 1, N.power(const(2, 2, X.dims), c): 1}
    e = P("x + 1 / 2")
    assert terms(e) == {x: 1, N.divide(const(1, 1, x.dims), const(2, 1, x.dims)): 1}
    # the exponent is always a scalar
    assert P("X^2").children == (X, const(2, 0))


def test_constant_under_matrix_functions_is_a_matrix():
    e = P("det(2) + c")
    assert terms(e) == {N.det(const(2, 2)): 1, c: 1}
    assert P("inv(1) + A") is N.add((N.inv(const(1, 2)), A))


def test_top_level_constants_are_scalars():
    assert P("2").order == 0
    assert P("log(2) + 1") is N.add((N.func("log", const(2, 0)), const(1, 0)))
    assert P("-(1 + 2)").order == 0
    assert P("2 ^ 3") is N.power(const(2), const(3))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_delta_order(n):
    assert P(f"delta({n})").order == 2 * n


def test_delta_with_tensors():
    e = P("delta(1) + A")
    # the identity's two axes must have equal lengths: A's (A.0 = A.1 is checked on binding)
    assert terms(e) == {N.delta(1, A.dims[:1]): 1, A: 1}
    e = P("delta(2) *(ijkl,kl->ij) A")
    assert e.children == (N.delta(2, A.dims), A) and e.order == 2
    e = P("delta *(,i->i) x")
    assert e.children == (N.delta(0), x)


# ------------------------------------------------------------- round trip

ROUND_TRIP = [
    "x *(i,ij->j) A *(j,j->) x",
    "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1",
    "(A - B *(ik,jk->ij) X) *(ij,ij->) (A - B *(ik,jk->ij) X)",
    "log(det(X))",
    "tanh(X *(mj,hj->mh) W) *(mh,h->) v",
    "-x^2",
    "(-x)^2",
    "x^2^3",
    "x^(2^3)",
    "x^(c^2) + x^c^2",
    "x^det(A) - x^(-1)",
    "-(x + y) - (y - w) + (x - -y)",
    "1 - x",
    "-1 - x",
    "x / y / w + x / (y / w) + x / -y + -x / y",
    "(x + y) / (x - y)",
    "x *(i,i->i) y / w - x / y *(i,i->i) w",
    "A *(ij,->ji) 1 + x *(i,->ii) 1 + c *(,ij->ij) A",
    "A *(ii,->) 1 *(,->) -2",
    "-2 *(,ij->ij) A + A *(ij,->ij) (-2)",
    "x *(i,->i) (c + d) + x *(i,->i) -c",
    "delta(1) *(ij,jk->ik) A + delta(2) *(ijkl,kl->ij) B",
    "delta + c + delta(0)",
    "x + 1.5 + .5 - 2. + 1e-3 + 2.5E+4 + 1e20 + 1e-20",
    "sin(x) + cos(x) + tan(x) + arcsin(x) + arccos(x) + arctan(x) + tanh(x)",
    "exp(x) + log(x) + abs(x) + sign(x) + relu(x)",
    "inv(A) + adj(A) + det(A) *(,ij->ij) A",
    "x *(i,j->ij) y *(ij,jk->ik) A",
    "x *(i,j->ij) (y *(j,jk->k) A)",
    "X + log(2)",
    "(A + 1) *(ij,j->i) 1",
    "Q *(ijkl,lkji->) Q + T *(ijk,k->ij) x *(ij,ij->) B",
    "(c + d)^(c - d) - det(-A) + -det(A)",
    "-2^2 + (-2)^2 + c + -1",
    "c / d + 1 / c + c / 2 - 2 / c",
    "(x *(i,i->) y) *(,i->i) x",
    "A *(ij,jk->ik) (B *(ij,jk->ik) A)",
    "sin(sin(sin(x *(i,i->) x)))",
    "T *(abs,s->ab) x",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip(text):
    e = P(text)
    printed = str(e)
    assert P(printed) is e, printed
    assert str(P(printed)) == printed  # printing is a fixed point


@pytest.mark.parametrize(
    "text, printed",
    [
        ("x *(i,ij->j) A *(j,j->) x", "x *(i,ij->j) A *(i,i->) x"),
        ("A *(ab,b->a) x - 2 *(,i->i) y", "A *(ij,j->i) x - 2 *(,i->i) y"),
        ("-x^2", "-x^2"),
        ("x^2^3", "(x^2)^3"),
        ("x^(2^3)", "x^(2^3)"),
        ("-(x+y)", "-(x + y)"),
        ("x - -2", "x - -2"),
        ("-x + y", "y - x"),
        ("1 - x", "1 - x"),
        ("X + 1", "X + 1"),
        ("1 + X", "X + 1"),
        ("x / (y / w)", "x / (y / w)"),
        ("(x - y) *(i,i->) w", "(x - y) *(i,i->) w"),
        ("x *(i,i->) (y - w)", "x *(i,i->) (y - w)"),
        ("A *(ij,->ij) (-2)", "A *(ij,->ij) -2"),
        ("delta", "delta(0)"),
        (".5 + c", "c + 0.5"),
        ("2. + c", "c + 2.0"),
        ("1e-3 + c", "c + 0.001"),
        ("EXP(x)", "exp(x)"),
        ("A *(ij, j - > i) x", "A *(ij,j->i) x"),
        ("-(2)", "-2"),
        ("(-2)^2", "(-2)^2"),
        ("-2^2", "-2^2"),
        ("x^(-1)", "x^(-1)"),
        ("x^(c + 1)", "x^(c + 1)"),
    ],
)
def test_printed_form(text, printed):
    assert str(P(text)) == printed
