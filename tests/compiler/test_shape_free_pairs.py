"""Shape-free ``tc.to_python()`` computes ``tc.compile``'s shared pairs once (issue 26).

``tc.compile`` computes a contraction of two operands that several fused products share
once (:func:`tenscalc.compiler.program._shared_pairs`, op kind ``pair``).  The shape-free
module takes that decision from the same function, run over its plan at the probe lengths
(``codegen._binder_decisions``), and writes the pairs before their first reader and deletes
them after their last.  Counted (:mod:`tests.flops`), not timed: before, it recomputed each
shared contraction in every product reading it (the Rayleigh quotient's ``A x`` three times,
11 contraction calls against compile's 5; inv and det's ``x inv(A)`` twice, 4 against 3; the
batched robot arm's shared entrywise products: 1,195 entries written against 1,155).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tenscalc as tc
from tests.compiler.test_runner_costs import _calls, _macs, _snapshot, compile_counts
from tests.compiler.test_runners import CORPUS, MEMORY, _values, random_values
from tests.flops import Tally, counted, counting

#: the runner corpus' cases whose compiled program has pairs -> what the pairs save there
PAIR_CASES = {
    "Rayleigh quotient (low-rank GEMM, copies)": "contraction",  # x.x, x.(x A), A x
    "inv and det": "contraction",  # x inv(A)
    "robot arm Jacobian diagonals (batch)": "elementwise",  # products of sines and cosines
}

#: four axis classes of distinct lengths, every pair a matrix-vector or a dot product
CHAIN = "(x *(i,ij->j) A *(j,jk->k) C *(k,kl->l) D *(l,l->) w) / (x *(i,i->) x)"
CHAIN_ORDERS = {"x": 1, "A": 2, "C": 2, "D": 2, "w": 1}


def _chain() -> list:
    f = tc.parse(CHAIN, CHAIN_ORDERS)
    return [f, tc.gradient(f, "x"), tc.hessian(f, "x")]


def _chain_values(lengths: tuple[int, int, int, int], seed: int = 5) -> dict[str, np.ndarray]:
    i, j, k, m = lengths
    shapes = {"x": (i,), "A": (i, j), "C": (j, k), "D": (k, m), "w": (m,)}
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(0.5, 1.5, shape) for name, shape in shapes.items()}


def _network() -> list:
    """The 3-layer network's HVP (``benchmarks/classes.py``): its pair ``X vᵀ`` has as many
    axes as its operands, so whether compile shares it depends on the lengths."""
    from benchmarks.classes import NETWORK

    f = tc.parse(NETWORK, {"X": 2, "W1": 2, "W2": 2, "W3": 2, "Y": 2})
    return [tc.hvp(f, "W1", direction="v")]


def _network_values(m: int, n: int, h: int, g: int, o: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    shapes = {"X": (m, n), "W1": (h, n), "W2": (g, h), "W3": (o, g), "Y": (m, o), "v": (h, n)}
    return {name: rng.standard_normal(shape) / 4 for name, shape in shapes.items()}


def _module(exprs: list) -> tuple[str, dict]:
    source = tc.to_python(exprs)
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the source under test
    return source, namespace


def shape_free_counts(exprs: list, values: dict) -> tuple[Tally, tuple]:
    """The counts and results of the module shape-free ``tc.to_python(exprs)`` writes (its
    second call: the first searches and caches its contraction paths)."""
    with counting() as tally:
        namespace = _module(exprs)[1]
        arrays = {name: counted(value) for name, value in values.items()}
        namespace["f"](**arrays)
        tally.clear()
        results = tuple(namespace["f"](**arrays))
        return _snapshot(tally), results


def _pair_count(exprs: list, values: dict) -> int:
    program = tc.compile(exprs)._bind({name: np.shape(value) for name, value in values.items()})
    return sum(op.kind == "pair" for op in program.ops)


def _assert_values(exprs: list, results: tuple, values: dict) -> None:
    for k, (result, expr) in enumerate(zip(results, exprs)):
        expected = tc.evaluate(expr, values)
        np.testing.assert_allclose(np.asarray(result, dtype=float), expected, rtol=1e-10, atol=1e-12, err_msg=str(k))


def _assert_counts_like_compile(exprs: list, values: dict, kind: str) -> None:
    loop = compile_counts(exprs, values)["loop"][0]
    ours, results = shape_free_counts(exprs, values)
    assert not ours.leaks and not ours.unknown, (ours.leaks, ours.unknown)
    _assert_values(exprs, results, values)
    message = f"to_python(): {_calls(ours, kind)}\ncompile: {_calls(loop, kind)}"
    if kind == "contraction":  # call for call
        assert _macs(ours) == _macs(loop), message
    else:
        assert ours.total(kind) == loop.total(kind), message


@pytest.mark.parametrize("name", list(PAIR_CASES))
def test_corpus_pairs_are_computed_once(name):
    """At the corpus' lengths: as many contraction multiply-adds, call for call, as compile's
    program (entries written, for the robot arm's entrywise pairs)."""
    exprs, values = _values(name)
    assert _pair_count(exprs, values) > 0, "the case has shared pairs in compile"
    _assert_counts_like_compile(exprs, values, PAIR_CASES[name])


@pytest.mark.parametrize("name", [name for name in PAIR_CASES if name in MEMORY])
def test_corpus_pairs_are_computed_once_at_scale(name):
    """At the memory test's lengths (n = 600 and 400), where a repeated ``A x`` is 360,000 and
    160,000 multiply-adds."""
    exprs = CORPUS[name][0]()
    _assert_counts_like_compile(exprs, random_values(MEMORY[name]), PAIR_CASES[name])


@pytest.mark.parametrize("lengths", [(2, 3, 4, 5), (5, 4, 3, 2), (1, 6, 2, 7)])
def test_pairs_of_four_axis_classes(lengths):
    """Matrix-vector and dot-product pairs (the result has fewer axes than an operand: shared
    at every length), taken at the probe lengths, hold at distinct lengths far from them."""
    exprs, values = _chain(), _chain_values(lengths)
    assert _pair_count(exprs, values) >= 3
    _assert_counts_like_compile(exprs, values, "contraction")


@pytest.mark.parametrize("lengths", [(5, 4, 3, 2, 6), (2, 3, 4, 5, 1), (4, 2, 5, 3, 1), (40, 30, 20, 10, 5)])
def test_length_dependent_pairs_keep_the_values(lengths):
    """The network HVP's pair ``X vᵀ`` ((m, h) from (m, n) and (h, n)) is shared by compile
    where min(m, h) <= n; the module shares it as the probe lengths decide, at every length:
    the same values where compile does not share it (m, n, h = 4, 2, 5)."""
    exprs, values = _network(), _network_values(*lengths)
    results = _module(exprs)[1]["f"](**values)
    _assert_values(exprs, results, values)


def test_length_dependent_pairs_count_like_compile_where_it_shares_them():
    """At lengths where compile takes the probe's pairs (the benchmark's proportions), the
    module makes compile's multiply-adds, call for call."""
    exprs, values = _network(), _network_values(40, 30, 20, 10, 5)
    assert _pair_count(exprs, values) == 3
    _assert_counts_like_compile(exprs, values, "contraction")


def test_length_dependent_pairs_cost_no_more_where_compile_does_not_share_them():
    """At m, n, h = 400, 200, 300 compile does not share ``X vᵀ`` (120,000 entries, more than
    either operand); the module shares it as the probe decided: fewer multiply-adds, not more
    (122M against compile's 182M when measured)."""
    exprs, values = _network(), _network_values(400, 200, 300, 100, 10)
    assert _pair_count(exprs, values) == 0
    loop = compile_counts(exprs, values)["loop"][0]
    ours, results = shape_free_counts(exprs, values)
    assert not ours.leaks and not ours.unknown
    _assert_values(exprs, results, values)
    assert sum(_macs(ours)) <= sum(_macs(loop)), (sum(_macs(ours)), sum(_macs(loop)))


@pytest.mark.parametrize("name", list(PAIR_CASES))
def test_pairs_are_deleted_after_their_last_reader(name):
    """Every slot the module assigns (pairs included) is deleted or handed out: none held to
    the return (the peaks themselves: test_runners.test_shape_free_module_peaks_like_compile)."""
    exprs = CORPUS[name][0]()
    source = _module(exprs)[0]
    body = source[source.index("\ndef f(") :]
    assigned = set(re.findall(r"^    (_s\d+) = ", body, re.MULTILINE))
    deleted = {name for line in re.findall(r"^    del (.*)$", body, re.MULTILINE) for name in line.split(", ")}
    returned = set(re.findall(r"\b_s\d+\b", body[body.index("    return ") :]))
    program = tc.compile(exprs)._bind(CORPUS[name][1])
    pairs = {f"_s{op.slot}" for op in program.ops if op.kind == "pair"}
    assert pairs <= assigned, "the module writes compile's pairs, in compile's slots"
    assert assigned - returned <= deleted, sorted(assigned - returned - deleted)
