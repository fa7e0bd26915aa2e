"""tenscalc's dask Gram Hessian against hand-written dask, in worker CPU and peak worker memory (issue 30).

    python benchmarks/dask_gram.py [--n 16000] [--d 1000] [--rows 1000] [--repeats 5] [--dist-repeats 11]
        [--weighted] [--tracemalloc] [--no-sequential] [--out FILE]

The Hessian of ``norm2(X*w - y)^2`` by ``w`` is ``2 XᵀX``; tenscalc compiles it with
``backend="dask"`` and is compared with what a dask user writes by hand, ``2 * (X.T @ X)``
(the reference of the ratios), and with ``2 * da.tensordot(X, X, axes=(0, 0))``, what
tenscalc built before its contractions went through ``tenscalc.compiler.dask_einsum``.
With ``--weighted``: the Hessian ``Xᵀ diag(exp(Xw)) X + 2I`` of ``Σ exp(Xw) + w·w``
against ``(X.T * da.exp(X @ w)) @ X + 2 * da.eye(d)`` and the same through tensordot.  X is n x d in blocks of
``rows`` x d.  Two settings, each repetition computing every contender once in an order
rotated from one repetition to the next:

* sequential: dask's synchronous scheduler in this process (one task at a time, in
  dask.order's order, one BLAS thread): CPU seconds (``time.process_time``), and the peak
  of the bytes ``tracemalloc`` traces during one computation (NumPy reports its array
  buffers to tracemalloc; with one task at a time nothing but the graph decides it, so it
  is the same on every run);
* distributed: a two-worker ``dask.distributed.LocalCluster`` (one thread each; the nanny
  pins BLAS to one thread) with X persisted on it before anything is measured.  For each
  worker: CPU seconds, the process's user + system time over the computation (``psutil``;
  the worker's scheduling work included), and the peak resident size above the size just
  before the computation (Linux's VmHWM, reset through /proc/self/clear_refs: exact, no
  sampling); with
  ``--tracemalloc`` also repetitions with tracemalloc running in the workers (peak traced
  bytes).  Which worker runs which task, and when, moves these peaks from run to run by
  whole d x d partial sums: take medians of many repetitions.

The result stays where it is computed (released, not fetched).  Also printed: the task
count and the layers of each graph.  Medians; the ratios are to the hand-written graph.  Say
how loaded the machine was when quoting the numbers (the load averages are printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

# one BLAS thread, as the nanny gives the workers, for the runs in this process too
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

# ------------------------------------------------------------ in the workers


def _status(field: str) -> int:
    """A field of /proc/self/status in bytes (VmRSS: resident now, VmHWM: its peak)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def _start(dask_worker=None) -> None:
    """Reset this process's peak resident size to the size now (Linux: writing 5 to
    /proc/self/clear_refs) and note it and the CPU time."""
    import psutil

    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")
    dask_worker._tenscalc_start = (_status("VmRSS"), sum(psutil.Process().cpu_times()[:2]))


def _stop(dask_worker=None) -> dict:
    import psutil

    base, cpu = dask_worker._tenscalc_start
    return {"cpu": sum(psutil.Process().cpu_times()[:2]) - cpu, "peak": _status("VmHWM") - base}


def _tracemalloc(start: bool) -> int:
    import tracemalloc

    if start:
        tracemalloc.start()
        tracemalloc.reset_peak()
        return 0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


# ------------------------------------------------------------ on the client


