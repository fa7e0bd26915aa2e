"""The size guard: evaluation refuses, before allocating, an array over the memory
limit with an EvaluationError stating the shape and the bytes (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tenscalc as tc


@pytest.fixture
def small_limit():
    old = tc.set_memory_limit(2**20)  # 1 MiB
    yield
    tc.set_memory_limit(old)


def test_a_hessian_that_needs_671_gib_is_refused_at_once():
    h = tc.hessian(tc.parse("x *(i,i->) x", {"x": 1}), "x")
    x = np.ones(300_000)
    for run in (lambda: tc.evaluate(h, x=x), lambda: tc.compile(h)(x=x)):
        with pytest.raises(tc.EvaluationError, match=r"shape \(300000, 300000\) needs 671 GiB"):
            run()


@pytest.mark.parametrize(
    "text",
    ["x *(i,j->ij) x", "log(x *(i,j->ij) x) *(ij,->) 1", "(x *(i,j->ij) x) *(ij,jk->ik) (x *(i,j->ij) x)", "A + 1"],
)
def test_every_evaluator_refuses_what_exceeds_the_limit(text, small_limit):
    e = tc.parse(text, {"x": 1, "A": 2})
    values = {"x": np.ones(1000), "A": np.ones((1000, 1000))}
    values = {name: values[name] for name in e.variables}
    for run in (lambda: tc.evaluate(e, values), lambda: tc.compile(e)(values)):
        with pytest.raises(tc.EvaluationError, match="more than the memory limit of 1 MiB"):
            run()
    small = {"x": np.ones(100), "A": np.ones((100, 100))}  # 78 KiB arrays pass
    small = {name: small[name] for name in e.variables}
    np.testing.assert_allclose(tc.compile(e)(small), tc.evaluate(e, small))


def test_set_memory_limit_returns_the_old_one_and_checks_its_argument():
    old = tc.set_memory_limit(12345)
    try:
        assert tc.memory_limit() == 12345
        for bad in (0, -1, 1.5, True, "1G"):
            with pytest.raises(tc.TensCalcError):
                tc.set_memory_limit(bad)
    finally:
        assert tc.set_memory_limit(old) == 12345
    assert tc.memory_limit() == old


def test_the_environment_variable_sets_the_default():
    code = "import tenscalc as tc; print(tc.memory_limit())"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TENSCALC_MEMORY_LIMIT": "3M"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True)
    assert int(out.stdout) == 3 * 2**20


def test_cost_allocates_no_constant_at_full_size():
    run = tc.compile(tc.parse("A *(ij,ij->) (sin(1) + exp(2)) + c", {"A": 2, "c": 0}))
    tracemalloc.start()
    try:
        cost = run.cost({"A": (20_000, 20_000), "c": 2.0})  # the constant would take 3 GiB
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20
    assert cost.flops >= 20_000**2
    # and the estimate does not stand in for a real binding: a call still computes right
    A = np.arange(6.0).reshape(2, 3)
    assert float(run(A=A, c=1.0)) == pytest.approx(A.sum() * (np.sin(1) + np.exp(2)) + 1.0)
