"""Symbolic time of huge DAGs, split by phase (issue #13: linear-time compile).

Two families, each doubled:

* ``sum``: the gradient of a sum of n quadratic forms
  ``sum_k (x + k) *(i,ij->j) A *(j,j->) (x + k)`` (n distinct terms);
* ``nest``: the gradient of ``sum_i sin(sin(...sin(x_i)))``, n deep;
* ``sinsum``: ``sum_k (k+1) sin((k+1) x)`` itself (the sum of ``run_classes.py``'s sweep).

Each phase is reported in wall-clock seconds and in CPU seconds of this process
(``... cpu``), which swing less when other processes share the cores.

Phases: ``build`` (the expression, with the builder), ``derivative`` (the reverse
sweep, unsimplified), ``simplify``, ``compile`` (``tc.compile``: the plan and the
axis graphs) and ``first call`` (binding shapes: contraction paths, kernels, then
the arrays).  Compile and first call are timed on the *unsimplified* derivative
too (``compile raw`` / ``call raw``): the simplifier may shrink the DAG, and the
compiler must be fast on whatever it is given.

    python benchmarks/compile_scaling.py                    # both families, default sizes
    python benchmarks/compile_scaling.py sum 12500 25000    # one family, chosen sizes
    python benchmarks/compile_scaling.py --no-simplify nest 5000
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import numpy as np

import tenscalc as tc
from tenscalc.frontend import builder as B

SIZES = {
    "sum": (12500, 25000, 50000, 100000),
    "nest": (2500, 5000, 10000, 20000),
    "sinsum": (12500, 25000, 50000, 100000),
}


def build_sum(n: int):
    x, a = B.var("x", 1), B.var("A", 2)
    f = None
    for k in range(n):
        shifted = B.add(x, float(k))
        q = B.einsum("i,ij,j->", shifted, a, shifted)
        f = q if f is None else B.add(f, q)
    return f


def build_nest(n: int):
    x = B.var("x", 1)
    e = x
    for _ in range(n):
        e = B.sin(e)
    return B.einsum("i,i->", e, B.constant(1.0, 1))


def build_sinsum(n: int):
    """``sum_k (k+1) sin((k+1) x)``, the sum of ``benchmarks/run_classes.py``'s sweep:
    compiled as it is (no derivative)."""
    x = B.var("x", 1)
    e = B.multiply(1.0, x)
    for k in range(1, n):
        e = B.add(e, B.multiply(float(k + 1), B.sin(B.multiply(float(k + 1), x))))
    return e


BUILDERS = {"sum": build_sum, "nest": build_nest, "sinsum": build_sinsum}


def inputs(family: str) -> dict:
    x = np.linspace(-0.5, 0.5, 3)
    if family == "sum":
        return {"x": x, "A": np.arange(9.0).reshape(3, 3) / 9}
    return {"x": x}


def measure(family: str, n: int, simplify: bool) -> dict:
    row: dict = {"family": family, "n": n}

    def timed(name, fn, *args):
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        out = fn(*args)
        # wall-clock seconds, and this process's CPU seconds (steadier on a shared machine)
        row[name] = time.perf_counter() - start
        row[name + " cpu"] = time.process_time() - cpu
        return out

    f = timed("build", BUILDERS[family], n)
    if family == "sinsum":  # compiled as built
        g = f
    else:
        g = timed("derivative", lambda: tc.derivative(f, "x", simplify=False))
    row["nodes"] = tc.count_nodes(g)
    run = timed("compile raw", tc.compile, g)
    timed("call raw", lambda: run(**inputs(family)))
    if simplify and family != "sinsum":
        s = timed("simplify", tc.simplify, g)
        row["nodes simplified"] = tc.count_nodes(s)
        run = timed("compile", tc.compile, s)
        timed("call", lambda: run(**inputs(family)))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("family", nargs="?", choices=sorted(SIZES))
    parser.add_argument("sizes", nargs="*", type=int)
    parser.add_argument("--no-simplify", action="store_true")
    args = parser.parse_args()
    families = [args.family] if args.family else sorted(SIZES)
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    for family in families:
        for n in args.sizes or SIZES[family]:
            row = measure(family, n, not args.no_simplify)
            text = "  ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
            print(text, f"(load {os.getloadavg()[0]:.2f})", flush=True)


if __name__ == "__main__":
    main()
