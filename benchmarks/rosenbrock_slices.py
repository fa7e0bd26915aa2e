"""The Rosenbrock function written with slices: compiled tenscalc vs NumPy closed forms.

    python benchmarks/rosenbrock_slices.py [--sizes 100,1000,3000] [--repeats 7]

For each size n, times ``tc.compile`` of the value, gradient and Hessian of the
chained Rosenbrock function ``sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)``
against SciPy's closed forms ``rosen``, ``rosen_der`` and ``rosen_hess`` (NumPy
code), checks that they agree, and prints the ratio (tenscalc / closed form; the
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


def main(argv: list[str] | None = None) -> list[dict]:
    from scipy.optimize import rosen, rosen_der, rosen_hess

    import tenscalc as tc

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,3000")
    parser.add_argument("--repeats", type=int, default=25)
    args = parser.parse_args(argv)
    f = tc.parse("sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)")
    compiled = {
        "value": (tc.compile(f), rosen),
        "gradient": (tc.compile(tc.gradient(f, "x")), rosen_der),
        "Hessian": (tc.compile(tc.hessian(f, "x")), rosen_hess),
    }
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        x = np.random.default_rng(n).uniform(-2, 2, n)
        for what, (fn, closed) in compiled.items():
            np.testing.assert_allclose(fn(x=x), closed(x), rtol=1e-12, atol=1e-9)
            ours, theirs = paired_times(lambda fn=fn, x=x: fn(x=x), lambda closed=closed, x=x: closed(x), args.repeats)
            rows.append({"n": n, "what": what, "tenscalc_s": ours, "closed_form_s": theirs, "ratio": ours / theirs})
            print(
                f"n={n:5d} {what:9s} tenscalc {ours * 1e3:9.3f} ms   closed form {theirs * 1e3:9.3f} ms   "
                f"ratio {ours / theirs:6.2f}"
            )
    return rows


if __name__ == "__main__":
    main()
