"""Which functions of the convexity corpus do tenscalc and CVXPY's DCP analysis certify?

For every function of ``tests/convexity/test_convexity_corpus.py``, of the extended corpus of
issue 15 (``tests/convexity/test_convexity_extended.py``: one or more functions of every
group the checker used to miss) and of the look-alike squares
(``tests/convexity/test_convexity_squares.py``) this runs
``tc.check_convexity`` and CVXPY's disciplined-convex-programming analysis on the
same function written two ways in CVXPY:

* **literal** -- the operations of the tenscalc text, as a user would first write
  them (``(A@x - b) @ (A@x - b)``, ``cp.log(1 + cp.exp(x))``);
* **atoms** -- rewritten with CVXPY's library atoms where one exists
  (``cp.sum_squares``, ``cp.logistic``, ``cp.log_sum_exp``, ``cp.pnorm`` ...).

CVXPY is optional (``pip install cvxpy``).  Data are ``cp.Parameter`` objects with
the same attributes as the tenscalc assumptions (``pos=True``, ``PSD=True``), so
DCP sees the same information.  Note that some CVXPY atoms carry an implicit domain
(``power(x, 3)`` and ``inv_pos`` mean ``x >= 0``/``x > 0``, ``log_det`` means
``X ⪰ 0``): CVXPY then certifies the restriction, which tenscalc does not assume.

Usage::

    python benchmarks/cvxpy_compare.py                # print the Markdown table
    python benchmarks/cvxpy_compare.py --markdown out.md
    python benchmarks/cvxpy_compare.py --timing       # full checks at n = 1,000 / 10,000, nesting depth
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "convexity"))

from test_convexity_corpus import CASES as BASE_CASES  # noqa: E402
from test_convexity_extended import EXTENDED  # noqa: E402
from test_convexity_squares import CASES as SQUARES  # noqa: E402

import tenscalc as tc  # noqa: E402


def _as_case(square):
    name, text, orders, wrt, assumptions, values, truth, required = square
    return (name, text, orders, wrt, assumptions, values, truth, required)


_seen = {c[0] for c in BASE_CASES} | {c[0] for c in EXTENDED}
CASES = (
    [(*c, "corpus") for c in BASE_CASES]
    + [(*c, "issue 15") for c in EXTENDED]
    + [(*_as_case(c), "look-alike squares") for c in SQUARES if c[0] not in _seen]
)
"""Every case with its group (name, text, orders, wrt, assumptions, values, truth, verdict, group)."""

N, M = 3, 4  # sizes of the CVXPY objects


def _cvxpy_builders(cp):
    """name -> (literal builder or None, atoms builder or None); a builder returns an expression."""

    def vec(**kw):
        return cp.Variable(N, **kw)

    def par(shape, **kw):
        return cp.Parameter(shape, **kw)

    A, b, X, y = par((M, N)), par(M), par((M, N)), par(M)
    lam, mu = cp.Parameter(pos=True), cp.Parameter(pos=True)

    def ls_literal():
        x = vec()
        return (A @ x - b) @ (A @ x - b)

    def ls_atoms():
        return cp.sum_squares(A @ vec() - b)

    def logistic_literal():
        w = vec()
        return cp.sum(cp.log(cp.exp(-cp.multiply(y, X @ w)) + 1))

    def logistic_atoms():
        return cp.sum(cp.logistic(-cp.multiply(y, X @ vec())))

    def quad_indef(literal):
        x, S = vec(), cp.Parameter((N, N), symmetric=True)
        return x @ (S @ x) if literal else cp.quad_form(x, S)

    def quad_psd(literal):
        x, P = vec(), cp.Parameter((N, N), PSD=True)
        return x @ (P @ x) if literal else cp.quad_form(x, P)

    def uv(joint, literal):
        Am = cp.Parameter((M, M))
        V = cp.Variable((M, 2))
        U = cp.Variable((M, 2)) if joint else cp.Parameter((M, 2))
        R = Am - U @ V.T
        return cp.sum(cp.multiply(R, R)) if literal else cp.sum_squares(R)

    def ridge(literal):
        x = vec()
        if literal:
            return (A @ x - b) @ (A @ x - b) + lam * (x @ x)
        return cp.sum_squares(A @ x - b) + lam * cp.sum_squares(x)

    def elastic(literal):
        x = vec()
        if literal:
            return (A @ x - b) @ (A @ x - b) + lam * cp.sum(cp.abs(x)) + mu * (x @ x)
        return cp.sum_squares(A @ x - b) + lam * cp.norm1(x) + mu * cp.sum_squares(x)

    def relu_model(literal):
        w, yp = vec(), cp.Parameter(M, pos=True)
        r = yp - cp.pos(X @ w)
        return cp.sum(cp.square(r)) if literal else cp.sum_squares(r)

    def logistic_bias(literal):
        w, c = vec(), cp.Variable()
        z = -cp.multiply(y, X @ w + c)
        return cp.sum(cp.log(cp.exp(z) + 1)) if literal else cp.sum(cp.logistic(z))

    def softmax(literal):
        W, Y = cp.Variable((N, 3)), cp.Parameter((M, 3))
        scores = X @ W
        if literal:
            return cp.sum(cp.log(cp.sum(cp.exp(scores), axis=1))) - cp.sum(cp.multiply(Y, scores))
        return cp.sum(cp.log_sum_exp(scores, axis=1)) - cp.sum(cp.multiply(Y, scores))

    def sym(**kw):
        return cp.Variable((N, N), **kw)

    def residual():
        return A @ vec() - b

    def square_mat(**kw):
        return cp.Variable((N, N), **kw)

    def huber(literal):
        r = A @ vec() - b
        if literal:
            return cp.sum(cp.square(cp.abs(r) - cp.pos(cp.abs(r) - 1)) + 2 * cp.pos(cp.abs(r) - 1))
        return cp.sum(cp.huber(r, 1))

    def ridge_bias(literal):
        w, c = vec(), cp.Variable()
        r = X @ w + c - y
        return r @ r + lam * (w @ w) if literal else cp.sum_squares(r) + lam * cp.sum_squares(w)

    def persp_lse(literal):
        xv, t = vec(), cp.Variable(pos=True)
        if literal:
            return t * cp.log_sum_exp(xv / t)
        return cp.perspective(cp.log_sum_exp(xv), t)

    def neg_log_cone(literal):
        xv, t = vec(), cp.Variable(pos=True)
        if literal:
            return -cp.log(t**2 - xv @ xv)
        # t² − ‖x‖² = t (t − ‖x‖²/t): two DCP pieces
        return -cp.log(t - cp.quad_over_lin(xv, t)) - cp.log(t)

    x = vec
    extended = {
        "‖Ax − b‖₂": (lambda: cp.power((v := residual()) @ v, 0.5), lambda: cp.norm(residual(), 2)),
        "LSE(Ax + b)": (lambda: cp.log(cp.sum(cp.exp(A @ x() + b))), lambda: cp.log_sum_exp(A @ x() + b)),
        "‖x‖²/t": (
            lambda: ((v := x()) @ v) / cp.Variable(pos=True),
            lambda: cp.quad_over_lin(x(), cp.Variable(pos=True)),
        ),
        "‖Ax − b‖²/t": (
            lambda: ((v := residual()) @ v) / cp.Variable(pos=True),
            lambda: cp.quad_over_lin(residual(), cp.Variable(pos=True)),
        ),
        "ridge with bias in (w, c)": (lambda: ridge_bias(True), lambda: ridge_bias(False)),
        "‖Xw − y‖² in (w, y)": (
            lambda: (v := X @ x() - cp.Variable(M)) @ v,
            lambda: cp.sum_squares(X @ x() - cp.Variable(M)),
        ),
        "t·LSE(x/t)": (lambda: persp_lse(True), lambda: persp_lse(False)),
        "−log(t² − ‖x‖²)": (lambda: neg_log_cone(True), lambda: neg_log_cone(False)),
        "(Σ√x)²": (lambda: cp.sum(cp.sqrt(x())) ** 2, lambda: cp.square(cp.sum(cp.sqrt(x())))),
        "−log(−LSE(x))": (lambda: -cp.log(-cp.log(cp.sum(cp.exp(x())))), lambda: -cp.log(-cp.log_sum_exp(x()))),
        "softmax cross-entropy, log of a quotient": (
            lambda: -cp.log(cp.exp(x() @ cp.Parameter(N)) / cp.sum(cp.exp(x()))),
            lambda: cp.log_sum_exp(v := x()) - v @ cp.Parameter(N),
        ),
        "xᵀY⁻¹x in Y": (None, lambda: cp.matrix_frac(cp.Parameter(N), square_mat(PSD=True))),
        "tr(A X⁻¹ Aᵀ)": (None, lambda: cp.matrix_frac(cp.Parameter((N, M)), square_mat(PSD=True))),
        "Σ log(1 − x²)": (lambda: cp.sum(cp.log(1 - x() ** 2)), lambda: cp.sum(cp.log(1 - cp.square(x())))),
        "Σ x eˣ on x ≥ −2": (lambda: cp.sum(cp.multiply(v := x(), cp.exp(v))), None),
        "√(1 − ‖x‖²)": (lambda: cp.sqrt(1 - (v := x()) @ v), lambda: cp.sqrt(1 - cp.sum_squares(x()))),
        "Huber regression": (lambda: huber(True), lambda: huber(False)),
        "|x| − relu(x) − relu(−x) ≡ 0": (
            lambda: cp.sum(cp.abs(v := x()) - cp.pos(v) - cp.pos(-v)),
            None,
        ),
        "sin(Ax + b)": (None, None),
        "‖x‖² t": (lambda: ((v := x()) @ v) * cp.Variable(pos=True), None),
        "Σ x eˣ": (lambda: cp.sum(cp.multiply(v := x(), cp.exp(v))), None),
        "tr(X²)": (lambda: cp.trace((v := square_mat()) @ v), None),
        "tr(XᵀX)": (lambda: cp.trace((v := square_mat()).T @ v), lambda: cp.sum_squares(square_mat())),
    }
    return extended | {
        "least squares": (ls_literal, ls_atoms),
        "logistic regression": (logistic_literal, logistic_atoms),
        "log-sum-exp": (lambda: cp.log(cp.sum(cp.exp(x()))), lambda: cp.log_sum_exp(x())),
        "xᵀAᵀAx": (lambda: (A @ (v := x())) @ (A @ v), lambda: cp.sum_squares(A @ x())),
        "xᵀAx, A indefinite": (lambda: quad_indef(True), lambda: quad_indef(False)),
        "xᵀPx, P psd": (lambda: quad_psd(True), lambda: quad_psd(False)),
        "-log det X, X pd": (None, lambda: -cp.log_det(sym(PSD=True))),
        "-log det X, no assumption": (None, lambda: -cp.log_det(sym())),
        "log det X, X pd": (None, lambda: cp.log_det(sym(PSD=True))),
        "-log det X, X diagonal pd": (None, lambda: -cp.sum(cp.log(x(pos=True)))),
        "x⁴": (lambda: cp.sum(x() ** 4), lambda: cp.sum(cp.power(x(), 4))),
        "x³": (lambda: cp.sum(x() ** 3), lambda: cp.sum(cp.power(x(), 3))),
        "x³, x >= 0": (lambda: cp.sum(x(nonneg=True) ** 3), lambda: cp.sum(cp.power(x(nonneg=True), 3))),
        "exp(x)²": (lambda: cp.sum(cp.exp(x()) ** 2), lambda: cp.sum(cp.exp(2 * x()))),
        "Σ exp(x) + ‖x‖²": (
            lambda: cp.sum(cp.exp(v := x())) + v @ v,
            lambda: cp.sum(cp.exp(v := x())) + cp.sum_squares(v),
        ),
        "x log x, x > 0": (
            lambda: cp.sum(cp.multiply(v := x(pos=True), cp.log(v))),
            lambda: -cp.sum(cp.entr(x(pos=True))),
        ),
        "negative entropy (domain from log)": (
            lambda: cp.sum(cp.multiply(v := x(), cp.log(v))),
            lambda: -cp.sum(cp.entr(x())),
        ),
        "1/x, x > 0": (lambda: cp.sum(1 / x(pos=True)), lambda: cp.sum(cp.inv_pos(x(pos=True)))),
        "1/x, no assumption": (lambda: cp.sum(1 / x()), lambda: cp.sum(cp.inv_pos(x()))),
        "1/x², no assumption": (lambda: cp.sum(x() ** -2), lambda: cp.sum(cp.power(x(), -2))),
        "negative harmonic mean": (lambda: -1 / cp.sum(1 / x(pos=True)), lambda: -cp.harmonic_mean(x(pos=True))),
        "negative geometric mean": (lambda: -cp.exp(cp.sum(cp.log(x())) / N), lambda: -cp.geo_mean(x())),
        "multinomial logistic regression": (lambda: softmax(True), lambda: softmax(False)),
        "3-norm": (lambda: cp.sum(cp.abs(x()) ** 3) ** (1 / 3), lambda: cp.pnorm(x(), 3)),
        "3-norm on x > 0": (lambda: cp.sum(x(pos=True) ** 3) ** (1 / 3), lambda: cp.pnorm(x(pos=True), 3)),
        "‖A − UVᵀ‖² in V": (lambda: uv(False, True), lambda: uv(False, False)),
        "‖A − UVᵀ‖² jointly in U, V": (lambda: uv(True, True), lambda: uv(True, False)),
        "sin": (None, None),
        "tanh": (None, None),
        "relu(x)²": (lambda: cp.sum(cp.pos(x()) ** 2), lambda: cp.sum_squares(cp.pos(x()))),
        "−relu(x)": (lambda: -cp.sum(cp.pos(x())), lambda: -cp.sum(cp.pos(x()))),
        "abs(x)": (lambda: cp.sum(cp.abs(x())), lambda: cp.norm1(x())),
        "−abs(x)": (lambda: -cp.sum(cp.abs(x())), lambda: -cp.norm1(x())),
        "ReLU model squared loss, y > 0": (lambda: relu_model(True), lambda: relu_model(False)),
        "ridge regression": (lambda: ridge(True), lambda: ridge(False)),
        "elastic net": (lambda: elastic(True), lambda: elastic(False)),
        "−√x": (lambda: -cp.sum(x() ** 0.5), lambda: -cp.sum(cp.sqrt(x()))),
        "√x": (lambda: cp.sum(x() ** 0.5), lambda: cp.sum(cp.sqrt(x()))),
        "log(x)": (lambda: cp.sum(cp.log(x())), lambda: cp.sum(cp.log(x()))),
        "log barrier of Ax <= b": (lambda: -cp.sum(cp.log(b - A @ x())), lambda: -cp.sum(cp.log(b - A @ x()))),
        "softplus": (lambda: cp.sum(cp.log(1 + cp.exp(x()))), lambda: cp.sum(cp.logistic(x()))),
        "−log(1 − ‖x‖²)": (lambda: -cp.log(1 - (v := x()) @ v), lambda: -cp.log(1 - cp.sum_squares(x()))),
        "√(1 + x²)": (
            lambda: cp.sum(cp.sqrt(1 + x() ** 2)),
            lambda: cp.sum(cp.norm(cp.vstack([np.ones((1, N)), cp.reshape(x(), (1, N), order="C")]), axis=0)),
        ),
        "affine": (lambda: cp.Parameter(N) @ x() + cp.Parameter(), lambda: cp.Parameter(N) @ x()),
        "trace": (lambda: cp.trace(sym()), lambda: cp.trace(sym())),
        "‖x − y‖² jointly": (lambda: ((v := x()) - (w := x())) @ (v - w), lambda: cp.sum_squares(x() - x())),
        "xᵀy jointly": (lambda: x() @ x(), lambda: x() @ x()),
        "x²/y jointly, y > 0": (
            lambda: cp.Variable() ** 2 / cp.Variable(pos=True),
            lambda: cp.quad_over_lin(cp.Variable(), cp.Variable(pos=True)),
        ),
        "logistic regression with bias, jointly": (lambda: logistic_bias(True), lambda: logistic_bias(False)),
        "relu(x − y) jointly": (lambda: cp.sum(cp.pos(x() - x())), lambda: cp.sum(cp.pos(x() - x()))),
        "Σ |x|³": (lambda: cp.sum(cp.abs(x()) ** 3), lambda: cp.sum(cp.power(cp.abs(x()), 3))),
        "exp(−x²)": (lambda: cp.sum(cp.exp(-(x() ** 2))), None),
        "abs(abs(x) − 1)": (lambda: cp.sum(cp.abs(cp.abs(x()) - 1)), None),
        "(x²)^(1/2) = |x|": (lambda: cp.sum((x() ** 2) ** 0.5), lambda: cp.norm1(x())),
        "−(x²)^(1/2)": (lambda: -cp.sum((x() ** 2) ** 0.5), lambda: -cp.norm1(x())),
        "(|x|^(1/2))² = |x|": (lambda: cp.sum((cp.abs(x()) ** 0.5) ** 2), lambda: cp.norm1(x())),
        "−(|x|^(1/2))²": (lambda: -cp.sum((cp.abs(x()) ** 0.5) ** 2), lambda: -cp.norm1(x())),
        "x sign(x) = |x|": (None, lambda: cp.norm1(x())),
        "−x sign(x)": (None, lambda: -cp.norm1(x())),
        "tr(inv(X)), X pd": (None, lambda: cp.tr_inv(sym(PSD=True))),
        "xᵀ inv(Y) x jointly, Y pd": (None, lambda: cp.matrix_frac(x(), sym(PSD=True))),
    }


def _dcp(cp, builder) -> str:
    if builder is None:
        return "—"
    try:
        expr = builder()
    except Exception as exc:  # noqa: BLE001 - CVXPY refuses to build the expression
        return f"error ({type(exc).__name__})"
    if not expr.is_dcp():
        return "not DCP"
    if expr.is_affine():
        return "affine"
    if expr.is_convex():
        return "convex"
    if expr.is_concave():
        return "concave"
    return "not DCP"


def _truth(convex: bool, concave: bool) -> str:
    return {(True, True): "affine", (True, False): "convex", (False, True): "concave"}.get((convex, concave), "neither")


def run() -> tuple[list[dict], str]:
    try:
        import cvxpy as cp
    except ImportError:
        cp = None
    builders = _cvxpy_builders(cp) if cp is not None else {}
    rows = []
    for name, text, orders, wrt, assumptions, values, truth, _, group in CASES:
        start = time.perf_counter()
        result = tc.check_convexity(tc.parse(text, orders), wrt, assumptions, values=values)
        seconds = time.perf_counter() - start
        literal, atoms = builders.get(name, (None, None))
        rows.append(
            {
                "name": name,
                "group": group,
                "truth": _truth(*truth),
                "tenscalc": result.verdict,
                "seconds": seconds,
                "literal": _dcp(cp, literal) if cp is not None else "(cvxpy not installed)",
                "atoms": _dcp(cp, atoms) if cp is not None else "(cvxpy not installed)",
            }
        )
    version = cp.__version__ if cp is not None else "not installed"
    return rows, version


def certifies(verdict: str, truth: str) -> bool:
    return verdict in ("convex", "concave", "affine") and verdict == truth


def markdown(rows: list[dict], version: str) -> str:
    lines = [
        f"| function | group | truth | tenscalc | CVXPY {version}, literal | CVXPY, with atoms |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:

        def mark(v: str, truth: str = r["truth"]) -> str:
            if v in ("convex", "concave", "affine"):
                return f"**{v}**" if v == truth else f"{v} ⚠"
            return v

        name = r["name"].replace("|", "\\|")
        lines.append(
            f"| {name} | {r['group']} | {r['truth']} | {mark(r['tenscalc'])} | {mark(r['literal'])} | "
            f"{mark(r['atoms'])} |"
        )
    curved = [r for r in rows if r["truth"] != "neither"]
    count = {key: sum(certifies(r[key], r["truth"]) for r in curved) for key in ("tenscalc", "literal", "atoms")}
    lines.append("")
    lines.append(counts_line(rows))
    implicit = [
        r["name"]
        for r in rows
        for key in ("literal", "atoms")
        if r[key] in ("convex", "concave", "affine") and r[key] != r["truth"]
    ]
    lines.append("")
    lines.append(
        f"Of the {len(curved)} functions that are convex, concave or affine, tenscalc certifies "
        f"{count['tenscalc']}, CVXPY {count['literal']} as written literally and {count['atoms']} with its atoms."
    )
    if implicit:
        lines.append(
            "⚠: CVXPY certifies a restriction to an implicit domain (" + ", ".join(sorted(set(implicit))) + ")."
        )
    return "\n".join(lines)


def counts_line(rows: list[dict]) -> str:
    """Certified / refuted / unknown / wrong counts of tenscalc, and CVXPY's certified counts."""
    certified = sum(r["tenscalc"] in ("convex", "concave", "affine") for r in rows)
    refuted = sum(r["tenscalc"] in ("not convex", "not concave", "neither") for r in rows)
    unknown = sum(r["tenscalc"] == "unknown" for r in rows)
    truths = {
        "convex": (True, False),
        "concave": (False, True),
        "affine": (True, True),
        "neither": (False, False),
    }
    wrong = 0
    for r in rows:
        cv, cc = truths[r["truth"]]
        v = r["tenscalc"]
        ok = {
            "convex": cv,
            "concave": cc,
            "affine": cv and cc,
            "not convex": not cv,
            "not concave": not cc,
            "neither": not cv and not cc,
            "unknown": True,
        }[v]
        wrong += not ok
    groups = sorted({r["group"] for r in rows})
    per_group = "; ".join(
        f"{g}: {sum(r['group'] == g and r['tenscalc'] in ('convex', 'concave', 'affine') for r in rows)} certified of "
        f"{sum(r['group'] == g and r['truth'] != 'neither' for r in rows)} curved"
        for g in groups
    )
    curved = [r for r in rows if r["truth"] != "neither"]
    cvx = {key: sum(certifies(r[key], r["truth"]) for r in curved) for key in ("literal", "atoms")}
    return (
        f"tenscalc on {len(rows)} functions: {certified} certified, {refuted} refuted, {unknown} unknown, "
        f"{wrong} wrong verdicts ({per_group}). CVXPY certifies {cvx['literal']} as written literally and "
        f"{cvx['atoms']} with its atoms, of the {len(curved)} curved ones."
    )


