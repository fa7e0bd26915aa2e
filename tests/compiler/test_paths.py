"""Memory-safe contraction paths and the liveness-aware peak memory of ``cost()``.

Issue #13, item 1: opt_einsum's ``auto`` path built a 512×256×256 intermediate
(33.5 M entries) inside the Hessian-vector product of a 3-layer tanh network.
Checked from the cost model (entries and flops), never from timings.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.program import FLAG_FLOOR, PROPORTION, choose_path

NETWORK = (
    "(tanh(tanh(X *(mj,hj->mh) W1) *(mh,gh->mg) W2) *(mg,og->mo) W3 - Y) *(mo,mo->) "
    "(tanh(tanh(X *(mj,hj->mh) W1) *(mh,gh->mg) W2) *(mg,og->mo) W3 - Y)"
)
ORDERS = {"X": 2, "W1": 2, "W2": 2, "W3": 2, "Y": 2}


def network_hvp():
    return tc.hvp(tc.parse(NETWORK, ORDERS), "W1", direction="v")


def test_network_hvp_builds_no_cube():
    shapes = {"X": (512, 256), "W1": (256, 256), "W2": (256, 256), "W3": (10, 256), "Y": (512, 10)}
    cost = tc.compile(network_hvp()).cost({**shapes, "v": (256, 256)})
    # opt_einsum's `auto` path built 512*256*256 entries here (7.8e8 flops in all)
    assert cost.largest_intermediate == 512 * 256
    # 6.87e8 with X vᵀ formed in three fused einsums; 5.52e8 with it computed once;
    # 4.85e8 with (S1 ⊙ X vᵀ) W2ᵀ shared too (the hand-written R-operator: 4.7e8)
    assert cost.flops < 4.9e8
    assert cost.flagged == ()
    # a handful of 512x256 arrays alive at once, never one of 512*256*256 (the shared
    # (S1 ⊙ X vᵀ) W2ᵀ lives between its two readers: 10.04 arrays at the peak, 9.0 before)
    assert cost.peak_memory <= 11 * 512 * 256


def small_network_data(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs of the network HVP with distinct small lengths."""
    m, n, h, g, o = 7, 5, 4, 3, 2
    return {
        "X": rng.standard_normal((m, n)),
        "W1": rng.standard_normal((h, n)) / 2,
        "W2": rng.standard_normal((g, h)) / 2,
        "W3": rng.standard_normal((o, g)),
        "Y": rng.standard_normal((m, o)),
        "v": rng.standard_normal((h, n)),
    }


def test_network_hvp_values_agree_with_the_interpreter_and_finite_differences():
    data = small_network_data(np.random.default_rng(3))
    hv = network_hvp()
    compiled = tc.compile(hv)(data)
    np.testing.assert_allclose(compiled, tc.evaluate(hv, data), rtol=1e-12, atol=1e-12)
    grad = tc.compile(tc.gradient(tc.parse(NETWORK, ORDERS), "W1"))
    eps = 1e-6
    plus = grad({**data, "W1": data["W1"] + eps * data["v"]})
    minus = grad({**data, "W1": data["W1"] - eps * data["v"]})
    np.testing.assert_allclose(compiled, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-6)


def test_choose_path_keeps_auto_when_it_is_fine():
    path, info = choose_path("ij,jk->ik", [(3, 4), (4, 5)], 15)
    assert path == [(0, 1)] and info.largest_intermediate == 15


def test_choose_path_avoids_the_cube():
    shapes = [(512, 256), (256, 256), (512, 256), (512, 256), (256, 256), (10, 256), (10, 256)]
    _, info = choose_path("ab,bc,ad,ac,cd,ef,eb->af", shapes, 512 * 256)
    assert info.largest_intermediate <= 512 * 256
    assert float(info.opt_cost) <= 1.5e8


def test_peak_memory_follows_liveness():
    # ten nested sines: each intermediate dies when the next is made, so at most
    # two vectors are alive at once, although ten are allocated in turn
    src = "x"
    for _ in range(10):
        src = f"sin({src})"
    cost = tc.compile(tc.parse(src, {"x": 1})).cost({"x": (1000,)})
    assert cost.largest_intermediate == 1000
    assert cost.peak_memory == 2000


