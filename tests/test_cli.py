"""The ``tenscalc`` command, run both as a subprocess and in-process through ``main``."""

from __future__ import annotations

import doctest
import io
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import tenscalc as tc
from tenscalc import cli

EXAMPLE_ORDERS = {"x": 1, "A": 2}
PACKAGE_ROOT = str(Path(tc.__file__).resolve().parent.parent)


def run_subprocess(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m tenscalc ARGS`` with ``stdin`` on standard input, using this checkout's package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "tenscalc", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``tenscalc.cli.main(args)`` in this process: (exit status, stdout, stderr)."""
    status = cli.main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def printed_after(output: str, header: str) -> str:
    """The expression printed on the line after the line that starts with ``header``."""
    lines = output.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith(header):
            return lines[i + 1].strip()
    raise AssertionError(f"no line starting with {header!r} in:\n{output}")


def assert_expression_block(output: str, text: str, order: int, variables: str) -> None:
    assert f"expression  {text}\n" in output
    assert f"order       {order}\n" in output
    assert f"variables   {variables}\n" in output


def assert_clean_error(status: int, out: str, err: str, *fragments: str) -> None:
    """Exit status 2, nothing on stdout, a message (with ``fragments``) and no traceback on stderr."""
    assert status == 2, (status, out, err)
    assert out == ""
    assert err.startswith("tenscalc: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


EXAMPLE_TEXT = str(tc.parse(cli.EXAMPLE))


# -- input: example, argument, stdin, file ----------------------------------------


def test_example_subprocess() -> None:
    result = run_subprocess("--example")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert_expression_block(result.stdout, EXAMPLE_TEXT, 0, "A 2, x 1")


def test_example_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "--example")
    assert status == 0, err
    assert_expression_block(out, EXAMPLE_TEXT, 0, "A 2, x 1")


def test_problem_as_argument(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "declare A 2 x 1 expression A *(ij,j->i) x")
    assert status == 0, err
    assert_expression_block(out, str(tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})), 1, "A 2, x 1")
    assert "wrt" not in out  # no variable to differentiate by: no derivative


def test_orders_option_for_bare_expression(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "--orders", "x=1,A=2", "x *(i,ij->j) A *(j,j->) x")
    assert status == 0, err
    assert_expression_block(out, EXAMPLE_TEXT, 0, "A 2, x 1")
    status, out, err = run_main(capsys, "--orders", "x=1", "--orders", "A=2", "x *(i,ij->j) A *(j,j->) x")
    assert status == 0, err
    assert_expression_block(out, EXAMPLE_TEXT, 0, "A 2, x 1")


def test_stdin_subprocess() -> None:
    result = run_subprocess(stdin=cli.EXAMPLE + "\n")
    assert result.returncode == 0, result.stderr
    assert_expression_block(result.stdout, EXAMPLE_TEXT, 0, "A 2, x 1")
    dash = run_subprocess("-", stdin=cli.EXAMPLE)
    assert dash.returncode == 0, dash.stderr
    assert dash.stdout == result.stdout


def test_stdin_in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("declare X 2\nexpression\n  log(det(X))\n"))
    status, out, err = run_main(capsys)
    assert status == 0, err
    assert_expression_block(out, "log(det(X))", 0, "X 2")


def test_empty_stdin_is_a_clean_error(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("  \n"))
    assert_clean_error(*run_main(capsys), "no problem given")


def test_file_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "problem.txt"
    path.write_text("declare x 1 A 2\nexpression\n    x *(i,ij->j) A *(j,j->) x\n", encoding="utf-8")
    result = run_subprocess("-f", str(path))
    assert result.returncode == 0, result.stderr
    assert_expression_block(result.stdout, EXAMPLE_TEXT, 0, "A 2, x 1")


def test_file_in_process(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "problem.txt"
    path.write_text(cli.EXAMPLE, encoding="utf-8")
    status, out, err = run_main(capsys, "--file", str(path))
    assert status == 0, err
    assert_expression_block(out, EXAMPLE_TEXT, 0, "A 2, x 1")


def test_missing_file_is_a_clean_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.txt")
    assert_clean_error(*run_main(capsys, "-f", missing), "cannot read", "nope.txt")


def test_text_and_file_together_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "problem.txt"
    path.write_text(cli.EXAMPLE, encoding="utf-8")
    assert_clean_error(*run_main(capsys, "-f", str(path), cli.EXAMPLE), "not both")


# -- errors: exit status 2, a caret, no traceback ------------------------------------


def test_syntax_error_subprocess() -> None:
    result = run_subprocess("declare x 1 A 2 expression x *(i,ij->j A")
    assert_clean_error(result.returncode, result.stdout, result.stderr, "line 1")
    lines = result.stderr.splitlines()
    caret = next(i for i, line in enumerate(lines) if line.strip() == "^")
    assert "x *(i,ij->j A" in lines[caret - 1]
    assert lines[caret].index("^") == lines[caret - 1].index("x *(i,ij->j A") + len("x *(i,ij->j ")


def test_syntax_error_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "--orders", "x=1", "x +")
    assert_clean_error(status, out, err, "x +")
    assert err.rstrip().endswith("^")


