"""Time the structured-sum problems of issue #27 (``benchmarks/structured.py``) on one core.

One command, under 3 minutes on an idle core (run it on a quiet machine)::

    nice python benchmarks/run_structured.py --out benchmarks/results/structured-after.json

Options: ``--problems lse_hess,gp_grad`` (a subset), ``--repeats N`` (batches per
contender, default 7), ``--skip jax,torch``, ``--from JSON`` (print the table of a
saved run).  The runner starts one child process with one BLAS/OpenMP thread,
``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"``,
``torch.set_num_threads(1)``, pinned to one core (JAX does not keep to one thread by
its settings alone); everything is timed in that one process, in float64.

For each problem: tenscalc (symbolic time, first call, later calls), the hand-written
closed form it is held to (within 1.25x; the generic form where the source declares
no structure, Cholesky where it declares ``K`` pd), further hand forms, ``jax.jit`` of
JAX's own transform and ``torch.func``.  Times are medians of ``--repeats`` batches
(each about 20 ms of calls), the contenders interleaved batch by batch so that a
shared machine's drifting load moves them alike.  Every result is checked against
tenscalc's.  Peak memory is tracemalloc's peak during one call: it sees NumPy's
arrays (and SciPy's), not LAPACK workspaces that NumPy's ``linalg`` mallocs itself,
nor JAX's or PyTorch's buffers.  Say how loaded the machine was when quoting numbers
(the JSON keeps the load averages at start and end).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
import tracemalloc

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}


def _flatten(result) -> np.ndarray:
    if isinstance(result, (list, tuple)):
        return np.concatenate([np.asarray(r, dtype=float).ravel() for r in result])
    return np.asarray(result, dtype=float).ravel()


def max_rel(a, b) -> float:
    """Largest entry difference over the largest entry of ``b`` (both flattened)."""
    a, b = _flatten(a), _flatten(b)
    return float(np.max(np.abs(a - b)) / max(1e-300, float(np.max(np.abs(b)))))


def peak_mib(fn) -> float:
    """tracemalloc's peak (MiB) during one call of ``fn``."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def run_problem(tc, problem, repeats: int, jax=None, torch=None) -> dict:
    """Everything measured for one problem (this process is already on one thread)."""
    from benchmarks.jit_backends import interleaved

    data = problem.data()
    row: dict = {"what": problem.what}
    start = time.perf_counter()
    exprs = problem.build(tc)
    built = time.perf_counter()
    options = problem.compile_options(tc)
    compiled = tc.compile(exprs, **options)
    row["compile_options"] = sorted(options)
    row["symbolic_s"] = {"derivative": built - start, "compile": time.perf_counter() - built}
    values = {k: data[k] for k in compiled.inputs}
    start = time.perf_counter()
    ours = compiled(**values)
    row["first_call_s"] = time.perf_counter() - start
    fns = {"tenscalc": lambda: compiled(**values)}
    hand = {"closed": problem.closed, **problem.others}
    errors = {}
    for name, form in hand.items():
        fns[name] = lambda form=form: form(data)
        errors[name] = max_rel(form(data), ours)
    if jax is not None:
        import jax.numpy as jnp

        fn = problem.jax(jax, jnp)
        args = jax.device_put([jnp.asarray(data[k]) for k in problem.args])
        start = time.perf_counter()
        theirs = jax.block_until_ready(fn(*args))
        row["jax_first_call_s"] = time.perf_counter() - start
        fns["jax_jit"] = lambda: jax.block_until_ready(fn(*args))
        errors["jax_jit"] = max_rel(jax.tree_util.tree_leaves(theirs), ours)
    if torch is not None:
        tfn = problem.torch(torch)
        tensors = [torch.from_numpy(np.asarray(data[k])) for k in problem.args]
        fns["torch_func"] = lambda: tfn(*tensors)
        out = tfn(*tensors)
        errors["torch_func"] = max_rel([t.numpy() for t in (out if isinstance(out, tuple) else (out,))], ours)
    row["max_rel_difference"] = errors
    row["call_s"] = interleaved(fns, repeats)
    row["peak_mib"] = {name: peak_mib(fns[name]) for name in ("tenscalc", *hand)}
    return row


