"""Benchmark tenscalc's compiled derivatives against JAX, PyTorch and hand-written NumPy.

One process, float64 everywhere.  For every problem of ``benchmarks/problems.py``
at its size there it times

* the Hessian: tenscalc (compiled once, then evaluated), the NumPy closed form,
  ``jax.jit(jax.hessian(f))`` and ``torch.func.hessian(f)``;
* the gradient: tenscalc, ``jax.jit(jax.grad(f))`` and ``torch.func.grad(f)``;
* the Hessian-vector product: ``tc.hvp`` compiled, JAX's jitted forward-over-
  reverse ``jvp(grad(f))`` and the same with ``torch.func``;
* tenscalc's one-off costs: the symbolic work (parse + derivative + simplify +
  compile) and the first call (which binds shapes and searches contraction paths);

then sweeps the size of the quadratic and logistic-regression problems.  Each
time is the median of several runs after a warm-up call (JAX's compilation
happens in its warm-up and is reported separately).  A table of medians and
ratios is printed and everything is written as JSON.

Usage::

    python benchmarks/run_benchmarks.py                 # full run (several minutes)
    python benchmarks/run_benchmarks.py --quick         # small sizes, few repeats
    python benchmarks/run_benchmarks.py --out results.json --skip torch
    python benchmarks/run_benchmarks.py --plot docs/img/performance.png --from benchmarks/results/x.json

JAX and PyTorch columns are left out when the library is not installed.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import pathlib
import platform
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tenscalc as tc  # noqa: E402

QUICK_SIZES = {
    "quadratic": dict(n=200),
    "logreg": dict(m=400, n=100),
    "matfac": dict(m=20, n=30, k=5),
    "mlp": dict(m=40, n=30, h=8),
}
SWEEP = [250, 500, 1000, 2000, 4000]
QUICK_SWEEP = [50, 100]
LOGREG_RATIO = 2  # m = 2 n in the logistic-regression sweep (m = 4 n at n = 4000 does not fit the time)
TORCH_SWEEP_MAX = 1000  # torch.func.hessian is O(n^3) with a large constant: left out above this n


# ---------------------------------------------------------------------- timing


def measure(fn: Callable[[], object], repeats: int, budget: float, warmup: int = 1) -> dict:
    """Median wall time of ``fn`` after ``warmup`` calls; at least 3 runs, at most
    ``repeats``, stopping early once ``budget`` seconds are spent."""
    first = None
    for k in range(warmup):
        start = time.perf_counter()
        fn()
        if k == 0:
            first = time.perf_counter() - start
    times: list[float] = []
    spent = 0.0
    while len(times) < repeats and (len(times) < 3 or spent < budget):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
    return {"median": statistics.median(times), "min": min(times), "runs": len(times), "first": first}


def optional(name: str):
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a broken install counts as missing
        return None


class Frameworks:
    """JAX and PyTorch, when installed and not skipped."""

    def __init__(self, skip: set[str]):
        self.jax = None if "jax" in skip else optional("jax")
        self.torch = None if "torch" in skip else optional("torch")
        if self.jax is not None:
            self.jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp

            self.jnp = jnp
        if self.torch is not None:
            self.torch.set_num_threads(os.cpu_count() or 1)

    def jax_call(self, fn, args):
        jax = self.jax
        args = [jax.device_put(self.jnp.asarray(a)) for a in args]
        return lambda: jax.block_until_ready(fn(*args))

    def torch_call(self, fn, args):
        torch = self.torch
        args = [torch.from_numpy(np.ascontiguousarray(a)) for a in args]

        def run():
            with torch.no_grad():
                return fn(*args)

        return run


# ---------------------------------------------------------------------- one problem


def load_problems():
    from benchmarks import problems

    return problems


def bench_problem(name: str, sizes: dict, fw: Frameworks, repeats: int, budget: float, problems) -> dict:
    p = problems.PROBLEMS[name]
    data = p["data"](**sizes)
    wrt, rest = problems.wrt_first(name, data)
    args = [data[wrt]] + [data[r] for r in rest]
    rng = np.random.default_rng(1)
    direction = rng.standard_normal(data[wrt].shape)
    row: dict = {"sizes": {k: list(v.shape) for k, v in data.items()}}

    # symbolic work, timed cold for this problem
    t0 = time.perf_counter()
    f = tc.parse(p["src"], p["orders"])
    t1 = time.perf_counter()
    hessian = tc.hessian(f, wrt)
    t2 = time.perf_counter()
    compiled_h = tc.compile(hessian)
    t3 = time.perf_counter()
    row["symbolic"] = {"parse": t1 - t0, "derivative": t2 - t1, "compile": t3 - t2, "total": t3 - t0}
    gradient = tc.gradient(f, wrt)
    compiled_g = tc.compile(gradient)
    hv = tc.hvp(f, wrt)
    compiled_hv = tc.compile(hv)
    hv_name = next(v for v in hv.variables if v.startswith("v_"))
    hv_values = {**data, hv_name: direction}
    shapes = {k: v.shape for k, v in data.items()}
    row["cost"] = {
        key: vars(c.cost(shapes if c is not compiled_hv else {**shapes, hv_name: direction.shape}))
        for key, c in (("hessian", compiled_h), ("gradient", compiled_g), ("hvp", compiled_hv))
    }

    hess: dict = {}
    hess["closed_form"] = measure(lambda: problems.closed_form_hessian(name, data), repeats, budget)
    start = time.perf_counter()
    compiled_h(data)  # binds shapes, searches paths, evaluates
    row["first_call"] = time.perf_counter() - start
    start = time.perf_counter()
    tc.compile(hessian).cost(shapes)  # binding and path search alone, on a fresh compiled function
    row["bind"] = time.perf_counter() - start
    hess["tenscalc"] = measure(lambda: compiled_h(data), repeats, budget)
    grad: dict = {"tenscalc": measure(lambda: compiled_g(data), repeats * 3, budget)}
    hvp: dict = {"tenscalc": measure(lambda: compiled_hv(hv_values), repeats * 3, budget)}

    if fw.jax is not None:
        jax = fw.jax
        fn = problems.jax_fn(name)
        hess["jax"] = measure(fw.jax_call(jax.jit(jax.hessian(fn)), args), repeats, budget)
        grad["jax"] = measure(fw.jax_call(jax.jit(jax.grad(fn)), args), repeats * 3, budget)

        def jax_hvp(x, v, *rest_args):
            return jax.jvp(lambda y: jax.grad(fn)(y, *rest_args), (x,), (v,))[1]

        hvp["jax"] = measure(fw.jax_call(jax.jit(jax_hvp), [args[0], direction, *args[1:]]), repeats * 3, budget)
    if fw.torch is not None:
        tf = fw.torch.func
        fn = problems.torch_fn(name)
        hess["torch"] = measure(fw.torch_call(tf.hessian(fn), args), repeats, budget)
        grad["torch"] = measure(fw.torch_call(tf.grad(fn), args), repeats * 3, budget)

        def torch_hvp(x, v, *rest_args):
            return tf.jvp(lambda y: tf.grad(fn)(y, *rest_args), (x,), (v,))[1]

        hvp["torch"] = measure(fw.torch_call(torch_hvp, [args[0], direction, *args[1:]]), repeats * 3, budget)

    row["hessian"], row["gradient"], row["hvp"] = hess, grad, hvp
    # correctness: the compiled Hessian equals the closed form
    expected = problems.closed_form_hessian(name, data)
    got = compiled_h(data)
    row["max_rel_error"] = float(np.max(np.abs(got - expected)) / max(1.0, float(np.max(np.abs(expected)))))
    del got, expected
    return row


def bench_sweep(name: str, ns: list[int], fw: Frameworks, repeats: int, budget: float, problems) -> list[dict]:
    p = problems.PROBLEMS[name]
    f = tc.parse(p["src"], p["orders"])
    wrt = p["wrt"]
    compiled = tc.compile(tc.hessian(f, wrt))
    rows = []
    for n in ns:
        sizes = dict(n=n) if name == "quadratic" else dict(m=LOGREG_RATIO * n, n=n)
        data = p["data"](**sizes)
        _, rest = problems.wrt_first(name, data)
        args = [data[wrt]] + [data[r] for r in rest]
        row = {"n": n, "sizes": sizes}
        row["closed_form"] = measure(lambda data=data: problems.closed_form_hessian(name, data), repeats, budget)
        row["tenscalc"] = measure(lambda data=data: compiled(data), repeats, budget)
        if fw.jax is not None:
            jax = fw.jax
            row["jax"] = measure(fw.jax_call(jax.jit(jax.hessian(problems.jax_fn(name))), args), repeats, budget)
        if fw.torch is not None and n <= TORCH_SWEEP_MAX:
            row["torch"] = measure(fw.torch_call(fw.torch.func.hessian(problems.torch_fn(name)), args), repeats, budget)
        rows.append(row)
        print(
            f"  sweep {name} n={n}: "
            + ", ".join(
                f"{k} {v['median'] * 1e3:.2f} ms" for k, v in row.items() if isinstance(v, dict) and "median" in v
            )
        )
    return rows


# ---------------------------------------------------------------------- report


def machine_info() -> dict:
    cpu = "unknown"
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    versions = {"python": platform.python_version(), "tenscalc": tc.__version__}
    for module in ("numpy", "opt_einsum", "jax", "jaxlib", "torch", "autoray", "dask"):
        mod = optional(module)
        if mod is not None:
            versions[module] = getattr(mod, "__version__", "?")
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": ram, "platform": platform.platform(), "versions": versions}


def ratio(a: dict, b: dict | None) -> float | None:
    return None if b is None else a["median"] / b["median"]


def print_table(results: dict) -> None:
    def ms(entry):
        return "-" if entry is None else f"{entry['median'] * 1e3:9.3f}"

    def rx(value):
        return "-" if value is None else f"{value:6.2f}x"

    print("\nHessian (median ms; ratios are tenscalc / other)")
    print(
        f"{'problem':10} {'tenscalc':>10} {'closed':>10} {'jax':>10} {'torch':>10} "
        f"{'tc/closed':>10} {'tc/jax':>8} {'tc/torch':>9} {'symbolic':>9} {'first':>8}"
    )
    for name, row in results["problems"].items():
        h = row["hessian"]
        print(
            f"{name:10} {ms(h['tenscalc']):>10} {ms(h['closed_form']):>10} {ms(h.get('jax')):>10} "
            f"{ms(h.get('torch')):>10} {rx(ratio(h['tenscalc'], h['closed_form'])):>10} "
            f"{rx(ratio(h['tenscalc'], h.get('jax'))):>8} {rx(ratio(h['tenscalc'], h.get('torch'))):>9} "
            f"{row['symbolic']['total'] * 1e3:7.1f}ms {row['first_call'] * 1e3:6.0f}ms"
        )
    for kind in ("gradient", "hvp"):
        print(f"\n{'Gradient' if kind == 'gradient' else 'Hessian-vector product'} (median ms)")
        print(f"{'problem':10} {'tenscalc':>10} {'jax':>10} {'torch':>10} {'tc/jax':>8} {'tc/torch':>9}")
        for name, row in results["problems"].items():
            g = row[kind]
            print(
                f"{name:10} {ms(g['tenscalc']):>10} {ms(g.get('jax')):>10} {ms(g.get('torch')):>10} "
                f"{rx(ratio(g['tenscalc'], g.get('jax'))):>8} {rx(ratio(g['tenscalc'], g.get('torch'))):>9}"
            )
    for name, rows in results.get("sweep", {}).items():
        print(f"\nSize sweep: {name} Hessian (median ms)")
        print(f"{'n':>6} {'tenscalc':>10} {'closed':>10} {'jax':>10} {'torch':>10} {'tc/closed':>10} {'tc/jax':>8}")
        for row in rows:
            print(
                f"{row['n']:6d} {ms(row['tenscalc']):>10} {ms(row['closed_form']):>10} {ms(row.get('jax')):>10} "
                f"{ms(row.get('torch')):>10} {rx(ratio(row['tenscalc'], row['closed_form'])):>10} "
                f"{rx(ratio(row['tenscalc'], row.get('jax'))):>8}"
            )


def make_plot(results: dict, path: pathlib.Path) -> None:
    """Bar chart of Hessian and gradient times per problem, and the size sweeps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tools = [
        ("tenscalc", "tenscalc (compiled)"),
        ("closed_form", "NumPy closed form"),
        ("jax", "jax.jit(jax.hessian)"),
        ("torch", "torch.func.hessian"),
    ]
    names = list(results["problems"])
    sweeps = results.get("sweep", {})
    panels = 2 + len(sweeps)
    fig, grid = plt.subplots(2, (panels + 1) // 2, figsize=(6.2 * ((panels + 1) // 2), 8.4), squeeze=False)
    axes = grid.ravel()
    colors = {key: f"C{k}" for k, (key, _) in enumerate(tools)}
    width = 0.2
    for ax, kind in zip(axes[:2], ("hessian", "gradient")):
        for k, (key, label) in enumerate(tools):
            heights = [results["problems"][n][kind].get(key, {}).get("median", np.nan) * 1e3 for n in names]
            if kind == "gradient":
                label = label.replace("hessian", "grad")
            if all(np.isnan(heights)):
                continue
            ax.bar(np.arange(len(names)) + (k - 1.5) * width, heights, width, label=label, color=colors[key])
        ax.set_xticks(np.arange(len(names)), names)
        ax.set_yscale("log")
        ax.set_ylabel("median time (ms, log scale)")
        ax.set_title(f"{kind.capitalize()} evaluation")
        ax.legend(fontsize=8)
    for ax, (name, rows) in zip(axes[2:], sweeps.items()):
        ns = [r["n"] for r in rows]
        for key, label in tools:
            ys = [r[key]["median"] * 1e3 if key in r else np.nan for r in rows]
            if not all(np.isnan(ys)):
                ax.plot(ns, ys, marker="o", label=label, color=colors[key])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.minorticks_off()
        ax.set_xlabel("n")
        ax.set_ylabel("median Hessian time (ms)")
        ratio_note = f" (m = {LOGREG_RATIO}n)" if name == "logreg" else ""
        ax.set_title(f"{name} Hessian, size sweep{ratio_note}")
        ax.legend(fontsize=8)
    fig.suptitle(
        f"tenscalc vs JAX, PyTorch and NumPy — {results['machine']['cpu']}, "
        f"{results['machine']['cores']} cores (shared machine)",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke test)")
    parser.add_argument("--out", type=pathlib.Path, help="where to write the JSON (default benchmarks/results/)")
    parser.add_argument("--repeats", type=int, help="timed runs per measurement (default 7, quick 3)")
    parser.add_argument("--budget", type=float, help="seconds per measurement before stopping early (min 3 runs)")
    parser.add_argument("--skip", default="", help="comma-separated: jax, torch, sweep")
    parser.add_argument("--problems", default="", help="comma-separated subset of the problems")
    parser.add_argument("--plot", type=pathlib.Path, help="also draw the plot to this PNG")
    parser.add_argument(
        "--from", dest="source", type=pathlib.Path, help="with --plot: draw from this JSON instead of running"
    )
    args = parser.parse_args(argv)
    if args.source is not None:
        results = json.loads(args.source.read_text())
        print_table(results)
        if args.plot:
            make_plot(results, args.plot)
        return results

    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    fw = Frameworks(skip)
    problems = load_problems()
    repeats = args.repeats or (3 if args.quick else 7)
    budget = args.budget if args.budget is not None else (0.5 if args.quick else 10.0)
    names = [n for n in problems.PROBLEMS if not args.problems or n in args.problems.split(",")]
    results: dict = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "config": {
            "quick": args.quick,
            "repeats": repeats,
            "budget_s": budget,
            "dtype": "float64",
            "frameworks": [k for k in ("jax", "torch") if getattr(fw, k) is not None],
            "logreg_sweep_ratio_m_over_n": LOGREG_RATIO,
            "torch_sweep_max_n": TORCH_SWEEP_MAX,
            "note": "2-core machine shared with other engineers running tests: timings are noisy",
        },
        "problems": {},
    }
    for name in names:
        print(f"problem {name} ...", flush=True)
        sizes = QUICK_SIZES[name] if args.quick else {}
        results["problems"][name] = bench_problem(name, sizes, fw, repeats, budget, problems)
    if "sweep" not in skip:
        results["sweep"] = {}
        for name in ("quadratic", "logreg"):
            if name in names:
                ns = QUICK_SWEEP if args.quick else SWEEP
                results["sweep"][name] = bench_sweep(name, ns, fw, max(3, repeats // 2), budget, problems)
    print_table(results)
    out = args.out
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = RESULTS_DIR / f"{'quick' if args.quick else 'full'}-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"\nwrote {out}")
    if args.plot:
        make_plot(results, args.plot)
    return results


if __name__ == "__main__":
    main()
