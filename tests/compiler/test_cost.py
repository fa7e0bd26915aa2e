"""The cost report, and the cheap-gradient principle checked with it.

Bernstein et al. ("Differentiating a Tensor Language") show that a gradient
should cost a small constant times the function.  For every benchmark problem
and for the pathological cases of that paper — a sum of k traces of diag(x),
and the product of a row and a column slice of diag(x) — the compiled gradient
must cost at most 4x the compiled function in flops and allocate nothing of
size N×N when the function is O(N).  Checked from the cost model, not timings.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tenscalc as tc

N = 1000
RATIO = 4.0


def problems():
    from benchmarks import problems as module

    return module


# the problems' default sizes, without building their arrays
SHAPES = {
    "quadratic": {"A": (1000, 1000), "x": (1000,)},
    "logreg": {"X": (4000, 1000), "y": (4000,), "w": (1000,)},
    "matfac": {"T": (60, 80), "U": (60, 10), "V": (80, 10)},
    "mlp": {"X": (300, 200), "W": (50, 200), "v": (50,)},
}


def assert_cheap_gradient(f, wrt, shapes, linear_size=None):
    function = tc.compile(f).cost(shapes)
    for gradient in (tc.gradient(f, wrt), tc.derivative(f, wrt, simplify=False)):
        cost = tc.compile(gradient).cost(shapes)
        assert cost.flops <= RATIO * function.flops, f"{gradient}: {cost} vs function {function}"
        if linear_size is not None:
            assert function.largest_intermediate <= linear_size, function
            assert cost.largest_intermediate <= linear_size, f"{gradient}: {cost}"


@pytest.mark.parametrize("name", ["quadratic", "logreg", "matfac", "mlp"])
def test_benchmark_gradients_are_cheap(name):
    p = problems().PROBLEMS[name]
    f = tc.parse(p["src"], p["orders"])
    shapes = SHAPES[name]
    for var, order in p["orders"].items():
        assert len(shapes[var]) == order
    # no intermediate bigger than the largest input: these functions are linear in their data
    largest_input = max(math.prod(s) for s in shapes.values())
    assert_cheap_gradient(f, p["wrt"], shapes)
    cost = tc.compile(tc.gradient(f, p["wrt"])).cost(shapes)
    assert cost.largest_intermediate <= largest_input


def test_problem_shapes_match_the_data_makers():
    module = problems()
    for name, shapes in SHAPES.items():
        data = module.PROBLEMS[name]["data"]()
        assert {k: v.shape for k, v in data.items()} == shapes


def _traces(k, scaled):
    """k traces of diag(x); ``scaled``: c_j * trace(diag(x)) (the trace shared, the
    terms not); otherwise diag(c_j x) per term, so nothing at all is shared."""
    orders = {"x": 1, **{f"c{j}": 0 for j in range(k)}}
    if scaled:
        src = " + ".join(f"c{j} *(,->) (x *(i,->ii) 1 *(ii,->) 1)" for j in range(k))
    else:
        src = " + ".join(f"x *(i,->ii) c{j} *(ii,->) 1" for j in range(k))
    shapes = {"x": (N,), **{f"c{j}": () for j in range(k)}}
    return tc.parse(src, orders), shapes


@pytest.mark.parametrize("k", [1, 2, 5, 20])
@pytest.mark.parametrize("scaled", [True, False])
def test_sum_of_k_traces_of_diag(k, scaled):
    f, shapes = _traces(k, scaled)
    assert_cheap_gradient(f, "x", shapes, linear_size=N)


@pytest.mark.parametrize("k", [1, 3, 8])
def test_sum_of_k_traces_with_distinct_constants(k):
    src = " + ".join(f"x *(i,->ii) {j + 2} *(ii,->) 1" for j in range(k))
    f = tc.parse(src, {"x": 1})
    assert_cheap_gradient(f, "x", {"x": (N,)}, linear_size=N)


def test_row_times_column_slice_of_diag():
    # diag(x)[:, 0] . diag(x)[0, :], the slices as products with a data vector e
    f = tc.parse("(x *(i,->ii) 1 *(ij,j->i) e) *(i,i->) (x *(i,->ii) 1 *(ij,i->j) e)", {"x": 1, "e": 1})
    assert_cheap_gradient(f, "x", {"x": (N,), "e": (N,)}, linear_size=N)


def test_the_diagonal_of_a_sum_of_outer_products_is_not_formed():
    # what the simplifier leaves for the slice example's gradient: (u v' + v u')_ii
    g = tc.parse("(x *(i,j->ij) y + y *(i,j->ij) x) *(ii,->i) 1", {"x": 1, "y": 1})
    cost = tc.compile(g).cost({"x": (N,), "y": (N,)})
    assert cost.largest_intermediate <= N and cost.flops <= 4 * N


def test_mlp_hvp_does_not_form_the_hessian():
    p = problems().PROBLEMS["mlp"]
    f = tc.parse(p["src"], p["orders"])
    hv = tc.hvp(f, "W")
    shapes = {**SHAPES["mlp"], "v_W": SHAPES["mlp"]["W"]}
    h, n = shapes["W"]
    cost = tc.compile(hv).cost(shapes)
    function = tc.compile(f).cost(shapes)
    assert cost.largest_intermediate <= 1000 * 1000 < h * n * h * n
    assert cost.largest_intermediate <= 2 * max(function.largest_intermediate, h * n)
    assert cost.flops <= 5 * function.flops
    hessian = tc.compile(tc.hessian(f, "W")).cost(shapes)
    assert hessian.largest_intermediate == h * n * h * n  # the Hessian itself, for contrast


def test_cost_report_fields():
    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    cost = tc.compile(f).cost({"x": (100,), "A": (100, 100)})
    assert cost.flops >= 100 * 100 and cost.operations == 2 and cost.largest_intermediate == 100
    assert "flops" in str(cost)
    # arrays may stand for their shapes
    import numpy as np

    same = tc.compile(f).cost({"x": np.zeros(100), "A": np.zeros((100, 100))})
    assert same == cost
    with pytest.raises(tc.EvaluationError, match="'A'"):
        tc.compile(f).cost({"x": (100,)})


def test_hessian_cost_counts_the_output_but_nothing_bigger():
    f = tc.parse("tanh(X *(mj,hj->mh) W) *(mh,h->) v", {"X": 2, "W": 2, "v": 1})
    shapes = SHAPES["mlp"]
    h, n = shapes["W"]
    cost = tc.compile(tc.hessian(f, "W")).cost(shapes)
    assert cost.largest_intermediate == (h * n) ** 2
    m = shapes["X"][0]
    assert cost.flops < 4 * m * h * n * n + 2 * (h * n) ** 2  # one GEMM and the output


# ------------------------------------------------------------------ multiplications


@pytest.mark.parametrize(
    "text, orders, shapes, expected",
    [
        # A x: one multiplication per entry of A
        ("A *(ij,j->i) x", {"A": 2, "x": 1}, {"A": (3, 5), "x": (5,)}, 15),
        # x'Ax along the cheaper path: A x (m n), then x . (A x) (m)
        ("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}, {"x": (4,), "A": (4, 4)}, 16 + 4),
        # a sum only adds; x + y: 0
        ("x + y", {"x": 1, "y": 1}, {"x": (6,), "y": (6,)}, 0),
        # scaling by 3 and squaring: one multiplication per entry each
        ("3 *(,i->i) (x .^ 2)", {"x": 1}, {"x": (7,)}, 7 + 7),
        # an outer product: one per entry of the result
        ("x *(i,j->ij) y", {"x": 1, "y": 1}, {"x": (2,), "y": (3,)}, 6),
    ],
)
def test_cost_counts_multiplications(text, orders, shapes, expected):
    cost = tc.compile(tc.parse(text, orders)).cost(shapes)
    assert cost.multiplications == expected


def test_multiplications_grow_with_the_contraction():
    # a chain A B x evaluated right to left: n^2 + n^2, not n^3 + n^2
    f = tc.parse("A *(ij,jk->ik) B *(ik,k->i) x", {"A": 2, "B": 2, "x": 1})
    for n in (10, 20):
        cost = tc.compile(f).cost({"A": (n, n), "B": (n, n), "x": (n,)})
        assert cost.multiplications == 2 * n * n


SHARED_OUTER = [
    # the example: the same outer product read twice by one contraction
    ("(x *(i,j->ij) y) *(ij,ij->) (x *(i,j->ij) y)", lambda x, y: (x @ x) * (y @ y)),
    # read by two different products, and once through a transposed reading
    ("(x *(i,j->ij) y) *(ij,j->i) y + (x *(i,j->ij) y) *(ij,i->j) x", lambda x, y: x * (y @ y) + y * (x @ x)),
    ("(x *(i,j->ij) y) *(ij,ij->) (x *(i,j->ij) y) + (x *(i,j->ij) y) *(ij,i->) x", None),
]


@pytest.mark.parametrize(("text", "reference"), SHARED_OUTER, ids=["squared norm", "two readers", "three reads"])
def test_a_shared_outer_product_is_recomputed_in_its_readers_not_materialised(text, reference):
    # sharing must never make the plan worse than not sharing: materialised, the outer
    # product was a 160,000,000,000-entry intermediate (refused at n = 400,000; 3 GiB and
    # 80 s at n = 20,000) where the same expression with z for the second y costs O(n)
    n = 400_000
    f = tc.parse(text, {"x": 1, "y": 1})
    cost = tc.compile(f).cost({"x": (n,), "y": (n,)})
    assert cost.largest_intermediate <= n and cost.peak_memory <= 4 * n, cost
    assert cost.flops <= 20 * n, cost
    rng = np.random.default_rng(5)
    lengths = (4, 4) if "+ (x *(i,j->ij) y) *(ij,i->j)" in text else (3, 5)  # a sum of an i- and a j-vector
    x, y = rng.uniform(-1, 1, lengths[0]), rng.uniform(-1, 1, lengths[1])
    run = tc.compile(f)
    expected = tc.evaluate(f, x=x, y=y)
    if reference is not None:
        np.testing.assert_allclose(expected, reference(x, y), rtol=1e-12)
    for _ in range(2):  # the first call and the fused one
        np.testing.assert_allclose(run(x=x, y=y), expected, rtol=1e-12, atol=1e-14)


def test_an_outer_product_read_elementwise_is_still_formed_once():
    # sin(x ⊗ y) needs every entry: the product is materialised, and its other reader
    # reads that slot rather than forming it again
    f = tc.parse("sin(x *(i,j->ij) y) *(ij,ij->) (x *(i,j->ij) y)", {"x": 1, "y": 1})
    cost = tc.compile(f).cost({"x": (300,), "y": (400,)})
    assert cost.largest_intermediate == 300 * 400
    assert cost.flops <= 5 * 300 * 400


@pytest.mark.parametrize("shape", [(-3,), (3.5,), "3"])
def test_a_shape_that_is_not_lengths_is_refused(shape):
    # (-3,) once gave -6 flops, (3.5,) the cost at length 3
    run = tc.compile(tc.gradient(tc.parse("x *(i,i->) x", {"x": 1}), "x"))
    with pytest.raises(tc.EvaluationError, match=r"the shape of 'x' must be a tuple of lengths \(integers >= 0\)"):
        run.cost({"x": shape})
    assert run.cost({"x": np.ones(3)}) == run.cost({"x": (3,)})
