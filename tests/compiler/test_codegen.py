"""Generated NumPy code: executed and compared with ``tc.evaluate``."""

from __future__ import annotations

import ast
import subprocess
import sys

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import random_values
from tests.generated_imports import module_imports


def _problems() -> dict:
    from benchmarks.problems import PROBLEMS

    return PROBLEMS


def compile_source(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    return namespace[name]


PROBLEM_NAMES = ["quadratic", "logreg", "matfac", "mlp"]


@pytest.mark.parametrize("problem", PROBLEM_NAMES)
def test_problem_value_gradient_hessian(problem):
    p = _problems()[problem]
    f = tc.parse(p["src"], p["orders"])
    gradient = tc.derivative(f, p["wrt"])
    hessian = tc.derivative(gradient, p["wrt"])
    exprs = [f, gradient, hessian]
    source = tc.to_python(exprs, name=problem)
    function = compile_source(source, problem)
    values = random_values(exprs, seed=3)  # distinct axis lengths 2, 3, 4 ...
    results = function(**values)
    assert isinstance(results, tuple) and len(results) == 3
    for expr, result in zip(exprs, results):
        expected = tc.evaluate(expr, values)
        assert np.shape(result) == expected.shape
        np.testing.assert_allclose(result, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("problem", PROBLEM_NAMES)
def test_raw_derivatives_too(problem):
    """The unsimplified derivative DAG has deltas and constants sized by variables."""
    p = _problems()[problem]
    f = tc.parse(p["src"], p["orders"])
    raw = tc.derivative(f, p["wrt"], simplify=False)
    function = compile_source(tc.to_python([raw], name="g"), "g")
    values = random_values([f, raw], seed=5)
    (result,) = function(**values)
    np.testing.assert_allclose(result, tc.evaluate(raw, values), rtol=1e-10, atol=1e-12)


def test_shared_subexpressions_are_computed_once():
    p = _problems()["logreg"]
    f = tc.parse(p["src"], p["orders"])
    g = tc.gradient(f, "w")
    h = tc.hessian(f, "w")
    source = tc.to_python([f, g, h])
    # one statement per step of the compiler's plan: exp(-y (X w)) once, though the DAG
    # spells it two ways (-(y ⊙ X w) and -(X w ⊙ y)), which the plan recognises as one
    exp_calls = source.count("_np.exp(")
    distinct_exps = {n for n in tc.core.nodes.topological([f, g, h]) if n.op == "func" and n.arg == "exp"}
    assert len(distinct_exps) == 2 and exp_calls == 1


def test_single_expression_returns_a_bare_value():
    f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    function = compile_source(tc.to_python(f, name="mv"), "mv")
    A, x = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(function(A=A, x=x), A @ x)


def test_arguments_are_keyword_only_and_checked():
    f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    function = compile_source(tc.to_python([f]), "f")
    with pytest.raises(TypeError):
        function(np.eye(2), np.ones(2))
    with pytest.raises(ValueError, match="x must have 1 axis"):
        function(A=np.eye(2), x=np.ones((2, 2)))
    with pytest.raises(ValueError, match="must equal"):
        function(A=np.eye(2), x=np.ones(3))


def test_constant_and_delta_sizes_come_from_the_arguments():
    x = tc.var("x", 1)
    h = tc.hessian(tc.einsum("i,i->", x, x), "x")  # 2 delta(1): no x left in it
    function = compile_source(tc.to_python([h], name="h"), "h")
    (result,) = function(x=np.ones(4))
    np.testing.assert_allclose(result, 2 * np.eye(4))


def test_every_construct():
    orders = {"A": 2, "x": 1, "y": 1, "c": 0, "T": 3}
    texts = [
        "A *(ii,->) 1",
        "x *(i,->ii) 1",
        "A *(ij,->ji) 1",
        "x *(i,j->ij) y",
        "inv(A) + adj(A) - det(A) *(,ij->ij) A",
        "sin(x) + cos(x) + tan(x) + arctan(x) + tanh(x) + exp(x) + abs(x) + sign(x) + relu(x)",
        "log(x^2 + 1) + arcsin(x / 4) + arccos(x / 4)",
        "x^c + x^3 - x^(-1)",
        "T *(ijk,k->ij) y + A",
        "(A + 1) *(ij,j->i) 1",
        "delta(1) *(ij,jk->ik) A",
    ]
    exprs = [tc.parse(t, orders) for t in texts]
    values = {
        "A": np.array([[3.0, 1.0], [0.5, 2.0]]),
        "x": np.array([0.3, -0.7]),
        "y": np.array([1.5, -0.5, 2.0]),
        "c": 2.0,
        "T": np.arange(12.0).reshape(2, 2, 3) / 10,
    }
    values["x"] = np.array([0.3, 0.7])  # positive: x^c with a variable exponent
    function = compile_source(tc.to_python(exprs, name="every"), "every")
    results = function(**values)
    for text, expr, result in zip(texts, exprs, results):
        used = {k: v for k, v in values.items() if k in expr.variables}
        np.testing.assert_allclose(result, tc.evaluate(expr, used), rtol=1e-12, err_msg=text)


@pytest.mark.parametrize(
    "name", ["1f", "f-g", "f(x)", "import os", "class", "lambda", "f\n", "", "_np", "_contract", "fünf", None, 3]
)
def test_function_names_are_validated(name):
    f = tc.parse("x", {"x": 1})
    with pytest.raises(tc.TensCalcError):
        tc.to_python(f, name=name)


def test_no_function_name_replaces_a_name_of_the_module():
    # a function named _accumulate (or _add_into, _write_bands, ...) replaced the helper it calls
    from tests.compiler.test_runners import CORPUS

    pd = tc.parse_problem("declare K 2 pd y 1 expression y'*inv(K)*y + log(det(K)) derivative wrt K")
    modules = [(pd.expr, pd.derivative()), {"K": (3, 3), "y": (3,)}, pd.assumptions]
    cases = [(build(), shapes, None) for build, shapes in CORPUS.values()] + [modules]
    defined = set()
    for exprs, shapes, assumptions in cases:
        for given in (None, shapes):
            tree = ast.parse(tc.to_python(list(exprs), shapes=given, assumptions=assumptions))
            defined |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)} - {"f"}
            for node in tree.body:
                if isinstance(node, ast.Assign):
                    defined |= {t.id for t in ast.walk(node.targets[0]) if isinstance(t, ast.Name)}
    assert "_accumulate" in defined and "_cho_inv" in defined  # the corpus writes the helpers
    for name in sorted(defined):
        with pytest.raises(tc.TensCalcError, match="reserved in generated code"):
            tc.to_python(tc.var("x", 1), name=name)