def test_undeclared_variable_subprocess() -> None:
    result = run_subprocess("--no-letter-rule", "declare x 1 expression x + y")
    assert_clean_error(result.returncode, result.stdout, result.stderr, "'y'", "not declared")
    assert "x + y" in result.stderr and "^" in result.stderr


def test_undeclared_variable_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert_clean_error(*run_main(capsys, "x *(i,i->) y", "--orders", "x=1", "--no-letter-rule"), "'y'", "not declared")


def test_undeclared_names_take_their_letters_type(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "x *(i,i->) y", "--orders", "x=1", "--wrt", "x")
    assert status == 0 and "y" in out and not err


def test_order_mismatch_is_a_clean_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert_clean_error(*run_main(capsys, "declare x 1 A 2 expression x + A"), "order")


def test_bad_orders_option(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "--orders", "x=one", "x")
    assert status == 2
    assert "x=one" in err and "Traceback" not in err


def test_wrt_undeclared_variable(capsys: pytest.CaptureFixture[str]) -> None:
    assert_clean_error(*run_main(capsys, "--wrt", "z", cli.EXAMPLE), "'z'", "not declared")


def test_hessian_without_variable_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "--hessian", "--orders", "x=1", "x *(i,i->) x")
    assert status == 2
    assert "--wrt" in err and "Traceback" not in err


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_main(capsys, "--help")
    assert status == 0 and "--example" in out and "--check" in out
    status, out, _ = run_main(capsys, "--version")
    assert status == 0 and tc.__version__ in out


# -- derivatives ----------------------------------------------------------------------


def example_values(n: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"x": rng.normal(size=n), "A": rng.normal(size=(n, n))}


def test_example_prints_gradient_and_hessian_subprocess() -> None:
    result = run_subprocess("--example")
    assert result.returncode == 0, result.stderr
    values = example_values()
    x, A = values["x"], values["A"]
    gradient = tc.parse(printed_after(result.stdout, "gradient wrt x (order 1,"), EXAMPLE_ORDERS)
    np.testing.assert_allclose(tc.evaluate(gradient, values), (A + A.T) @ x, rtol=1e-12)
    hessian = tc.parse(printed_after(result.stdout, "Hessian wrt x (order 2,"), EXAMPLE_ORDERS)
    np.testing.assert_allclose(tc.evaluate(hessian, values), A + A.T, rtol=1e-12)


def test_derivative_from_problem_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, cli.EXAMPLE)
    assert status == 0, err
    assert "Hessian" not in out  # only the first derivative unless asked
    header = next(line for line in out.splitlines() if line.startswith("gradient wrt x"))
    gradient = tc.parse(printed_after(out, "gradient wrt x"), EXAMPLE_ORDERS)
    assert header == f"gradient wrt x (order 1, {tc.count_nodes(gradient)} nodes):"
    values = example_values(4)
    np.testing.assert_allclose(tc.evaluate(gradient, values), (values["A"] + values["A"].T) @ values["x"], rtol=1e-12)


def test_wrt_and_hessian_options(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "--orders", "x=1,A=2", "--wrt", "A", "--hessian", "x *(i,ij->j) A *(j,j->) x")
    assert status == 0, err
    values = example_values()
    gradient = tc.parse(printed_after(out, "gradient wrt A (order 2,"), EXAMPLE_ORDERS)
    np.testing.assert_allclose(tc.evaluate(gradient, values), np.outer(values["x"], values["x"]), rtol=1e-12)
    hessian = tc.parse(printed_after(out, "Hessian wrt A (order 4,"), EXAMPLE_ORDERS)
    np.testing.assert_allclose(tc.evaluate(hessian, values), np.zeros((3, 3, 3, 3)), atol=1e-12)


def test_jacobian_label_for_vector_expression(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "declare A 2 x 1 expression A *(ij,j->i) x derivative wrt x")
    assert status == 0, err
    jacobian = tc.parse(printed_after(out, "Jacobian wrt x (order 2,"), {"A": 2, "x": 1})
    values = {"A": np.arange(6.0).reshape(2, 3), "x": np.ones(3)}
    np.testing.assert_allclose(tc.evaluate(jacobian, values), values["A"])


def test_order_option_third_derivative(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "--order", "3", "declare c 0 expression c^3 derivative wrt c")
    assert status == 0, err
    third = tc.parse(printed_after(out, "derivative 3 wrt c (order 0,"), {"c": 0})
    assert float(tc.evaluate(third, {"c": np.array(1.7)})) == pytest.approx(6.0)


