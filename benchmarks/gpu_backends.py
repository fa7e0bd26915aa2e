"""tenscalc's GPU backends against JAX on the same GPU (issue 26, deliverable 5).

    python benchmarks/gpu_backends.py [--problems rosen_vg,lse_hess,...] [--repeats 5]
        [--torch-compile rosen_vg,logreg_vgh] [--large] [--out FILE]

Needs a CUDA device; JAX, PyTorch and CuPy where installed (each contender whose
library is missing or sees no GPU is left out and said so).  For every problem of
``benchmarks/jit_backends.py`` (the two of issue 26 and the classes of
``classes.py``) and of ``benchmarks/structured.py`` (issue 27), in float64, with the
data on the GPU, in one process:

* ``tc_jax``: ``tc.compile(exprs, backend="jax")``, one ``jax.jit`` function per shape;
* ``jax_jit``: ``jax.jit`` of JAX's own transform of the same function;
* ``tc_torch``: ``tc.compile(exprs, backend="torch", **options)`` on CUDA tensors, op by op;
* ``tc_torch_compile``: the same with ``jit=True`` (``torch.compile``), only for the
  problems named by ``--torch-compile`` (its first call takes tens of seconds);
* ``torch_func``: ``torch.func``'s transform on CUDA tensors (the structured problems);
* ``tc_cupy``: ``tc.compile(exprs, backend="cupy", **options)``.

Each timed call ends with the library's synchronisation (``block_until_ready``,
``torch.cuda.synchronize``, CuPy's device synchronisation), so a time is the whole
call, launch to finished result.  Times are medians of ``--repeats`` batches of about
20 ms, the contenders interleaved (``jit_backends.interleaved``).  First calls
(binding, tracing, compiling) are recorded too.  Every result is compared with
``jax_jit``'s.  ``--large`` adds the structured problems at GPU sizes (n 8,000).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import sys
import time
from collections.abc import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import jit_backends, structured  # noqa: E402

#: the structured problems again at sizes where a GPU is busy (name -> data keywords)
LARGE = {
    "lse_hess": {"n": 8000},
    "rayleigh_hess": {"n": 8000},
    "gp_grad": {"n": 4000},
    "gp_grad_pd": {"n": 4000},
    "aopt_grad": {"m": 8000, "n": 1000},
    "ot_grad": {"n": 8000},
    "cp_grad": {"i": 200, "j": 200, "k": 200, "rank": 20},
}


class Libraries:
    """The GPU libraries that are installed and see a device, each with its sync."""

    def __init__(self) -> None:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        self.jax, self.jnp = jax, jnp
        self.jax_device = jax.devices()[0]
        self.torch = self.cupy = None
        try:
            import torch

            if torch.cuda.is_available():
                self.torch = torch
        except ImportError:
            pass
        try:
            import cupy

            if cupy.cuda.runtime.getDeviceCount() > 0:
                self.cupy = cupy
        except Exception:  # noqa: BLE001 - not installed, or no driver: left out
            pass

    def describe(self) -> dict:
        info = {"jax": self.jax.__version__, "jax_device": str(self.jax_device), "python": platform.python_version()}
        if self.torch is not None:
            info["torch"] = self.torch.__version__
            info["gpu"] = self.torch.cuda.get_device_name(0)
        if self.cupy is not None:
            info["cupy"] = self.cupy.__version__
        info["numpy"] = np.__version__
        return info

    def jax_call(self, fn: Callable, *args) -> Callable[[], object]:
        return lambda: self.jax.block_until_ready(fn(*args))

    def torch_call(self, fn: Callable, *args) -> Callable[[], object]:
        def call():
            out = fn(*args)
            self.torch.cuda.synchronize()
            return out

        return call

    def cupy_call(self, fn: Callable, *args) -> Callable[[], object]:
        def call():
            out = fn(*args)
            self.cupy.cuda.runtime.deviceSynchronize()
            return out

        return call


def _to_numpy(result) -> list[np.ndarray]:
    if isinstance(result, dict):
        result = list(result.values())
    if not isinstance(result, (list, tuple)):
        result = [result]
    out = []
    for r in result:
        if hasattr(r, "detach"):
            r = r.detach().cpu().numpy()
        elif hasattr(r, "get") and not isinstance(r, dict):
            r = r.get()
        out.append(np.asarray(r, dtype=float))
    return out


def _max_rel(a, b) -> float:
    a = np.concatenate([x.ravel() for x in _to_numpy(a)])
    b = np.concatenate([x.ravel() for x in _to_numpy(b)])
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def _first(call: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


def contenders(
    lib: Libraries, tc, exprs: list, options: dict, data: dict, theirs_jax, theirs_torch, torch_compile: bool
):
    """name -> zero-argument synchronised call, and the first-call times."""
    fns: dict[str, Callable[[], object]] = {}
    first: dict[str, float] = {}
    results: dict[str, object] = {}

    def add(label: str, call: Callable[[], object]) -> None:
        first[label], results[label] = _first(call)
        fns[label] = call

    start = time.perf_counter()
    ours = tc.compile(exprs, backend="jax", **options)
    symbolic = time.perf_counter() - start  # tc.compile's own share; main adds the derivative's
    inputs = ours.inputs
    on_jax = {k: lib.jax.device_put(np.asarray(data[k]), lib.jax_device) for k in inputs}
    add("tc_jax", lib.jax_call(ours, on_jax))
    add("jax_jit", theirs_jax)
    if lib.torch is not None:
        on_cuda = {k: lib.torch.as_tensor(np.asarray(data[k]), device="cuda") for k in inputs}
        add("tc_torch", lib.torch_call(tc.compile(exprs, backend="torch", **options), on_cuda))
        if torch_compile:
            add("tc_torch_compile", lib.torch_call(tc.compile(exprs, backend="torch", jit=True, **options), on_cuda))
        if theirs_torch is not None:
            add("torch_func", theirs_torch)
    if lib.cupy is not None:
        on_cupy = {k: lib.cupy.asarray(np.asarray(data[k])) for k in inputs}
        add("tc_cupy", lib.cupy_call(tc.compile(exprs, backend="cupy", **options), on_cupy))
    errors = {label: _max_rel(results[label], results["jax_jit"]) for label in results if label != "jax_jit"}
    return fns, first, symbolic, errors


def jit_problems(lib: Libraries):
    """(name, what, exprs builder, data, JAX's own call, torch's own call) of jit_backends.py."""
    for problem in jit_backends.problems():
        fn, args = problem.jax(lib.jax, lib.jnp, problem.data)
        args = lib.jax.device_put(args, lib.jax_device)
        yield problem.name, problem.what, problem.build, {}, problem.data, lib.jax_call(fn, *args), None


def structured_problems(lib: Libraries, large: bool):
    for problem in structured.problems():
        sizes = [("", {})] + ([("_large", LARGE[problem.name])] if large and problem.name in LARGE else [])
        for suffix, size in sizes:
            data = problem.data(**size)
            jax_args = [lib.jax.device_put(np.asarray(data[k]), lib.jax_device) for k in problem.args]
            theirs_jax = lib.jax_call(lib.jax.jit(problem.jax(lib.jax, lib.jnp)), *jax_args)
            theirs_torch = None
            if lib.torch is not None:
                tensors = [lib.torch.as_tensor(np.asarray(data[k]), device="cuda") for k in problem.args]
                theirs_torch = lib.torch_call(problem.torch(lib.torch), *tensors)
            what = problem.what + (f" at {size}" if size else "")
            yield problem.name + suffix, what, problem.build, problem.compile_options, data, theirs_jax, theirs_torch


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--torch-compile", default="rosen_vg,logreg_vgh,lse_hess")
    parser.add_argument("--large", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    import tenscalc as tc

    lib = Libraries()
    only = {p for p in args.problems.split(",") if p}
    compiled_torch = {p for p in args.torch_compile.split(",") if p}
    result: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **lib.describe(), "problems": {}}
    print(json.dumps(lib.describe()), flush=True)
    for source in (jit_problems(lib), structured_problems(lib, args.large)):
        for name, what, build, options, data, theirs_jax, theirs_torch in source:
            if only and name not in only and name.removesuffix("_large") not in only:
                continue
            try:
                start = time.perf_counter()
                exprs = build(tc)
                derivative_s = time.perf_counter() - start
                options = options(tc) if callable(options) else options
                fns, first, symbolic, errors = contenders(
                    lib, tc, exprs, options, data, theirs_jax, theirs_torch, name in compiled_torch
                )
                times = jit_backends.interleaved(fns, args.repeats)
            except Exception as exc:  # noqa: BLE001 - one failing problem is reported, the rest still run
                print(f"{name:22s} FAILED: {type(exc).__name__}: {exc}"[:400], flush=True)
                result["problems"][name] = {"what": what, "failed": f"{type(exc).__name__}: {exc}"[:2000]}
                continue
            row = {"what": what, "symbolic_s": derivative_s + symbolic, "first_call_s": first}
            row.update(call_s=times, error_vs_jax=errors)
            result["problems"][name] = row
            base = times["jax_jit"]
            parts = "  ".join(f"{label} {t * 1e3:.3f} ms ({t / base:.2f}x)" for label, t in times.items())
            worst = max(errors.values()) if errors else 0.0
            print(f"{name:22s} {parts}  max err {worst:.1e}", flush=True)
            print(f"{'':22s} first calls: " + ", ".join(f"{k} {v:.2f} s" for k, v in first.items()), flush=True)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(result, handle, indent=1)
    return result


if __name__ == "__main__":
    main()
