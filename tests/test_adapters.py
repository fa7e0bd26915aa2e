"""The adapters (tc.scipy_objective, tc.grad, compile of a dict, derivatives by a list
of variables) and the examples of docs/integrations.md, which run here.

The optima SciPy finds through the adapters are compared with a Newton method
written by hand in plain NumPy from the closed-form gradient and Hessian, and
``jac``/``hess``/``hessp`` with those closed forms and with finite differences.
"""

from __future__ import annotations

import pathlib
import re
import warnings
from typing import Any

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.calculus.sweep import reverse_sweep, reverse_sweep_many
from tenscalc.testing import check_derivative

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def page_blocks() -> list[tuple[str, str]]:
    """(section heading, python source) for each python block of docs/integrations.md."""
    text = (DOCS / "integrations.md").read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) == "python":
            headings = re.findall(r"^## (.+)$", text[: match.start()], re.M)
            found.append((headings[-1] if headings else "", match.group(2)))
    return found


# The optional library each section needs (the SciPy and tc.grad sections need scipy).
NEEDS = {"JAX": "jax", "PyTorch": "torch", "dask": "dask.array"}


@pytest.fixture(scope="module")
def page() -> dict[str, Any]:
    """The namespace after running every python block of the page, in order."""
    pytest.importorskip("scipy.optimize", reason="the page's examples need scipy (pip install scipy)")
    namespace: dict[str, Any] = {"__name__": "docs_integrations"}
    ran: list[str] = []
    for heading, source in page_blocks():
        module = next((m for key, m in NEEDS.items() if heading.startswith(key)), None)
        if module is not None:
            continue  # run by test_page_backend_section, where a missing library skips
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # e.g. SciPy's "does not use hessp"
            exec(compile(source, f"docs/integrations.md ({heading})", "exec"), namespace)
        ran.append(heading)
    namespace["_ran"] = ran
    return namespace


def test_the_page_has_its_examples() -> None:
    headings = [h for h, _ in page_blocks()]
    assert headings.count("SciPy: `tc.scipy_objective`") == 2
    for section in NEEDS:
        assert any(h.startswith(section) for h in headings), section


# ------------------------------------------------------------------ hand-written Newton


def newton(gradient_and_hessian: Any, x0: np.ndarray, steps: int = 100) -> np.ndarray:
    """Plain Newton iterations x <- x - H^-1 g from x0 until the step is negligible."""
    x = x0.copy()
    for _ in range(steps):
        g, H = gradient_and_hessian(x)
        step = np.linalg.solve(H, g)
        x = x - step
        if np.linalg.norm(step) <= 1e-15 * max(1.0, np.linalg.norm(x)):
            break
    g, _ = gradient_and_hessian(x)
    assert np.linalg.norm(g) < 1e-12
    return x