def test_variable_names_are_validated():
    from tenscalc.core import nodes as N

    for bad in ("_t0", "_np", "fünf"):  # names reserved for the generated code, non-ASCII
        expr = N.var(bad, 1)
        with pytest.raises(tc.TensCalcError):
            tc.to_python(expr)
    # a Python keyword is a valid variable: renamed inside, passed as f(**{"class": ...})
    namespace: dict = {}
    exec(tc.to_python(N.var("class", 1)), namespace)  # noqa: S102 - the library's own generated code
    assert namespace["f"](**{"class": [1.0, 2.0]}).tolist() == [1.0, 2.0]


def test_source_is_plain_python_without_tenscalc():
    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    source = tc.to_python([f, tc.gradient(f, "x"), tc.hessian(f, "x")], name="quad")
    imported, optional = module_imports(source)
    assert imported == {"numpy", "opt_einsum"}
    assert optional <= {"tenscalc"}  # its error class where installed (tests/generated_imports.py)
    # run it in a fresh interpreter where tenscalc cannot be imported at all
    script = (
        "import sys\n"
        "sys.modules['tenscalc'] = None\n"
        f"exec(compile({source!r}, 'generated', 'exec'))\n"
        "import numpy as np\n"
        "value, grad, hess = quad(x=np.array([1.0, 2.0]), A=np.array([[1.0, 2.0], [3.0, 4.0]]))\n"
        "print(float(value), grad.tolist(), hess.tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    # x^T A x = 1 + 2*2 + 2*3 + 4*4 = 27 ; gradient (A + A^T) x = (2 + 10, 5 + 16) ; Hessian A + A^T
    assert out.strip() == "27.0 [12.0, 21.0] [[2.0, 5.0], [5.0, 8.0]]"


@pytest.mark.parametrize("problem", PROBLEM_NAMES)
@pytest.mark.parametrize("with_shapes", [False, True])
def test_every_module_level_name_is_read(problem, with_shapes):
    # the quadratic's module imported opt_einsum's DynamicProgramming without the path helper that reads it
    p = _problems()[problem]
    f = tc.parse(p["src"], p["orders"])
    gradient = tc.derivative(f, p["wrt"])
    exprs = [f, gradient, tc.derivative(gradient, p["wrt"])]
    shapes = {name: np.shape(value) for name, value in random_values(exprs, seed=3).items()} if with_shapes else None
    tree = ast.parse(tc.to_python(exprs, name="f", shapes=shapes))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    # and the module's own names (its aliases of ValueError, len, range: _range was never read)
    imported |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in ast.walk(node.targets[0])
        if isinstance(target, ast.Name)
    }
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    read |= {
        node.value.id for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }
    assert imported <= read, imported - read


