"""The four benchmark problems: tenscalc's Hessians against the hand-derived ones.

The problems live in the repository, in ``benchmarks/problems.py``.  Each is evaluated at small data with
distinct axis lengths; the Hessian must equal ``closed_form_hessian`` and the
gradient and Hessian must agree with finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import check_derivative


def _load_problems():
    from benchmarks import problems

    return problems


@pytest.fixture(scope="module")
def problems():
    return _load_problems()


# small sizes with a different length for every independent axis
SMALL = {
    "quadratic": dict(n=4),
    "logreg": dict(m=7, n=4),
    "matfac": dict(m=3, n=5, k=2),
    "mlp": dict(m=5, n=4, h=3),
}
NAMES = ["quadratic", "logreg", "matfac", "mlp"]


def _problem(problems, name):
    spec = problems.PROBLEMS[name]
    f = tc.parse(spec["src"], spec["orders"])
    data = spec["data"](**SMALL[name])
    return spec, f, data


def test_every_bench_problem_is_covered(problems):
    assert sorted(problems.PROBLEMS) == sorted(NAMES)


def test_small_data_has_distinct_axis_lengths(problems):
    independent = {"quadratic": 1, "logreg": 2, "matfac": 3, "mlp": 3}  # axis classes per problem
    for name, count in independent.items():
        _, _, data = _problem(problems, name)
        lengths = {n for v in data.values() for n in np.shape(v)}
        assert len(lengths) == count, (name, lengths)


@pytest.mark.parametrize("name", NAMES)
def test_hessian_matches_closed_form(problems, name):
    spec, f, data = _problem(problems, name)
    wrt = spec["wrt"]
    h = tc.hessian(f, wrt)
    value = tc.evaluate(h, data)
    expected = problems.closed_form_hessian(name, data)
    assert value.shape == np.shape(data[wrt]) * 2
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_gradient_matches_finite_differences(problems, name):
    spec, f, data = _problem(problems, name)
    wrt = spec["wrt"]
    report = check_derivative(f, wrt, values=data)
    assert report.ok, report.message
    assert tc.evaluate(tc.gradient(f, wrt), data).shape == np.shape(data[wrt])


@pytest.mark.parametrize("name", NAMES)
def test_hessian_matches_finite_differences(problems, name):
    spec, f, data = _problem(problems, name)
    report = check_derivative(f, spec["wrt"], order=2, values=data)
    assert report.ok, report.message


@pytest.mark.parametrize("name", NAMES)
def test_hessian_is_symmetric(problems, name):
    spec, f, data = _problem(problems, name)
    value = tc.evaluate(tc.hessian(f, spec["wrt"]), data)
    p = np.ndim(data[spec["wrt"]])
    swapped = np.moveaxis(value, list(range(p)), list(range(p, 2 * p)))
    np.testing.assert_allclose(value, swapped, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_other_variables_differentiate_too(problems, name):
    """Gradients by every variable, not only the benchmark's, against finite differences."""
    spec, f, data = _problem(problems, name)
    for variable in spec["orders"]:
        report = check_derivative(f, variable, values=data)
        assert report.ok, f"{name} by {variable}: {report.message}"


# ---------------------------------------------------------------- the structured sums of issue 27
# (benchmarks/structured.py): at small sizes with a distinct length per independent axis,
# tenscalc's compiled derivative must equal every hand-written closed form, JAX's and
# PyTorch's transforms, and finite differences.  This checks the benchmark, not its speed.

STRUCTURED_SMALL = {
    "lse_hess": dict(n=5),
    "rayleigh_hess": dict(n=4),
    "gp_grad": dict(n=6),
    "gp_grad_pd": dict(n=6),
    "aopt_grad": dict(m=7, n=3),
    "ot_grad": dict(n=4, m=5),
    "cp_grad": dict(i=2, j=3, k=4, rank=5),
}


@pytest.fixture(scope="module")
def structured():
    from benchmarks import structured

    return {p.name: p for p in structured.problems()}


def _structured(structured, name):
    problem = structured[name]
    data = problem.data(**STRUCTURED_SMALL[name])
    compiled = tc.compile(problem.build(tc), **problem.compile_options(tc))  # as the benchmark does
    return problem, data, compiled(**{k: data[k] for k in compiled.inputs})


def _assert_same(got, expected):
    got = got if isinstance(got, (tuple, list)) else [got]
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-9, atol=1e-11)


def test_every_structured_problem_is_covered(structured):
    assert sorted(structured) == sorted(STRUCTURED_SMALL)


def test_structured_small_data_has_distinct_axis_lengths(structured):
    axes = {"lse_hess": 1, "rayleigh_hess": 1, "gp_grad": 1, "gp_grad_pd": 1, "aopt_grad": 2, "ot_grad": 2}
    axes["cp_grad"] = 4
    for name, count in axes.items():
        data = structured[name].data(**STRUCTURED_SMALL[name])
        assert len({n for v in data.values() for n in np.shape(v)}) == count, name


@pytest.mark.parametrize("name", sorted(STRUCTURED_SMALL))
def test_structured_closed_forms_match_tenscalc(structured, name):
    problem, data, ours = _structured(structured, name)
    for form in (problem.closed, *problem.others.values()):
        _assert_same(ours, form(data))


@pytest.mark.parametrize("name", sorted(STRUCTURED_SMALL))
def test_structured_tenscalc_matches_finite_differences(structured, name):
    problem = structured[name]
    data = problem.data(**STRUCTURED_SMALL[name])
    f = tc.parse(problem.source, problem.orders)
    order = 2 if len(problem.wrt) == 2 and problem.wrt[0] == problem.wrt[1] else 1
    for variable in sorted(set(problem.wrt)):
        report = check_derivative(f, variable, order=order, values=data)
        assert report.ok, f"{name} by {variable}: {report.message}"


@pytest.mark.parametrize("name", sorted(STRUCTURED_SMALL))
def test_structured_jax_forms_match_tenscalc(structured, name):
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    problem, data, ours = _structured(structured, name)
    theirs = problem.jax(jax, jnp)(*[jnp.asarray(data[k]) for k in problem.args])
    _assert_same(ours, [np.asarray(t) for t in jax.tree_util.tree_leaves(theirs)])


@pytest.mark.parametrize("name", sorted(STRUCTURED_SMALL))
def test_structured_torch_forms_match_tenscalc(structured, name):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    problem, data, ours = _structured(structured, name)
    theirs = problem.torch(torch)(*[torch.from_numpy(np.asarray(data[k])) for k in problem.args])
    _assert_same(ours, [t.numpy() for t in (theirs if isinstance(theirs, tuple) else (theirs,))])


@pytest.mark.parametrize("name", ["lse_hess", "rayleigh_hess", "gp_grad_pd", "ot_grad"])
def test_structured_closed_forms_allocate_one_square_array(structured, name):
    """The hand forms tenscalc is held to are the lean ones: one n x n array at their peak
    (tracemalloc counts NumPy's and SciPy's arrays), not the textbook's several."""
    import tracemalloc

    problem = structured[name]
    sizes = {"gp_grad_pd": dict(n=300), "ot_grad": dict(n=300, m=310)}.get(name, dict(n=300))
    data = problem.data(**sizes)
    square = 300 * sizes.get("m", 300) * 8
    tracemalloc.start()
    problem.closed(data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert square <= peak < 1.25 * square, (name, peak / square)