def summary(name: str, row: dict) -> str:
    t = row["call_s"]
    parts = [f"{name:14s} tc {t['tenscalc'] * 1e3:8.2f} ms", f"closed {t['closed'] * 1e3:8.2f} ms"]
    parts.append(f"ratio {t['tenscalc'] / t['closed']:5.2f}")
    parts += [f"{k} {v * 1e3:.2f} ms" for k, v in t.items() if k not in ("tenscalc", "closed")]
    peaks = row["peak_mib"]
    parts.append(f"peak MiB tc {peaks['tenscalc']:.1f} closed {peaks['closed']:.1f}")
    parts.append("max rel diff " + ", ".join(f"{k} {v:.0e}" for k, v in row["max_rel_difference"].items()))
    return "  ".join(parts)


def run_child(repeats: int, only: list[str], skip: set[str]) -> dict:
    import tenscalc as tc
    from benchmarks import structured
    from benchmarks.run_benchmarks import optional

    jax = None if "jax" in skip else optional("jax")
    torch = None if "torch" in skip else optional("torch")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    if torch is not None:
        torch.set_num_threads(1)
    rows = {}
    for problem in structured.problems():
        if only and problem.name not in only:
            continue
        rows[problem.name] = run_problem(tc, problem, repeats, jax, torch)
        print(summary(problem.name, rows[problem.name]), flush=True)
    return {"problems": rows, "load_average_end": list(os.getloadavg())}


def machine() -> dict:
    """CPU model, versions of NumPy, SciPy and their OpenBLAS, JAX and PyTorch, the load average."""
    from benchmarks.run_classes import machine as basic

    info = basic()
    info["numpy_blas"] = _blas(np)
    try:
        import scipy

        info["scipy"] = scipy.__version__
        info["scipy_blas"] = _blas(scipy)
    except ImportError:
        pass
    return info


def _blas(module) -> str | None:
    try:
        blas = module.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas['name']} {blas['version']}"
    except Exception:  # noqa: BLE001 - the config layout is not a stable API
        return None


def table(results: dict) -> str:
    """The markdown table of ``docs/performance.md``."""
    lines = [
        "| problem | tenscalc ms | closed form ms | tc / closed (≤ 1.25) | jax.jit ms | torch.func ms "
        "| peak MiB tc / closed | other hand forms ms |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, row in results["problems"].items():
        t = {k: v * 1e3 for k, v in row["call_s"].items()}
        others = ", ".join(f"{k} {v:.3g}" for k, v in t.items() if k.startswith("closed_"))
        peaks = row["peak_mib"]
        lines.append(
            f"| {name} | {t['tenscalc']:.3g} | {t['closed']:.3g} | {t['tenscalc'] / t['closed']:.2f}× "
            f"| {t.get('jax_jit', float('nan')):.3g} | {t.get('torch_func', float('nan')):.3g} "
            f"| {peaks['tenscalc']:.1f} / {peaks['closed']:.1f} | {others} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", default="", help="comma-separated names (default: all)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--skip", default="", help="jax,torch")
    parser.add_argument("--out", default=None, help="write the JSON here")
    parser.add_argument("--from", dest="source", default=None, help="print the table of a saved run")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    only = [p for p in args.problems.split(",") if p]
    skip = {s for s in args.skip.split(",") if s}
    if args.child:
        from benchmarks.run_classes import pin_to_cores

        cores = pin_to_cores(1)
        result = run_child(args.repeats, only, skip)
        result["cores"] = cores
        print("RESULT " + json.dumps(result))
        return
    if args.source:
        results = json.loads(pathlib.Path(args.source).read_text())
    else:
        results = {"machine": machine(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        results["commit"] = _commit()
        command = [sys.executable, __file__, "--child", "--repeats", str(args.repeats)]
        command += ["--problems", ",".join(only), "--skip", ",".join(sorted(skip))]
        proc = subprocess.run(command, env={**os.environ, **ONE_THREAD}, capture_output=True, text=True, check=False)
        sys.stdout.write("".join(line + "\n" for line in proc.stdout.splitlines() if not line.startswith("RESULT")))
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit("the one-core run failed")
        payload = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
        results.update(json.loads(payload[len("RESULT ") :]))
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
    print(table(results))
    print(f"load average: start {results['machine'].get('load_average_at_start')}, end {results['load_average_end']}")


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


if __name__ == "__main__":
    main()
