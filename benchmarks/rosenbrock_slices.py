"""The Rosenbrock function written with slices: compiled tenscalc vs NumPy closed forms.

    python benchmarks/rosenbrock_slices.py [--sizes 100,1000,3000] [--repeats 7]

For each size n, times ``tc.compile`` of the value, gradient and Hessian of the
chained Rosenbrock function ``sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)``
against SciPy's closed forms ``rosen``, ``rosen_der`` and ``rosen_hess`` (NumPy
code), checks that they agree, and prints the ratio (tenscalc / closed form; the
median of ``--repeats`` runs after a warm-up call).  Say how loaded the machine
was when you quote the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up: binding, path search
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> list[dict]:
    from scipy.optimize import rosen, rosen_der, rosen_hess

    import tenscalc as tc

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,3000")
    parser.add_argument("--repeats", type=int, default=7)
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
            ours = median_time(lambda fn=fn, x=x: fn(x=x), args.repeats)
            theirs = median_time(lambda closed=closed, x=x: closed(x), args.repeats)
            rows.append({"n": n, "what": what, "tenscalc_s": ours, "closed_form_s": theirs, "ratio": ours / theirs})
            print(
                f"n={n:5d} {what:9s} tenscalc {ours * 1e3:9.3f} ms   closed form {theirs * 1e3:9.3f} ms   "
                f"ratio {ours / theirs:6.2f}"
            )
    return rows


if __name__ == "__main__":
    main()
