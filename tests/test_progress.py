"""Logging and the progress display (tenscalc.progress): records per stage, quiet by default."""

from __future__ import annotations

import io
import logging

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.cli import main

LOSS = "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1"
ORDERS = {"X": 2, "y": 1, "w": 1}


def stages(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage().split(":")[0] for r in records if r.name == "tenscalc" and r.levelno == logging.INFO]


def test_every_stage_logs_its_sizes_and_time(caplog):
    caplog.set_level(logging.INFO, logger="tenscalc")
    f = tc.parse(LOSS, ORDERS)
    g = tc.gradient(f, "w")
    run = tc.compile([f, g])
    rng = np.random.default_rng(0)
    value, gradient = run(X=rng.standard_normal((5, 3)), y=rng.standard_normal(5), w=rng.standard_normal(3))
    assert stages(caplog.records) == ["parse", "differentiate", "simplify", "compile", "bind"]
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith(f"parse: {len(LOSS)} characters -> {tc.count_nodes(f)} nodes in ")
    assert messages[1].startswith(f"differentiate: by w: {tc.count_nodes(f)} nodes -> ")
    assert f"-> {tc.count_nodes(g)} nodes (" in messages[2]
    assert all(f"{name} {shape}" in messages[4] for name, shape in {"X": (5, 3), "y": (5,), "w": (3,)}.items())
    assert all(r.seconds >= 0 for r in caplog.records)
    assert gradient.shape == (3,)


def test_debug_records_say_when_a_stage_starts_and_each_simplifier_pass(caplog):
    caplog.set_level(logging.DEBUG, logger="tenscalc")
    tc.gradient(tc.parse(LOSS, ORDERS), "w")
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert "differentiate: by w: " in debug[1] and debug[1].endswith("...")
    passes = [m for m in debug if m.startswith("simplify: pass ")]
    summary = next(
        r.getMessage() for r in caplog.records if r.getMessage().startswith("simplify: ") and "->" in r.getMessage()
    )
    assert passes and f"({len(passes)} passes)" in summary


def test_nothing_is_printed_by_default(capfd):
    f = tc.parse(LOSS, ORDERS)
    tc.compile(tc.hessian(f, "w"))(X=np.ones((4, 2)), y=np.ones(4), w=np.zeros(2))
    assert capfd.readouterr() == ("", "")
    assert all(isinstance(h, logging.NullHandler) for h in logging.getLogger("tenscalc").handlers)


@pytest.mark.parametrize("call", ["derivative", "gradient", "hessian", "compile"])
def test_verbose_true_shows_the_stages_of_that_call_on_stderr(call, capfd):
    f = tc.parse(LOSS, ORDERS)
    capfd.readouterr()
    if call == "compile":
        run = tc.compile(f, verbose=True)
        run(X=np.ones((4, 2)), y=np.ones(4), w=np.zeros(2))  # binding is shown too
        expected = ["compile", "bind"]
    else:
        getattr(tc, call)(f, "w", verbose=True)
        expected = ["differentiate", "simplify"]
    out, err = capfd.readouterr()
    assert out == ""
    shown = [line.split(":")[1].strip() for line in err.splitlines()]
    assert all(line.startswith("tenscalc: ") for line in err.splitlines())
    assert [s for s in expected if s in shown] == expected
    tc.gradient(f, "w")  # the next call is quiet again
    assert capfd.readouterr() == ("", "")


def test_verbose_block_and_set_verbosity():
    stream = io.StringIO()
    f = tc.parse(LOSS, ORDERS)
    with tc.verbose(stream=stream, timing=False):
        tc.gradient(f, "w")
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("tenscalc: differentiate: by w: ") and " s" not in lines[0]
    tc.gradient(f, "w")
    assert stream.getvalue().splitlines() == lines  # the block ended: quiet again
    tc.set_verbosity("debug", stream=stream)
    try:
        tc.gradient(f, "w")
    finally:
        tc.set_verbosity(False)
    assert any(line.startswith("tenscalc: simplify: pass 1") for line in stream.getvalue().splitlines())
    assert logging.getLogger("tenscalc").level == logging.NOTSET  # left as it was found
    with pytest.raises(tc.TensCalcError, match="verbosity must be"):
        tc.set_verbosity("loud")


def test_cli_verbose_flag(capsys):
    problem = f"declare X 2 y 1 w 1 expression {LOSS} derivative wrt w"
    assert main([problem]) == 0
    quiet = capsys.readouterr()
    assert main(["--verbose", problem]) == 0
    loud = capsys.readouterr()
    assert loud.out == quiet.out and quiet.err == ""  # the answer is the same; the log is on stderr
    shown = [line.split(":")[1].strip() for line in loud.err.splitlines()]
    assert shown[:3] == ["parse", "differentiate", "simplify"]
    assert main(["-vv", problem]) == 0
    assert "tenscalc: simplify: pass 1" in capsys.readouterr().err
