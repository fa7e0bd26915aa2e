"""The web page's server and computations, without a browser (see test_web_browser.py for the page).

Values are checked against closed forms written here in NumPy and against finite
differences, at random data whose axes have distinct lengths.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import time

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.cli import main as cli_main
from tenscalc.web.compute import MAX_INPUT, MAX_ORDER, analyse, default_orders, latex_with_temporaries
from tenscalc.web.server import MAX_BODY, allowed_hosts, json_depth, make_server, serve_in_thread, static_files
from tenscalc.web.workers import WorkerPool

# short to write, slow to differentiate six times: about 40 s on an idle machine
SLOW = {"expression": "sin(sin(sin(sin(sin(sin(W *(ij,j->i) x))))))*(i,i->) y", "wrt": "x", "order": 6}


def run_python(source: str, **arrays):
    namespace: dict = {}
    exec(source, namespace)  # the code the page shows, run as a user would
    return namespace["f"](**arrays)


# ------------------------------------------------------------------- computations


def test_quadratic_form_value_gradient_hessian_from_the_generated_code():
    reply = analyse({"expression": "x *(i,ij->j) A *(j,j->) x", "wrt": "x", "order": 2})
    assert reply["ok"], reply
    assert reply["expression"]["variables"] == {"A": 2, "x": 1}  # types by letter
    assert [d["label"] for d in reply["derivatives"]] == ["gradient wrt x", "Hessian wrt x"]
    assert reply["python_returns"] == ["f", "df/dx", "d2f/dx2"]
    rng = np.random.default_rng(1)
    A, x = rng.standard_normal((3, 3)), rng.standard_normal(3)
    value, grad, hess = run_python(reply["python"], A=A, x=x)
    np.testing.assert_allclose(value, x @ A @ x)
    np.testing.assert_allclose(grad, (A + A.T) @ x)
    np.testing.assert_allclose(hess, A + A.T)


def test_matrix_jacobian_of_an_order_3_result_against_finite_differences():
    # tanh(W x) by W: a Jacobian of order 3, with W 2x3 (distinct lengths)
    reply = analyse({"expression": "tanh(W *(ij,j->i) x)", "wrt": "W", "order": 1})
    assert reply["ok"], reply
    assert reply["derivatives"][0]["order"] == 3
    rng = np.random.default_rng(2)
    W, x = rng.standard_normal((2, 3)), rng.standard_normal(3)
    value, jac = run_python(reply["python"], W=W, x=x)
    np.testing.assert_allclose(value, np.tanh(W @ x))
    h, numeric = 1e-6, np.zeros((2, 2, 3))
    for a in range(2):
        for b in range(3):
            step = np.zeros_like(W)
            step[a, b] = h
            numeric[:, a, b] = (np.tanh((W + step) @ x) - np.tanh((W - step) @ x)) / (2 * h)
    np.testing.assert_allclose(jac, numeric, atol=1e-8)


def test_log_det_gradient_is_the_inverse_transpose():
    reply = analyse({"expression": "log(det(X))", "wrt": "X"})
    assert reply["ok"], reply
    X = np.random.default_rng(3).uniform(0.1, 0.9, (4, 4)) + 4 * np.eye(4)
    value, grad = run_python(reply["python"], X=X)
    np.testing.assert_allclose(value, np.log(np.linalg.det(X)))
    np.testing.assert_allclose(grad, np.linalg.inv(X).T)


def test_third_derivative_of_a_cubic_form_in_an_order_3_tensor():
    reply = analyse(
        {"expression": "T *(ijk,i->jk) x *(jk,j->k) x *(k,k->) x", "declarations": "T 3", "wrt": "x", "order": 3}
    )
    assert reply["ok"], reply
    T = np.random.default_rng(4).standard_normal((3, 3, 3))
    x = np.random.default_rng(5).standard_normal(3)
    value, _, _, third = run_python(reply["python"], T=T, x=x)
    np.testing.assert_allclose(value, np.einsum("ijk,i,j,k->", T, x, x, x))
    # the third derivative of sum T_ijk x_i x_j x_k is the sum of T over the 6 permutations of its axes
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    np.testing.assert_allclose(third, sum(np.transpose(T, p) for p in perms))


def test_several_variables_give_one_derivative_each():
    reply = analyse({"expression": "x *(i,ij->j) A *(j,j->) x", "wrt": "x, A", "order": 1})
    assert reply["ok"], reply
    assert [d["wrt"] for d in reply["derivatives"]] == ["x", "A"]
    A, x = np.random.default_rng(6).standard_normal((3, 3)), np.arange(1.0, 4.0)
    _, dx, dA = run_python(reply["python"], A=A, x=x)
    np.testing.assert_allclose(dx, (A + A.T) @ x)
    np.testing.assert_allclose(dA, np.outer(x, x))


def test_latex_and_text_of_the_derivative():
    reply = analyse({"expression": "x *(i,ij->j) A *(j,j->) x", "wrt": "x", "order": 2})
    hessian = reply["derivatives"][1]
    assert re.fullmatch(r"A \+ A\^\\top|A\^\\top \+ A", hessian["latex"]), hessian["latex"]
    # the einsum text parses back to the same values
    A = np.random.default_rng(7).standard_normal((2, 2))
    np.testing.assert_allclose(tc.evaluate(tc.parse(hessian["text"], {"A": 2}), {"A": A}), A + A.T)


def test_a_whole_problem_in_the_expression_field():
    reply = analyse({"expression": "declare x 1 expression x *(i,i->) x derivative wrt x", "order": 1})
    assert reply["ok"], reply
    assert reply["wrt"] == ["x"]
    np.testing.assert_allclose(run_python(reply["python"], x=np.array([1.0, 2.0]))[1], [2.0, 4.0])


def test_default_orders_follow_matrixcalculus_letters():
    assert default_orders("a *(,i->i) h + B *(ij,j->i) z") == {"B": 2, "a": 0, "h": 1, "z": 1}
    assert default_orders("declare x 0 expression x + y") == {"y": 1}  # declared names keep their order
    assert default_orders("x *(") == {}  # the parse error comes from the real parse
    # without the page's defaults, a name left undeclared beside declared ones is an error
    # (the parser itself gives letters their types only when nothing at all is declared)
    reply = analyse({"expression": "x *(i,i->) y", "declarations": "x 1", "wrt": "x", "defaults": False})
    assert not reply["ok"] and "not declared" in reply["error"]["message"]
    reply = analyse({"expression": "x *(i,i->) y", "declarations": "x 1", "wrt": "x"})
    assert reply["ok"]  # with them, y is a vector by its letter


# --------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "request_, field, offset",
    [
        ({"expression": "x *(i,->) x", "declarations": "x 1"}, "expression", 2),
        ({"expression": "x *(i,i->) x", "declarations": "x 1 %"}, "declarations", 4),
        ({"expression": "x + ", "declarations": ""}, "expression", 3),
        ({"expression": "log(det(X))", "wrt": "X, y"}, "wrt", 3),
    ],
)
def test_errors_carry_the_message_with_a_caret_under_the_field(request_, field, offset):
    reply = analyse(request_)
    assert not reply["ok"]
    error = reply["error"]
    assert (error["field"], error["offset"]) == (field, offset)
    lines = error["message"].splitlines()
    # the last two lines: the field's text and a caret under the offending character
    assert lines[-1].index("^") - 2 == offset
    assert lines[-2][2:] == request_[field]
    assert "Traceback" not in error["message"]


@pytest.mark.parametrize(
    "request_, needle",
    [
        ({"expression": "x" * (MAX_INPUT + 1)}, "too long"),
        ({"expression": "x *(i,i->) x", "order": MAX_ORDER + 1}, f"at most {MAX_ORDER}"),
        ({"expression": "x *(i,i->) x", "order": 0}, "at least 1"),
        ({"expression": "x *(i,i->) x", "order": "two"}, "whole number"),
        ({"expression": "   "}, "type an expression"),
        ({"expression": 3}, "must be text"),
        ({"expression": "x *(i,ij->j) A *(j,j->) x"}, "name the variable"),
        ({"expression": "x *(i,i->) x", "part": "everything"}, "unknown part"),
    ],
)
def test_bad_requests_get_a_clear_message(request_, needle):
    reply = analyse(request_)
    assert not reply["ok"] and needle in reply["error"]["message"]


# --------------------------------------------------------- latex with temporaries


def test_latex_uses_temporaries_when_the_keyword_exists(monkeypatch):
    calls = []

    def latex(expr, notation="auto", temporaries=False):
        calls.append(temporaries)
        return "t_0"

    monkeypatch.setattr(tc, "latex", latex)
    assert latex_with_temporaries(tc.parse("x", {"x": 1})) == ("t_0", True)
    assert calls == [True]
    reply = analyse({"expression": "x *(i,i->) x", "wrt": "x"})
    # asked for, but none named: no "with named temporaries" label
    assert reply["derivatives"][0]["latex"] == "t_0" and not reply["derivatives"][0]["temporaries"]


def test_temporaries_are_flagged_only_where_named_and_the_where_clause_is_split():
    reply = analyse({"expression": "log(1 + exp(-(y *(i,i->i) (X *(ij,j->i) w)))) *(i,->) 1", "wrt": "w", "order": 2})
    assert reply["ok"], reply
    gradient, hessian = reply["derivatives"]
    assert gradient["temporaries"] and hessian["temporaries"]
    assert "where" not in gradient["latex"] and "t_{0}" in gradient["latex"]
    assert gradient["where"][0].startswith("t_{0} = ")
    plain = analyse({"expression": "x *(i,ij->j) A *(j,j->) x", "wrt": "x", "order": 2})
    assert [d["temporaries"] for d in plain["derivatives"]] == [False, False]
    assert [d["where"] for d in plain["derivatives"]] == [[], []]
    assert not plain["expression"]["temporaries"]


def test_latex_without_the_keyword_is_called_plainly(monkeypatch):
    calls = []

    def latex(expr, notation="auto"):
        calls.append(notation)
        return "plain"

    monkeypatch.setattr(tc, "latex", latex)
    assert latex_with_temporaries(tc.parse("x", {"x": 1})) == ("plain", False)
    assert calls == ["auto"]


def test_latex_with_the_installed_printer():
    import inspect

    expr = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    formula, temporaries = latex_with_temporaries(expr)
    assert temporaries == ("temporaries" in inspect.signature(tc.latex).parameters)
    assert formula == (tc.latex(expr, temporaries=True) if temporaries else tc.latex(expr))


def test_a_formula_too_large_for_latex_leaves_a_note(monkeypatch):
    def latex(expr, notation="auto"):
        raise tc.TensCalcError("the expression is too large for a formula")

    monkeypatch.setattr(tc, "latex", latex)
    reply = analyse({"expression": "x *(i,i->) x", "wrt": "x"})
    assert reply["ok"] and reply["derivatives"][0]["latex"] is None
    assert "too large" in reply["derivatives"][0]["latex_error"]


# ---------------------------------------------------------- drawings, check, convexity


def test_drawings_are_svg_or_a_note(monkeypatch):
    from tenscalc.printing import drawing as viz

    reply = analyse({"expression": "x *(i,i->) x", "wrt": "x"})
    if viz.graphviz_available():
        assert reply["expression"]["drawing"]["svg"].startswith("<svg")
        assert reply["derivatives"][-1]["drawing"]["svg"].startswith("<svg")
    monkeypatch.setattr(viz, "graphviz_available", lambda: False)
    reply = analyse({"expression": "x *(i,i->) x", "wrt": "x"})
    assert reply["expression"]["drawing"]["svg"] is None
    assert "Graphviz is not installed" in reply["expression"]["drawing"]["note"]


def test_numeric_check_uses_distinct_axis_lengths():
    reply = analyse(
        {"expression": "(A *(ij,j->i) x - y) *(i,i->) (A *(ij,j->i) x - y)", "wrt": "x", "order": 2, "part": "check"}
    )
    assert reply["ok"], reply
    assert reply["shapes"] == {"A": [2, 3], "x": [3], "y": [2]}
    assert [c["label"] for c in reply["checks"]] == ["gradient wrt x", "Hessian wrt x"]
    assert reply["all_ok"] and all(c["max_error"] < 1e-6 for c in reply["checks"])
    assert reply["python"]["ok"] and reply["python"]["max_error"] < 1e-9


def test_the_python_check_finds_code_that_disagrees(monkeypatch):
    real = tc.to_python

    def off_by_one(roots, name="f"):  # generated code whose last result is shifted by one
        source = real(roots, name="_real")
        return source + "\n\ndef f(**arrays):\n    out = _real(**arrays)\n    return (*out[:-1], out[-1] + 1.0)\n"

    monkeypatch.setattr(tc, "to_python", off_by_one)
    reply = analyse({"expression": "x *(i,i->) x", "wrt": "x", "part": "check"})
    assert reply["ok"] and not reply["python"]["ok"] and not reply["all_ok"]
    assert reply["python"]["max_error"] > 0.1


def test_numeric_check_reports_a_disagreement(monkeypatch):
    from tenscalc import service, testing

    def wrong(*args, **kwargs):
        return testing.DerivativeCheck(False, 0.5, (0,), 1.0, 1.5, "full Jacobian", "MISMATCH: made up")

    monkeypatch.setattr(service, "check_derivative", wrong)  # the check the page and the CLI share
    reply = analyse({"expression": "x *(i,i->) x", "wrt": "x", "part": "check"})
    assert reply["ok"] and not reply["all_ok"] and not reply["checks"][0]["ok"]


@pytest.mark.parametrize(
    "expression, wrt, verdict",
    [
        ("(A *(ij,j->i) x - y) *(i,i->) (A *(ij,j->i) x - y)", "x", "convex"),
        ("log(1 + exp(-(y *(i,i->i) (X *(ij,j->i) w)))) *(i,->) 1", "w", "convex"),
        ("sin(c)", "c", "neither"),
    ],
)
def test_convexity_verdict(expression, wrt, verdict):
    reply = analyse({"expression": expression, "wrt": wrt, "part": "convexity"})
    assert reply["ok"], reply
    assert reply["convexity"]["verdict"] == verdict
    assert ("certificate" in reply["convexity"]["explanation"]) == (verdict == "convex")
    assert ("counterexample against convexity" in reply["convexity"]["explanation"]) == (verdict == "neither")


def test_convexity_of_a_non_scalar_is_not_applicable():
    reply = analyse({"expression": "A *(ij,j->i) x", "wrt": "x", "part": "convexity"})
    assert reply["ok"] and not reply["convexity"]["applicable"]


# ------------------------------------------------- types, letter rule, export


def test_the_letter_rule_box_turns_the_rule_off_with_the_declarations_empty():
    on = analyse({"expression": "x'*A*x", "wrt": "x"})
    assert on["ok"] and on["expression"]["variables"] == {"A": 2, "x": 1}
    off = analyse({"expression": "x'*A*x", "wrt": "x", "defaults": False})
    assert not off["ok"] and "is not declared" in off["error"]["message"]
    assert off["error"]["field"] == "expression"
    # the control then lists the names as undeclared
    assert [(v["name"], v["order"], v["source"]) for v in off["inputs"]["variables"]] == [
        ("x", None, "undeclared"),
        ("A", None, "undeclared"),
    ]


def test_an_order_guessed_by_the_letter_rule_is_blamed_as_such_and_the_control_lists_it():
    reply = analyse({"expression": "norm2(A*x-b)^2", "wrt": "x"})
    assert not reply["ok"]
    message = reply["error"]["message"]
    assert "letter rule" in message and "b 1" in message and "orders={'b': 0}" not in message
    found = {v["name"]: (v["order"], v["source"]) for v in reply["inputs"]["variables"]}
    assert found == {"A": (2, "letter rule"), "x": (1, "letter rule"), "b": (0, "letter rule")}
    # what the control writes when b is made a vector: every derivative right
    reply = analyse({"expression": "norm2(A*x-b)^2", "declarations": "A 2  x 1  b 1", "wrt": "x", "order": 2})
    assert reply["ok"], reply
    rng = np.random.default_rng(4)
    A, x, b = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal(3)
    value, gradient, hessian = run_python(reply["python"], A=A, x=x, b=b)
    np.testing.assert_allclose(value, np.sum((A @ x - b) ** 2))
    np.testing.assert_allclose(gradient, 2 * A.T @ (A @ x - b))
    np.testing.assert_allclose(hessian, 2 * A.T @ A)


def test_inputs_list_declared_assumptions_and_whole_problems():
    inputs = analyse({"expression": "declare X 2 pd t 0 (0, 1) expression t *(,->) log(det(X))", "wrt": "X"})["inputs"]
    assert inputs["whole_problem"]
    assert [(v["name"], v["assumptions"]) for v in inputs["variables"]] == [("t", ["(0, 1)"]), ("X", ["pd"])]
    assert analyse({"expression": "x *("})["inputs"]["variables"] == []  # does not parse: nothing to list


def test_declared_symmetry_reaches_the_derivatives_and_the_check():
    reply = analyse({"expression": "x'*A*x", "declarations": "A 2 symmetric", "wrt": "x", "order": 2})
    assert reply["ok"], reply
    gradient, hessian = (tc.parse(d["text"], {"A": 2, "x": 1}) for d in reply["derivatives"])
    # with A symmetric there is one A in each (2Ax, 2A), not A + Aᵀ
    assert tc.count_nodes(hessian) < tc.count_nodes(tc.parse("A + A *(ij,->ji) 1", {"A": 2}))
    rng = np.random.default_rng(5)
    S = rng.standard_normal((3, 3))
    S = S + S.T
    x = rng.standard_normal(3)
    np.testing.assert_allclose(tc.evaluate(gradient, {"A": S, "x": x}), 2 * S @ x)
    np.testing.assert_allclose(tc.evaluate(hessian, {"A": S}), 2 * S)
    request_ = {"expression": "x'*A*x", "declarations": "A 2 symmetric", "wrt": "x", "order": 2, "part": "check"}
    checked = analyse(request_)
    assert checked["all_ok"], checked


def test_the_exported_value_and_derivatives_share_their_subexpressions():
    # the logistic loss: X w and its exp were computed twice (once for the value, once for the derivatives)
    reply = analyse({"expression": "log(1 + exp(-(y *(i,i->i) (X *(ij,j->i) w)))) *(i,->) 1", "wrt": "w", "order": 2})
    body = reply["python"].split("def f(", 1)[1]
    assert body.count("_np.exp(") == 1
    assert sum("X" in line and "w" in line and "_contract(" in line for line in body.splitlines()) == 1
    rng = np.random.default_rng(6)
    X, w, y = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(4)
    value, gradient, hessian = run_python(reply["python"], X=X, w=w, y=y)
    s = 1 / (1 + np.exp(y * (X @ w)))  # sigmoid(-y Xw)
    np.testing.assert_allclose(value, np.sum(np.log1p(np.exp(-y * (X @ w)))))
    np.testing.assert_allclose(gradient, -X.T @ (y * s))
    np.testing.assert_allclose(hessian, X.T @ np.diag(y**2 * s * (1 - s)) @ X)


SCRIPT_CASES = [
    {"expression": "log(1 + exp(-(y *(i,i->i) (X *(ij,j->i) w)))) *(i,->) 1", "wrt": "w", "order": 2},
    {"expression": "x'*A*x", "declarations": "A 2 symmetric", "wrt": "x, A", "order": 2},
    {"expression": "tanh(W *(ij,j->i) x)", "wrt": "W", "order": 2},
    {"expression": "T *(ijk,i->jk) x *(jk,j->k) x *(k,k->) x", "declarations": "T 3", "wrt": "x", "order": 3},
    {"expression": "log(det(X))", "declarations": "X 2 pd", "wrt": "X", "order": 2},
]


def run_script(tmp_path, source):
    import subprocess
    import sys

    path = tmp_path / "tenscalc_check.py"
    path.write_text(source)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("request_", SCRIPT_CASES, ids=lambda r: r["expression"][:20])
def test_the_self_checking_script_runs_and_checks_every_derivative(tmp_path, request_):
    reply = analyse(request_)
    script = reply["script"]
    assert script.startswith(reply["python"].rstrip("\n")) and 'if __name__ == "__main__":' in script
    assert "import tenscalc" not in script  # NumPy and opt_einsum only
    done = run_script(tmp_path, script)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines == [line for line in lines if line.endswith("agrees")]
    assert len(lines) == len(reply["python_returns"]) - 1  # one line per derivative
    # the data: every independent axis its own length
    shapes = re.findall(r"# (\d+(?:x\d+)*)$", script, re.MULTILINE)
    assert shapes


def test_the_self_checking_script_fails_on_a_wrong_derivative(tmp_path):
    reply = analyse(SCRIPT_CASES[2])  # tanh(W x) by W: a Jacobian of order 3
    wrong = reply["script"].replace(
        'if __name__ == "__main__":',
        "_right = f\n\n\ndef f(**values):\n    value, jacobian, second = _right(**values)\n"
        "    return value, jacobian.transpose(0, 1, 2) * 1.01, second\n\n\n"
        'if __name__ == "__main__":',
    )
    done = run_script(tmp_path, wrong)
    assert done.returncode == 1
    assert "df/dW" in done.stdout and "DISAGREES" in done.stdout


# ------------------------------------------------------------------------ server


@pytest.fixture(scope="module")
def server():
    srv = make_server(port=0, workers=2, timeout=60)
    serve_in_thread(srv)
    yield srv
    srv.shutdown()
    srv.close()


def request(srv, method, path, body=None, headers=None):
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def post(srv, payload, headers=None):
    body = json.dumps(payload).encode()
    status, _, data = request(
        srv, "POST", "/api/analyse", body, {"Content-Type": "application/json", **(headers or {})}
    )
    return status, json.loads(data)


def test_server_listens_on_localhost_only_by_default(server):
    assert server.server_address[0] == "127.0.0.1"


def test_the_page_and_its_files_are_served(server):
    status, headers, body = request(server, "GET", "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'id="expression"' in body
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    for path in (
        "/app.js",
        "/app.css",
        "/katex/katex.min.js",
        "/katex/katex.min.css",
        "/katex/fonts/KaTeX_Main-Regular.woff2",
        "/katex/LICENSE",
    ):
        status, _, body = request(server, "GET", path)
        assert status == 200 and body, path


def test_the_page_loads_nothing_from_elsewhere():
    files = static_files()
    for path in ("/index.html", "/app.js", "/app.css"):
        text = files[path][0].decode()
        assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text), path
    # every font the stylesheet names is shipped
    css = files["/katex/katex.min.css"][0].decode()
    fonts = set(re.findall(r"url\(([^)]+)\)", css))
    assert fonts and all(f"/katex/{font}" in files for font in fonts)
    assert "MIT" in files["/katex/LICENSE"][0].decode()


UP = ".."  # URL paths that climb out of the static folder (spelled so: they name no file of the repository)


def test_every_static_file_is_in_the_package_data():
    # a file the patterns of setup.cfg miss would be served from a checkout but not from a wheel
    import configparser
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg", encoding="utf-8")
    patterns = [line.strip() for line in config["options.package_data"]["tenscalc.web"].splitlines() if line.strip()]
    web = root / "tenscalc" / "web"
    shipped = {path for pattern in patterns for path in web.glob(pattern)}
    files = {path for path in (web / "static").rglob("*") if path.is_file()}
    assert files and files == shipped, sorted(str(p.relative_to(web)) for p in files ^ shipped)


@pytest.mark.parametrize("path", [f"/{UP}/setup.cfg", "/static/app.js", "/nothing", f"/katex/{UP}/{UP}/server.py"])
def test_only_the_shipped_files_are_served(server, path):
    assert request(server, "GET", path)[0] == 404


def test_api_answers_json(server):
    status, reply = post(server, {"expression": "x *(i,i->) x", "wrt": "x"})
    assert status == 200 and reply["ok"]
    gradient = tc.parse(reply["derivatives"][0]["text"], {"x": 1})
    np.testing.assert_allclose(tc.evaluate(gradient, {"x": np.array([1.0, -2.0, 3.0])}), [2.0, -4.0, 6.0])
    status, reply = post(server, {"expression": "x *(i,->) x", "declarations": "x 1"})
    assert status == 200 and not reply["ok"] and reply["error"]["message"].endswith("^")


def test_api_refuses_a_megabyte_without_reading_it(server):
    body = json.dumps({"expression": "x + " * 250_000}).encode()
    assert len(body) > MAX_BODY
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.putrequest("POST", "/api/analyse")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        response = conn.getresponse()  # answered before the body is sent
        assert response.status == 413
        assert "too long" in json.loads(response.read())["error"]["message"]
    finally:
        conn.close()


def test_api_refuses_what_a_cross_site_form_could_send(server):
    status, _, _ = request(server, "POST", "/api/analyse", b"expression=x", {"Content-Type": "text/plain"})
    assert status == 415
    status, _, _ = request(server, "POST", "/api/analyse", b"[1]", {"Content-Type": "application/json"})
    assert status == 400
    status, _, _ = request(server, "POST", "/api/analyse", b"{", {"Content-Type": "application/json"})
    assert status == 400


def test_requests_for_another_host_name_are_refused(server):
    # a DNS-rebinding page would reach 127.0.0.1 under its own name
    assert request(server, "GET", "/", headers={"Host": "evil.example:80"})[0] == 403
    status, _ = post(server, {"expression": "x"}, {"Host": "evil.example"})
    assert status == 403


def test_a_pathological_input_is_stopped_and_the_server_keeps_answering():
    srv = make_server(port=0, workers=1, timeout=3)
    serve_in_thread(srv)
    # behaviour, not seconds (a loaded machine may take any time): the input gets its
    # Timeout error, its worker is killed, and the replacement answers the next request
    try:
        wait_until(lambda: srv.pool.ready() == 1)
        (first,) = [worker.process for worker in srv.pool._all]
        status, reply = post(srv, SLOW)
        assert status == 200 and not reply["ok"] and reply["error"]["kind"] == "Timeout"
        assert "too long" in reply["error"]["message"]
        # killed, not left computing (the kill lands at once, its reaping may lag a moment)
        wait_until(lambda: not first.is_alive())
        # the killed worker is replaced (its start-up may take longer than the 3 s deadline
        # on a loaded machine: a request waits at most that long for a free worker), and
        # then the next request is answered
        wait_until(lambda: srv.pool.ready() == 1)
        status, reply = post(srv, {"expression": "x *(i,i->) x", "wrt": "x"})
        assert reply["ok"], reply
        assert request(srv, "GET", "/")[0] == 200
    finally:
        srv.shutdown()
        srv.close()


def wait_until(condition, seconds=120.0):
    """Wait (bounded) until ``condition()`` holds; fail the test if it never does."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"still not true after {seconds} s"
        time.sleep(0.05)