def contenders(d: int, weighted: bool = False) -> dict[str, Callable]:
    """The graphs compared, each a function of X and y: tenscalc's first, the reference second."""
    import dask.array as da

    import tenscalc as tc

    if weighted:  # the Hessian X^T diag(exp(Xw)) X + 2I of sum(exp(Xw)) + w.w, w = 1/d
        f = tc.parse("exp(X *(ij,j->i) w) *(i,i->) 1 + w *(i,i->) w", {"X": 2, "w": 1})
        compiled = tc.compile(tc.hessian(f, "w"), backend="dask")
        w = np.full(d, 1 / d)

        def ridge() -> Any:
            return 2 * da.eye(d, chunks=d)

        return {
            "tenscalc": lambda X, y: compiled(X=X, w=w),
            "(X.T*e)@X+2I": lambda X, y: (X.T * da.exp(X @ w)) @ X + ridge(),
            "tensordot": lambda X, y: da.tensordot(X * da.exp(X @ w)[:, None], X, axes=(0, 0)) + ridge(),
        }
    compiled = tc.compile(tc.hessian(tc.parse("norm2(X*w - y)^2"), "w"), backend="dask")
    w = np.zeros(d)
    return {
        "tenscalc": lambda X, y: compiled(X=X, w=w, y=y),
        "2*(X.T@X)": lambda X, y: 2 * (X.T @ X),
        # what tenscalc built before: dask's tensordot, whose partial sums are concatenated
        "2*tensordot": lambda X, y: 2 * da.tensordot(X, X, axes=(0, 0)),
    }


def measure(client, build: Callable, X, y, traced: bool) -> dict:
    from distributed import wait

    H = build(X, y)
    client.run(_tracemalloc, True) if traced else None
    client.run(_start)
    future = client.compute(H)
    wait(future)
    stats = client.run(_stop)
    peaks = client.run(_tracemalloc, False) if traced else {}
    future.release()
    del future
    out = {
        "cpu_s": sum(s["cpu"] for s in stats.values()),
        "peak_rss_mb": max(s["peak"] for s in stats.values()) / 2**20,
    }
    if traced:
        out["peak_traced_mb"] = max(peaks.values()) / 2**20
    return out


def graph_summary(H) -> dict:
    layers = {name.rsplit("-", 1)[0]: len(layer) for name, layer in H.dask.layers.items()}
    return {"tasks": len(H.__dask_graph__()), "layers": layers}


def sequential(builds: dict[str, Callable], X, y, traced: bool) -> dict[str, float]:
    """One computation of each graph by dask's synchronous scheduler in this process (one
    task at a time, in dask.order's order): CPU seconds, or with ``traced`` the peak of the
    bytes tracemalloc traces above those held before (deterministic: no timing decides it)."""
    import tracemalloc

    out = {}
    for name, build in builds.items():
        H = build(X, y)
        if traced:
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            result = H.compute(scheduler="sync")
            out[name] = (tracemalloc.get_traced_memory()[1] - base) / 2**20
            tracemalloc.stop()
        else:
            start = time.process_time()
            result = H.compute(scheduler="sync")
            out[name] = time.process_time() - start
        del result
    return out


def rotated(names: list[str], repeat: int) -> list[str]:
    shift = repeat % len(names)
    return names[shift:] + names[:shift]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=16000)
    parser.add_argument("--d", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1000, help="rows of X per block")
    parser.add_argument("--repeats", type=int, default=5, help="sequential repetitions")
    parser.add_argument("--dist-repeats", type=int, default=11, help="repetitions on the cluster (noisier)")
    parser.add_argument("--weighted", action="store_true", help="the Hessian X^T diag(exp(Xw)) X + 2I instead")
    parser.add_argument("--tracemalloc", action="store_true", help="also repetitions with tracemalloc in the workers")
    parser.add_argument("--no-sequential", action="store_true", help="leave out the synchronous-scheduler runs")
    parser.add_argument("--out", help="write the results as JSON")
    args = parser.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster, wait

    builds = contenders(args.d, args.weighted)
    names = list(builds)
    report: dict = {"n": args.n, "d": args.d, "rows": args.rows, "repeats": args.repeats, "weighted": args.weighted}
    report["dist_repeats"] = args.dist_repeats
    report["load_average_before"] = os.getloadavg()

    if not args.no_sequential:
        X = da.random.default_rng(0).random((args.n, args.d), chunks=(args.rows, args.d)).persist(scheduler="sync")
        y = da.random.default_rng(1).random(args.n, chunks=args.rows).persist(scheduler="sync")
        report["graphs"] = {name: graph_summary(builds[name](X, y)) for name in names}
        corners = {name: builds[name](X, y)[:3, :3].compute(scheduler="sync") for name in names}
        report["max_abs_difference"] = max(float(np.abs(c - corners[names[1]]).max()) for c in corners.values())
        sequential(builds, X, y, traced=False)  # warm-up
        report["sequential_peak_mb"] = sequential(builds, X, y, traced=True)
        cpu: dict[str, list[float]] = {name: [] for name in names}
        for repeat in range(args.repeats):
            order = {name: builds[name] for name in rotated(names, repeat)}
            for name, seconds in sequential(order, X, y, traced=False).items():
                cpu[name].append(seconds)
        report["sequential_cpu_s"] = cpu
        del X, y

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        X = da.random.default_rng(0).random((args.n, args.d), chunks=(args.rows, args.d)).persist()
        y = da.random.default_rng(1).random(args.n, chunks=args.rows).persist()
        wait([X, y])
        for name in names:  # warm-up: imports and BLAS buffers in the workers
            measure(client, builds[name], X, y, traced=False)
        runs: dict[str, list[dict]] = {name: [] for name in names}
        for traced in [False, True] if args.tracemalloc else [False]:
            for repeat in range(args.dist_repeats):
                for name in rotated(names, repeat):
                    runs[name].append(measure(client, builds[name], X, y, traced) | {"traced": traced})
        report["distributed"] = runs
    report["load_average_after"] = os.getloadavg()
    report["medians"] = medians(report, names)
    print_report(report, names, args)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)


