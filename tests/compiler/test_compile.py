"""tc.compile: the compiled plan agrees with the interpreter, shares work, fuses
products, never builds deltas, caches paths per shape and reports clear errors.

Data comes from :func:`tenscalc.testing.random_values`, with a distinct length
for every independent axis, so a transposed axis in a fused product cannot pass.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler import CACHE_SIZE
from tenscalc.testing import random_values

ORDERS = {
    "a": 0,
    "c": 0,
    "x": 1,
    "y": 1,
    "v": 1,
    "e": 1,
    "A": 2,
    "B": 2,
    "X": 2,
    "U": 2,
    "V": 2,
    "W": 2,
    "T": 3,
    "Q": 4,
}

EXPRESSIONS = [
    "x *(i,ij->j) A *(j,j->) x",
    "A *(ij,->ji) 1",
    "A *(ii,->) 1",
    "A *(ii,->i) 1",
    "x *(i,->ii) 1",
    "x *(i,->ii) 1 + A",
    "A + delta(1)",
    "2 - 3 *(,ij->ij) delta(1) *(ij,jk->ik) A",
    "A *(ij,jk->ik) delta(1)",
    "delta(1) *(ij,jk->ik) A *(ij,jk->ik) delta(1) *(ij,jk->ik) B",
    "x *(i,j->ij) 1 + A",
    "x *(i,j->ij) y^0",
    "x *(i,j->i) (A *(ij,->j) 1)^0 *(i,ij->j) A",
    "delta(1) *(ij,ij->) (x *(i,j->ij) x)^0 *(,i->i) x",
    "exp(x) + log(x^2 + 1) - sin(x) / (cos(x) + 3)",
    "tanh(x) + arctan(x) + tan(x / 4)",
    "relu(x) + abs(x) - sign(x)",
    "x ^ 3 + x ^ (-2) + (x^2 + 1) ^ 0.5",
    "inv(A) *(ij,j->i) x",
    "det(A) *(,i->i) x",
    "adj(A)",
    "log(det(A))",
    "tanh(X *(mj,hj->mh) W) *(mh,h->) v",
    "(X - U *(ik,jk->ij) V) *(ij,ij->) (X - U *(ik,jk->ij) V)",
    "T *(ijk,->kji) 1",
    "T *(iji,->ij) 1",
    "Q *(ijkl,->ik) 1",
    "X *(ij,ik->jk) X",
    "x *(i,i->i) y *(i,->ii) 1",
    "x *(i,->i) exp(2)",
    "x *(i,i->) 1 *(,ij->ij) A",
    "c *(,i->i) x + a *(,i->i) y",
    "(x *(i,j->ij) y + y *(i,j->ij) x) *(ii,->i) 1",
    "(x *(i,j->ij) y - y *(i,j->ij) x) *(ij,->) 1",
    "x *(i,->ii) 1 *(ij,j->i) e *(i,i->) (x *(i,->ii) 1 *(ij,i->j) e)",
    "-(A *(ij,jk->ik) B) *(ik,->ki) 1 + 2 *(,ij->ij) B *(ji,->ij) 1",
    "exp(A *(ij,j->i) x) *(i,i->) exp(A *(ij,j->i) x)",
    "sin(A) *(ij,kj->ik) sin(A) *(ij,->ji) 1",
    # Gram matrices Xᵀ diag(d) X (the syrk kernel): d of mixed sign, positive, negative, a second
    "X *(ij,i->ij) y *(ij,ik->jk) X",
    "X *(ij,i->ij) exp(y) *(ij,ik->kj) X",
    "-(X *(ij,i->ij) exp(y) *(ij,ik->jk) X)",
    "X *(ji,i->ji) exp(x) *(ji,ki->jk) X",
    "c *(,ij->ij) (X *(ij,i->ij) y *(ij,ik->jk) X)",
]

SCALARS = [
    ("x *(i,ij->j) A *(j,j->) x", "x"),
    ("log(exp(-(y *(i,i->i) (X *(ij,j->i) x))) + 1) *(i,i->) 1", "x"),
    ("(X - U *(ik,jk->ij) V) *(ij,ij->) (X - U *(ik,jk->ij) V)", "U"),
    ("tanh(X *(mj,hj->mh) W) *(mh,h->) v", "W"),
    ("log(det(A))", "A"),
    ("x *(i,->ii) 1 *(ij,j->i) e *(i,i->) (x *(i,->ii) 1 *(ij,i->j) e)", "x"),
    ("sin(x) *(i,i->) cos(x) + x *(i,->) 1 ^ 2", "x"),
    ("A *(ij,jk->ik) A *(ii,->) 1", "A"),
    ("c *(,->) (x *(i,->ii) 1 *(ii,->) 1) + a *(,->) (x *(i,->ii) 1 *(ii,->) 1)", "x"),
]


def parse(text: str) -> tc.Expr:
    return tc.parse(text, ORDERS)


def assert_compiled_matches(exprs, values=None, backend="numpy", rtol=1e-10):
    exprs = list(exprs)
    values = values if values is not None else random_values(exprs)
    compiled = tc.compile(exprs, backend=backend)
    results = compiled(values)
    assert isinstance(results, tuple) and len(results) == len(exprs)
    for expr, result in zip(exprs, results):
        expected = tc.evaluate(expr, values)
        got = np.asarray(result)
        assert got.shape == expected.shape, str(expr)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-12, err_msg=str(expr))
    return compiled, values


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_compiled_equals_interpreted(text):
    assert_compiled_matches([parse(text)])


@pytest.mark.parametrize("text, wrt", SCALARS)
def test_value_gradient_hessian_compiled_together(text, wrt):
    f = parse(text)
    assert_compiled_matches([f, tc.gradient(f, wrt), tc.hessian(f, wrt)])


@pytest.mark.parametrize("text, wrt", SCALARS)
def test_unsimplified_derivatives_compile(text, wrt):
    f = parse(text)
    g = tc.derivative(f, wrt, simplify=False)
    assert_compiled_matches([g, tc.derivative(g, wrt, simplify=False)])


def test_single_expression_returns_an_array_and_keywords_work():
    f = parse("A *(ij,j->i) x")
    run = tc.compile(f)
    out = run(A=np.eye(2), x=[1.0, 2.0])
    assert isinstance(out, np.ndarray) and out.tolist() == [1.0, 2.0]
    assert run({"A": np.eye(2)}, x=np.array([3, 4])).tolist() == [3.0, 4.0]  # integers become floats
    assert tc.compile([f])(A=np.eye(2), x=[1.0, 2.0])[0].tolist() == [1.0, 2.0]


def test_order_zero_results_are_arrays():
    out = tc.compile(parse("x *(i,i->) x"))(x=[1.0, 2.0])
    assert isinstance(out, np.ndarray) and out.shape == () and float(out) == 5.0


def test_common_subexpressions_are_computed_once():
    f = parse("tanh(X *(mj,hj->mh) W) *(mh,h->) v")
    g, h = tc.gradient(f, "W"), tc.hessian(f, "W")
    together = tc.compile([f, g, h])
    apart = sum(len(tc.compile(e).plan.steps) for e in (f, g, h))
    assert len(together.plan.steps) < apart
    assert_compiled_matches([f, g, h])
    # the same root twice is one value
    a, b = tc.compile([g, g])(random_values([g]))
    assert a is b


def test_product_chains_fuse_into_one_einsum():
    f = parse("log(exp(-(y *(i,i->i) (X *(ij,j->i) x))) + 1) *(i,i->) 1")
    hessian = tc.hessian(f, "x")
    plan = tc.compile(hessian).plan
    root = plan.steps[plan.outputs[0]]
    assert root.kind == "product" and len(root.data) == 1
    assert len(root.data[0].operands) >= 4  # X, X and the vectors: one multi-operand einsum


def test_deltas_are_never_materialised():
    for text, wrt in [
        ("x *(i,i->) x", "x"),
        ("(X - U *(ik,jk->ij) V) *(ij,ij->) (X - U *(ik,jk->ij) V)", "U"),
        ("tanh(X *(mj,hj->mh) W) *(mh,h->) v", "W"),
    ]:
        f = parse(text)
        compiled = tc.compile([f, tc.gradient(f, wrt), tc.hessian(f, wrt)])
        kinds = {step.kind for step in compiled.plan.steps}
        assert "constant" not in kinds, text
        for step in compiled.plan.steps:
            assert step.node.op != "delta"
        assert_compiled_matches(compiled.exprs)


def test_hessian_with_a_delta_output_is_written_through_a_diagonal():
    f = parse("(X - U *(ik,jk->ij) V) *(ij,ij->) (X - U *(ik,jk->ij) V)")
    h = tc.hessian(f, "U")
    values = random_values([f, h])
    compiled = tc.compile(h)
    m, k = values["U"].shape  # the Hessian by U is indexed by U's axes
    cost = compiled.cost(values)
    assert cost.largest_intermediate == (m * k) ** 2  # the output itself, nothing bigger
    out = compiled(values)
    expected = np.einsum("ac,bd->abcd", np.eye(m), 2 * values["V"].T @ values["V"])
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_paths_are_cached_per_shape_signature_and_the_cache_is_bounded():
    f = parse("A *(ij,jk->ik) B *(ik,k->i) x")
    run = tc.compile(f)
    rng = np.random.default_rng(0)
    for _ in range(3):
        run(A=rng.random((2, 3)), B=rng.random((3, 4)), x=rng.random(4))
    assert len(run._programs) == 1
    for n in range(2, CACHE_SIZE + 6):
        out = run(A=rng.random((n, 3)), B=rng.random((3, 4)), x=rng.random(4))
        assert out.shape == (n,)
    assert len(run._programs) == CACHE_SIZE


def test_intermediates_are_released_after_their_last_use():
    f = parse("tanh(X *(mj,hj->mh) W) *(mh,h->) v")
    plan = tc.compile([tc.hessian(f, "W")]).plan
    released = [slot for group in plan.release for slot in group]
    assert len(released) == len(set(released))
    assert set(released) == set(range(len(plan.steps))) - set(plan.outputs)


def test_outputs_are_fresh_writeable_arrays():
    f = parse("x *(i,j->ij) y^0")  # a broadcast internally
    run = tc.compile([f, parse("A *(ij,->ji) 1")])
    out, transposed = run(x=[1.0, 2.0], y=[0.0, 0.0, 0.0], A=np.ones((2, 3)))
    assert out.shape == (2, 3) and out.flags.writeable and transposed.flags.writeable
    out[...] = 7
    again, _ = run(x=[1.0, 2.0], y=[0.0, 0.0, 0.0], A=np.ones((2, 3)))
    assert again[0, 0] == 1.0


def test_constant_roots_and_shape_only_inputs():
    f = parse("x *(i,i->) x")
    h = tc.hessian(f, "x")  # 2 delta(1), lengths bound through x
    run = tc.compile(h)
    assert "x" in run.inputs
    out = run(x=np.zeros(3))
    np.testing.assert_array_equal(out, 2 * np.eye(3))
    out[0, 0] = 5
    np.testing.assert_array_equal(run(x=np.zeros(3)), 2 * np.eye(3))


def test_errors_name_the_variable():
    run = tc.compile(parse("A *(ij,j->i) x"))
    with pytest.raises(tc.EvaluationError, match="'x'"):
        run(A=np.eye(2))
    with pytest.raises(tc.EvaluationError, match="order 1"):
        run(A=np.eye(2), x=np.eye(2))
    with pytest.raises(tc.EvaluationError, match="length"):
        run(A=np.eye(2), x=np.ones(3))
    with pytest.raises(tc.EvaluationError, match="dtype"):
        run(A=np.eye(2), x=np.array(["a", "b"]))
    with pytest.raises(tc.TensCalcError):
        tc.compile([])
    with pytest.raises(tc.TensCalcError):
        tc.compile("x")
    with pytest.raises(tc.TensCalcError, match="backend"):
        tc.compile(parse("x *(i,i->) x"), backend="fortran")


def test_repr_and_inputs():
    run = tc.compile([parse("A *(ij,j->i) x"), parse("x *(i,i->) y")])
    assert set(run.inputs) == {"A", "x", "y"}
    assert "CompiledFunction" in repr(run) and run.backend == "numpy"


def test_hvp_matches_hessian_times_vector():
    for text, wrt in [
        ("tanh(X *(mj,hj->mh) W) *(mh,h->) v", "W"),
        ("x *(i,ij->j) A *(j,j->) x", "x"),
        ("log(exp(-(y *(i,i->i) (X *(ij,j->i) x))) + 1) *(i,i->) 1", "x"),
    ]:
        f = parse(text)
        hv = tc.hvp(f, wrt)
        h = tc.hessian(f, wrt)
        values = random_values([f, hv, h])
        direction = next(name for name in hv.variables if name.startswith("v_"))
        got = tc.compile(hv)(values)
        order = f.variables[wrt]
        axes = (tuple(range(order, 2 * order)), tuple(range(order)))
        expected = np.tensordot(tc.evaluate(h, values), values[direction], axes=axes)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_hvp_direction_name_cannot_clash():
    x = tc.var("x", 1)
    taken = tc.var("v_x", 1)
    f = tc.einsum("i,i->", x, x) + tc.einsum("i,i->", taken, taken)
    hv = tc.hvp(f, "x")
    assert "v__x" in hv.variables
    assert "d" in tc.hvp(tc.einsum("i,i->", x, x), "x", direction="d").variables
    with pytest.raises(tc.TensCalcError):
        tc.hvp(x, "x")


def test_benchmark_script_quick_smoke(tmp_path):
    """``benchmarks/run_benchmarks.py --quick`` runs without JAX or PyTorch and
    writes a JSON with every problem (their columns left out)."""
    import importlib.util
    import json
    import pathlib

    script = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "run_benchmarks.py"
    spec = importlib.util.spec_from_file_location("run_benchmarks", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "quick.json"
    module.main(["--quick", "--skip", "jax,torch", "--repeats", "1", "--budget", "0", "--out", str(out)])
    results = json.loads(out.read_text())
    assert set(results["problems"]) == {"quadratic", "logreg", "matfac", "mlp"}
    for row in results["problems"].values():
        assert set(row["hessian"]) == {"tenscalc", "closed_form"}
        assert row["gradient"]["tenscalc"]["median"] > 0 and row["hvp"]["tenscalc"]["median"] > 0
        assert row["max_rel_error"] < 1e-10
        assert row["symbolic"]["total"] > 0 and row["first_call"] > 0
    assert [r["n"] for r in results["sweep"]["quadratic"]] == module.QUICK_SWEEP
    assert results["machine"]["cores"] >= 1 and results["config"]["frameworks"] == []


def test_gram_matrices_are_recognised():
    from tenscalc.compiler.kernels import gram_pattern

    assert gram_pattern([(0, 1), (0, 2), (0,)], [5, 5, 7], (1, 2)) == (0, 1, [2], 0)
    assert gram_pattern([(1, 0), (2, 0)], [5, 5], (2, 1)) == (0, 1, [], 1)
    assert gram_pattern([(0, 1), (0, 2)], [5, 6], (1, 2)) is None  # two different matrices
    assert gram_pattern([(0, 1), (2, 0)], [5, 5], (1, 2)) is None  # X Xᵀ mixed orientation: not a Gram
    assert gram_pattern([(0, 1), (0, 2), (1,)], [5, 5, 7], (1, 2)) is None  # a vector on a kept axis


@pytest.mark.parametrize("threshold", [float("inf"), 1 << 4])
def test_matrix_vector_products_agree_through_blas_and_the_einsum_pass(monkeypatch, threshold):
    """Large matrix-vector products go through BLAS by default; on shared cores
    MATVEC_EINSUM_SIZE switches them to one einsum pass.  Both must give the same
    numbers (distinct lengths so a transposed operand cannot pass)."""
    from tenscalc.compiler import kernels

    monkeypatch.setattr(kernels, "MATVEC_EINSUM_SIZE", threshold)
    f = tc.parse("x *(i,ij->j) A *(j,j->) y", {"x": 1, "A": 2, "y": 1})
    exprs = [f, tc.gradient(f, "x"), tc.gradient(f, "y")]
    rng = np.random.default_rng(3)
    values = {"x": rng.standard_normal(7), "A": rng.standard_normal((7, 9)), "y": rng.standard_normal(9)}
    compiled = tc.compile(exprs)(values)
    for got, expr in zip(compiled, exprs):
        np.testing.assert_allclose(got, tc.evaluate(expr, values), rtol=1e-12, atol=1e-12)
