"""Shape-free ``tc.to_python()`` keeps the bands ``tc.compile`` keeps (issue 26).

The module takes ``compile``'s band decision (:func:`tenscalc.compiler.program.band_decision`,
the binder of :mod:`tenscalc.compiler.banded` run over the shape-free plan) and writes each
banded step from the binder's recipe; the bands are laid out at run time from the
arguments' lengths by the layout text the binder runs too (:data:`.banded.BAND_SOURCE`).
One module is generated per expression and run at several lengths (tiny ones included,
where bands vanish), checked against ``tc.evaluate``; peak memory through tracemalloc
against ``compile``'s, and its growth when n doubles.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tests.compiler.test_banded import VECTOR_CASES
from tests.cost import traced_peak
from tests.generated_imports import module_imports

ROSEN = "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)"
EXTENDED = "sum(100*(x[1::2] - x[::2].^2).^2 + (1 - x[::2]).^2)"  # strided bands (block diagonal)


def _module(exprs, name: str = "f"):
    source = tc.to_python(exprs, name=name)
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the library's own code
    return namespace[name], source


#: (expression, the lengths it is run at): strided slices tie x's length to their step
CASES = [(src, (3, 4, 7, 12)) for src in VECTOR_CASES] + [
    (EXTENDED, (2, 4, 6, 12)),
    ("sum(x[::3] .* x[1::3] .^ 2) + sum(x[2:] .* x[:-2])", (3, 6, 9, 15)),
]


@pytest.mark.parametrize(("src", "lengths"), CASES)
def test_one_shape_free_module_is_right_at_every_length(src, lengths):
    f = tc.parse(src)
    exprs = [tc.hessian(f, "x"), tc.jacobian(tc.gradient(f, "x")[1:], "x")]  # square and rectangular
    function, source = _module(exprs)
    assert "_bands(" in source  # compile's decision: banded
    for n in lengths:
        x = np.random.default_rng(n).uniform(-2, 2, n)
        for got, expr in zip(function(x=x), exprs, strict=True):
            expected = tc.evaluate(expr, {"x": x})
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_a_matrix_sliced_along_one_axis(rng):
    f = tc.parse("sum(exp(X[1:, :] *(ij,j->i) w) .* (X[:-1, :] *(ij,j->i) w))", {"X": 2, "w": 1})
    exprs = [tc.hessian(f, "X")]
    function, _ = _module(exprs)
    for shape in ((4, 3), (6, 2)):
        values = {"X": rng.standard_normal(shape) / 3, "w": rng.standard_normal(shape[1])}
        (got,) = function(**values)
        np.testing.assert_allclose(got, tc.evaluate(exprs[0], values), rtol=1e-11, atol=1e-12)


def test_the_bands_are_numpy_only_and_any_function_name_keeps_them(rng):
    f = tc.parse(ROSEN)
    exprs = [tc.gradient(f, "x"), tc.hessian(f, "x")]
    for name in ("f", "range", "len", "zip"):  # the helpers read their own aliases of the builtins
        function, source = _module(exprs, name)
        imported, optional = module_imports(source)
        assert imported <= {"numpy", "opt_einsum"} and optional <= {"tenscalc"}, (imported, optional)
        x = rng.uniform(0.5, 1.5, 6)
        for got, expr in zip(function(x=x), exprs, strict=True):
            np.testing.assert_allclose(got, tc.evaluate(expr, {"x": x}), rtol=1e-12, atol=1e-12)


def _peaks(exprs, values, exact: bool = False) -> tuple[int, int]:
    """Peak bytes of ``compile``'s call and of the shape-free module's, their values compared
    (``exact``: a banded Hessian is the same arithmetic band by band; a sum's reduction order
    may differ in the last bit)."""
    compiled = tc.compile(exprs)
    function, _ = _module(exprs)
    for got, want in zip(function(**values), compiled(**values), strict=True):
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    return traced_peak(lambda: compiled(**values), warm=2), traced_peak(lambda: function(**values), warm=1)


def test_the_chained_rosenbrock_hessian_peaks_like_compile_and_its_bands_grow_linearly():
    # before: no band decision, the shifted identities and the Hessian's parts dense n x n
    # arrays: 61.2 MiB at n = 2,000 against compile's 30.6 MiB (the Hessian itself), and
    # 8.1 MB then 32.1 MB beyond the Hessian at n = 1,000 and 2,000 (x3.95)
    exprs = [tc.hessian(tc.parse(ROSEN), "x")]
    beyond = {}
    for n in (1000, 2000):
        values = {"x": np.random.default_rng(n).uniform(0.5, 1.5, n)}
        compiled, generated = _peaks(exprs, values, exact=True)
        assert generated <= 1.1 * compiled, (n, generated / 2**20, compiled / 2**20)
        beyond[n] = generated - 8 * n * n  # what the module holds beyond the Hessian: band vectors
    assert 0 < beyond[2000] <= 2.3 * beyond[1000], beyond
    assert beyond[2000] < 0.01 * 8 * 2000 * 2000, beyond


@pytest.mark.parametrize("src", [ROSEN, EXTENDED])
def test_gradient_and_hessian_modules_peak_like_compile(src):
    # before: 2.01x (chained) and 1.50x (extended, strided bands) compile's peak at n = 1,000
    f = tc.parse(src)
    exprs = [f, tc.gradient(f, "x"), tc.hessian(f, "x")]
    values = {"x": np.random.default_rng(5).uniform(0.5, 1.5, 1000)}
    compiled, generated = _peaks(exprs, values)
    assert generated <= 1.1 * compiled, (generated / 2**20, compiled / 2**20)
