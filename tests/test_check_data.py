"""``--check`` and ``tc.testing.check_derivative`` draw data where the function is defined
(issue 31 item 7), and say "could not evaluate at random data" where no draw is."""

from __future__ import annotations

import io

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.cli import EXIT_CHECK_FAILED, EXIT_NOT_EVALUATED, EXIT_OK, main
from tenscalc.testing import RandomDataError, check_derivative, defined_values, undefined_because

GRAM_LOGDET = "log(det(X *(ji,jk->ik) W *(ik,kl->il) X))"


def _cli(*argv: str) -> tuple[int, str]:
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(list(argv))
    return status, out.getvalue()


def test_the_gram_log_determinant_is_checked_at_a_point_where_it_is_defined():
    # its first draw (X 2x3) makes XᵀWX singular: the check used to report FAILED
    status, text = _cli(GRAM_LOGDET, "--orders", "X=2,W=2", "--wrt", "X", "--check", "--hessian")
    assert status == EXIT_OK, text
    assert "shapes: W 3x3, X 3x2" in text  # still distinct lengths: a transposed axis cannot pass
    assert text.count(": ok") == 2 and "FAILED" not in text


def test_the_point_is_defined_and_the_derivative_right_there():
    f = tc.parse(GRAM_LOGDET, {"X": 2, "W": 2})
    values = defined_values([f, tc.gradient(f, "X")])
    X, W = values["X"], values["W"]
    gram = X.T @ W @ X
    assert X.shape[0] != X.shape[1] and np.linalg.cond(gram) < 1e8 and np.linalg.det(gram) > 0
    # d log det(XᵀWX) / dX = W X G⁻¹ + Wᵀ X G⁻ᵀ (an independent closed form)
    expected = W @ X @ np.linalg.inv(gram) + W.T @ X @ np.linalg.inv(gram).T
    np.testing.assert_allclose(tc.evaluate(tc.gradient(f, "X"), values), expected, rtol=1e-10)
    report = check_derivative(f, "X", order=2)
    assert report.ok and report.evaluated


@pytest.mark.parametrize(
    ("text", "orders", "why"),
    [
        ("log(-(x *(i,i->) x))", "x=1", "is not finite there"),  # log of a negative number everywhere
        ("inv(x *(i,j->ij) x)", "x=1", "the argument of inv, `x *(i,j->ij) x`, is singular"),  # rank 1
        ("log(det(x *(i,j->ij) y))", "x=1,y=1", "the argument of det"),
    ],
)
def test_undefined_everywhere_is_not_a_failure(text, orders, why):
    status, out = _cli(text, "--orders", orders, "--wrt", "x", "--check")
    assert status == EXIT_NOT_EVALUATED != EXIT_CHECK_FAILED
    assert "could not evaluate at random data: " in out and why in out and "FAILED" not in out
    declared = {name: int(order) for name, order in (item.split("=") for item in orders.split(","))}
    report = check_derivative(tc.parse(text, declared), "x")
    assert not report.ok and not report.evaluated
    assert report.message.startswith("could not evaluate at random data: ")


def test_undefined_because_names_each_reason():
    x = tc.var("x", 1)
    assert undefined_because(tc.log(tc.sum(x)), {"x": np.array([1.0, 2.0])}) is None
    assert "not finite" in undefined_because(tc.log(tc.sum(x)), {"x": np.array([-1.0, -2.0])})
    singular = {"A": np.array([[1.0, 2.0], [2.0, 4.0]])}
    assert "singular" in undefined_because(tc.det(tc.var("A", 2)), singular)
    with pytest.raises(RandomDataError, match="could not evaluate at random data"):
        defined_values(tc.inv(tc.einsum("i,j->ij", x, x)))


def test_help_documents_the_exit_status():
    status, text = _cli("--help")
    assert status == EXIT_OK
    assert "3 --check could not evaluate at random data" in text


def test_the_web_check_reply_stays_valid_json_when_nothing_could_be_compared():
    import json

    from tenscalc.web.compute import analyse

    reply = analyse({"expression": "inv(x *(i,j->ij) x)", "wrt": "x", "part": "check"})
    (row,) = reply["checks"]
    assert row["evaluated"] is False and row["max_error"] is None and not reply["all_ok"]
    assert row["message"].startswith("could not evaluate at random data: ")
    json.dumps(reply, allow_nan=False)  # a browser's JSON.parse refuses NaN and Infinity
