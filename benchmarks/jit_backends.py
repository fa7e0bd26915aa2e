"""tenscalc's ``backend="jax"`` (eager and ``jax.jit``-compiled) against ``jax.jit`` of JAX's own transform.

    python benchmarks/jit_backends.py [--problems rosen_vg,logreg_vgh,...] [--repeats 9] [--torch] [--out FILE]
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
        taskset -c 0 python benchmarks/jit_backends.py          # one core

For each problem, in one process and in float64: the symbolic time (derivative and
``tc.compile``), the first call (binding, and for the jitted form JAX's trace and XLA
compile) and the median time of a call, of

* ``tc.compile(exprs, backend="jax", jit=False)``: the bound program op by op, eager ``jax.numpy``;
* ``tc.compile(exprs, backend="jax")``: the same program as one ``jax.jit`` function;
* ``tc.compile(exprs, backend="jax").unchecked_jitted(values)``: that ``jax.jit`` function called
  directly (the inputs positionally), without the ``CompiledFunction`` call around it;
* ``jax.jit`` of JAX's own transform of the same function (first call: trace and compile);
* for the elimination problems also that transform returning tenscalc's own outputs (each
  Jacobian diagonal an array of its own, sliced inside the jit), since JAX's dispatch costs
  about 2.5-3.5 us per array returned on a CPU, and JAX's own returns them stacked by input;

and with ``--torch`` also ``backend="torch"`` eager against ``jit=True`` (``torch.compile``).
The problems are the two of issue 26 (the chained Rosenbrock value and gradient, n = 1,000;
logistic regression value, gradient and Hessian, X 400x100), the classes of
``classes.py``, issue 27's structured problems (``structured.py``: log-sum-exp, Rayleigh,
GP, A-optimal design, optimal transport, CP) and the vertex-elimination Jacobians of
``elimination_problems.py`` over a batch of 1,000 points (against the faster of JAX's
``vmap(jacfwd)`` and ``vmap(jacrev)``).  Times are medians of ``--repeats`` batches (each
about 20 ms of calls), the contenders interleaved batch by batch so that a shared
machine's drifting load moves them alike; ``paired`` is the median over rounds of the
ratio of the two batches timed in the same round (the load drifts less within a round).
Say how loaded the machine was when quoting the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class Problem:
    name: str
    what: str
    data: dict
    build: Callable  # tc -> list of expressions
    jax: Callable  # (jax, jnp, data) -> (jitted fn, args)
    options: Callable = lambda tc: {}  # tc -> tc.compile's keyword arguments (declared assumptions)
    #: JAX's results as the list tenscalc's are (None: JAX's leaves already are)
    theirs: Callable | None = None
    #: ``jax.jit`` of JAX's transform returning tenscalc's very outputs (each its own array),
    #: where ``jax`` returns them stacked: (jax, jnp, data) -> (jitted fn, args)
    same_outputs: Callable | None = None


ROSEN = "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)"
LOGREG = "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1"


def _rosen_jax(jax, jnp, d):
    def f(x):
        return jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    return jax.jit(jax.value_and_grad(f)), [d["x"]]


def _logreg_jax(jax, jnp, d):
    def f(w, X, y):
        return jnp.sum(jnp.log(jnp.exp(-y * (X @ w)) + 1))

    def all_three(w, X, y):
        value, grad = jax.value_and_grad(f)(w, X, y)
        return value, grad, jax.hessian(f)(w, X, y)

    return jax.jit(all_three), [d["w"], d["X"], d["y"]]


def problems() -> list[Problem]:
    from benchmarks import classes

    r = np.random.default_rng(0)
    found = [
        Problem(
            "rosen_vg", "chained Rosenbrock value + gradient (n 1,000)", {"x": r.uniform(-2, 2, 1000)},
            lambda tc: [f := tc.parse(ROSEN), tc.gradient(f, "x")], _rosen_jax,
        ),
        Problem(
            "logreg_vgh", "logistic regression value + gradient + Hessian (X 400x100)",
            {"X": r.standard_normal((400, 100)), "y": np.sign(r.standard_normal(400)),
             "w": r.standard_normal(100) / 10},
            lambda tc: [f := tc.parse(LOGREG, {"X": 2, "y": 1, "w": 1}), tc.gradient(f, "w"), tc.hessian(f, "w")],
            _logreg_jax,
        ),
    ]  # fmt: skip
    for case in classes.cases():
        found.append(Problem(case.name, case.what, case.data(), case.build, case.jax))
    return found


def structured_problems() -> list[Problem]:
    """Issue 27's problems (``structured.py``) against ``jax.jit`` of JAX's transform."""
    from benchmarks import structured

    def jax_form(problem):
        return lambda jax, jnp, d: (jax.jit(problem.jax(jax, jnp)), [d[k] for k in problem.args])

    return [Problem(p.name, p.what, p.data(), p.build, jax_form(p), p.compile_options) for p in structured.problems()]


#: the batch of the vertex-elimination problems (issue 26: n = 1,000)
BATCH = 1000


def elimination_problems() -> list[Problem]:
    """The vertex-elimination Jacobians (``elimination_problems.py``) of a batch of
    :data:`BATCH` points: tenscalc's Jacobian diagonals against the faster (timed here)
    of ``jax.jit`` of ``vmap(jacfwd)`` and ``vmap(jacrev)``."""
    from benchmarks.elimination_problems import PROBLEMS

    found = []
    for name, (fn, names, point) in PROBLEMS.items():
        r = np.random.default_rng(0)
        data = {x: v * (1 + 0.05 * r.standard_normal(BATCH)) for x, v in zip(names, point)}

        def live_pairs(tc, name=name, names=names):
            from benchmarks.elimination_problems import tenscalc_outputs

            outs, variables = tenscalc_outputs(name, batched=True)
            acc = tc.jacobian_accumulation(outs, variables, shapes={x: (BATCH,) for x in names})
            # a batch's Jacobians are diagonal: compiled as their diagonals; a zero one (an
            # output that does not depend on an input) is left out, as elimination.py does
            pairs = [(k, x) for k in range(len(outs)) for x in names]
            parts = {p: acc.partials[p[0]][p[1]].value for p in pairs}
            return [(p, parts[p]) for p in pairs if not (parts[p].op == "const" and parts[p].arg[0] == 0)]

        def build(tc, live_pairs=live_pairs):
            return [part for _, part in live_pairs(tc)]

        def theirs(jacobians, live_pairs=live_pairs, names=names):
            import tenscalc as tc

            return [jacobians[names.index(x)][:, k] for (k, x), _ in live_pairs(tc)]

        def jax_form(jax, jnp, d, fn=fn, names=names):
            from benchmarks.elimination import _jax_jacobians

            args = [d[x] for x in names]
            faster = _faster(jax, _jax_jacobians(fn, len(names), True), args)
            # the same transform afresh (new functions, so jit traces and compiles again):
            # its first call is timed like every other problem's
            return _jax_jacobians(fn, len(names), True)[faster], args

        def same_outputs(jax, jnp, d, fn=fn, names=names, live_pairs=live_pairs):
            import tenscalc as tc
            from benchmarks.elimination import _jax_jacobians

            args = [d[x] for x in names]
            transform = (jax.jacfwd, jax.jacrev)[_faster(jax, _jax_jacobians(fn, len(names), True), args)]
            jacobians = jax.vmap(transform(lambda *a: jnp.stack(fn(*a, jnp)), tuple(range(len(names)))))
            pairs = [pair for pair, _ in live_pairs(tc)]

            def diagonals(*a):  # tenscalc's outputs, sliced inside the jit: one array each
                found = jacobians(*a)
                return [found[names.index(x)][:, k] for k, x in pairs]

            return jax.jit(diagonals), args

        what = f"{name} Jacobian (diagonals), batch {BATCH:,}"
        found.append(Problem(f"elim_{name}", what, data, build, jax_form, theirs=theirs, same_outputs=same_outputs))
    return found


def _faster(jax, fns, args) -> int:
    """The index of the faster of ``fns`` on ``args`` (best of 5 batches of 20 calls after a warm-up)."""

    def best(fn):
        jax.block_until_ready(fn(*args))
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(20):
                jax.block_until_ready(fn(*args))
            times.append(time.perf_counter() - start)
        return min(times)

    times = [best(fn) for fn in fns]
    return times.index(min(times))


#: seconds between two batches: long enough for another library's spinning threads to sleep
SETTLE_S = 0.02


def interleaved(
    fns: dict[str, Callable[[], object]], repeats: int, samples: dict[str, list[float]] | None = None
) -> dict[str, float]:
    """Median seconds per call of each function, timed in alternating batches (each
    batch's seconds per call kept in ``samples`` where one is given)."""
    batch = {}
    for name, fn in fns.items():
        fn()
        start = time.perf_counter()
        fn()
        batch[name] = max(1, int(0.02 / max(time.perf_counter() - start, 1e-7)))
    if samples is None:
        samples = {}
    samples.update({name: [] for name in fns})
    order = random.Random(0)
    for _ in range(repeats):
        # a new order each round (seeded): worker threads of a library still spinning
        # after its batch (XLA's, PyTorch's) would otherwise always slow the same next
        # contender; and a pause lets them settle
        for name in order.sample(list(fns), len(fns)):
            fn = fns[name]
            time.sleep(SETTLE_S)
            start = time.perf_counter()
            for _ in range(batch[name]):
                fn()
            samples[name].append((time.perf_counter() - start) / batch[name])
    return {name: statistics.median(times) for name, times in samples.items()}


def _max_rel(a, b) -> float:
    a = np.concatenate([np.asarray(v, dtype=float).ravel() for v in a])
    b = np.concatenate([np.asarray(v, dtype=float).ravel() for v in b])
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def run_problem(tc, jax, jnp, problem: Problem, repeats: int, torch=None) -> dict:
    row: dict = {"what": problem.what}
    start = time.perf_counter()
    exprs = problem.build(tc)
    options = problem.options(tc)
    eager = tc.compile(exprs, backend="jax", jit=False, **options)
    jitted = tc.compile(exprs, backend="jax", **options)
    row["symbolic_s"] = time.perf_counter() - start  # both compiles share nothing but are cheap
    values = {k: jnp.asarray(v) for k, v in problem.data.items() if k in jitted.inputs}
    fns: dict[str, Callable[[], object]] = {}
    first = {}
    for name, compiled in (("tc_eager", eager), ("tc_jit", jitted)):
        start = time.perf_counter()
        jax.block_until_ready(compiled(values))
        first[name] = time.perf_counter() - start
        fns[name] = lambda compiled=compiled: jax.block_until_ready(compiled(values))
    if hasattr(jitted, "unchecked_jitted"):  # the jax.jit function itself, no CompiledFunction around it
        raw, ordered = jitted.unchecked_jitted(values), [values[name] for name in jitted.inputs]
        fns["tc_jit_raw"] = lambda: jax.block_until_ready(raw(*ordered))
    fn, args = problem.jax(jax, jnp, problem.data)
    args = jax.device_put(args)
    start = time.perf_counter()
    theirs = jax.block_until_ready(fn(*args))
    first["jax_jit"] = time.perf_counter() - start
    fns["jax_jit"] = lambda: jax.block_until_ready(fn(*args))
    ours = jitted(values)
    leaves = problem.theirs(theirs) if problem.theirs else jax.tree_util.tree_leaves(theirs)
    row["error_jit_vs_jax"] = _max_rel(ours, leaves)
    if problem.same_outputs is not None:  # each output an array of its own costs JAX's dispatch
        same, same_args = problem.same_outputs(jax, jnp, problem.data)
        same_args = jax.device_put(same_args)
        row["error_jit_vs_jax_same_outputs"] = _max_rel(ours, jax.block_until_ready(same(*same_args)))
        fns["jax_jit_same_outputs"] = lambda: jax.block_until_ready(same(*same_args))
    row["error_jit_vs_eager"] = _max_rel(ours, eager(values))
    if torch is not None:
        tensors = {k: torch.from_numpy(np.asarray(v)) for k, v in problem.data.items() if k in jitted.inputs}
        plain = tc.compile(exprs, backend="torch")
        compiled = tc.compile(exprs, backend="torch", jit=True)
        for name, c in (("torch_eager", plain), ("torch_compile", compiled)):
            start = time.perf_counter()
            c(tensors)
            first[name] = time.perf_counter() - start
            fns[name] = lambda c=c: c(tensors)
        row["error_torch_compile_vs_jax"] = _max_rel([t.numpy() for t in compiled(tensors)], ours)
    row["first_call_s"] = first
    samples: dict[str, list[float]] = {}
    row["call_s"] = interleaved(fns, repeats, samples)
    # each round's batches ran back to back: the median of the rounds' ratios cancels the
    # load drifting between rounds, which the ratio of two medians does not
    row["paired_ratio"] = {
        name: statistics.median(a / b for a, b in zip(samples[name], samples["jax_jit"]))
        for name in ("tc_jit", "tc_jit_raw")
        if name in samples
    }
    if "jax_jit_same_outputs" in samples:  # against JAX returning tenscalc's outputs
        pairs = zip(samples["tc_jit"], samples["jax_jit_same_outputs"])
        row["paired_ratio"]["tc_jit_vs_same_outputs"] = statistics.median(a / b for a, b in pairs)
    # how far one run's median is to be trusted: the rounds' ratios' quartiles, and the share
    # of rounds in which tenscalc's batch was the faster (on a noisy machine a median of 1.05
    # with quartiles 0.95-1.15 is parity, not a loss)
    ratios = [a / b for a, b in zip(samples["tc_jit"], samples["jax_jit"])]
    if len(ratios) >= 2:
        low, _, high = statistics.quantiles(ratios, n=4, method="inclusive")
        row["paired_ratio_quartiles"] = [low, high]
    row["rounds_tc_jit_faster"] = sum(r < 1.0 for r in ratios) / len(ratios)
    return row


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--torch", action="store_true", help="also backend='torch' eager against torch.compile")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import tenscalc as tc

    torch = None
    if args.torch:
        import torch
    only = [p for p in args.problems.split(",") if p]
    result = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": os.getloadavg(),
        "cores": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "problems": {},
    }
    for problem in problems() + structured_problems() + elimination_problems():
        if only and problem.name not in only:
            continue
        row = run_problem(tc, jax, jnp, problem, args.repeats, torch)
        result["problems"][problem.name] = row
        t, f = row["call_s"], row["first_call_s"]
        line = (
            f"{problem.name:17s} eager {t['tc_eager'] * 1e3:9.3f} ms  jit {t['tc_jit'] * 1e3:8.3f} ms  "
            f"jax.jit {t['jax_jit'] * 1e3:8.3f} ms  jit/jax {t['tc_jit'] / t['jax_jit']:5.2f}x "
            f"(paired {row['paired_ratio']['tc_jit']:5.2f}x, faster in {row['rounds_tc_jit_faster']:4.0%} of rounds)  "
            + (f"raw/jax {row['paired_ratio']['tc_jit_raw']:5.2f}x  " if "tc_jit_raw" in t else "")
            + (
                f"jit/jax(same outputs) {row['paired_ratio']['tc_jit_vs_same_outputs']:5.2f}x  "
                if "jax_jit_same_outputs" in t
                else ""
            )
            + f"first: symbolic {row['symbolic_s']:.2f} s + {f['tc_jit']:.2f} s, jax {f['jax_jit']:.2f} s"
        )
        if torch is not None:
            line += (
                f"  torch {t['torch_eager'] * 1e3:.3f} ms, compiled {t['torch_compile'] * 1e3:.3f} ms "
                f"(first {f['torch_compile']:.1f} s)"
            )
        print(line, flush=True)
    result["load_average_end"] = os.getloadavg()
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(result, handle, indent=1)
    return result


if __name__ == "__main__":
    main()