def test_check_passes_on_example_subprocess() -> None:
    result = run_subprocess("--example", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAILED" not in result.stdout
    check_lines = [line for line in result.stdout.splitlines() if "max relative error" in line]
    assert len(check_lines) == 2  # gradient and Hessian
    assert all(line.rstrip().endswith(": ok") for line in check_lines)


def test_check_passes_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    problem = "declare W 2 x 1 expression tanh(W *(ij,j->i) x) *(i,i->) 1 derivative wrt W"
    status, out, err = run_main(capsys, problem, "--check", "--seed", "3")
    assert status == 0, out + err
    assert "seed 3" in out
    assert "max relative error" in out and "FAILED" not in out


def test_failed_check_exits_1(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import tenscalc.service

    def wrong(expr: tc.Expr, wrt: object, order: int = 1, values: object = None, seed: int = 0) -> SimpleNamespace:
        return SimpleNamespace(ok=False, max_error=0.5)

    monkeypatch.setattr(tenscalc.service, "check_derivative", wrong)
    status, out, err = run_main(capsys, cli.EXAMPLE, "--check")
    assert status == 1, out + err
    assert "FAILED" in out and "5.00e-01" in out


# -- the module's own examples ---------------------------------------------------------


def test_cli_docstring_examples() -> None:
    result = doctest.testmod(cli)
    assert result.attempted > 0 and result.failed == 0


def test_help_lists_every_subcommand_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from tenscalc.cli import SUBCOMMANDS

    assert "convexity" in SUBCOMMANDS
    status, out, _ = run_main(capsys, "--help")
    assert status == 0
    for name, line in SUBCOMMANDS.items():
        listed = [row for row in out.splitlines() if row.strip().startswith(f"tenscalc {name} ")]
        assert len(listed) == 1 and line in listed[0], out
        # and it is a real subcommand: its own --help works
        assert cli.main([name, "--help"]) == 0
        assert f"tenscalc {name}" in capsys.readouterr().out


# ------------------------------------------------------- input size and exit statuses (issue 30 item 5)


def test_an_endless_file_is_refused_at_the_input_limit(capsys: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero on this system")
    status, out, err = run_main(capsys, "-f", "/dev/zero")  # read without a limit: a MemoryError
    assert_clean_error(status, out, err, "'/dev/zero' is longer than the input limit of 1,000,000 characters")
    assert "--max-input-size" in err


@pytest.mark.parametrize("given", ["file", "stdin", "argument"])
def test_the_input_limit_holds_for_every_source_and_can_be_raised(
    given: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = "declare x 1 expression " + " + ".join(["x"] * 30)  # 140 characters
    path = tmp_path / "problem.txt"
    path.write_text(text)
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    source = {"file": ["-f", str(path)], "stdin": ["-"], "argument": [text]}[given]
    status, out, err = run_main(capsys, "--max-input-size", "139", *source)
    assert_clean_error(status, out, err, "longer than the input limit of 139 characters")
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    status, out, _ = run_main(capsys, "--max-input-size", "140", *source)
    assert status == 0 and out.startswith("expression  x + x + x")


def test_a_deep_problem_prints_and_the_limit_is_in_the_help(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # 100,000 nested sin( (700 KB) used to end in a MemoryError traceback with exit status 1
    depth = 100_000
    path = tmp_path / "deep.txt"
    path.write_text("declare x 1 expression " + "sin(" * depth + "x" + ")" * depth)
    status, out, err = run_main(capsys, "-f", str(path))
    assert status == 0, err
    assert out.startswith("expression  sin(sin(") and out.count("sin(") == depth
    status, out, _ = run_main(capsys, "--help")
    assert status == 0 and "--max-input-size" in out and "1,000,000" in out
    assert "2 bad input" in out and "1 --check found" in out


@pytest.mark.parametrize(
    "args",
    [["--orders", "x=1", "x +"], ["--bogus-option", "x"], ["--order", "0", "x"], ["--max-input-size", "0", "x"]],
    ids=["bad expression", "bad option", "bad option value", "bad limit"],
)
def test_every_input_error_exits_2_distinct_from_a_failed_check(args: list[str], capsys) -> None:
    status, _, err = run_main(capsys, *args)
    assert status == cli.EXIT_BAD_INPUT == 2 and "Traceback" not in err
    assert cli.EXIT_CHECK_FAILED == 1 and cli.EXIT_BROKEN_PIPE not in (1, 2)


def test_memory_errors_are_input_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(cli, "build_problem", exhausted)
    status, out, err = run_main(capsys, "--orders", "x=1", "x")
    assert_clean_error(status, out, err, "too large to process")


def test_convexity_refuses_an_endless_file(capsys: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero on this system")
    status = cli.main(["convexity", "-f", "/dev/zero"])
    err = capsys.readouterr().err
    assert status == 2 and "longer than the input limit" in err and "Traceback" not in err
