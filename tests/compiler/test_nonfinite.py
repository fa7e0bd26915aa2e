"""NaN, inf and overflow on every evaluator: the rule docs/integrations.md states.

Where two evaluators both give a finite entry they agree; an entry may be
non-finite in one and finite in another only in the three documented cases (a
``delta`` multiplied as an identity array by ``tc.evaluate``, a product that
overflows in one contraction order and not in another, and a number taken out of
a sum by the compiled evaluators where the written products overflow).
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import axis_lengths

ORDERS = {"x": 1, "y": 1, "A": 2, "X": 2, "W": 2}
CORPUS = [
    ("sum(tanh(X *(ij,jk->ik) W))", "W"),
    ("sum(log(1 + exp(-(A *(ij,j->i) x))))", "x"),
    ("x *(i,ij->j) A *(j,j->) x", "x"),
    ("sum(x .^ 3) + sum(sin(x) ./ (1 + x .^ 2))", "x"),
    ("(x *(i,j->ij) y) *(ij,ij->) (x *(i,j->ij) y)", "y"),
    ("sum(exp(X *(ij,j->i) x))", "x"),
]
#: what an entry of the inputs is replaced by
SPECIALS = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan, "huge": 1e160, "zero": 0.0}


def _evaluators(exprs: list[tc.Expr], values: dict) -> dict[str, list[np.ndarray]]:
    """The results of every evaluator that is installed."""
    with np.errstate(all="ignore"):
        results = {"evaluate": [np.asarray(tc.evaluate(e, values)) for e in exprs]}
        run = tc.compile(exprs)
        results["compile"] = [np.asarray(r) for r in run(**values)]
        results["compile, fused call"] = [np.asarray(r) for r in run(**values)]
        for shapes in (None, {n: np.shape(v) for n, v in values.items()}):
            namespace: dict = {}
            exec(tc.to_python(exprs, name="g", shapes=shapes), namespace)  # noqa: S102 - our own code
            results[f"to_python(shapes={shapes is not None})"] = [np.asarray(r) for r in namespace["g"](**values)]
    try:
        import torch
    except ImportError:
        pass
    else:
        with np.errstate(all="ignore"):
            out = tc.compile(exprs, backend="torch")(**{n: torch.as_tensor(v) for n, v in values.items()})
        results["torch"] = [t.numpy() for t in out]
    try:
        import jax
    except ImportError:
        pass
    else:
        jax.config.update("jax_enable_x64", True)
        results["jax"] = [np.asarray(a) for a in tc.compile(exprs, backend="jax")(**values)]
    return results


def _cases():
    for text, wrt in CORPUS:
        for special in SPECIALS:
            yield pytest.param(text, wrt, special, id=f"{text[:30]}-{special}")


@pytest.mark.parametrize(("text", "wrt", "special"), list(_cases()))
def test_finite_entries_agree_on_every_evaluator(text, wrt, special):
    f = tc.parse(text, ORDERS)
    exprs = [f, tc.derivative(f, wrt), tc.derivative(tc.derivative(f, wrt), wrt)]
    rng = np.random.default_rng(len(text))
    values = {n: rng.uniform(-1, 1, s) for n, s in axis_lengths(exprs).items()}
    name = sorted(values)[0]
    values[name].flat[0] = SPECIALS[special]  # one special entry in the first variable
    results = _evaluators(exprs, values)
    reference = results.pop("evaluate")
    for who, got in results.items():
        for g, e, expr in zip(got, reference, exprs, strict=True):
            assert g.shape == e.shape
            both = np.isfinite(g) & np.isfinite(e)
            np.testing.assert_allclose(g[both], e[both], rtol=1e-9, atol=1e-12, err_msg=f"{who}: {expr}")
            if special == "zero":
                # finite inputs, nothing overflows: the same entries are finite everywhere
                assert (np.isfinite(g) == np.isfinite(e)).all(), (who, str(expr))


#: elementwise functions whose derivatives read sign (abs, relu) or x^-0.5 (sqrt, arcsin,
#: arccos): one value per entry, no sum written in an order, so every entry agrees exactly
ELEMENTWISE = ["sum(sign(x))", "sum(abs(x))", "sum(relu(x))", "sum(sqrt(x))", "sum(x .^ 0.5)",
               "sum(arcsin(x))", "sum(arccos(x))", "sum(sign(x) .* x)"]  # fmt: skip
EDGES = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "zero": 0.0, "-zero": -0.0, "huge": 1e308}


@pytest.mark.parametrize("special", sorted(EDGES))
@pytest.mark.parametrize("text", ELEMENTWISE)
def test_elementwise_functions_at_special_values_agree_entry_for_entry(text, special):
    """Non-finite entries too: PyTorch's sign(nan) is 0 and its x^-0.5 is rsqrt (-inf at -0.0,
    NaN at -inf), where NumPy and JAX give NaN, inf and 0; the torch backend now gives theirs."""
    f = tc.parse(text, {"x": 1})
    exprs = [f, tc.derivative(f, "x"), tc.derivative(tc.derivative(f, "x"), "x")]
    values = {"x": np.array([0.3, -0.6, EDGES[special]])}
    results = _evaluators(exprs, values)
    reference = results.pop("evaluate")
    for who, got in results.items():
        for g, e, expr in zip(got, reference, exprs, strict=True):
            np.testing.assert_array_equal(np.isfinite(g), np.isfinite(e), err_msg=f"{who}: {expr}")
            np.testing.assert_array_equal(g[~np.isfinite(g)], e[~np.isfinite(e)], err_msg=f"{who}: {expr}")
            both = np.isfinite(g) & np.isfinite(e)
            np.testing.assert_allclose(g[both], e[both], rtol=1e-12, atol=1e-300, err_msg=f"{who}: {expr}")


def test_sign_of_complex_values_is_numpys_on_torch():
    """abs' derivative reads sign: of complex values it is x / |x| (NumPy 2), which torch.sign
    refused with a NotImplementedError from inside the program."""
    torch = pytest.importorskip("torch")
    f = tc.parse("sum(abs(x))", {"x": 1})
    gradient = tc.derivative(f, "x")
    x = np.array([1 + 1j, -2j, 0j, 3.0 + 0j])
    got = tc.compile(gradient, backend="torch")(x=torch.as_tensor(x))
    np.testing.assert_allclose(got.numpy(), tc.evaluate(gradient, {"x": x}), rtol=1e-15)


def test_evaluate_multiplies_by_a_delta_as_an_identity_array():
    # documented: inf * 0 is nan off the diagonal in evaluate; the compiled evaluators
    # rename the delta's letters and write the diagonal, leaving exact zeros
    e = tc.parse("x *(i,ij->ij) delta(1)", {"x": 1})
    values = {"x": np.array([np.inf, 2.0])}
    results = _evaluators([e], values)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(results.pop("evaluate")[0], [[np.inf, np.nan], [0.0, 2.0]], equal_nan=True)
    for who, (got,) in results.items():
        assert np.array_equal(got, [[np.inf, 0.0], [0.0, 2.0]]), who


def test_a_factor_above_one_scales_the_result_not_an_operand():
    # the Hessian of sum(tanh(X W)) is -2 X_ai X_aj t_ak (1 - t_ak²); tc.compile scaled the
    # smallest operand, X, by -2 first: -2 X_ai X_aj overflowed (X ~ 1e154) and times
    # 1 - t² = 0 gave NaN where evaluate, which applies -2 to the result, is finite
    f = tc.parse("sum(tanh(X *(ij,jk->ik) W))", ORDERS)
    hessian = tc.hessian(f, "W")
    rng = np.random.default_rng(26)
    values = {"W": rng.uniform(-1, 1, (2, 3)), "X": rng.uniform(-1, 1, (4, 2))}
    values["X"] = values["X"] * 10.0 ** rng.uniform(150, 170)
    results = _evaluators([hessian], values)
    reference = results.pop("evaluate")[0]
    assert np.isfinite(reference).all()
    with np.errstate(over="ignore"):
        assert not np.isfinite(2 * abs(values["X"]).max() ** 2)  # scaled first, a square overflows
    for who, (got,) in results.items():
        if who != "jax":  # XLA picks its own order (the documented second case)
            assert np.isfinite(got).all(), who
        both = np.isfinite(got) & np.isfinite(reference)
        np.testing.assert_allclose(got[both], reference[both], rtol=1e-9, atol=1e-12, err_msg=who)


#: docs/integrations.md, case 3: (values, what tc.evaluate gives as written, what every compiled evaluator gives);
#: a is a float64 array (torch.as_tensor of a Python float is float32, where 1e300 is inf)
FACTORED = {
    "overflowing": ({"a": np.array(1e300), "x": np.array([1e5]), "y": np.array([-1e10])}, np.nan, 0.0),
    "inf": ({"a": np.array(np.inf), "x": np.array([1.0, -1.0]), "y": np.array([-1.0, 2.0])}, np.nan, np.inf),
    "inf, the sum alone": ({"a": np.array(np.inf), "x": np.zeros(1), "y": np.array([-1.0, 2.0])}, np.nan, np.inf),
}


@pytest.mark.parametrize("case", sorted(FACTORED))
def test_a_number_taken_out_of_a_sum_is_the_documented_third_case(case):
    """a*(x'x) + sum(a*y): tc.evaluate computes a*y and a*(x'x) and adds (inf - inf, nan);
    the compiled evaluators compute a*(x'x + sum(y)), one product, exact where the
    written products overflow.  Agreement would cost every finite call n multiplications."""
    f = tc.parse("a*(x'*x) + sum(a*y)", {"a": 0, "x": 1, "y": 1})
    values, written, factored = FACTORED[case]
    results = _evaluators([f], values)
    np.testing.assert_array_equal(results.pop("evaluate")[0], written)
    for who, (got,) in results.items():
        np.testing.assert_array_equal(got, factored, err_msg=who)
