"""The same compiled plan on every array backend that is installed.

NumPy always runs; PyTorch (CPU), JAX and Dask (on a ``dask.distributed``
local cluster) run when installed and are skipped with the install line
otherwise; CuPy needs a GPU.  Each backend must agree with the interpreter on
expressions that exercise fusion, deltas, diagonal reads and writes,
broadcasting, elementwise functions, ``inv``/``det`` and the benchmark problems'
derivatives.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.backends import BACKENDS, available_backends, get_backend
from tenscalc.testing import random_values

ORDERS = {"a": 0, "x": 1, "y": 1, "e": 1, "v": 1, "A": 2, "B": 2, "X": 2, "U": 2, "V": 2, "W": 2, "T": 3}

CASES = [
    ["x *(i,ij->j) A *(j,j->) x"],
    ["A *(ij,->ji) 1 + A"],
    ["A *(ii,->i) 1"],
    ["x *(i,->ii) 1 + A"],
    ["A + delta(1)"],
    ["A *(ij,jk->ik) delta(1) *(ij,jk->ik) B"],
    ["x *(i,j->ij) y^0"],
    ["exp(x) + log(x^2 + 1) - sin(x) / (cos(x) + 3) + relu(x) + abs(x) - sign(x)"],
    ["tanh(x) ^ a + arctan(x)"],
    ["inv(A) *(ij,j->i) x"],
    ["log(det(A))"],
    ["T *(iji,->ij) 1"],
    ["(x *(i,j->ij) y + y *(i,j->ij) x) *(ii,->i) 1"],
]

DERIVATIVES = [
    ("x *(i,ij->j) A *(j,j->) x", "x"),
    ("log(exp(-(y *(i,i->i) (X *(ij,j->i) x))) + 1) *(i,i->) 1", "x"),
    ("(X - U *(ik,jk->ij) V) *(ij,ij->) (X - U *(ik,jk->ij) V)", "U"),
    ("tanh(X *(mj,hj->mh) W) *(mh,h->) v", "W"),
    ("x *(i,->ii) 1 *(ij,j->i) e *(i,i->) (x *(i,->ii) 1 *(ij,i->j) e)", "x"),
]


def _groups():
    groups = [[tc.parse(t, ORDERS) for t in texts] for texts in CASES]
    for text, wrt in DERIVATIVES:
        f = tc.parse(text, ORDERS)
        groups.append([f, tc.gradient(f, wrt), tc.hessian(f, wrt), tc.hvp(f, wrt)])
    return groups


GROUPS = _groups()
IDS = [str(g[0])[:40] for g in GROUPS]


def check(backend, exprs, to_backend, to_numpy, compute=lambda results: results):
    values = random_values(exprs)
    compiled = tc.compile(exprs, backend=backend)
    results = compute(compiled({name: to_backend(value) for name, value in values.items()}))
    for expr, result in zip(exprs, results):
        expected = tc.evaluate(expr, values)
        got = to_numpy(result)
        assert got.shape == expected.shape, str(expr)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=f"{backend}: {expr}")


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
def test_numpy(exprs):
    check("numpy", exprs, np.asarray, np.asarray)


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
def test_torch_cpu(exprs):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")

    def to_torch(value):
        return torch.as_tensor(np.asarray(value, dtype=np.float64))

    check("torch", exprs, to_torch, lambda t: t.detach().cpu().numpy())


def test_torch_results_are_tensors():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    f = tc.parse("x *(i,->ii) 1 *(ij,jk->ik) A", ORDERS)
    out = tc.compile(f, backend="torch")(x=torch.ones(3, dtype=torch.float64), A=np.eye(3))  # NumPy is moved in
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64


def test_torch_copies_a_read_only_array_it_is_given():
    # a JAX array's buffer (or np.broadcast_to) is read-only: torch.as_tensor shared it and warned
    # "The given NumPy array is not writable ... undefined behavior"
    pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    x = tc.var("x", 1)
    run = tc.compile([x, tc.einsum("i,i->", x, x)], backend="torch")
    given = np.arange(3.0)
    given.flags.writeable = False
    assert not np.shares_memory(get_backend("torch").from_numpy(given).numpy(), given)  # torch warns once only
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same, square = run(x=given)
    same += 1.0  # the caller's result: writing to it leaves the input alone
    assert given.tolist() == [0.0, 1.0, 2.0] and float(square) == 5.0 and same.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
def test_jax(exprs, jax_numpy):
    check("jax", exprs, jax_numpy.asarray, np.asarray)


@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("dask.array", reason='Dask is not installed (pip install "dask[array]" distributed)')
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    distributed = pytest.importorskip(
        "distributed", reason='dask.distributed is not installed (pip install "dask[array]" distributed)'
    )
    cluster = distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize("exprs", GROUPS, ids=IDS)
def test_dask_on_a_local_cluster(exprs, dask_client):
    import dask.array as da

    def to_dask(value):
        array = np.asarray(value, dtype=np.float64)
        return da.from_array(array, chunks=tuple(max(1, n // 2) for n in array.shape))  # several chunks

    def compute(results):
        for result in results:
            assert isinstance(result, da.Array)  # lazy until computed on the cluster
        return dask_client.compute(list(results), sync=True)

    check("dask", exprs, to_dask, np.asarray, compute)


def test_cupy(exprs=GROUPS[0]):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed (it needs a CUDA GPU: pip install cupy-cuda12x)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    check("cupy", exprs, cupy.asarray, cupy.asnumpy)


def test_backend_registry():
    assert BACKENDS == ("numpy", "torch", "jax", "cupy", "dask")
    assert "numpy" in available_backends()
    assert get_backend("numpy").name == "numpy"
    with pytest.raises(tc.EvaluationError, match="unknown backend"):
        get_backend("fortran")


def test_numpy_backend_does_not_need_optional_libraries():
    import os
    import pathlib
    import subprocess
    import sys

    code = (
        "import sys; sys.modules.update({m: None for m in ('torch', 'jax', 'dask', 'cupy', 'autoray')});"
        "import numpy as np, tenscalc as tc;"
        "f = tc.parse('x *(i,i->) x', {'x': 1});"
        "print(float(tc.compile([f, tc.gradient(f, 'x')])(x=np.ones(3))[0]))"
    )
    root = str(pathlib.Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env)
    assert out.stdout.strip() == "3.0"


def test_torch_constants_follow_the_calls_device():
    """A product's constant operand is baked once on the host; a call on another
    device (CUDA in use; ``meta`` here, which runs without a GPU) gets a copy made
    once on that device, and a CPU call the constant itself."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    backend = get_backend("torch")
    constant = torch.ones(3, dtype=torch.float64)
    on = backend.placed([constant, None])
    assert on(torch.zeros(1))[0] is constant
    meta = on(torch.empty(0, device="meta"))
    assert meta[0].device.type == "meta" and meta[1] is None
    assert on(torch.empty(0, device="meta")) is meta  # copied once per device


