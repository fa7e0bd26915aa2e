"""The Rosenbrock function written with slices: compiled tenscalc vs NumPy closed forms.

    python benchmarks/rosenbrock_slices.py [--sizes 100,1000,3000] [--repeats 25] [--family chained,extended]

For each size n, times ``tc.compile`` of the value, gradient and Hessian of the
chained Rosenbrock function ``sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)``
against SciPy's closed forms ``rosen``, ``rosen_der`` and ``rosen_hess`` (NumPy
code), and of the extended one (independent pairs, ``x[1::2]`` and ``x[::2]``)
against hand-written NumPy in the same style, checks that they agree, and prints the ratio (tenscalc / closed form; the
medians of ``--repeats`` alternating batches of calls after a warm-up call).  Say how loaded the machine
was when you quote the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def paired_times(ours, theirs, repeats: int) -> tuple[float, float]:
    """Median seconds of ``ours`` and ``theirs``, timed alternately.

    Alternating the two (rather than timing one, then the other) makes the
    ratio robust to the load of a shared machine drifting during the run.
    Each sample is the mean of a batch of calls long enough (~1 ms) for the
    timer's resolution not to matter on 10 µs calls.
    """
    ours()  # warm-up: binding, path search
    theirs()
    start = time.perf_counter()
    theirs()
    batch = max(1, int(1e-3 / max(time.perf_counter() - start, 1e-7)))
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for fn, times in zip((ours, theirs), samples):
            start = time.perf_counter()
            for _ in range(batch):
                fn()
            times.append((time.perf_counter() - start) / batch)
    return statistics.median(samples[0]), statistics.median(samples[1])


def extended_value(x: np.ndarray) -> float:
    """The extended Rosenbrock function (independent pairs), hand-written NumPy."""
    odd, even = x[1::2], x[::2]
    return np.sum(100.0 * (odd - even**2) ** 2 + (1 - even) ** 2)


def extended_der(x: np.ndarray) -> np.ndarray:
    odd, even = x[1::2], x[::2]
    der = np.empty_like(x)
    der[::2] = -400.0 * even * (odd - even**2) - 2 * (1 - even)
    der[1::2] = 200.0 * (odd - even**2)
    return der


def extended_hess(x: np.ndarray) -> np.ndarray:
    """Block diagonal: each 2x2 block written through strided diagonal views."""
    odd, even = x[1::2], x[::2]
    n = len(x)
    hess = np.zeros((n, n))
    diagonal = hess.reshape(-1)[:: n + 1]  # view of the main diagonal
    diagonal[::2] = 1200.0 * even**2 - 400.0 * odd + 2
    diagonal[1::2] = 200.0
    hess.reshape(-1)[1 :: 2 * (n + 1)] = -400.0 * even  # (2i, 2i + 1)
    hess.reshape(-1)[n :: 2 * (n + 1)] = -400.0 * even  # (2i + 1, 2i)
    return hess


def main(argv: list[str] | None = None) -> list[dict]:
    from scipy.optimize import rosen, rosen_der, rosen_hess

    import tenscalc as tc

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,3000")
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--family", default="chained,extended")
    args = parser.parse_args(argv)
    families = {
        "chained": (
            "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)",
            (rosen, rosen_der, rosen_hess),
        ),
        "extended": (
            "sum(100*(x[1::2] - x[::2].^2).^2 + (1 - x[::2]).^2)",
            (extended_value, extended_der, extended_hess),
        ),
    }
    rows = []
    for family in args.family.split(","):
        text, closed_forms = families[family]
        f = tc.parse(text)
        ours_fns = (tc.compile(f), tc.compile(tc.gradient(f, "x")), tc.compile(tc.hessian(f, "x")))
        for n in (int(s) for s in args.sizes.split(",")):
            x = np.random.default_rng(n).uniform(-2, 2, n)
            for what, fn, closed in zip(("value", "gradient", "Hessian"), ours_fns, closed_forms):
                np.testing.assert_allclose(fn(x=x), closed(x), rtol=1e-12, atol=1e-9)
                ours, theirs = paired_times(
                    lambda fn=fn, x=x: fn(x=x), lambda closed=closed, x=x: closed(x), args.repeats
                )
                rows.append(
                    {"family": family, "n": n, "what": what, "tenscalc_s": ours, "closed_form_s": theirs,
                     "ratio": ours / theirs}
                )  # fmt: skip
                print(
                    f"{family:8s} n={n:5d} {what:9s} tenscalc {ours * 1e3:9.3f} ms   "
                    f"closed form {theirs * 1e3:9.3f} ms   ratio {ours / theirs:6.2f}"
                )
    return rows


if __name__ == "__main__":
    main()