def logistic_closed_form(X: np.ndarray, y: np.ndarray, lam: float):
    """Gradient and Hessian of sum log(1 + exp(-y_i x_i.w)) + lam w.w."""

    def gh(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        margin = y * (X @ w)
        s = 1.0 / (1.0 + np.exp(margin))  # sigma(-margin)
        g = -X.T @ (y * s) + 2 * lam * w
        H = X.T @ (X * (s * (1 - s))[:, None]) + 2 * lam * np.eye(len(w))
        return g, H

    return gh


def softmax_closed_form(X: np.ndarray, Y: np.ndarray, mu: float, shape: tuple[int, int]):
    """Gradient and (flattened, C order) Hessian of the multinomial logistic loss in W."""
    n, k = shape

    def gh(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        W = flat.reshape(shape)
        Z = X @ W
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        g = X.T @ (P - Y) + 2 * mu * W
        # H[(j,k),(l,m)] = sum_i X_ij X_il (P_ik delta_km - P_ik P_im)
        H = np.einsum("ij,il,ik,km->jklm", X, X, P, np.eye(k)) - np.einsum("ij,il,ik,im->jklm", X, X, P, P)
        return g.ravel(), H.reshape(n * k, n * k) + 2 * mu * np.eye(n * k)

    return gh


def assert_near_the_optimum(gh: Any, x: np.ndarray, optimum: np.ndarray, mu: float, method: str) -> None:
    """``x`` is as close to ``optimum`` as its (closed-form) gradient proves it must be.

    The losses are ``mu``-strongly convex (an L2 term), so ``|x - x*| <= |grad f(x)| / mu``.
    How small SciPy gets the gradient depends on the last bits of the BLAS (see the note
    on tolerances in docs/integrations.md), so the bound is checked, not a fixed 1e-8;
    a wrong tenscalc gradient or Hessian would leave a large closed-form gradient or
    break the bound.
    """
    g, _ = gh(x.ravel())
    assert np.linalg.norm(g) < 1e-6, (method, np.linalg.norm(g))
    assert np.linalg.norm(x.ravel() - optimum.ravel()) <= np.linalg.norm(g) / mu + 1e-10, method


def test_logistic_regression_reaches_the_newton_optimum(page: dict[str, Any]) -> None:
    gh = logistic_closed_form(page["X"], page["y"], 0.1)
    optimum = newton(gh, np.zeros(4))
    assert set(page["logistic"]) == {"trust-exact", "trust-krylov", "Newton-CG"}
    for method, x in page["logistic"].items():
        assert_near_the_optimum(gh, x, optimum, 2 * 0.1, method)


def test_matrix_variable_reaches_the_newton_optimum(page: dict[str, Any]) -> None:
    gh = softmax_closed_form(page["Xm"], page["Y"], 0.05, (3, 5))
    optimum = newton(gh, np.zeros(15)).reshape(3, 5)
    assert set(page["multinomial"]) == {"trust-exact", "trust-krylov", "Newton-CG"}
    for method, W in page["multinomial"].items():
        assert W.shape == (3, 5)
        assert_near_the_optimum(gh, W, optimum, 2 * 0.05, method)


@pytest.mark.parametrize("section", list(NEEDS))
def test_page_backend_section(section: str, page: dict[str, Any]) -> None:
    pytest.importorskip(NEEDS[section], reason=f"the {section} example needs {NEEDS[section]}")
    pytest.importorskip("autoray", reason="the non-NumPy backends need autoray")
    namespace = dict(page)
    sources = [source for heading, source in page_blocks() if heading.startswith(section)]
    assert sources
    for source in sources:
        exec(compile(source, f"docs/integrations.md ({section})", "exec"), namespace)


# ------------------------------------------------------------------ jac, hess, hessp


def central_difference(fun: Any, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """The derivative of fun (scalar or vector valued) at x by central differences, as rows."""
    columns = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        columns.append((np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2 * h))
    return np.array(columns).T


def softmax_problem(seed: int = 3) -> tuple[tc.Expr, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((7, 2))  # 7 samples, 2 features, 4 classes: distinct lengths
    Y = np.eye(4)[rng.integers(0, 4, size=7)]
    f = tc.parse(
        "log(exp(X *(ij,jk->ik) W) *(ik,k->i) 1) *(i,i->) 1 - Y *(ik,ik->) (X *(ij,jk->ik) W)"
        " + 0.05 *(,->) (W *(jk,jk->) W)",
        {"X": 2, "Y": 2, "W": 2},
    )
    return f, {"X": X, "Y": Y}


def test_scipy_objective_matches_closed_forms_and_finite_differences() -> None:
    f, data = softmax_problem()
    objective = tc.scipy_objective(f, "W", data, shape=(2, 4))
    gh = softmax_closed_form(data["X"], data["Y"], 0.05, (2, 4))
    rng = np.random.default_rng(11)
    for _ in range(3):
        w = rng.standard_normal(8)
        p = rng.standard_normal(8)
        g, H = gh(w)
        value = objective["fun"](w)
        assert isinstance(value, float)
        jac, hess, hessp = objective["jac"](w), objective["hess"](w), objective["hessp"](w, p)
        for array, shape in ((jac, (8,)), (hess, (8, 8)), (hessp, (8,))):
            assert array.shape == shape and array.dtype == np.float64
        np.testing.assert_allclose(jac, g, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hess, H, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(hess, hess.T)  # exactly: trust-exact needs it (see adapters)
        np.testing.assert_allclose(hessp, H @ p, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jac, central_difference(objective["fun"], w), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(hess, central_difference(objective["jac"], w), rtol=1e-6, atol=1e-7)
        # the value itself, against NumPy
        Z = data["X"] @ w.reshape(2, 4)
        expected = np.sum(np.log(np.exp(Z).sum(axis=1))) - np.sum(data["Y"] * Z) + 0.05 * w @ w
        assert abs(value - expected) < 1e-12 * max(1.0, abs(expected))


def test_scipy_objective_does_not_keep_a_view_of_scipys_vector() -> None:
    f = tc.parse("(x - c) *(i,i->) (x - c)", {"x": 1, "c": 1})
    objective = tc.scipy_objective(f, "x", {"c": np.array([1.0, 2.0, 3.0])})
    x = np.zeros(3)
    first = objective["jac"](x)
    x[:] = 1.0  # SciPy may update x in place: the cached point must not follow
    np.testing.assert_allclose(objective["jac"](x), [0.0, -2.0, -4.0])
    np.testing.assert_allclose(first, [-2.0, -4.0, -6.0])
    assert objective["fun"](x) == 5.0


def test_scipy_objective_shape_from_values_and_method_filter() -> None:
    f, data = softmax_problem()
    by_template = tc.scipy_objective(f, "W", {**data, "W": np.zeros((2, 4))}, method="trust-exact")
    assert sorted(by_template) == ["fun", "hess", "jac"]
    assert by_template["hess"](np.ones(8)).shape == (8, 8)
    assert sorted(tc.scipy_objective(f, "W", data, shape=(2, 4), method="Newton-CG")) == ["fun", "hessp", "jac"]
    assert sorted(tc.scipy_objective(f, "W", data, shape=(2, 4), method="BFGS")) == ["fun", "jac"]


def test_scipy_objective_errors() -> None:
    f, data = softmax_problem()
    with pytest.raises(tc.EvaluationError, match="shape="):
        tc.scipy_objective(f, "W", data)
    with pytest.raises(tc.SemanticError, match="scalar"):
        tc.scipy_objective(tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1}), "x", {})
    with pytest.raises(tc.SemanticError, match="unknown variable"):
        tc.scipy_objective(f, "V", data, shape=(2, 4))
    with pytest.raises(tc.SemanticError, match="method"):
        tc.scipy_objective(f, "W", data, shape=(2, 4), method="simplex-please")
    objective = tc.scipy_objective(f, "W", data, shape=(2, 4))
    with pytest.raises(tc.EvaluationError, match="8 entries"):
        objective["fun"](np.zeros(7))
    with pytest.raises(tc.EvaluationError, match="direction"):
        objective["hessp"](np.zeros(8), np.zeros(3))


# ------------------------------------------------------------------ several variables


def quadratic_problem() -> tuple[tc.Expr, dict[str, np.ndarray]]:
    f = tc.parse("sin(x *(i,ij->j) A) *(j,jk->k) B *(k,k->) y", {"x": 1, "A": 2, "B": 2, "y": 1})
    rng = np.random.default_rng(5)
    values = {
        "x": rng.standard_normal(2),
        "A": rng.standard_normal((2, 3)),
        "B": rng.standard_normal((3, 4)),
        "y": rng.standard_normal(4),
    }
    return f, values


def test_gradient_by_a_list_matches_one_at_a_time() -> None:
    f, values = quadratic_problem()
    names = ["x", "A", "B", "y"]
    together = tc.gradient(f, names)
    assert list(together) == names
    for name in names:
        expected = tc.evaluate(tc.gradient(f, name), values)
        np.testing.assert_allclose(tc.evaluate(together[name], values), expected, rtol=1e-12, atol=1e-14)
        report = check_derivative(f, name, values=values)
        assert report.ok, report.message
    # tuples and tc.var work too; jacobian/derivative by a list of an order-1 expression
    J = tc.jacobian(tc.parse("sin(x *(i,ij->j) A)", {"x": 1, "A": 2}), (tc.var("x", 1), "A"))
    assert J["x"].order == 2 and J["A"].order == 3
    np.testing.assert_allclose(
        tc.evaluate(J["A"], values),
        tc.evaluate(tc.derivative(tc.parse("sin(x *(i,ij->j) A)", {"x": 1, "A": 2}), "A"), values),
    )


def test_one_sweep_builds_each_pullback_once() -> None:
    f, _ = quadratic_problem()
    xs = [tc.var(name, order) for name, order in f.variables.items()]
    calls: list[int] = []

    def count(new: tc.Expr, node: tc.Expr) -> None:
        calls.append(1)

    reverse_sweep_many(f, xs, 0, observe=count)
    together = len(calls)
    calls.clear()
    for x in xs:
        reverse_sweep(f, x, 0, observe=count)
    # separate sweeps redo the pullbacks of the nodes above every variable
    assert together < len(calls)
    raw = tc.derivative(f, [x.arg[0] for x in xs], simplify=False)
    for x in xs:
        assert raw[x.arg[0]] is reverse_sweep(f, x, 0)


def test_hessian_by_a_list_gives_the_blocks() -> None:
    f, values = quadratic_problem()
    H = tc.hessian(f, ["x", "A"])
    for a in ("x", "A"):
        for b in ("x", "A"):
            expected = tc.evaluate(tc.hessian(f, a, b), values)
            np.testing.assert_allclose(tc.evaluate(H[a][b], values), expected, rtol=1e-12, atol=1e-14)
    # d/dA of d/dx against finite differences of the compiled gradient by x
    g_x = tc.compile(tc.gradient(f, "x"))
    A = values["A"]
    fd = np.zeros((2, 2, 3))
    for i in range(2):
        for j in range(3):
            step = np.zeros_like(A)
            step[i, j] = 1e-6
            fd[:, i, j] = (g_x({**values, "A": A + step}) - g_x({**values, "A": A - step})) / 2e-6
    np.testing.assert_allclose(tc.evaluate(H["x"]["A"], values), fd, rtol=1e-6, atol=1e-8)
    rows = tc.hessian(f, ["x"], ["B", "y"])
    assert list(rows) == ["x"] and list(rows["x"]) == ["B", "y"]


def test_lists_of_variables_are_checked() -> None:
    f, _ = quadratic_problem()
    with pytest.raises(tc.SemanticError, match="empty"):
        tc.gradient(f, [])
    with pytest.raises(tc.SemanticError, match="twice"):
        tc.gradient(f, ["x", "x"])
    with pytest.raises(tc.SemanticError, match="unknown variable"):
        tc.gradient(f, ["x", "z"])
    with pytest.raises(tc.SemanticError, match="list"):
        tc.hessian(f, ["x"], "A")


# ------------------------------------------------------------------ compile and grad


def test_compile_a_dict_and_grad() -> None:
    f, values = quadratic_problem()
    run = tc.compile({"f": f, "gx": tc.gradient(f, "x")})
    out = run(values)
    assert list(out) == ["f", "gx"]
    np.testing.assert_allclose(out["f"], tc.evaluate(f, values))
    np.testing.assert_allclose(tc.grad(f, "x")(values), out["gx"])
    both = tc.grad(f, ["A", "y"])(**values)
    np.testing.assert_allclose(both["A"], tc.evaluate(tc.gradient(f, "A"), values))
    np.testing.assert_allclose(both["y"], tc.evaluate(tc.gradient(f, "y"), values))
    with pytest.raises(tc.EvaluationError, match="must be str"):
        tc.compile({1: f})  # type: ignore[dict-item]


def test_positional_arrays() -> None:
    f = tc.parse("x *(i,i->) x", {"x": 1})
    run = tc.compile([f, tc.gradient(f, "x")])
    value, gradient = run(np.array([1.0, 2.0, 3.0]))
    assert float(value) == 14.0 and gradient.tolist() == [2.0, 4.0, 6.0]
    g = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    with pytest.raises(tc.EvaluationError, match=r"pass them by name, run\(A=\.\.\., x=\.\.\.\)"):
        tc.compile(g)(np.ones(2), np.eye(2))
    with pytest.raises(tc.EvaluationError, match="pass them by name"):
        tc.compile(g)(np.ones(2))
    # the one input not given by name may be positional
    assert float(tc.compile(g)(np.array([1.0, 2.0]), A=np.eye(2))) == 5.0
