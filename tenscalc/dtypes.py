"""The dtype of a result: NumPy's promotion of the inputs' dtypes, whatever the evaluator.

Every evaluator (``tc.evaluate``, ``tc.compile`` on each backend, ``tc.to_python``'s
code) hands back results of one dtype, the one NumPy's ``np.result_type`` gives for the
values passed: float32 in, float32 out; float32 with float64, float64; a Python number
counts weakly (``x`` float32 with ``c=0.5`` stays float32, as ``x * 0.5`` does in NumPy);
integers and booleans count as float64 (they are converted to float64 on the way in), and
a function reading no variable at all gives float64.  The constants, identities and
diagonals a derivative holds never promote a result.  A real result of complex inputs
stays real.

>>> import numpy as np
>>> promoted_dtype([np.ones(2, np.float32), 0.5])
dtype('float32')
>>> promoted_dtype([np.ones(2, np.float32), np.ones(2)])
dtype('float64')
>>> promoted_dtype([np.arange(3)]), promoted_dtype([])
(dtype('float64'), dtype('float64'))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

_FLOAT64 = np.dtype(np.float64)


def numpy_dtype(value: Any) -> np.dtype | None:
    """The NumPy dtype of an array of any library (``torch.float32`` -> float32), None when
    NumPy has no such dtype (bfloat16) or the value is not numeric."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(value).dtype
        except Exception:  # noqa: BLE001 - anything np.asarray rejects is not numeric
            return None
    if not isinstance(dtype, np.dtype):
        try:
            dtype = np.dtype(str(dtype).replace("torch.", ""))
        except TypeError:
            return None
    return dtype if dtype.kind in "biufc" else None


def promoted_dtype(values: Iterable[Any]) -> np.dtype | None:
    """NumPy's promotion of ``values``' dtypes (Python numbers weak, integers as float64);
    None when a value has a dtype NumPy lacks (torch's bfloat16): the results stay as computed."""
    strong: list[np.dtype] = []
    weak: list[Any] = []
    for value in values:
        if type(value) in (float, complex):
            weak.append(value)
            continue
        if type(value) in (int, bool):
            continue  # converted to float64 but weak: it promotes nothing
        dtype = numpy_dtype(value)
        if dtype is not None:
            strong.append(_FLOAT64 if dtype.kind in "biu" else dtype)
        elif "float" in str(getattr(value, "dtype", "")):  # a floating dtype NumPy lacks (bfloat16)
            return None
    if not strong:
        return np.result_type(_FLOAT64, *weak)
    return np.result_type(*strong, *weak)


def needs_cast(result_dtype: np.dtype, dtype: np.dtype) -> bool:
    """Whether a result of ``result_dtype`` must be cast to ``dtype`` (never complex to real)."""
    return result_dtype != dtype and (result_dtype.kind != "c" or dtype.kind == "c")


def cast_numpy(result: np.ndarray, dtype: np.dtype | None) -> np.ndarray:
    """``result`` in ``dtype`` (a NumPy array; a new array only where the dtype changes;
    ``dtype`` None: as it is)."""
    return result.astype(dtype) if dtype is not None and needs_cast(result.dtype, dtype) else result