def timing() -> str:
    """Full checks (proof, cross-check and counterexample search) at n = 1,000 and 10,000,
    and nested sin at depths 20, 40, 80."""
    rng = np.random.default_rng(0)
    cases = {
        "log-sum-exp": "log(exp(x + b) *(i,->) 1)",
        "least squares": "(x - b) *(i,i->) (x - b)",
        "logistic": "log(1 + exp(b *(i,i->i) x)) *(i,->) 1",
        "Σ sin": "sin(x + b) *(i,->) 1",
        "Σ √(1 + (x − b)²)": "(1 + (x - b) *(i,i->i) (x - b))^0.5 *(i,->) 1",
    }
    lines = ["| function | n | verdict | seconds |", "|---|---|---|---|"]
    for n in (1_000, 10_000):
        b = rng.standard_normal(n)
        for name, text in cases.items():
            start = time.perf_counter()
            result = tc.check_convexity(tc.parse(text, {"x": 1, "b": 1}), "x", values={"b": b})
            lines.append(f"| {name} | {n:,} | {result.verdict} | {time.perf_counter() - start:.2f} |")
    lines += ["", "| nested sin, depth | verdict | seconds |", "|---|---|---|"]
    for depth in (20, 40, 80):
        text = "x"
        for _ in range(depth):
            text = f"sin({text})"
        start = time.perf_counter()
        result = tc.check_convexity(tc.parse(text, {"x": 0}), "x")
        lines.append(f"| {depth} | {result.verdict} | {time.perf_counter() - start:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", metavar="PATH", help="also write the table to PATH")
    parser.add_argument("--timing", action="store_true", help="time full checks at n = 1,000 / 10,000 instead")
    args = parser.parse_args(argv)
    if args.timing:
        print(timing())
        return 0
    rows, version = run()
    table = markdown(rows, version)
    print(table)
    total = sum(r["seconds"] for r in rows)
    print(f"\ntenscalc: {len(rows)} checks in {total:.2f} s (numeric search included)")
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
