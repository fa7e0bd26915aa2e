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
