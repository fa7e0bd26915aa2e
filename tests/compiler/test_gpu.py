"""The compiled program on a GPU: PyTorch (CUDA), CuPy and JAX on a GPU device.

Skipped where no CUDA device is present (the project's CI machine has none); the
session notes and ``docs/performance.md`` say when and where they last ran.  Each
test moves the data to the GPU, runs ``tc.compile`` there and checks that

* the results are the backend's arrays on the same device, in the input's dtype;
* they agree with the interpreter (float64: 1e-9; float32: 1e-4 relative);
* constants the program makes (ones, identities, band and diagonal writes, the
  Cholesky factor of a declared ``pd`` matrix) are made on the device, never on the
  host (a mix raises in PyTorch and CuPy, so a wrong device cannot pass silently).
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import random_values
from tests.compiler.test_backends import GROUPS, IDS
from tests.compiler.test_runners import NAMES, _values


def _torch_cuda():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device (PyTorch sees none)")
    return torch


def _cupy():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed (it needs a CUDA GPU)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device (CuPy sees none)")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device (CuPy sees none)")
    return cupy


def _jax_gpu():
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    try:
        devices = jax.devices("gpu")
    except RuntimeError:
        pytest.skip("JAX has no GPU backend here")
    jax.config.update("jax_enable_x64", True)
    return jax, devices[0]


def _compare(exprs, values, results, to_numpy, rtol=1e-9, atol=1e-12):
    for expr, result in zip(exprs, results):
        expected = tc.evaluate(expr, values)
        got = to_numpy(result)
        assert got.shape == np.shape(expected), str(expr)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=str(expr))


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_torch_cuda(exprs, dtype):
    torch = _torch_cuda()
    values = random_values(exprs)
    tensors = {k: torch.as_tensor(np.asarray(v, dtype=dtype), device="cuda") for k, v in values.items()}
    results = tc.compile(exprs, backend="torch")(tensors)
    for result in results:
        assert isinstance(result, torch.Tensor) and result.device.type == "cuda"
        assert result.dtype == getattr(torch, dtype)
    tol = {"rtol": 1e-9, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-4, "atol": 2e-4}
    exact = {k: np.asarray(t.cpu().numpy(), dtype=np.float64) for k, t in tensors.items()}  # the rounded inputs
    _compare(exprs, exact, results, lambda t: t.detach().cpu().numpy().astype(np.float64), **tol)


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
def test_cupy(exprs):
    cupy = _cupy()
    values = random_values(exprs)
    results = tc.compile(exprs, backend="cupy")({k: cupy.asarray(v) for k, v in values.items()})
    for result in results:
        assert isinstance(result, cupy.ndarray)
    _compare(exprs, values, results, cupy.asnumpy)


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
def test_jax_jitted_on_the_gpu(exprs):
    jax, device = _jax_gpu()
    values = random_values(exprs)
    arrays = {k: jax.device_put(np.asarray(v, dtype=np.float64), device) for k, v in values.items()}
    results = tc.compile(exprs, backend="jax")(arrays)
    for result in results:
        assert result.devices() == {device}
    _compare(exprs, values, results, np.asarray)


@pytest.mark.parametrize("name", NAMES)
def test_runner_corpus_on_every_gpu_library(name):
    """The runners' corpus (benchmark problems, slices and bands, order 3 and 4,
    scalars, accumulated sums, inv and det) on every GPU library installed."""
    exprs, values = _values(name)
    ran = 0
    for library in ("torch", "cupy", "jax"):
        try:
            if library == "torch":
                torch = _torch_cuda()
                arrays = {k: torch.as_tensor(np.asarray(v, dtype=np.float64), device="cuda") for k, v in values.items()}
                results = tc.compile(exprs, backend="torch")(arrays)
                _compare(exprs, values, results, lambda t: t.detach().cpu().numpy())
            elif library == "cupy":
                cupy = _cupy()
                results = tc.compile(exprs, backend="cupy")({k: cupy.asarray(np.asarray(v)) for k, v in values.items()})
                _compare(exprs, values, results, cupy.asnumpy)
            else:
                jax, device = _jax_gpu()
                arrays = {k: jax.device_put(np.asarray(v, dtype=np.float64), device) for k, v in values.items()}
                _compare(exprs, values, tc.compile(exprs, backend="jax")(arrays), np.asarray)
        except pytest.skip.Exception:
            continue
        ran += 1
    if not ran:
        pytest.skip("no GPU library with a CUDA device")


def test_torch_cuda_declared_pd_factorises_on_the_device():
    torch = _torch_cuda()
    f = tc.parse("y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))", {"K": 2, "y": 1})
    gradient = tc.gradient(f, "K")
    rng = np.random.default_rng(3)
    B = rng.standard_normal((6, 6))
    K, y = B @ B.T + 6 * np.eye(6), rng.standard_normal(6)
    compiled = tc.compile([gradient], backend="torch", assumptions={"K": "pd"})
    (result,) = compiled(K=torch.as_tensor(K, device="cuda"), y=torch.as_tensor(y, device="cuda"))
    assert result.device.type == "cuda"
    np.testing.assert_allclose(result.cpu().numpy(), tc.evaluate(gradient, {"K": K, "y": y}), rtol=1e-9)
    with pytest.raises(tc.EvaluationError, match="K"):  # not positive definite: a clear error on the GPU too
        compiled(K=torch.as_tensor(-K, device="cuda"), y=torch.as_tensor(y, device="cuda"))


def test_torch_compile_on_cuda():
    """``jit=True``: ``torch.compile`` of the whole program, on CUDA tensors."""
    torch = _torch_cuda()
    exprs = GROUPS[-4]  # the logistic regression: value, gradient, Hessian, HVP
    values = random_values(exprs)
    tensors = {k: torch.as_tensor(np.asarray(v, dtype=np.float64), device="cuda") for k, v in values.items()}
    results = tc.compile(exprs, backend="torch", jit=True)(tensors)
    assert all(r.device.type == "cuda" for r in results)
    _compare(exprs, values, results, lambda t: t.detach().cpu().numpy())


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_structured_problems_on_the_gpu(library):
    """Issue 27's problems at small distinct sizes: the A-optimal design's ``0.1 I``
    is a constant operand of a product, baked on the host at bind time; on CUDA it
    once met the GPU's tensors and raised ("found at least two devices")."""
    from benchmarks import structured
    from tests.test_bench_problems import STRUCTURED_SMALL

    module = _torch_cuda() if library == "torch" else _cupy()
    for problem in structured.problems():
        data = problem.data(**STRUCTURED_SMALL[problem.name])
        exprs = problem.build(tc)
        compiled = tc.compile(exprs, backend=library, **problem.compile_options(tc))
        if library == "torch":
            torch = module
            results = compiled({k: torch.as_tensor(np.asarray(data[k]), device="cuda") for k in compiled.inputs})
            assert all(r.device.type == "cuda" for r in results)
            _compare(exprs, data, results, lambda t: t.detach().cpu().numpy())
        else:
            cupy = module
            results = compiled({k: cupy.asarray(np.asarray(data[k])) for k in compiled.inputs})
            _compare(exprs, data, results, cupy.asnumpy)


def test_torch_inputs_on_two_devices_get_a_clear_error():
    torch = _torch_cuda()
    run = tc.compile(tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}), backend="torch")
    x = torch.ones(3, dtype=torch.float64, device="cuda")
    with pytest.raises(tc.EvaluationError, match="different devices.*x: cuda:0.*A: cpu"):
        run(x=x, A=np.eye(3))  # a NumPy array is moved in on the CPU
    assert float(run(x=x, A=torch.eye(3, dtype=torch.float64, device="cuda"))) == 3.0
