"""Matrix notation in text (issue 11): matrixcalculus.org's examples, mixing with the
einsum language, shapes, messages, and printing derivatives back in matrix notation.

Values are compared with NumPy closed forms and finite differences at distinct axis
lengths (tenscalc.testing); printed text is only checked by parsing it back.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import assert_derivative, random_values

# every example of matrixcalculus.org's documentation page, pasted unchanged
MATRIXCALCULUS_EXAMPLES = [
    "0.5*x'*A*x",
    "A*exp(x)",
    "(y.*v)'*x",
    "a^b",
    "norm1(A*x-y)",
    "norm2(A*x-y)^2",
    "sum(log(exp(-y.*(X*w)) + vector(1)))",
    "tr(A*X'*B*X*C)",
    "log(det(inv(X)))",
]

# more inputs a matrixcalculus.org user types
MORE = [
    "x'*A*x",
    "x'*(A + delta(1))*x",
    "x'*(A + eye)*x",
    "A*(x - z)",
    "x*y'",
    "(x*y')*z",
    "X*Y - Y*X",
    "diag(x)*A*diag(x)",
    "sum(diag(A))",
    "tr(inv(X)*A)",
    "logdet(X) - tr(S*X)",
    "x'*y/norm2(x)",
    "sqrt(x'*x + 1)",
    "norm2(X)^2",
    "exp(x')*A",
    "x ./ (y .* y + 1)",
    "(A*x).^2",
    "sum(sin(A)) + tr(A')",
    "x'*A'*y",
    "2*x - 3*y/c",
    "-x'*x",
]


def _values(expr: tc.Expr, seed: int = 0) -> dict:
    values = random_values(expr, seed=seed)
    for name, value in values.items():  # positive entries: logs, square roots and logdets are defined
        values[name] = np.abs(value) + 0.2 if np.ndim(value) != 2 or value.shape[0] != value.shape[1] else value
    return values


@pytest.mark.parametrize("text", MATRIXCALCULUS_EXAMPLES + MORE)
def test_derivatives_match_finite_differences(text):
    f = tc.parse(text)
    assert f.order == 0 or text in (
        "A*exp(x)",
        "A*(x - z)",
        "x*y'",
        "(x*y')*z",
        "X*Y - Y*X",
        "diag(x)*A*diag(x)",
        "exp(x')*A",
        "x ./ (y .* y + 1)",
        "(A*x).^2",
        "2*x - 3*y/c",
    )
    for name in f.variables:
        assert_derivative(f, name, values=_values(f))


@pytest.mark.parametrize("text", MATRIXCALCULUS_EXAMPLES + MORE)
def test_printed_derivatives_parse_back_to_the_same_values(text):
    f = tc.parse(text)
    values = _values(f)
    for expr in [f] + [tc.derivative(f, name) for name in f.variables]:
        printed = tc.to_matrix_notation(expr)
        again = tc.parse(printed, f.variables)
        np.testing.assert_allclose(tc.evaluate(again, values), tc.evaluate(expr, values), rtol=1e-10, atol=1e-12)


def test_closed_forms_with_numpy():
    rng = np.random.default_rng(1)
    A, B, C, X = (rng.standard_normal((3, 3)) + 3 * np.eye(3) for _ in range(4))
    x, y, v, w = (rng.standard_normal(3) for _ in range(4))
    env = dict(A=A, B=B, C=C, X=X, x=x, y=y, v=v, w=w, a=1.3, b=0.7)
    cases = {
        "0.5*x'*A*x": 0.5 * x @ A @ x,
        "A*exp(x)": A @ np.exp(x),
        "(y.*v)'*x": (y * v) @ x,
        "a^b": 1.3**0.7,
        "norm1(A*x-y)": np.abs(A @ x - y).sum(),
        "norm2(A*x-y)^2": np.linalg.norm(A @ x - y) ** 2,
        "sum(log(exp(-y.*(X*w)) + vector(1)))": np.log(np.exp(-y * (X @ w)) + 1).sum(),
        "tr(A*X'*B*X*C)": np.trace(A @ X.T @ B @ X @ C),
        "log(det(inv(X)))": np.log(np.linalg.det(np.linalg.inv(X))) if np.linalg.det(X) > 0 else None,
        "x*y'": np.outer(x, y),
        "diag(x)*A": np.diag(x) @ A,
        "diag(A)": np.diag(A),
        "x'*A'": x @ A.T,
        "A .* B ./ C": A * B / C,
        "x/norm2(x)": x / np.linalg.norm(x),
        "eye*x": x,
        "matrix(2) .* A": 2 * A,
    }
    for text, expected in cases.items():
        if expected is None:
            continue
        got = tc.evaluate(tc.parse(text), {k: v for k, v in env.items() if k in tc.parse(text).variables})
        np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=text)


def test_gradient_of_quadratic_form_with_distinct_lengths():
    # A is 3x4 would not type; with x of length 4 and A 4x4 a square form, check the
    # matrix derivative against NumPy's closed form x x^T
    f = tc.parse("x'*A*y")
    rng = np.random.default_rng(3)
    x, A, y = rng.standard_normal(3), rng.standard_normal((3, 5)), rng.standard_normal(5)
    np.testing.assert_allclose(tc.evaluate(tc.derivative(f, "A"), x=x, A=A, y=y), np.outer(x, y))
    np.testing.assert_allclose(tc.evaluate(tc.derivative(f, "x"), x=x, A=A, y=y), A @ y)
    np.testing.assert_allclose(tc.evaluate(tc.derivative(f, "y"), x=x, A=A, y=y), A.T @ x)
    assert tc.to_matrix_notation(tc.derivative(f, "y")) == "A'*x"


# --------------------------------------------------------------- the same DAG as einsum


@pytest.mark.parametrize(
    "matrix, einsum, orders",
    [
        ("x'*A*x", "x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}),
        ("A*x", "A *(ij,j->i) x", {"x": 1, "A": 2}),
        ("x'*y", "x *(i,i->) y", {"x": 1, "y": 1}),
        ("x*y'", "x *(i,j->ij) y", {"x": 1, "y": 1}),
        ("X*Y", "X *(ij,jk->ik) Y", {"X": 2, "Y": 2}),
        ("x .* y", "x *(i,i->i) y", {"x": 1, "y": 1}),
        ("A*(x - z)", "A *(ij,j->i) (x - z)", {"A": 2, "x": 1, "z": 1}),
        ("log(det(X))", "logdet(X)", {"X": 2}),
        ("2*x", "2 *(,i->i) x", {"x": 1}),
    ],
)
def test_matrix_notation_builds_the_einsum_dag(matrix, einsum, orders):
    assert tc.parse(matrix, orders) is tc.parse(einsum, orders)


def test_index_spec_and_bracketed_factor_are_told_apart():
    orders = {"A": 2, "x": 1, "z": 1}
    product = tc.parse("A*(x-z)", orders)
    spec = tc.parse("A *(ij,j->i) x", orders)
    assert product.order == spec.order == 1
    assert product is tc.parse("A *(ij,j->i) (x - z)", orders)
    mixed = tc.parse("x'*(A + delta(1))*x", {"A": 2, "x": 1})
    rng = np.random.default_rng(0)
    A, x = rng.standard_normal((4, 4)), rng.standard_normal(4)
    np.testing.assert_allclose(tc.evaluate(mixed, A=A, x=x), x @ (A + np.eye(4)) @ x)
    # einsum and matrix notation in one expression
    both = tc.parse("A *(ij,j->i) x + A'*x", {"A": 2, "x": 1})
    np.testing.assert_allclose(tc.evaluate(both, A=A, x=x), A @ x + A.T @ x)


def test_new_function_names_stay_variable_names():
    f = tc.parse("sum + tr *(i,i->) diag", {"sum": 0, "tr": 1, "diag": 1})
    assert f.variables == {"diag": 1, "sum": 0, "tr": 1}
    assert float(tc.evaluate(f, sum=1.0, tr=np.ones(2), diag=np.ones(2))) == 3.0


def test_default_types_by_letter_for_every_undeclared_name():
    assert tc.parse("a*x + B*y").variables == {"B": 2, "a": 0, "x": 1, "y": 1}
    p = tc.parse_problem("x'*A*x derivative wrt x")
    assert p.orders == {"A": 2, "x": 1}
    # declaring one name keeps the letter rule for the others (issue 25)
    assert tc.parse("x + y", {"x": 1}).variables == {"x": 1, "y": 1}
    assert tc.parse("declare x 0 expression x*y").variables == {"x": 0, "y": 1}
    assert tc.parse("declare b 1 expression norm2(A*x - b)^2").variables == {"A": 2, "b": 1, "x": 1}
    # letter_rule=False asks for every name to be declared
    with pytest.raises(tc.SemanticError, match="variable 'y' is not declared .the letter rule is off"):
        tc.parse("x + y", {"x": 1}, letter_rule=False)
    with pytest.raises(tc.SemanticError, match="variable 'y' is not declared"):
        tc.parse("declare x 1 expression x + y", letter_rule=False)
    with pytest.raises(tc.SemanticError, match="variable 'x' is not declared"):
        tc.parse("x", letter_rule=False)


def test_cli_reads_matrix_notation(capsys):
    from tenscalc.cli import main

    assert main(["x'*A*x derivative wrt x"]) == 0
    out = capsys.readouterr().out
    assert "x *(i,ij->j) A *(i,i->) x" in out


# ------------------------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    "text, message, position",
    [
        ("x*y", "cannot multiply `x` (a column vector) by `y` (a column vector) with '*'", 1),
        ("x'*y'", "cannot multiply `x'` (a row vector) by `y'` (a row vector) with '*'", 2),
        ("A*x'", "cannot multiply `A` (a matrix) by `x'` (a row vector) with '*'", 1),
        ("x' + y", "cannot add `x'` (a row vector) and `y` (a column vector)", 5),
        (
            "x .* A",
            "'.*' needs operands of the same shape (or a scalar), but `x` is a column vector and `A` is a matrix",
            2,
        ),
        ("x' ./ y", "'./' needs operands of the same shape (or a scalar), but `x'` is a row vector", 3),
        ("tr(x)", "tr needs a square matrix (order 2), but `x` has order 1", 0),
        ("diag(a)", "diag needs a vector or a matrix, but `a` has order 0", 0),
        ("vector(x)", "vector(c) needs a number c", 0),
    ],
)
def test_shape_mismatches_name_operands_and_shapes(text, message, position):
    with pytest.raises(tc.SemanticError) as info:
        tc.parse(text)
    assert info.value.reason.startswith(message)
    assert info.value.position == position
    assert str(info.value).splitlines()[-1] == "  " + " " * position + "^"


def test_matrix_product_of_an_order_three_tensor_is_refused():
    with pytest.raises(tc.SemanticError, match="matrix product needs orders up to 2"):
        tc.parse("T*x", {"T": 3, "x": 1})
    assert tc.parse("2*T", {"T": 3}).order == 3  # scaling is fine


# ----------------------------------------------------------------------------- messages


def test_unknown_function_with_nearest_match():
    with pytest.raises(tc.ParseError) as info:
        tc.parse("norm3(x)")
    assert info.value.reason.startswith("unknown function 'norm3'; did you mean norm2?")
    assert info.value.position == 0
    assert "sqrt" in info.value.reason  # the known ones are listed
    assert tc.parse("sqrt(u)").order == 1


@pytest.mark.parametrize(
    "text, keyword",
    [
        ("declar x 1 expression x", "declare"),
        ("declare x 1 expresion x", "expression"),
        ("declare x 1 expression x derivativ wrt x", "derivative"),
    ],
)
def test_keyword_typos(text, keyword):
    with pytest.raises(tc.ParseError) as info:
        tc.parse_problem(text)
    assert f"did you mean the keyword '{keyword}'" in info.value.reason


def test_byte_order_mark_is_skipped():
    assert tc.parse("\ufeffx'*A*x") is tc.parse("x'*A*x")


@pytest.mark.parametrize(
    "text, char, ascii_",
    [
        ("x \u2212 y", "\u2212", "-"),
        ("x\u1d40*y", "\u1d40", "'"),
        ("x\u2019*y", "\u2019", "'"),
        ("x *(i,i\u2192) y", "\u2192", "->"),
    ],
)
def test_unicode_lookalikes_are_hinted(text, char, ascii_):
    with pytest.raises(tc.ParseError) as info:
        tc.parse(text)
    assert info.value.position == text.index(char)
    assert f"type the ASCII {ascii_!r} instead" in info.value.reason


# ----------------------------------------------------------------------------- printing


def test_printing_examples():
    assert tc.to_matrix_notation(tc.derivative(tc.parse("x'*A*x"), "x")) == "A'*x + A*x"
    assert tc.to_matrix_notation(tc.parse("tr(A*X'*B*X*C)")) == "tr(A*X'*B*X*C)"
    # order 3 falls back to the einsum language
    d = tc.derivative(tc.parse("A*x"), "A")
    assert d.order == 3 and "*(" in tc.to_matrix_notation(d)


def test_cli_notation_matrix(capsys):
    from tenscalc.cli import main

    assert main(["--notation", "matrix", "x'*A*x derivative wrt x"]) == 0
    out = capsys.readouterr().out
    assert "A'*x + A*x" in out


# ------------------------------------------------------------------ against JAX, by hand


def _jax_cases(jnp):
    """matrixcalculus.org's examples (all of its documentation's) written independently in JAX."""
    return {
        "0.5*x'*A*x": lambda x, A: 0.5 * x @ A @ x,
        "A*exp(x)": lambda A, x: A @ jnp.exp(x),
        "(y.*v)'*x": lambda y, v, x: (y * v) @ x,
        "a^b": lambda a, b: a**b,
        "norm1(A*x-y)": lambda A, x, y: jnp.abs(A @ x - y).sum(),
        "norm2(A*x-y)^2": lambda A, x, y: jnp.linalg.norm(A @ x - y) ** 2,
        "sum(log(exp(-y.*(X*w)) + vector(1)))": lambda y, X, w: jnp.log(jnp.exp(-y * (X @ w)) + 1).sum(),
        "tr(A*X'*B*X*C)": lambda A, X, B, C: jnp.trace(A @ X.T @ B @ X @ C),
        "log(det(inv(X)))": lambda X: jnp.log(jnp.linalg.det(jnp.linalg.inv(X))),
    }


@pytest.mark.slow  # JAX compiles every example
def test_matrixcalculus_examples_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import inspect

    import jax.numpy as jnp

    rng = np.random.default_rng(5)
    shapes = {  # distinct lengths wherever the expression allows them
        "0.5*x'*A*x": {"x": (3,), "A": (3, 3)},
        "A*exp(x)": {"A": (2, 3), "x": (3,)},
        "(y.*v)'*x": {"y": (4,), "v": (4,), "x": (4,)},
        "a^b": {"a": (), "b": ()},
        "norm1(A*x-y)": {"A": (3, 5), "x": (5,), "y": (3,)},
        "norm2(A*x-y)^2": {"A": (3, 5), "x": (5,), "y": (3,)},
        "sum(log(exp(-y.*(X*w)) + vector(1)))": {"y": (4,), "X": (4, 2), "w": (2,)},
        "tr(A*X'*B*X*C)": {"A": (2, 3), "X": (4, 3), "B": (4, 4), "C": (3, 2)},
        "log(det(inv(X)))": {"X": (3, 3)},
    }
    for text, fn in _jax_cases(jnp).items():
        names = list(inspect.signature(fn).parameters)
        values = {}
        for name in names:
            shape = shapes[text][name]
            value = rng.uniform(0.5, 1.5, size=shape)
            if len(shape) == 2 and shape[0] == shape[1]:
                value = value + 3 * np.eye(shape[0])
            values[name] = value
        f = tc.parse(text)
        np.testing.assert_allclose(tc.evaluate(f, values), fn(*(values[n] for n in names)), rtol=1e-10)
        for k, name in enumerate(names):
            expected = jax.jacobian(fn, argnums=k)(*(jnp.asarray(values[n]) for n in names))
            got = tc.evaluate(tc.derivative(f, name), values)
            np.testing.assert_allclose(got, np.asarray(expected), rtol=1e-9, atol=1e-12, err_msg=f"{text} by {name}")


# ---------------------------------------------------------------------- the docs page

PAGE = "from-matrixcalculus-and-numpy.md"


def test_docs_page_problems_and_errors():
    from test_docs_examples import blocks

    problems, errors = blocks(PAGE, "tenscalc"), blocks(PAGE, "tenscalc-error")
    assert problems and errors
    for source in problems:
        p = tc.parse_problem(source)
        values = _values(p.expr)
        assert_derivative(p.expr, p.wrt, values=values)
        d = p.derivative()
        again = tc.parse(tc.to_matrix_notation(d), p.orders)
        np.testing.assert_allclose(tc.evaluate(again, values), tc.evaluate(d, values), rtol=1e-10)
    for source in errors:
        with pytest.raises(tc.TensCalcError):
            tc.parse_problem(source)


def test_docs_page_table_rows_agree():
    """Each row of the side-by-side table: the matrix-notation and einsum spellings are equal."""
    pairs = [
        ("x'*A*x", "x *(i,ij->j) A *(j,j->) x"),
        ("A'", "A *(ij,->ji) 1"),
        ("sum(X)", "X *(ij,->) 1"),
        ("tr(X)", "X *(ii,->) 1"),
        ("diag(x)", "x *(i,->ii) 1"),
        ("diag(X)", "X *(ii,->i) 1"),
        ("norm2(x)", "(x *(i,i->) x)^0.5"),
        ("norm1(x)", "abs(x) *(i,->) 1"),
        ("logdet(X)", "log(det(X))"),
        ("sqrt(x)", "x^0.5"),
    ]
    for matrix, einsum in pairs:
        f = tc.parse(matrix)
        g = tc.parse(einsum, f.variables)
        values = _values(f)
        np.testing.assert_allclose(tc.evaluate(f, values), tc.evaluate(g, values), rtol=1e-12, err_msg=matrix)
