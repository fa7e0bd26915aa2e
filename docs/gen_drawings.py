"""Regenerate the drawings of the documentation (docs/img/*.svg).

Run from the repository root:  python docs/gen_drawings.py
It needs the graphviz Python package and Graphviz's ``dot`` program.
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tenscalc as tc  # noqa: E402
from tenscalc.printing import drawing as viz  # noqa: E402

IMG = ROOT / "docs" / "img"

QUADRATIC = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
LOGREG = tc.parse("log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1", {"X": 2, "y": 1, "w": 1})
MATFAC = tc.parse("(T - U *(ik,jk->ij) V) *(ij,ij->) (T - U *(ik,jk->ij) V)", {"T": 2, "U": 2, "V": 2})


def drawings() -> dict[str, object]:
    gradient = tc.gradient(QUADRATIC, "x")
    logreg_gradient = tc.gradient(LOGREG, "w")
    matfac_gradient = tc.gradient(MATFAC, "U")
    return {
        # the worked example: x^T A x and its raw gradient, coloured by pullback
        "quadratic_pullbacks": tc.to_dot(
            QUADRATIC,
            derivative_wrt="x",
            simplify=False,
            colour_pullbacks=True,
            title="x *(i,ij->j) A *(j,j->) x and its raw gradient; colours: which node's pullback made what",
        ),
        "quadratic_gradient": tc.to_dot(
            QUADRATIC, derivative_wrt="x", title="simplified gradient beside the expression"
        ),
        # the Hessian of x^T A x before and after simplification
        "quadratic_hessian_raw": tc.to_dot(
            tc.derivative(gradient, "x", simplify=False), title="raw Hessian of x^T A x: deltas from the seed"
        ),
        "quadratic_hessian": tc.to_dot(tc.hessian(QUADRATIC, "x"), title="simplified Hessian: A + A^T"),
        # delta absorption in the matrix-factorisation Hessian
        "matfac_hessian_raw": tc.to_dot(
            tc.derivative(matfac_gradient, "U", simplify=False), title="raw Hessian of ||T - U V^T||^2 by U"
        ),
        "matfac_hessian": tc.to_dot(tc.hessian(MATFAC, "U"), title="after delta absorption: 2 delta (V^T V)"),
        # the logistic-regression loss: gradient and Hessian DAGs
        "logreg_gradient": tc.to_dot(LOGREG, derivative_wrt="w", title="logistic-regression loss and its gradient"),
        "logreg_hessian": tc.to_dot(
            [logreg_gradient, tc.derivative(logreg_gradient, "w")],
            shapes={"X": (100, 5), "y": (100,), "w": (5,)},
            title="gradient and Hessian of the logistic-regression loss (shapes for 100 samples, 5 features)",
        ),
        # convexity certificates: the Hessian DAG coloured by proven sign (docs/convexity.md)
        "convexity_lse": tc.check_convexity(tc.parse("log(exp(x) *(i,->) 1)", {"x": 1}), "x").to_dot(),
        "convexity_trace_square": tc.check_convexity(tc.parse("X *(ij,ji->) X", {"X": 2}), "X").to_dot(),
    }


def main() -> None:
    if not viz.graphviz_available():
        raise SystemExit(viz.INSTALL_HINT)
    IMG.mkdir(parents=True, exist_ok=True)
    for name, graph in drawings().items():
        svg = graph.pipe(format="svg").decode("utf-8")
        (IMG / f"{name}.svg").write_text(svg, encoding="utf-8")
        print(f"wrote docs/img/{name}.svg")


if __name__ == "__main__":
    main()
