"""A short, seeded slice of the fuzz campaign (tests/fuzz): generated valid problems
checked end to end against finite differences and across evaluators, mutated
documentation examples and random strings refused cleanly or handled right."""

from __future__ import annotations

import pytest

from tests.fuzz.generate import generate
from tests.fuzz.mutate import corpus
from tests.fuzz.run import KINDS, Options, Summary, _Case, _Stop, campaign


def test_the_corpus_holds_the_documented_examples():
    texts = [text for text, _ in corpus()]
    assert len(texts) > 100
    assert any("declare" in text for text in texts)


def test_generated_problems_are_deterministic_and_varied():
    assert generate(5) == generate(5)
    texts = {generate(seed).text for seed in range(50)}
    assert len(texts) > 40
    assert any("*(" in t for t in texts) and any("inv(" in t or "det(" in t for t in texts)


@pytest.mark.slow  # a fuzz campaign of 150 cases
def test_a_seeded_slice_finds_nothing():
    summary = campaign(cases=150, seed=0, case_seconds=60)
    assert all(summary.cases[kind] == 50 for kind in KINDS)
    assert summary.parsed["generated"] == 50  # every generated problem is valid
    assert summary.parsed["mutated"] > 0
    assert not summary.findings, summary.report()


def test_a_crash_is_reported_where_it_happens_not_retried_away():
    """A stage that crashes is a finding, even when running it again would pass: a
    compiled function whose fused form fails to be written runs its plain loop on the
    next call, and retrying the call had hidden such a crash."""
    calls = []

    def fails_once():
        calls.append(1)
        if len(calls) == 1:
            raise AssertionError("fails the first time only")
        return 1.0

    summary = Summary()
    case = _Case("generated:0", "x", {"x": 0}, summary, strict=True)
    with pytest.raises(_Stop):
        case.must("second call", fails_once)
    assert len(calls) == 1
    assert [(f.kind, f.stage) for f in summary.findings] == [("crash", "second call")]


@pytest.mark.slow  # 90 cases, each compiled for three more libraries
def test_a_seeded_slice_agrees_on_jax_torch_and_dask():
    for module in ("jax", "torch", "dask"):
        pytest.importorskip(module)
    summary = campaign(cases=90, seed=1, case_seconds=60, options=Options(("jax", "torch", "dask")))
    assert summary.parsed["generated"] == 30
    assert not summary.findings, summary.report()


@pytest.mark.slow  # 2 x 90 cases
@pytest.mark.parametrize("first_length", [1, 0])
def test_a_seeded_slice_agrees_with_an_axis_of_length_one_or_zero(first_length):
    summary = campaign(cases=90, seed=2, case_seconds=60, options=Options(first_length=first_length))
    assert summary.parsed["generated"] == 30
    assert not summary.findings, summary.report()
