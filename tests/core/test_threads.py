"""Thread safety (issue 14, item 2): interning, compiled functions' shape caches
and deep parsing, each hammered by 8 threads at once, repeatedly."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import numpy as np
import pytest

import tenscalc as tc

# thread stress tests: rounds of 8 threads
pytestmark = pytest.mark.slow

THREADS = 8


@pytest.fixture(autouse=True)
def _frequent_switches():
    """Switch threads every few microseconds so that races show up in a short test."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _in_threads(work: Callable[[int], object]) -> list:
    """Run ``work(k)`` for k in 0..7 in 8 threads started together; re-raise any error."""
    barrier = threading.Barrier(THREADS)
    results: list = [None] * THREADS
    errors: list[BaseException] = []

    def body(k: int) -> None:
        barrier.wait()
        try:
            results[k] = work(k)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("round_", range(3))
def test_parsing_the_same_new_texts_in_8_threads_gives_identical_nodes(round_):
    # texts never parsed before (a fresh constant in each), so every thread races
    # to create the same new nodes
    texts = [f"sin(x *(i,i->) y + {round_ * 1000 + k}.5) *(,->) exp(y *(i,i->) x)" for k in range(300)]
    orders = {"x": 1, "y": 1}
    results = _in_threads(lambda k: [tc.parse(t, orders) for t in texts])
    for per_thread in results[1:]:
        assert all(a is b for a, b in zip(results[0], per_thread))


@pytest.mark.parametrize("round_", range(3))
def test_shared_compiled_functions_in_8_threads_with_cache_evictions(round_, rng):
    f = tc.parse("x *(i,ij->j) A *(j,j->) x + c", {"x": 1, "A": 2, "c": 0})
    run = tc.compile([f, tc.gradient(f, "x")])
    # 40 shapes for a 16-entry cache: threads evict each other's programs all the time
    cases = []
    for n in range(2, 42):
        x, A = rng.standard_normal(n), rng.standard_normal((n, n))
        cases.append((x, A, float(x @ A @ x) + 1.0, (A + A.T) @ x))

    def work(k: int) -> int:
        done = 0
        for _repeat in range(5):
            for x, A, value, grad in cases[5 * k :] + cases[: 5 * k]:  # threads start apart
                got_value, got_grad = run(x=x, A=A, c=1.0)
                np.testing.assert_allclose(got_value, value, rtol=1e-10)
                np.testing.assert_allclose(got_grad, grad, rtol=1e-10, atol=1e-12)
                done += 1
        return done

    assert _in_threads(work) == [5 * 40] * THREADS


def test_deep_parses_in_8_threads_leave_the_recursion_limit_alone():
    limit = sys.getrecursionlimit()
    depth = 3_000
    text = "(" * depth + "x" + " + 1)" * depth

    def work(k: int) -> bool:
        return all(tc.parse(text, {"x": 0}).order == 0 for _ in range(3))

    assert _in_threads(work) == [True] * THREADS
    assert sys.getrecursionlimit() == limit
    value = tc.evaluate(tc.parse(text, {"x": 0}), x=0.5)
    assert float(value) == 0.5 + depth