def test_worker_pool_replaces_a_dead_worker():
    pool = WorkerPool(size=1, timeout=60)
    try:
        wait_until(lambda: pool.ready() == 1)
        worker = pool._all[0]
        worker.process.kill()
        worker.process.join()
        reply = pool.run({"expression": "x *(i,i->) x", "wrt": "x"})
        assert not reply["ok"] and reply["error"]["kind"] == "Crashed"
        assert pool.run({"expression": "x *(i,i->) x", "wrt": "x"})["ok"]
        assert len(pool._all) == 1
    finally:
        pool.close()


# --------------------------------------------------------------------------- CLI


def test_cli_serve_help(capsys):
    assert cli_main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--port" in out and "--open" in out and "--host" in out


def test_cli_serve_reports_a_busy_port(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli_main(["serve", "--port", str(port), "--workers", "1"]) == 2
    assert "cannot listen" in capsys.readouterr().err


def test_cli_serve_refuses_bad_options(capsys):
    assert cli_main(["serve", "--workers", "0"]) == 2
    assert cli_main(["serve", "--port", "many"]) == 2


# ------------------------------------------------------- one request per input


def stream(srv, payload):
    """Post a request with ``parts`` and read its answers, one JSON line each."""
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=120)
    try:
        conn.request("POST", "/api/analyse", json.dumps(payload), {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Content-Type") == "application/x-ndjson"
        return [json.loads(line) for line in response]
    finally:
        conn.close()


def test_one_request_streams_every_part_of_an_input(server):
    parts = ["derive", "check", "convexity"]
    answers = stream(server, {"expression": "x'*A*x", "wrt": "x", "order": 2, "parts": parts})
    assert [a["part"] for a in answers] == parts and all(a["ok"] for a in answers)
    hessian = tc.parse(answers[0]["derivatives"][1]["text"], {"A": 2})
    A = np.random.default_rng(7).standard_normal((3, 3))
    np.testing.assert_allclose(tc.evaluate(hessian, {"A": A}), A + A.T)
    assert answers[1]["all_ok"] and answers[1]["checks"][1]["label"] == "Hessian wrt x"
    alone = analyse({"expression": "x'*A*x", "wrt": "x", "order": 2, "part": "convexity"})
    assert answers[2]["convexity"]["verdict"] == alone["convexity"]["verdict"]  # the same as asked alone
    # an input that cannot be read: one error answer, nothing after it
    (only,) = stream(server, {"expression": "x *(i,->) x", "declarations": "x 1", "parts": parts})
    assert not only["ok"] and only["error"]["message"].endswith("^")


@pytest.mark.parametrize("parts", [[], ["derive", "derive"], ["everything"], "derive"])
def test_bad_parts_are_refused(server, parts):
    status, reply = post(server, {"expression": "x'*x", "parts": parts})
    assert status == 400 and "'parts'" in reply["error"]["message"]


def test_a_stream_abandoned_midway_stops_its_worker():
    srv = make_server(port=0, workers=1, timeout=300)
    serve_in_thread(srv)
    try:
        wait_until(lambda: srv.pool.ready() == 1)
        (worker,) = [w.process for w in srv.pool._all]
        # the numeric check of six nested sines at order 5 is heavy; the formulas come first
        sock = send_raw(srv, {**SLOW, "order": 5, "parts": ["derive", "check"], "session": "s", "seq": 1})
        wait_until(lambda: srv.pool.ready() == 0)
        sock.close()
        wait_until(lambda: srv.pool.cancelled == 1)
        # the count goes up as the pool retires the worker: its kill may land a moment later
        wait_until(lambda: not worker.is_alive())
        wait_until(lambda: srv.pool.ready() == 1)  # a fresh one takes its place
        (answer,) = stream(srv, {"expression": "x'*x", "wrt": "x", "parts": ["derive"]})
        assert answer["ok"]
    finally:
        srv.shutdown()
        srv.close()


# ------------------------------------------------------------ abandoned work


def send_raw(srv, payload: dict) -> socket.socket:
    """Post ``payload`` on a raw socket and return it unread (a client that may hang up)."""
    host, port = srv.server_address[:2]
    sock = socket.create_connection((host, port), timeout=30)
    body = json.dumps(payload).encode()
    head = f"POST /api/analyse HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    sock.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return sock


def test_abandoned_heavy_requests_stop_and_a_light_one_is_answered_at_once(capfd):
    # two workers, a deadline far beyond the heavy inputs' 40 s of work: without
    # cancellation the light request would wait for one of them to finish
    srv = make_server(port=0, workers=2, timeout=300)
    serve_in_thread(srv)
    try:
        wait_until(lambda: srv.pool.ready() == 2)
        heavy = [send_raw(srv, SLOW), send_raw(srv, {**SLOW, "order": 5})]
        wait_until(lambda: srv.pool.ready() == 0)  # both workers are busy with them
        busy = [worker.process for worker in srv.pool._all]
        for sock in heavy:
            sock.close()  # the user moved on
        wait_until(lambda: srv.pool.cancelled == 2)
        status, reply = post(srv, {"expression": "x *(i,i->) x", "wrt": "x"})
        assert status == 200 and reply["ok"], reply
        # answered by a fresh worker, not at the end of 40 s of abandoned work: the two
        # that took the heavy inputs were killed (no clock: the machine may be loaded)
        wait_until(lambda: not any(process.is_alive() for process in busy))
        assert not {worker.process.pid for worker in srv.pool._all} & {process.pid for process in busy}
    finally:
        srv.shutdown()
        srv.close()
    assert "Traceback" not in capfd.readouterr().err  # a client that hung up is no error


def test_a_newer_request_of_the_same_page_supersedes_the_older_one():
    srv = make_server(port=0, workers=2, timeout=300)
    serve_in_thread(srv)
    try:
        wait_until(lambda: srv.pool.ready() == 2)
        # the page's first input: heavy; the client is still connected
        first = send_raw(srv, {**SLOW, "session": "page-1", "seq": 1})
        wait_until(lambda: srv.pool.ready() == 1)
        # another page's request is not affected by page-1's numbers
        other = send_raw(srv, {**SLOW, "session": "page-2", "seq": 0})
        wait_until(lambda: srv.pool.ready() == 0)
        status, reply = post(srv, {"expression": "x *(i,i->) x", "wrt": "x", "session": "page-1", "seq": 2})
        assert status == 200 and reply["ok"], reply
        # the superseded request is answered 409 "Cancelled"; page-2's still runs
        first.settimeout(60)
        head = first.recv(65536).decode()
        assert head.startswith("HTTP/1.1 409") and '"Cancelled"' in head, head
        assert srv.pool.cancelled == 1
        other.close()
        wait_until(lambda: srv.pool.cancelled == 2)
    finally:
        first.close()
        srv.shutdown()
        srv.close()


# ------------------------------------------------------------ crafted requests


def raw_post(srv, body: bytes):
    return request(srv, "POST", "/api/analyse", body, {"Content-Type": "application/json"})


@pytest.mark.parametrize(
    "body, needle",
    [
        (b'{"a": ' + b"[" * 40_000 + b"]" * 40_000 + b"}", "nested 40001 deep"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "order": Infinity}', "Infinity"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "order": NaN}', "NaN"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "order": 2.7}', "whole number, not 2.7"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "order": 2.0}', "whole number, not 2.0"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "order": true}', "whole number, not True"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "order": 1e400}', "whole number, not inf"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "order": ' + b"9" * 5000 + b"}", "not JSON"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "order": 7}', "at most 6"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "defaults": "no"}', "true or false"),
        (b'{"expression": "x *(i,i->) x", "wrt": "x", "seq": -1}', "'seq'"),
        (b'{"expression": ["x"]}', "must be text"),
        (b'"x"', "JSON object"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_crafted_requests_get_a_4xx_json_error_and_no_traceback(server, capfd, body, needle):
    assert len(body) < MAX_BODY
    status, headers, data = raw_post(server, body)
    assert status == 400 and headers["Content-Type"] == "application/json"
    reply = json.loads(data)
    assert not reply["ok"] and needle in reply["error"]["message"], reply
    assert "Traceback" not in capfd.readouterr().err


def test_json_depth_skips_brackets_inside_strings():
    assert json_depth('{"a": "[[[{{{", "b": [[1]]}') == 3
    assert json_depth('{"a": "\\"[["}') == 1  # an escaped quote does not end the string


def test_the_backlog_holds_a_hundred_concurrent_connections():
    # not serving yet: the operating system alone accepts what the backlog holds
    srv = make_server(port=0, workers=1)
    host, port = srv.server_address[:2]
    sockets = [socket.socket() for _ in range(100)]
    try:
        for sock in sockets:
            sock.setblocking(False)
            sock.connect_ex((host, port))
        pending, deadline = list(sockets), time.monotonic() + 120  # only against a hang
        while pending and time.monotonic() < deadline:
            _, writable, _ = __import__("select").select([], pending, [], 0.2)
            pending = [s for s in pending if s not in writable]
        connected = [s for s in sockets if s not in pending and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0]
        assert len(connected) == 100
        serve_in_thread(srv)
        # and every one of them is answered
        request_line = f"GET /app.css HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()
        for sock in sockets:
            sock.setblocking(True)
            sock.settimeout(30)
            sock.sendall(request_line)
        assert all(sock.recv(64).startswith(b"HTTP/1.1 200") for sock in sockets)
    finally:
        for sock in sockets:
            sock.close()
        srv.shutdown()
        srv.close()


def test_a_silent_connection_is_closed_after_the_idle_timeout(capfd):
    srv = make_server(port=0, workers=1, idle_timeout=0.5)
    serve_in_thread(srv)
    host, port = srv.server_address[:2]
    try:
        with socket.create_connection((host, port), timeout=30) as sock:
            sock.sendall(b"POST /api/analyse HTTP/1.1\r\nHost: ")  # and then nothing
            assert sock.recv(1024) == b""  # closed by the server, long before our 30 s
        with socket.create_connection((host, port), timeout=30) as sock:
            head = f"POST /api/analyse HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            sock.sendall(f"{head}Content-Length: 100\r\n\r\n{{".encode())  # a body that never comes
            assert sock.recv(1024) == b""
    finally:
        srv.shutdown()
        srv.close()
    assert "Traceback" not in capfd.readouterr().err


def test_no_site_may_frame_the_page(server):
    _, headers, _ = request(server, "GET", "/")
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "DENY"


def test_the_host_check_stays_on_beyond_loopback():
    # 127.0.0.2 is another loopback address: a server bound to it is "beyond 127.0.0.1"
    # without being reachable from another machine
    srv = make_server(host="127.0.0.2", port=0, workers=1)
    serve_in_thread(srv)
    try:
        port = srv.server_address[1]
        assert request(srv, "GET", "/", headers={"Host": f"127.0.0.2:{port}"})[0] == 200
        assert request(srv, "GET", "/", headers={"Host": "evil.example"})[0] == 403
    finally:
        srv.shutdown()
        srv.close()
    # listening on every address: the machine's own names stay allowed, no other
    everywhere = allowed_hosts("0.0.0.0", 8765)
    assert f"{socket.gethostname().lower()}:8765" in everywhere and "127.0.0.1:8765" in everywhere
    assert "evil.example:8765" not in everywhere and "evil.example" not in everywhere
