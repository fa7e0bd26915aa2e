"""``inv`` and ``det`` of half and extended precision matrices compute (issue 30 item 8).

LAPACK has no float16 or longdouble routines; NumPy's bare ``TypeError: array type
float16 is unsupported in linalg`` used to come out of ``tc.evaluate`` and
``tc.compile``.  Now the factorisation runs in float32 (float64 for longdouble)
and the result keeps the input's dtype, on every evaluator and backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

ORDERS = {"A": 2, "x": 1}
TEXTS = ["det(A)", "log(det(A)) + x *(i,i->) x", "inv(A) *(ij,j->i) x", "inv(A) *(ij,jk->ik) sin(A)"]
DTYPES = [np.float16, np.longdouble, np.clongdouble]
TOLERANCE = {np.float16: 3e-3, np.longdouble: 1e-12, np.clongdouble: 1e-12}


def _values(dtype) -> dict:
    rng = np.random.default_rng(3)
    a = 3 * np.eye(3) + 0.3 * rng.uniform(-1, 1, (3, 3))
    if np.dtype(dtype).kind == "c":
        a = a + 0.2j * rng.uniform(-1, 1, (3, 3))
    return {"A": a.astype(dtype), "x": rng.uniform(0.5, 1, 3).astype(dtype)}


def _cases():
    for text in TEXTS:
        f = tc.parse(text, ORDERS)
        for dtype in DTYPES:
            yield pytest.param([f, tc.derivative(f, "A")], dtype, id=f"{text}-{np.dtype(dtype).name}")


@pytest.mark.parametrize(("exprs", "dtype"), list(_cases()))
def test_evaluate_and_compile_keep_the_dtype_and_agree_with_double_precision(exprs, dtype):
    values = _values(dtype)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    reference = [tc.evaluate(e, {k: v.astype(wide) for k, v in values.items()}) for e in exprs]
    run = tc.compile(exprs)
    generated = {}
    for shapes in (None, {n: v.shape for n, v in values.items()}):
        namespace: dict = {}
        exec(tc.to_python(exprs, name="g", shapes=shapes), namespace)  # noqa: S102 - our own code
        generated[f"to_python(shapes={shapes is not None})"] = namespace["g"](**values)
    for who, results in (
        ("evaluate", [tc.evaluate(e, values) for e in exprs]),
        ("compile", run(**values)),
        ("compile, second call", run(**values)),
        *generated.items(),
    ):
        for k, (got, want) in enumerate(zip(results, reference, strict=True)):
            # a compiled derivative may still widen (issue 30 item 8's float32 part, handled apart)
            if who in ("evaluate", *generated) or k == 0:
                assert got.dtype == np.dtype(dtype), who
            np.testing.assert_allclose(
                got.astype(wide), want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype], err_msg=who
            )


@pytest.mark.parametrize("text", TEXTS)
def test_torch_half_precision_computes_in_half_precision(text):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    f = tc.parse(text, ORDERS)
    exprs = [f, tc.derivative(f, "A")]
    values = _values(np.float16)
    reference = [tc.evaluate(e, {k: v.astype(np.float64) for k, v in values.items()}) for e in exprs]
    results = tc.compile(exprs, backend="torch")(**{k: torch.as_tensor(v) for k, v in values.items()})
    for got, want in zip(results, reference, strict=True):
        assert got.dtype == torch.float16
        np.testing.assert_allclose(got.double().numpy(), want, rtol=3e-3, atol=3e-3)
