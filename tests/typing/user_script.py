"""A user's script of the public API, for ``mypy --strict`` (tests/test_typing.py).

It is also run as a program by that test, so it must work as well as type-check.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import tenscalc as tc


def quadratic_form() -> tc.Expr:
    return tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})


def main() -> None:
    f: tc.Expr = quadratic_form()
    g: tc.Expr = tc.gradient(f, "x")
    H: tc.Expr = tc.hessian(f, "x")
    both: dict[str, tc.Expr] = tc.gradient(f, ["x", "A"])
    blocks: dict[str, dict[str, tc.Expr]] = tc.hessian(f, ["x", "A"])
    values: dict[str, npt.NDArray[np.float64]] = {"x": np.array([1.0, 2.0]), "A": np.eye(2)}

    run: tc.CompiledFunction = tc.compile([f, g, H])
    value, gradient, hessian = run(values)
    named = tc.compile({"g": g, "gA": both["A"]})(**values)
    assert set(named) == {"g", "gA"}
    assert float(tc.evaluate(f, values)) == float(value) == 5.0
    assert np.allclose(gradient, tc.grad(f, "x")(values))
    assert hessian.shape == (2, 2) and blocks["x"]["A"].order == 3

    objective: tc.ScipyObjective = tc.scipy_objective(f, "x", {"A": np.eye(2) * 2.0})
    fx: float = objective["fun"](np.ones(2))
    jac: npt.NDArray[np.float64] = objective["jac"](np.ones(2))
    hv = objective["hessp"](np.ones(2), np.array([1.0, 0.0]))
    assert fx == 4.0 and jac.tolist() == [4.0, 4.0] and hv.tolist() == [4.0, 0.0]

    problem: tc.Problem = tc.parse_problem("declare X 2 expression log(det(X)) derivative wrt X")
    text: str = tc.latex(problem.derivative())
    hv_expr: tc.Expr = tc.hvp(f, "x")
    source: str = tc.to_python([f, g], name="f_and_g")
    report: Any = tc.check_convexity(f, "x", assumptions={"A": "psd"})
    assert text and hv_expr.order == 1 and "def f_and_g" in source and report.verdict == "convex"
    try:
        tc.parse("x *(i,->) y", {"x": 1, "y": 1})
    except tc.TensCalcError as error:
        message: str = str(error)
        assert "index string" in message


if __name__ == "__main__":
    main()