def test_deterministic_source():
    f = tc.parse("tanh(X *(mj,hj->mh) W) *(mh,h->) v", {"X": 2, "W": 2, "v": 1})
    exprs = [f, tc.gradient(f, "W")]
    assert tc.to_python(exprs) == tc.to_python(exprs)


def test_deltas_next_to_variables_are_absorbed_not_built():
    A = np.arange(6.0).reshape(2, 3)
    absorbed = tc.parse("delta(1) *(ij,jk->ik) A", {"A": 2})
    source = tc.to_python(absorbed)
    assert "_np.eye" not in source
    np.testing.assert_allclose(compile_source(source, "f")(A=A), A)
    # a delta between two free axes is a genuine identity: the plan writes its diagonal (2 I:
    # the twos, its core, written on the diagonal of zeros when handed out), of the argument's length
    x = tc.var("x", 1)
    source = tc.to_python(tc.hessian(tc.einsum("i,i->", x, x), "x"))
    assert "_s0 = _np.full((x.shape[0],), 2.0, dtype=_dtype)" in source
    assert "_write_diagonal(_s0, 'aa->a', (x.shape[0], x.shape[0]))" in source
    np.testing.assert_allclose(compile_source(source, "f")(x=np.ones(3)), 2 * np.eye(3))


SLICE_CASES = [
    ("(x[1:] - x[:-1]^2) *(i,i->) (x[1:] - x[:-1]^2)", {"x": 1}, {"x": (6,)}),
    ("x[::2] *(i,i->) y", {"x": 1, "y": 1}, {"x": (5,), "y": (3,)}),
    ("A[1:, ::2] *(ij,ij->) A[:-1, ::2]", {"A": 2}, {"A": (4, 5)}),
    ("x[2] * x[0]", {"x": 1}, {"x": (4,)}),
]


@pytest.mark.parametrize("text, orders, shapes", SLICE_CASES, ids=[c[0] for c in SLICE_CASES])
@pytest.mark.parametrize("with_shapes", [False, True], ids=["generic", "shape-specialised"])
def test_generated_code_of_slices_agrees_with_the_evaluators(text, orders, shapes, with_shapes):
    # the shape-specialised writer had no rule for slice and embed steps (a KeyError)
    f = tc.parse(text, orders)
    for wrt in f.variables:
        exprs = [f, tc.gradient(f, wrt), tc.hessian(f, wrt)]
        namespace: dict = {}
        exec(tc.to_python(exprs, name="fn", shapes=shapes if with_shapes else None), namespace)
        rng = np.random.default_rng(3)
        values = {name: rng.standard_normal(shape) for name, shape in shapes.items()}
        generated = namespace["fn"](**values)
        compiled = tc.compile(exprs)(**values)
        for got, via_compile, expr in zip(generated, compiled, exprs):
            want = tc.evaluate(expr, values)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(via_compile, want, rtol=1e-12, atol=1e-14)
