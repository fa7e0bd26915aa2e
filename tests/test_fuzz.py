"""A short, seeded slice of the fuzz campaign (tests/fuzz): generated valid problems
checked end to end against finite differences and across evaluators, mutated
documentation examples and random strings refused cleanly or handled right."""

from __future__ import annotations

import pytest

from tests.fuzz.generate import generate
from tests.fuzz.mutate import corpus
from tests.fuzz.run import KINDS, campaign


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