def test_peak_memory_counts_the_path_intermediates():
    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    cost = tc.compile(f).cost({"x": (100,), "A": (100, 100)})
    assert cost.peak_memory == 100 + 1  # x A (100 entries) alive while the scalar is made


def test_unavoidable_blowup_is_flagged():
    # each letter is carried by three of the six matrices: any pairwise contraction
    # makes an n^3 (or n^4) intermediate out of n^2 operands and a scalar result
    src = "A *(ij,kl->ijkl) B *(ijkl,ik->ijkl) C *(ijkl,jl->ijkl) D *(ijkl,il->ijkl) E *(ijkl,jk->) F"
    f = tc.parse(src, {name: 2 for name in "ABCDEF"})
    n = 64
    cost = tc.compile(f).cost({name: (n, n) for name in "ABCDEF"})
    assert cost.largest_intermediate >= n**3 >= FLAG_FLOOR
    assert n**3 > PROPORTION * n * n
    assert len(cost.flagged) == 1 and "out of proportion" not in cost.flagged[0]
    assert "no contraction order" in cost.flagged[0]
    assert "out of proportion" in str(cost)
    # small sizes are not flagged
    assert tc.compile(f).cost({name: (4, 4) for name in "ABCDEF"}).flagged == ()


@pytest.mark.parametrize("n", [2, 3])
def test_flagged_product_still_computes_the_right_value(n):
    src = "A *(ij,kl->ijkl) B *(ijkl,ik->ijkl) C *(ijkl,jl->ijkl) D *(ijkl,il->ijkl) E *(ijkl,jk->) F"
    f = tc.parse(src, {name: 2 for name in "ABCDEF"})
    rng = np.random.default_rng(n)
    data = {name: rng.standard_normal((n, n)) for name in "ABCDEF"}
    d = data
    expected = np.einsum("ij,kl,ik,jl,il,jk->", d["A"], d["B"], d["C"], d["D"], d["E"], d["F"])
    assert tc.compile(f)(data) == pytest.approx(expected, rel=1e-12)


def test_logistic_hvp_passes_over_x_three_times():
    # sigma(1 - sigma) distributed into two products contracted X with v twice: four
    # passes over X (3.2e7 flops at m = 4000, n = 1000); the shared X v is formed once
    src = "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1"
    f = tc.parse(src, {"X": 2, "y": 1, "w": 1})
    hv = tc.hvp(f, "w", direction="v")
    m, n = 4000, 1000
    cost = tc.compile(hv).cost({"X": (m, n), "y": (m,), "w": (n,), "v": (n,)})
    one_pass = 2 * m * n
    assert cost.flops <= 3 * one_pass + 20 * m
    rng = np.random.default_rng(5)
    data = {"X": rng.standard_normal((6, 4)), "y": rng.standard_normal(6), "w": rng.standard_normal(4)}
    data["v"] = rng.standard_normal(4)
    np.testing.assert_allclose(tc.compile(hv)(data), tc.evaluate(hv, data), rtol=1e-12, atol=1e-12)