def test_torch_contraction_follows_the_path_in_einsum_steps():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    from tenscalc.compiler.backends import torch_contraction

    rng = np.random.default_rng(4)
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    for path in ([(1, 2), (0, 1)], [(0, 1), (0, 1)]):
        contract = torch_contraction("ij,jk,k->i", [(2, 3), (3, 4), (4,)], path)
        got = contract(*map(torch.as_tensor, (a, b, c)))
        np.testing.assert_allclose(got.numpy(), a @ b @ c, rtol=1e-12)
    transpose = torch_contraction("ij->ji", [(2, 3)], [(0,)])
    np.testing.assert_array_equal(transpose(torch.as_tensor(a)).numpy(), a.T)


def test_torch_compile_traces_the_program_as_one_graph():
    """``jit=True`` on torch: no graph break in the contractions (opt_einsum's
    dispatch broke the graph before, so the program ran as many small graphs)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    dynamo = pytest.importorskip("torch._dynamo")

    exprs = GROUPS[-4]  # logistic regression: value, gradient, Hessian, HVP
    values = random_values(exprs)
    compiled = tc.compile(exprs, backend="torch")
    tensors = {k: torch.as_tensor(np.asarray(v, dtype=np.float64)) for k, v in values.items()}
    compiled(tensors)
    program = compiled._last[1]
    arrays = [tensors[name] for name in compiled.inputs]
    explained = dynamo.explain(program.run_steps)(arrays[: compiled._slot_count], arrays[0])
    assert explained.graph_break_count == 0, [b.reason for b in explained.break_reasons]


def test_torch_compile_skips_the_cholesky_checks_without_a_warning():
    """A declared pd input's factorisation reads the values (its checks): Dynamo is told to
    skip it (it printed 20 lines of "Graph break from Tensor.item()" warnings on jit=True)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    dynamo = pytest.importorskip("torch._dynamo")

    p = tc.parse_problem("declare K 2 pd y 1 expression y'*inv(K)*y + log(det(K)) derivative wrt K")
    compiled = tc.compile([p.expr, p.derivative()], backend="torch", assumptions=p.assumptions)
    b = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    tensors = {"K": torch.as_tensor(b), "y": torch.as_tensor([1.0, -1.0, 2.0])}
    compiled(tensors)
    program = compiled._last[1]
    arrays = [tensors[name] for name in compiled.inputs]
    explained = dynamo.explain(program.run_steps)(arrays[: compiled._slot_count], arrays[0])
    reasons = " ".join(str(b.reason) for b in explained.break_reasons)
    assert "item()" not in reasons, reasons
