"""Time the problem classes of issue #13 (``benchmarks/classes.py``) side by side.

For every class, in one process and float64: tenscalc (symbolic time, first
call, later calls), the hand-written NumPy closed form, ``jax.jit`` of the same
transformation and ``torch.func``; all results are checked to agree.  Each
thread count runs in its own child process (BLAS, XLA and PyTorch read their
thread settings at start-up), pinned to that many cores (JAX does not keep to one
thread by its settings alone).  A symbolic-scaling sweep doubles model depth,
nesting depth and the number of terms of a sum.

Usage::

    python benchmarks/run_classes.py --out benchmarks/results/classes.json
    python benchmarks/run_classes.py --from benchmarks/results/classes.json --plot docs/img/classes.png
    python benchmarks/run_classes.py --quick          # 1 thread, few repeats, no sweep
    python benchmarks/run_classes.py --keep-freed-memory ...   # glibc keeps freed heap (tc.keep_freed_memory)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _max_rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def _flatten(result) -> np.ndarray:
    if isinstance(result, (list, tuple)):
        return np.concatenate([np.asarray(r, dtype=float).ravel() for r in result])
    return np.asarray(result, dtype=float).ravel()


def run_child(threads: int, repeats: int, budget: float, only: list[str] | None, sweep: bool) -> dict:
    """Everything measured at one thread count (this process's BLAS is already set)."""
    import tenscalc as tc
    from benchmarks import classes
    from benchmarks.run_benchmarks import measure, optional

    jax = optional("jax")
    torch = optional("torch")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
    if torch is not None:
        torch.set_num_threads(threads)
    rows = {}
    for case in classes.cases():
        if only and case.name not in only:
            continue
        data = case.data()
        row: dict = {"what": case.what}
        start = time.perf_counter()
        exprs = case.build(tc)
        built = time.perf_counter()
        compiled = tc.compile(exprs)
        done = time.perf_counter()
        row["symbolic"] = {"derivative": built - start, "compile": done - built}
        shapes = {k: v.shape for k, v in data.items() if k in compiled.inputs}
        cost = compiled.cost(shapes)
        row["cost"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(cost).items()}
        values = {k: v for k, v in data.items() if k in compiled.inputs}
        start = time.perf_counter()
        got = compiled(values)
        row["first_call"] = time.perf_counter() - start
        row["tenscalc"] = measure(lambda: compiled(values), repeats, budget)  # noqa: B023 - called at once
        expected = case.numpy(data)
        row["closed_form"] = measure(lambda: case.numpy(data), repeats, budget)  # noqa: B023 - called at once
        row["error_vs_closed"] = _max_rel(_flatten(got), _flatten(expected))
        if jax is not None:
            fn, args = case.jax(jax, jnp, data)
            args = jax.device_put(args)
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            row["jax_first_call"] = time.perf_counter() - start
            row["jax"] = measure(lambda: jax.block_until_ready(fn(*args)), repeats, budget)  # noqa: B023
            row["error_vs_jax"] = _max_rel(_flatten(got), _flatten(jax.tree_util.tree_leaves(fn(*args))))
        if torch is not None:
            call = case.torch(torch, data)
            row["torch"] = measure(call, repeats, budget)
            out = call()
            leaves = [o.numpy() for o in (out if isinstance(out, (tuple, list)) else [out])]
            row["error_vs_torch"] = _max_rel(_flatten(got), _flatten(leaves))
        print(f"[{threads} thread(s)] {case.name}: " + _summary(row), flush=True)
        rows[case.name] = row
    result = {"threads": threads, "cases": rows}
    if sweep:
        result["sweep"] = symbolic_sweep(tc, classes)
    return result


def symbolic_sweep(tc, classes) -> dict:
    """Symbolic time (derivative + compile) as the problem doubles."""
    from tenscalc.frontend import builder as B

    out: dict = {"deep_gradients": [], "nesting": [], "sum_terms": []}
    for layers in (4, 8, 16, 32):
        start = time.perf_counter()
        exprs = classes.deep_build(tc, layers)
        mid = time.perf_counter()
        tc.compile(exprs)
        end = time.perf_counter()
        out["deep_gradients"].append({"size": layers, "derivative": mid - start, "compile": end - mid})
        print(f"  sweep deep gradients L={layers}: {mid - start:.2f} + {end - mid:.2f} s", flush=True)
    for depth in (2500, 5000, 10000):
        x = B.var("x", 1)
        e = x
        for _ in range(depth):
            e = B.sin(e)
        start = time.perf_counter()
        g = tc.gradient(B.einsum("i,i->", e, B.constant(1.0, 1)), "x")
        mid = time.perf_counter()
        tc.compile(g)
        end = time.perf_counter()
        out["nesting"].append({"size": depth, "derivative": mid - start, "compile": end - mid})
        print(f"  sweep nesting {depth}: {mid - start:.2f} + {end - mid:.2f} s", flush=True)
    for terms in (25000, 50000, 100000):
        x = B.var("x", 1)
        e = B.multiply(1.0, x)
        for k in range(1, terms):
            e = B.add(e, B.multiply(float(k + 1), B.sin(B.multiply(float(k + 1), x))))
        start = time.perf_counter()
        tc.compile(e)
        end = time.perf_counter()
        out["sum_terms"].append({"size": terms, "derivative": 0.0, "compile": end - start})
        print(f"  sweep sum of {terms} terms: compile {end - start:.2f} s", flush=True)
    return out


def _summary(row: dict) -> str:
    parts = [f"tc {row['tenscalc']['median'] * 1e3:.3g} ms", f"closed {row['closed_form']['median'] * 1e3:.3g} ms"]
    for key in ("jax", "torch"):
        if key in row:
            parts.append(f"{key} {row[key]['median'] * 1e3:.3g} ms")
    errors = [f"{k[len('error_vs_') :]} {row[k]:.1e}" for k in row if k.startswith("error_vs_")]
    return ", ".join(parts) + "; max rel. difference: " + ", ".join(errors)


def machine() -> dict:
    import numpy

    info = {"python": platform.python_version(), "platform": platform.platform(), "numpy": numpy.__version__}
    info["cpus"] = os.cpu_count()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()
        info["load_average_at_start"] = [round(v, 2) for v in load]
    except OSError:
        pass
    for name in ("jax", "torch", "opt_einsum"):
        try:
            info[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - optional
            pass
    return info


def table(results: dict) -> str:
    lines = []
    for run in results["runs"]:
        threads = run["threads"]
        kept = ", freed memory kept (tc.keep_freed_memory)" if run.get("keep_freed_memory") else ""
        lines.append(f"\n#### {threads} thread{'s' * (threads != 1)}{kept}\n")
        lines.append(
            "| problem | tenscalc | closed form | jax.jit | torch.func | tc / closed (≤ 1.25) | tc / JAX (≤ 1.0) "
            "| first call / later | symbolic s | peak memory (entries) |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, row in run["cases"].items():
            tc_ms = row["tenscalc"]["median"] * 1e3
            closed = row["closed_form"]["median"] * 1e3
            jax_ms = row["jax"]["median"] * 1e3 if "jax" in row else float("nan")
            torch_ms = row["torch"]["median"] * 1e3 if "torch" in row else float("nan")
            symbolic = row["symbolic"]["derivative"] + row["symbolic"]["compile"]
            lines.append(
                f"| {name} | {tc_ms:.3g} | {closed:.3g} | {jax_ms:.3g} | {torch_ms:.3g} | {tc_ms / closed:.2f}× "
                f"| {tc_ms / jax_ms:.2f}× | {row['first_call'] * 1e3 / tc_ms:.1f}× | {symbolic:.2f} "
                f"| {row['cost']['peak_memory']:.3g} |"
            )
    return "\n".join(lines)


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = next((run["sweep"] for run in results["runs"] if "sweep" in run), None)
    fig, panels = plt.subplots(1, 2 if sweep else 1, figsize=(12, 4.5) if sweep else (7, 4.5), squeeze=False)
    axes = panels[0]
    for run, marker in zip(results["runs"], ("o", "s")):
        names = list(run["cases"])
        closed = [run["cases"][n]["tenscalc"]["median"] / run["cases"][n]["closed_form"]["median"] for n in names]
        jax = [
            run["cases"][n]["tenscalc"]["median"] / run["cases"][n]["jax"]["median"] if "jax" in run["cases"][n] else 0
            for n in names
        ]
        xs = np.arange(len(names))
        axes[0].scatter(xs, closed, marker=marker, label=f"tc / closed form, {run['threads']} thr")
        axes[0].scatter(
            xs, jax, marker=marker, facecolors="none", edgecolors="C3", label=f"tc / jax.jit, {run['threads']} thr"
        )
        axes[0].set_xticks(xs, names, rotation=30, ha="right")
    axes[0].axhline(1.25, color="grey", ls="--", lw=0.8)
    axes[0].axhline(1.0, color="C3", ls=":", lw=0.8)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("time ratio (lower is better)")
    axes[0].legend(fontsize=7)
    if sweep:
        for key, rows in sweep.items():
            sizes = [r["size"] for r in rows]
            total = [r["derivative"] + r["compile"] for r in rows]
            axes[1].loglog(sizes, total, "o-", label=key)
        axes[1].set_xlabel("model depth / nesting depth / number of terms")
        axes[1].set_ylabel("symbolic time, s (derivative + compile)")
        axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def pin_to_cores(count: int) -> list[int] | None:
    """Run this process (and every thread it starts) on ``count`` cores, where the OS
    allows it.  Thread settings alone do not bound JAX: with
    ``--xla_cpu_multi_thread_eigen=false`` and one BLAS thread its calls still used
    1.4-1.9 cores of CPU time per second of wall time on this project's 2-core
    machine, so a "1 thread" comparison needs the affinity."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < count:
        return allowed
    os.sched_setaffinity(0, allowed[:count])
    return allowed[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--budget", type=float, default=5.0)
    parser.add_argument("--problems", default="")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--from", dest="source", default=None)
    parser.add_argument("--plot", default=None)
    parser.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="call tc.keep_freed_memory() first (glibc keeps 64 MiB of freed heap; every library in the process gains)",
    )
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    only = [p for p in args.problems.split(",") if p]
    if args.child:
        cores = pin_to_cores(args.child)
        kept = False
        if args.keep_freed_memory:
            import tenscalc as tc

            kept = tc.keep_freed_memory()
        result = run_child(args.child, args.repeats, args.budget, only, not args.no_sweep)
        result["cores"] = cores
        result["keep_freed_memory"] = kept
        print("RESULT " + json.dumps(result))
        return
    if args.source:
        results = json.loads(pathlib.Path(args.source).read_text())
    else:
        threads = [1] if args.quick else [int(t) for t in args.threads.split(",")]
        results = {"machine": machine(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": []}
        for k, count in enumerate(threads):
            env = dict(os.environ)
            for name in THREAD_ENV:
                env[name] = str(count)
            env["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={'true' if count > 1 else 'false'}"
            command = [
                sys.executable,
                __file__,
                "--child",
                str(count),
                "--repeats",
                str(3 if args.quick else args.repeats),
            ]
            command += ["--budget", str(args.budget)]
            if only:
                command += ["--problems", ",".join(only)]
            if args.keep_freed_memory:
                command.append("--keep-freed-memory")
            if args.quick or args.no_sweep or k > 0:  # the sweep is symbolic: once is enough
                command.append("--no-sweep")
            proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            sys.stdout.write("".join(line + "\n" for line in proc.stdout.splitlines() if not line.startswith("RESULT")))
            if proc.returncode != 0:
                sys.stderr.write(proc.stderr)
                raise SystemExit(f"the {count}-thread run failed")
            payload = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
            results["runs"].append(json.loads(payload[len("RESULT ") :]))
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
    print(table(results))
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
