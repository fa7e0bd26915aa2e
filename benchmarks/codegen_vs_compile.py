"""Generated code (``tc.to_python``) against compiled code (``tc.compile``).

For each benchmark problem of ``problems.py``: value, gradient and Hessian in one
call, at a small size and at the benchmark size; median of repeated calls after a
warm-up.  Run from the repository root: ``python benchmarks/codegen_vs_compile.py``.
"""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import tenscalc as tc  # noqa: E402
from benchmarks.problems import PROBLEMS, logreg_data, matfac_data, mlp_data, quad_data  # noqa: E402

SMALL = {
    "quadratic": lambda: quad_data(20),
    "logreg": lambda: logreg_data(200, 20),
    "matfac": lambda: matfac_data(12, 16, 4),
    "mlp": lambda: mlp_data(30, 20, 5),
}
BENCH = {"quadratic": quad_data, "logreg": logreg_data, "matfac": matfac_data, "mlp": mlp_data}


def median_time(fn, data, budget: float = 1.0, most: int = 200) -> float:
    fn(**data)
    times = []
    start = time.perf_counter()
    while len(times) < most and (len(times) < 5 or time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        fn(**data)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _load(source: str):
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    return namespace["generated"]


def main() -> None:
    columns = ["compile ms", "shapes= ms", "ratio", "generic ms", "ratio"]
    print(f"{'problem':10} {'size':6} " + " ".join(f"{c:>{6 if c == 'ratio' else 11}}" for c in columns))
    for name, problem in PROBLEMS.items():
        f = tc.parse(problem["src"], problem["orders"])
        g = tc.gradient(f, problem["wrt"])
        h = tc.derivative(g, problem["wrt"])
        compiled = tc.compile([f, g, h])
        for size, make in (("small", SMALL[name]), ("bench", BENCH[name])):
            data = make()
            shapes = {k: np.shape(v) for k, v in data.items()}
            planned = _load(tc.to_python([f, g, h], name="generated", shapes=shapes))
            generic = _load(tc.to_python([f, g, h], name="generated"))  # any shape, through opt_einsum
            for function in (planned, generic):
                for got, want in zip(function(**data), compiled(**data)):
                    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
            tc_ms = median_time(compiled, data) * 1e3
            planned_ms = median_time(planned, data) * 1e3
            generic_ms = median_time(generic, data) * 1e3
            print(
                f"{name:10} {size:6} {tc_ms:11.4f} {planned_ms:11.4f} {planned_ms / tc_ms:6.2f}"
                f" {generic_ms:11.4f} {generic_ms / tc_ms:6.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