def test_softmax_regression_hessian_never_forms_the_order_four_sum():
    # H = (A - B) *(ijkl,km->ijlm) X with A, B order-4 outer products (k x n x m x k):
    # formed, the sum alone is 10 x 50 x 2000 x 10 = 1e7 entries; pushed into the
    # product, each summand fuses with X into one einsum and no order-4 sum is formed
    f = tc.parse(
        "log(exp(X *(mj,kj->mk) W) *(mk,k->m) 1) *(m,m->) 1 - Y *(mk,mk->) (X *(mj,kj->mk) W)",
        {"X": 2, "W": 2, "Y": 2},
    )
    H = tc.hessian(f, "W")
    cost = tc.compile(H).cost({"X": (2000, 50), "W": (10, 50), "Y": (2000, 10)})
    assert cost.largest_intermediate <= 2000 * 50 * 10  # E ⊙ X-like, never k n m k
    assert cost.peak_memory < 3 * 10**6  # was 3e7
    rng = np.random.default_rng(5)
    values = {"X": rng.standard_normal((7, 3)), "W": rng.standard_normal((4, 3)), "Y": rng.standard_normal((7, 4))}
    np.testing.assert_allclose(tc.compile(H)(values), tc.evaluate(H, values), rtol=1e-12, atol=1e-12)
    P = np.exp(values["X"] @ values["W"].T)
    P /= P.sum(axis=1, keepdims=True)
    X = values["X"]
    # d2/dW[a,b]dW[c,d] = sum_m (P[m,a] delta_ac - P[m,a] P[m,c]) X[m,b] X[m,d]
    expected = np.einsum("ma,ac,mb,md->abcd", P, np.eye(4), X, X) - np.einsum("ma,mc,mb,md->abcd", P, P, X, X)
    np.testing.assert_allclose(tc.compile(H)(values), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("order", ["ir,kr,jr->ijk", "ir,jr,kr->ijk", "kr,jr,ir->ijk"])
def test_three_operands_of_equal_cost_are_contracted_into_the_output_order(order):
    """Paths of three operands tie when lengths are equal (the CP model at 120³, rank 10):
    the one the kernels lay out in the output's order is taken, so the sum reading the
    model strides through neither (``A ⊙ C`` first gave ``(i, k, j)``: the CP gradients
    took 20.9 ms against 14.6 for the hand-written form, 8.3 ms now, one core)."""
    from tenscalc.compiler.kernels import laid_in_order, numpy_contraction

    shapes = [(6, 2)] * 3
    path, info = choose_path(order, shapes, 6**3)
    assert laid_in_order(order, shapes, path)
    auto, auto_info = opt_einsum_path(order, shapes)
    assert info.opt_cost == auto_info.opt_cost  # a tie broken, never a dearer path
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in shapes]
    result = numpy_contraction(order, shapes, path)(*arrays)
    assert result.flags.c_contiguous
    np.testing.assert_allclose(result, np.einsum(order, *arrays), rtol=1e-13, atol=1e-13)


def opt_einsum_path(eq, shapes):
    import opt_einsum

    return opt_einsum.contract_path(eq, *shapes, shapes=True, optimize="auto")


MAP = "tanh(W3 *(oh,h->o) tanh(W2 *(gh,h->g) tanh(W1 *(hi,i->h) x)))"
MAP_ORDERS = {"x": 1, "W1": 2, "W2": 2, "W3": 2}


def _wide_map_shapes(n_in: int, hidden: int = 200, n_out: int = 10) -> dict:
    return {"x": (n_in,), "W1": (hidden, n_in), "W2": (hidden, hidden), "W3": (n_out, hidden)}


def test_a_row_scaling_multiplies_the_small_weight_not_the_wide_result():
    """The wide Jacobian diag(s3) W3 diag(s2) W2 diag(s1) W1: opt_einsum's searches scale
    the finished n_out x n_in result by s3; scaling W3 (n_out x hidden) first costs less.
    Doubling n_in then adds exactly the result's product and the first layer's, with no
    result-sized scaling (n_out * n_in more multiplications where s3 came last)."""
    run = tc.compile(tc.jacobian(tc.parse(MAP, MAP_ORDERS), "x"))
    small, large = (run.cost(_wide_map_shapes(n)) for n in (1000, 2000))  # the benchmark's sizes
    hidden, n_out = 200, 10
    assert large.multiplications - small.multiplications == 1000 * (n_out * hidden + hidden)
    # no result-sized array beside the result itself at the peak (was the result twice)
    assert large.peak_memory <= n_out * 2000 + 4 * hidden * hidden


def test_the_wide_jacobian_with_its_scalings_moved_agrees_with_finite_differences():
    rng = np.random.default_rng(3)
    shapes = _wide_map_shapes(7, hidden=5, n_out=2)
    values = {name: rng.standard_normal(shape) for name, shape in shapes.items()}
    expr = tc.parse(MAP, MAP_ORDERS)
    jac = tc.compile(tc.jacobian(expr, "x"))(values)
    f = tc.compile(expr)
    h = 1e-6
    for i in range(7):
        step = np.zeros(7)
        step[i] = h
        column = (f({**values, "x": values["x"] + step}) - f({**values, "x": values["x"] - step})) / (2 * h)
        np.testing.assert_allclose(jac[:, i], column, rtol=1e-6, atol=1e-8)


def test_the_path_scales_the_weight_before_the_product():
    shapes = [(200, 200), (200,), (200,), (10,), (200, 1000), (10, 200)]
    path, info = choose_path("ab,b,a,c,bd,ca->cd", shapes, 10 * 1000)
    steps = [step[2] for step in info.contraction_list]
    assert "ca,c->ca" in steps and "cd,c->cd" not in steps, steps