COLUMNS = (
    ("seq CPU s", "sequential_cpu_s"),
    ("seq peak MB", "sequential_peak_mb"),
    ("dist CPU s", "cpu_s"),
    ("dist RSS MB", "peak_rss_mb"),
    ("dist traced MB", "peak_traced_mb"),
)


def medians(report: dict, names: list[str]) -> dict[str, dict[str, float | None]]:
    table: dict[str, dict[str, float | None]] = {}
    for name in names:
        row: dict[str, float | None] = {}
        if "sequential_cpu_s" in report:
            row["sequential_cpu_s"] = statistics.median(report["sequential_cpu_s"][name])
            row["sequential_peak_mb"] = report["sequential_peak_mb"][name]
        for key, traced in (("cpu_s", False), ("peak_rss_mb", False), ("peak_traced_mb", True)):
            # tracemalloc slows the workers: CPU and resident size from the runs without it
            values = [r[key] for r in report["distributed"][name] if r["traced"] == traced and key in r]
            row[key] = statistics.median(values) if values else None
        table[name] = row
    return table


def print_report(report: dict, names: list[str], args: argparse.Namespace) -> None:
    print(f"X {args.n} x {args.d} in blocks of {args.rows} rows, {args.repeats} + {args.dist_repeats} repetitions")
    print(f"load average before {report['load_average_before']}, after {report['load_average_after']}")
    if "graphs" in report:
        print(f"largest difference of a corner entry from {names[1]}: {report['max_abs_difference']:.2e}")
        for name in names:
            graph = report["graphs"][name]
            print(f"{name:>12}: {graph['tasks']} tasks, layers {graph['layers']}")
    print("medians (seq: synchronous scheduler in one process; dist: the two workers' CPU summed, peak of either)")
    print(f"{'':>12}  " + " ".join(f"{title:>14}" for title, _ in COLUMNS) + f"   ratios to {names[1]}")
    reference = report["medians"][names[1]]
    for name in names:
        row = report["medians"][name]
        cells = [f"{row[key]:>14.2f}" if row.get(key) is not None else f"{'-':>14}" for _, key in COLUMNS]
        ratios = [f"{row[key] / reference[key]:.2f}" for _, key in COLUMNS if row.get(key) is not None]
        print(f"{name:>12}: {' '.join(cells)}   {' / '.join(ratios)}")
    print("quartiles on the cluster (the peaks move by whole d x d blocks with where and when tasks run):")
    for name in names:
        runs = [r for r in report["distributed"][name] if not r["traced"]]
        spread = {key: statistics.quantiles([r[key] for r in runs], n=4) for key in ("cpu_s", "peak_rss_mb")}
        print(
            f"{name:>12}: CPU s {spread['cpu_s'][0]:.2f} / {spread['cpu_s'][2]:.2f}, "
            f"RSS MB {spread['peak_rss_mb'][0]:.0f} / {spread['peak_rss_mb'][2]:.0f}"
        )


if __name__ == "__main__":
    main()
