"""Banded order-2 values (tenscalc.compiler.banded): Hessians of functions of
slices are sums of shifted, scaled diagonals, kept as band vectors and written
once into a zeroed result.  Checked against evaluate and by the cost model.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.banded import Band, Layout, write_bands

ROSENBROCK = "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)"
#: its Hessian scales the constant difference matrix D = I[1:] - I[:-1] by a vector
TOTAL_VARIATION = "sum(sqrt((x[1:] - x[:-1]).^2 + 0.01))"
VECTOR_CASES = [
    ROSENBROCK,
    "sum((x[1:] - x[:-1]) .^ 2)",
    "sum(x[2:] .* x[:-2])",
    "sum(x[1:] .* x[:-1] .^ 2 .* sin(x[:-1]))",
    "sum(x[:-3] .* exp(x[3:])) + sum(x .^ 3)",
    "sum((x[2:] - 2 * x[1:-1] + x[:-2]) .^ 2)",
    TOTAL_VARIATION,
    "sum(log(exp(x[:-1] - x[1:]) + 1))",
]


def assert_matches_evaluate(expr, data):
    got = tc.compile(expr)(data)
    expected = tc.evaluate(expr, data)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    return got


@pytest.mark.parametrize("src", VECTOR_CASES)
@pytest.mark.parametrize("n", [5, 6, 11])
def test_hessians_of_slices_match_evaluate(src, n):
    H = tc.hessian(tc.parse(src), "x")
    x = np.random.default_rng(n).uniform(-2, 2, n)
    got = assert_matches_evaluate(H, {"x": x})
    np.testing.assert_allclose(got, got.T, rtol=1e-12, atol=1e-12)
    assert got.flags.writeable


def test_rosenbrock_hessian_matches_scipy_closed_form():
    optimize = pytest.importorskip("scipy.optimize")
    H = tc.compile(tc.hessian(tc.parse(ROSENBROCK), "x"))
    for n in (2, 3, 7):
        x = np.random.default_rng(n).uniform(-2, 2, n)
        np.testing.assert_allclose(H(x=x), optimize.rosen_hess(x), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("src", [*VECTOR_CASES[:3], TOTAL_VARIATION, "sum(log(exp(x[:-1] - x[1:]) + 1))"])
def test_band_hessians_allocate_no_other_square_array(src):
    """Total variation: a dense (n-1) x n difference matrix scaled by a vector before
    (2e7 flops, peak 3 n² entries at n = 2,000), bands of numbers scaled now."""
    n = 1000
    cost = tc.compile(tc.hessian(tc.parse(src), "x")).cost({"x": (n,)})
    # before: ~10 dense n×n passes (Rosenbrock: 6e6 flops, peak 5e6 entries); now
    # vectors of length about n and one write of the result
    assert cost.largest_intermediate == n * n
    assert cost.peak_memory <= n * n + 20 * n
    assert cost.flops <= n * n + 40 * n
    assert not cost.flagged


def test_rosenbrock_hessian_cost():
    n = 3000
    cost = tc.compile(tc.hessian(tc.parse(ROSENBROCK), "x")).cost({"x": (n,)})
    assert cost.largest_intermediate == n * n  # the output only
    assert cost.peak_memory <= n * n + 20 * n


@pytest.mark.parametrize("shape", [(4, 3), (5, 2)])
def test_matrix_variable_sliced_along_one_axis(shape):
    # X (n×m) sliced along its rows: the Hessian by X is order 4 (dense path), the
    # Hessian by the vector w of the rows' weights is banded
    src = "sum((X[1:, :] - X[:-1, :] .^ 2) .^ 2 *(ij,j->i) a) + sum((X *(ij,j->i) w)[1:] .* (X *(ij,j->i) w)[:-1])"
    f = tc.parse(src, {"X": 2, "a": 1, "w": 1})
    rng = np.random.default_rng(shape[0])
    data = {"X": rng.standard_normal(shape), "a": rng.standard_normal(shape[1]), "w": rng.standard_normal(shape[1])}
    for var in ("X", "w"):
        assert_matches_evaluate(tc.hessian(f, var), data)
    assert_matches_evaluate(tc.gradient(f, "X"), data)


@pytest.mark.parametrize("n", [4, 7])
def test_rectangular_jacobian_of_slices(n):
    # (n-2)×n: the bands lie off the main diagonal of a non-square matrix
    J = tc.jacobian(tc.parse("x[2:] .* x[:-2] - 3 * x[1:-1] .^ 2"), "x")
    x = np.random.default_rng(n).standard_normal(n)
    got = assert_matches_evaluate(J, {"x": x})
    assert got.shape == (n - 2, n)


def test_band_values_read_densely_get_the_dense_matrix():
    # other readers (a function, a contraction, a transpose, a diagonal read) of the
    # banded Hessian get its dense form, written once from the bands
    H = tc.hessian(tc.parse(ROSENBROCK), "x")
    v = tc.parse("v")
    roots = [
        H,
        tc.sin(H),
        tc.einsum("ij,j->i", H, v),
        tc.einsum("ij->ji", H),
        tc.einsum("ii->i", H),
        tc.einsum("ij,ij->ij", H, H),
        H[1:, :-2],
    ]
    n = 6
    rng = np.random.default_rng(3)
    data = {"x": rng.uniform(-2, 2, n), "v": rng.standard_normal(n)}
    got = tc.compile(roots)(data)
    for root, value in zip(roots, got):
        np.testing.assert_allclose(value, tc.evaluate(root, data), rtol=1e-12, atol=1e-12)
    for root in roots[1:]:  # alone: the bands are only read densely
        assert_matches_evaluate(root, data)


def test_write_bands_adds_overlapping_bands():
    layout = Layout((3, 4), (Band(0, 1, 3), Band(1, 2, 2), Band(2, 0, 1), Band(0, 0, 3)))
    values = (np.array([1.0, 2.0, 3.0]), 10.0, np.array([5.0]), 7.0)
    expected = np.array([[7.0, 1, 0, 0], [0, 7, 12, 0], [5, 0, 7, 13]])
    np.testing.assert_array_equal(write_bands(layout, values), expected)


#: (layout, band values): disjoint and overlapping bands, numbers among arrays, float32 bands
#: (a float64 matrix) and a complex band (a complex matrix)
WRITE_CASES = [
    (Layout((3, 4), (Band(0, 1, 3), Band(1, 2, 2), Band(2, 0, 1), Band(0, 0, 3))), (np.arange(3.0), 10.0, 5.0, 7.0)),
    (Layout((2, 3), (Band(0, 0, 2), Band(0, 1, 2))), (np.float32([1, 2]), np.float32([3, 4]))),
    (Layout((2, 3), (Band(0, 0, 2), Band(0, 1, 2))), (2.0, np.array([1j, 2.0]))),
    (Layout((5, 7), (Band(0, 0, 3, rstep=2, cstep=1), Band(1, 0, 2, rstep=2, cstep=3))), (1.5, np.arange(2.0))),
]


@pytest.mark.parametrize(("layout", "values"), WRITE_CASES)
def test_write_bands_is_the_text_the_generated_source_runs(layout, values, monkeypatch):
    """The closure loop's dense matrix of bands is the generated source's text run once
    (``WRITE_BANDS_SOURCE``), not a Python twin of it: the same values and dtype as the text
    run afresh, and ``write_bands`` hands its work to the function compiled from that text."""
    from tenscalc.compiler import banded

    namespace: dict = {"_np": np}
    exec(compile(banded.WRITE_BANDS_SOURCE, "<text>", "exec"), namespace)  # noqa: S102 - the library's own text
    expected = namespace["_write_bands"](values, layout.shape, layout.keys, layout.disjoint)
    got = write_bands(layout, values)
    assert got.dtype == expected.dtype and got.shape == layout.shape
    np.testing.assert_array_equal(got, expected)
    assert banded._write_bands.__code__.co_filename == "<tenscalc bands>"  # compiled from the module's text
    calls: list = []
    monkeypatch.setattr(banded, "_write_bands", lambda *args: calls.append(args) or "the text's")
    assert write_bands(layout, values) == "the text's"
    assert calls == [(values, layout.shape, layout.keys, layout.disjoint)]


def test_write_strided_bands():
    # A[2t, t] and A[1 + 2t, 3t] of a 5×7 matrix
    layout = Layout((5, 7), (Band(0, 0, 3, rstep=2, cstep=1), Band(1, 0, 2, rstep=2, cstep=3)))
    values = (np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0]))
    expected = np.zeros((5, 7))
    expected[[0, 2, 4], [0, 1, 2]] = [1.0, 2.0, 3.0]
    expected[[1, 3], [0, 3]] = [4.0, 5.0]
    np.testing.assert_array_equal(write_bands(layout, values), expected)


def test_band_clipping_and_shifting():
    band = Band(0, 1, 4)  # A[t, t + 1] of a 4×5 matrix
    assert band.placed(range(2, 6), range(0, 5)) == Band(2, 1, 4)
    assert band.transposed() == Band(1, 0, 4)
    # A[1:3, 0:4]: entries (1, 2) and (2, 3) -> (0, 2) and (1, 3) of the slice, first t = 1
    assert band.clipped(range(1, 3), range(0, 4)) == (Band(0, 2, 2), 1, 1)
    assert band.clipped(range(0, 4), range(0, 1)) is None


def _dense(band: Band, shape) -> np.ndarray:
    return write_bands(Layout(shape, (band,)), (np.arange(1.0, band.length + 1),))


@pytest.mark.parametrize(
    "band, shape",
    [
        (Band(0, 0, 9), (9, 9)),
        (Band(0, 1, 8), (9, 9)),
        (Band(1, 0, 4, rstep=2, cstep=2), (9, 9)),
        (Band(0, 0, 5, rstep=2, cstep=1), (9, 5)),
        (Band(2, 1, 3, rstep=1, cstep=3), (6, 10)),
    ],
)
@pytest.mark.parametrize("rows", [(0, None, 1), (1, None, 2), (0, None, 2), (2, 8, 3), (1, -1, 1)])
@pytest.mark.parametrize("cols", [(0, None, 1), (1, None, 2), (0, None, 3), (1, 7, 2)])
def test_strided_bands_clip_and_place_like_numpy(band, shape, rows, cols):
    """Clipping by a strided slice and placing by a strided embed agree with NumPy indexing."""
    dense = _dense(band, shape)
    key = (slice(*rows), slice(*cols))
    ranges = [range(*slice(*item).indices(n)) for item, n in zip((rows, cols), shape)]
    kept = band.clipped(*ranges)
    sliced = dense[key]
    if kept is None:
        assert not sliced.any()
    else:
        new, first, every = kept
        values = np.arange(1.0, band.length + 1)[first::every][: new.length]
        np.testing.assert_array_equal(write_bands(Layout(sliced.shape, (new,)), (values,)), sliced)
    # placing the band's matrix into the rows and columns of a larger one
    big = (len(range(0, 2 * shape[0] + 1)), len(range(1, 3 * shape[1] + 1)))
    placed = band.placed(range(0, 2 * shape[0], 2), range(1, 3 * shape[1] + 1, 3))
    expected = np.zeros(big)
    expected[0 : 2 * shape[0] : 2, 1 : 3 * shape[1] + 1 : 3] = dense
    np.testing.assert_array_equal(write_bands(Layout(big, (placed,)), (np.arange(1.0, band.length + 1),)), expected)
