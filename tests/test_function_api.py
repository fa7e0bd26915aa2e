"""The function API of JAX users and the names of SymPy and PyTorch users (issue 25, item 4).

References are closed forms or central finite differences, never tenscalc itself, on
arrays of distinct axis lengths (2, 3, 4, 5)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.printing.drawing import DotSource

RNG = np.random.default_rng(2025)
A = RNG.normal(size=(5, 3))
x0 = RNG.normal(size=3)
y0 = RNG.normal(size=5)


def numeric_gradient(f, arrays, index, eps=1e-6):
    """Central differences of the scalar f(*arrays) by arrays[index] (a float64 array)."""
    base = [np.array(a, dtype=np.float64) for a in arrays]
    out = np.zeros_like(base[index])
    for k in np.ndindex(out.shape):
        up = [a.copy() for a in base]
        down = [a.copy() for a in base]
        up[index][k] += eps
        down[index][k] -= eps
        out[k] = (f(*up) - f(*down)) / (2 * eps)
    return out


def least_squares(x, A, y):
    return ((A @ x - y) ** 2).sum()


def test_grad_of_a_function_is_by_the_first_argument():
    g = tc.grad(least_squares)(x0, A, y0)
    np.testing.assert_allclose(g, 2 * A.T @ (A @ x0 - y0), rtol=1e-12)


def test_argnums_selects_and_a_tuple_gives_a_tuple():
    gA = tc.grad(least_squares, argnums=1)(x0, A, y0)
    np.testing.assert_allclose(gA, 2 * np.outer(A @ x0 - y0, x0), rtol=1e-12)
    gx, gy = tc.grad(least_squares, argnums=(0, -1))(x0, A, y0)
    np.testing.assert_allclose(gx, 2 * A.T @ (A @ x0 - y0), rtol=1e-12)
    np.testing.assert_allclose(gy, -2 * (A @ x0 - y0), rtol=1e-12)
    with pytest.raises(tc.SemanticError, match="argnums=3 does not fit the 3 positional"):
        tc.grad(least_squares, argnums=3)(x0, A, y0)


def test_value_and_grad():
    value, g = tc.value_and_grad(least_squares)(x0, A, y0)
    assert float(value) == pytest.approx(np.sum((A @ x0 - y0) ** 2), rel=1e-12)
    np.testing.assert_allclose(g, 2 * A.T @ (A @ x0 - y0), rtol=1e-12)
    f = tc.parse("x'*A*x")  # the expression form
    value, grads = tc.value_and_grad(f, ["x", "A"])(x=x0, A=A[:3])
    assert float(value) == pytest.approx(x0 @ A[:3] @ x0, rel=1e-12)
    np.testing.assert_allclose(grads["A"], np.outer(x0, x0), rtol=1e-12)


def mlp_loss(params, x, y):
    hidden = tc.tanh(params["W1"] @ x + params["b1"])
    out = params["layers"][0]["W"] @ hidden + params["layers"][1]
    return ((out - y) ** 2).sum() + 0.5 * (params["W1"] ** 2).sum()


def test_nested_parameters_come_back_in_their_structure():
    params = {
        "W1": RNG.normal(size=(4, 3)),
        "b1": RNG.normal(size=4),
        "layers": [{"W": RNG.normal(size=(2, 4))}, RNG.normal(size=2)],
    }
    x, y = RNG.normal(size=3), RNG.normal(size=2)
    g = tc.grad(mlp_loss)(params, x, y)
    assert set(g) == {"W1", "b1", "layers"} and isinstance(g["layers"], list) and set(g["layers"][0]) == {"W"}
    leaves = [("W1",), ("b1",), ("layers", 0, "W"), ("layers", 1)]

    def get(tree, path):
        for key in path:
            tree = tree[key]
        return tree

    for path in leaves:

        def f(leaf, path=path):
            p = {"W1": params["W1"], "b1": params["b1"], "layers": [dict(params["layers"][0]), params["layers"][1]]}
            if path == ("layers", 0, "W"):
                p["layers"][0]["W"] = leaf
            elif path == ("layers", 1):
                p["layers"][1] = leaf
            else:
                p[path[0]] = leaf
            hidden = np.tanh(p["W1"] @ x + p["b1"])
            out = p["layers"][0]["W"] @ hidden + p["layers"][1]
            return ((out - y) ** 2).sum() + 0.5 * (p["W1"] ** 2).sum()

        expected = numeric_gradient(f, [get(params, path)], 0)
        np.testing.assert_allclose(get(g, path), expected, rtol=1e-6, atol=1e-8)


def test_traced_once_per_argument_orders():
    calls = []

    def f(x, A):
        calls.append(1)
        return (A @ x).sum()

    df = tc.grad(f)
    np.testing.assert_allclose(df(np.ones(3), A[:2]), A[:2].sum(0), rtol=1e-12)
    np.testing.assert_allclose(df(np.ones(3), A), A.sum(0), rtol=1e-12)  # other lengths, same orders
    assert len(calls) == 1


def test_hvp_of_a_function_returns_a_function_of_the_arguments_and_the_direction():
    v = RNG.normal(size=3)

    def f(x, A):
        return tc.sum(tc.exp(A @ x))

    hv = tc.hvp(f)(x0, A, v)
    expected = A.T @ (np.exp(A @ x0) * (A @ v))
    np.testing.assert_allclose(hv, expected, rtol=1e-12)
    # the expression form stays an expression (the expression API), also without a name
    e = tc.hvp(tc.parse("sum(exp(A*x))", {"A": 2}), "x")
    assert isinstance(e, tc.Expr) and e.variables == {"A": 2, "v_x": 1, "x": 1}
    assert isinstance(tc.hvp(tc.parse("sum(exp(x))")), tc.Expr)


def test_grad_of_an_expression_without_a_name():
    f = tc.parse("sum(exp(x))")
    np.testing.assert_allclose(tc.grad(f)(x0), np.exp(x0), rtol=1e-12)
    with pytest.raises(tc.SemanticError, match="this one has A, x: name it, tc.grad\\(f, 'x'\\)"):
        tc.grad(tc.parse("x'*A*x"))


def test_a_function_that_returns_no_expression_says_how_to_write_it():
    with pytest.raises(tc.SemanticError, match="write it with tenscalc's operations"):
        tc.grad(lambda x: "a string")(x0)
    with pytest.raises(tc.SemanticError, match="needs a scalar function"):
        tc.grad(lambda x: x * 2)(x0)
    with pytest.raises(tc.SemanticError, match="argnums="):
        tc.grad(least_squares, "x")


def test_lambdify_takes_positional_arrays_in_the_order_given():
    x, M = tc.var("x", 1), tc.var("M", 2)
    f = tc.lambdify([x, "M"], x @ M @ x)
    assert float(f(x0, A[:3])) == pytest.approx(x0 @ A[:3] @ x0, rel=1e-12)
    with pytest.raises(tc.SemanticError, match="also depends on M"):
        tc.lambdify([x], x @ M @ x)


def test_sympy_names_on_expressions():
    f = tc.parse("x'*A*x")
    assert f.diff("x") is tc.derivative(f, "x")
    assert f.diff("x", 2) is tc.nth_derivative(f, "x", 2)
    assert f.free_symbols == {"A", "x"}
    with pytest.raises(AttributeError, match="tc.evaluate"):
        f.subs({"x": 1})
    with pytest.raises(AttributeError, match="no attribute 'nonsense'$"):
        f.nonsense  # noqa: B018
    assert not hasattr(f, "subs")


@pytest.mark.parametrize(
    "name, says",
    [("vmap", "batch axis"), ("jit", "tc.compile"), ("jacfwd", "tc.jacobian"), ("jacrev", "tc.jacobian"),
     ("diff", "tc.derivative"), ("subs", "tc.evaluate"), ("pprint", "tc.to_matrix_notation"),
     ("free_symbols", "variables"), ("symbols", "tc.var")],
)  # fmt: skip
def test_module_names_of_other_libraries_point_to_tenscalc(name, says):
    with pytest.raises(AttributeError, match=says):
        getattr(tc, name)
    with pytest.raises(AttributeError, match="no attribute 'surely_not_a_name'$"):
        tc.surely_not_a_name  # noqa: B018


def test_scipy_objective_pickles_and_computes_the_same_after():
    f = tc.parse("sum(exp(A*x)) + x'*x", {"A": 2})
    objective = tc.scipy_objective(f, "x", {"A": A})
    again = pickle.loads(pickle.dumps(objective))
    point = RNG.normal(size=3)
    for key in ("fun", "jac", "hess"):
        np.testing.assert_allclose(again[key](point), objective[key](point), rtol=1e-14)
    direction = RNG.normal(size=3)
    np.testing.assert_allclose(again["hessp"](point, direction), objective["hess"](point) @ direction, rtol=1e-10)
    expected = A.T @ np.exp(A @ point) + 2 * point
    np.testing.assert_allclose(again["jac"](point), expected, rtol=1e-12)


def test_rendering_a_drawing_without_graphviz_names_what_to_install():
    drawing = DotSource("digraph { a -> b }")
    assert drawing.source == "digraph { a -> b }"
    for method in ("render", "view", "pipe"):
        with pytest.raises(tc.TensCalcError, match="pip install graphviz") as info:
            getattr(drawing, method)("out.svg")
        assert "'dot' program" in str(info.value)


torch = pytest.importorskip("torch")


def test_torch_in_torch_out_without_a_backend():
    f = tc.parse("x'*A*x", {"A": 2})
    g = tc.grad(f, "x")
    x = torch.tensor(x0)
    M = torch.tensor(A[:3])
    out = g(x=x, A=M)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), (A[:3] + A[:3].T) @ x0, rtol=1e-12)
    # the function API too
    out = tc.grad(least_squares)(torch.tensor(x0), torch.tensor(A), torch.tensor(y0))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), 2 * A.T @ (A @ x0 - y0), rtol=1e-12)


def test_requires_grad_tensors():
    f = tc.parse("x'*x")
    x = torch.tensor(x0, requires_grad=True)
    out = tc.grad(f)(x)  # no backend named: computed by torch
    np.testing.assert_allclose(out.detach().numpy(), 2 * x0, rtol=1e-12)
    with pytest.raises(tc.EvaluationError, match="requires grad.*backend='torch'"):
        tc.grad(f, backend="numpy")(x)
    out = tc.grad(f, backend="numpy")(x.detach())  # NumPy asked for, NumPy given back
    assert isinstance(out, np.ndarray)
    with pytest.raises(tc.EvaluationError, match="requires grad.*tc.compile"):
        tc.evaluate(f, x=x)  # the NumPy interpreter


def test_mixed_float32_and_float64_name_the_variables_or_promote():
    g = tc.grad(tc.parse("x'*A*x", {"A": 2}), "x", backend="torch")
    x = torch.tensor(x0, dtype=torch.float32)
    M = torch.tensor(A[:3])
    try:
        out = g(x=x, A=M)
    except tc.EvaluationError as error:  # torch does not mix them
        assert "x: float32" in str(error) and "A: float64" in str(error)
    else:  # promoted as NumPy does
        np.testing.assert_allclose(out.double().numpy(), (A[:3] + A[:3].T) @ x0, rtol=1e-6)
