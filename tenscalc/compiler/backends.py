"""Array backends for compiled evaluation: NumPy, PyTorch, JAX, CuPy and Dask.

A compiled plan (``tenscalc.compiler``) is written against the small
interface of ``Backend``.  Contractions go through opt_einsum's backend
dispatch (``contract_expression(...)(*arrays, backend=name)``); elementwise
functions, ``inv`` and ``det`` through autoray, so no per-backend function table
lives here.  NumPy has a faster contraction path of its own
(``tenscalc.compiler.kernels``) because per-call overhead matters most there.

Heavy libraries are optional: a backend's library is imported when the backend
is first used, and a missing one raises ``tenscalc.errors.EvaluationError``
naming the ``pip install`` line.

>>> from tenscalc.compiler.backends import get_backend
>>> get_backend("numpy").name
'numpy'
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import opt_einsum

from ..core.functions import FUNCTIONS
from ..core.text import einsum_letters as letters
from ..dtypes import cast_numpy, needs_cast, numpy_dtype, promoted_dtype
from ..errors import EvaluationError, TensCalcWarning
from ..linalg import lapack_dtype, matrix_error, numpy_det, numpy_inv
from .generated import (
    cholesky_factor,
    linalg_adj,
    linalg_det,
    linalg_inv,
    not_finite,
    not_numbers,
    not_pd,
    not_symmetric,
    numbers_of,
    rounding_gap,
    symmetric_check,
)

BACKENDS = ("numpy", "torch", "jax", "cupy", "dask")

# What each backend imports, and the one pip command that installs all of it (so a
# missing package is never followed by a second "needs ..." after installing the
# first). torch is no extra on purpose: an unpinned torch pulls gigabytes of CUDA.
_REQUIRES = {
    "torch": (("torch", "autoray"), "pip install torch==2.13.0 autoray"),
    "jax": (("jax", "autoray"), 'pip install "tenscalc[jax]"'),
    "cupy": (("cupy", "autoray"), "pip install cupy-cuda12x autoray (needs a CUDA GPU)"),
    "dask": (("dask.array", "scipy", "autoray"), 'pip install "tenscalc[dask]"'),
}


def diagonal_strides(strides: Sequence[int], out: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Unique letters of ``out`` and, for each, the summed stride of its positions:
    the strides of the diagonal view of an array laid out as ``out``."""
    unique = tuple(dict.fromkeys(out))
    return unique, tuple(sum(s for s, letter in zip(strides, out) if letter == u) for u in unique)


def torch_contraction(eq: str, shapes: Sequence[tuple[int, ...]], path: list) -> Callable[..., Any]:
    """The contraction as ``torch.einsum`` calls, one per step of the chosen path.

    Not opt_einsum's expression: ``torch.compile`` breaks its graph inside
    opt_einsum's dispatch (backend inference, a thread lock), so a compiled
    program ran as many small graphs; ``torch.einsum`` of one or two operands is
    one traced op, and it needs no path search of its own
    (``tests/compiler/test_backends.py`` runs it).
    """
    _, info = opt_einsum.contract_path(eq, *shapes, optimize=path, shapes=True)
    steps = [(tuple(indices), spec) for indices, _, spec, *_ in info.contraction_list]

    def contract(*arrays: Any) -> Any:
        import torch

        operands = list(arrays)
        for indices, spec in steps:  # indices in descending order: each pop leaves the rest in place
            operands.append(torch.einsum(spec, *[operands.pop(i) for i in indices]))
        return operands[0]

    return contract


class Backend:
    """What a compiled plan needs from an array library.

    Subclasses override what their library does differently; the defaults use
    autoray and opt_einsum and never mutate arrays (so they suit JAX and Dask).
    """

    name = "generic"
    #: whether results may be written in place through views (NumPy, PyTorch)
    mutable = False
    #: whether arrays are lazy graphs of chunks (Dask): the memory limit then applies per chunk
    lazy = False
    #: whether the binder marks the values :meth:`fence` keeps (``Program.fenced``)
    fences = False

    # ---- what the compiler may choose for this library, by capability (never by its name:
    # a new backend states what it can do; tests/compiler/test_backend_capabilities.py)

    #: whether its arrays are NumPy arrays, written in place where a helper says so: the helper
    #: texts the generated NumPy source runs (a sum's parts, :data:`.sums.PARTS_HELPER`; a sum
    #: into one buffer, :data:`.accumulate.ACCUMULATE_SOURCE`; the checked ``inv``, ``det`` and
    #: ``adj`` and the Cholesky factor of :mod:`.generated`; a tiled sum's strided writes into
    #: an empty array; banded steps and their dense value, :mod:`.banded`) run on them as they
    #: are, so the binder may bind the forms only those compute
    runs_numpy_helpers = False
    #: whether its contractions run as NumPy's kernels laid out pair by pair (:mod:`.kernels`:
    #: matmul and multiply, Gram forms through syrk): the binder chooses each pair's layout and
    #: the matrix intermediates computed transposed (handed on as a transposed view)
    runs_numpy_kernels = False
    #: whether a bound program may run as NumPy source written from its ops' descriptions (the
    #: fused function of :mod:`.fused` with ufuncs' ``out=`` buffers, and an all-scalar
    #: program's Python floats, :mod:`.scalar`): the binder describes its ops for them
    #: (:mod:`.descriptions`)
    runs_numpy_source = False
    #: whether a declared positive-definite matrix's ``inv``, ``det`` and ``log(det)`` are read
    #: from one Cholesky factor per call (:mod:`.cholesky`: NumPy's helper text, PyTorch's own
    #: factor, XLA's with LAPACK's potri on a CPU, :mod:`.jax_factor`; Dask's a task running
    #: NumPy's helper text, :mod:`.dask_factor`); the others compute them by LU, positive
    #: definiteness trusted
    factorises = False
    #: whether a declared symmetric matrix is checked on its values at each call
    #: (:meth:`checked_declaration`; Dask's check runs in the graph, raised when it computes)
    checks_symmetry = False
    #: whether its whole-program compiler traces the steps with no values to read (``jax.jit``):
    #: the matrices of ``inv``, ``det`` and ``adj`` are then checked for a non-finite entry
    #: before a jitted program runs (the loop's steps check their own)
    jit_reads_no_values = False

    def __init__(self) -> None:
        self._functions: dict[str, Callable] = {}

    # ------------------------------------------------------------ setup
    def load(self) -> None:
        """Import the library (and autoray), raising a clear error naming the pip command when missing."""
        modules, command = _REQUIRES.get(self.name, ((self.module_name, "autoray"), "pip install autoray"))
        missing = []
        for module in modules:
            try:
                importlib.import_module(module)
            except ImportError:
                missing.append(module)
        if missing:
            raise EvaluationError(
                f"backend {self.name!r} needs the package{'s' * (len(missing) > 1)} {', '.join(missing)}: {command}"
            )

    @property
    def module_name(self) -> str:
        return self.name

    def convert(self, name: str, value: Any) -> Any:
        """The backend array for a user's value (NumPy arrays and numbers are moved in)."""
        import autoray

        if autoray.infer_backend(value) == self.name:
            return value
        return self.from_numpy(_numeric(name, value))

    def from_numpy(self, array: np.ndarray, like: Any = None) -> Any:
        import autoray

        return autoray.do("asarray", array, like=self.name)

    def to_numpy(self, value: Any) -> np.ndarray:
        import autoray

        return np.asarray(autoray.to_numpy(value))

    def dtype_kind(self, value: Any) -> str:
        return np.dtype(str(value.dtype).replace("torch.", "")).kind

    # ------------------------------------------------------------ elementwise
    def func(self, name: str) -> Callable[[Any], Any]:
        """The elementwise function ``name`` of the language (``relu`` included)."""
        fn = self._functions.get(name)
        if fn is None:
            fn = self._lookup(name)
            self._functions[name] = fn
        return fn

    def _lookup(self, name: str) -> Callable[[Any], Any]:
        import autoray

        spec = FUNCTIONS.get(name)
        if spec is not None and spec.array_name is None:  # relu: no library spells it alike
            maximum = autoray.get_lib_fn(self.name, "maximum")
            return lambda x: maximum(x, 0.0)
        try:
            return autoray.get_lib_fn(self.name, spec.array_name if spec is not None else name)
        except Exception as exc:  # noqa: BLE001 - autoray raises several kinds
            raise EvaluationError(f"backend {self.name!r} has no function {name!r}: {exc}") from None

    def power(self, base: Any, exponent: Any) -> Any:
        return base**exponent

    def inv(self, x: Any) -> Any:
        return self._linalg("linalg.inv", x)

    def det(self, x: Any) -> Any:
        return self._linalg("linalg.det", x)

    def _linalg(self, name: str, x: Any) -> Any:
        """``name`` of ``x``, factorised in a dtype LAPACK has (float16 in float32 ...) and
        converted back, so that half and extended precision compute (see tenscalc/linalg.py)."""
        import autoray

        dtype = autoray.get_dtype_name(x)
        wider = lapack_dtype(dtype)
        if wider is None:
            return self.func(name)(x)
        return autoray.astype(self.func(name)(autoray.astype(x, wider)), dtype)

    def adj(self, x: Any, k: int) -> Any:
        """``adj(x, k)``: the k-th derivative of det, exact at any rank (:mod:`tenscalc.adjugate`)."""
        import autoray

        from ..adjugate import _adjugate

        dtype = autoray.get_dtype_name(x)
        wider = lapack_dtype(dtype)  # float16 ... through float32, as inv and det
        if wider is None:
            return _adjugate(x, k, self.namespace(x))
        return autoray.astype(_adjugate(autoray.astype(x, wider), k, self.namespace(x)), dtype)

    #: whether the library's inv raises on an exactly singular matrix (JAX's and CuPy's return
    #: inf and NaN instead: :meth:`checked_linalg` reads their result)
    raises_singular = True

    def all_finite(self, x: Any) -> bool | None:
        """Whether every entry of ``x`` is finite; None where the values are not known here
        (traced by a compiler, a lazy graph)."""
        import autoray

        return bool(autoray.do("all", autoray.do("isfinite", x)))

    def check_finite(self, what: str, x: Any, label: str | None) -> bool | None:
        """Whether the matrix ``x`` (``label``) of ``what`` is finite, None where that is not known
        here (:meth:`all_finite`); where it is not: the error every runner says."""
        finite = self.all_finite(x)
        if finite is False:
            raise matrix_error(what, label, "finite")
        return finite

    def checked_declaration(self, name: str, x: Any, pd: bool, factored: bool) -> Any | None:
        """``x``, the value of ``name`` declared symmetric (positive definite where ``pd``;
        ``factored``: the program computes its ``inv`` or ``det``), with its check built into
        a lazy backend's graph (:class:`DaskBackend`); None where the values are there to read:
        the call checks them itself (:func:`.cholesky.check_symmetric`, the NumPy runners' text)."""
        return None

    def checked_linalg(self, what: str, x: Any, label: str | None, k: int = 1) -> Any:
        """``inv``, ``det`` or ``adj`` (of order ``k``) of ``x``, the matrix ``label``, refused in
        the words of every other runner (:func:`tenscalc.linalg.matrix_error`, the NumPy runners'
        text) where an entry is not finite (LAPACK would return NaN, n² reads against n³) or,
        for ``inv``, the matrix is singular.  A traced matrix (JAX's jit) is not checked."""
        finite = self.check_finite(what, x, label)
        try:
            result = self._compute_linalg(what, x, k)
        except Exception as exc:  # noqa: BLE001 - each library has its own LinAlgError
            text = str(exc).lower()
            if what == "inv" and "singular" in text:
                raise matrix_error(what, label, "singular") from None
            if what == "adj" and "converge" in text:
                raise matrix_error(what, label, "svd") from None
            raise
        # a finite matrix whose LU inverse is not finite had a zero pivot (n² reads of the result;
        # an inverse that overflows reads as singular here: JAX reads its factor's pivots instead)
        if what == "inv" and finite and not self.raises_singular and self.all_finite(result) is False:
            raise matrix_error(what, label, "singular")
        return result

    def _compute_linalg(self, what: str, x: Any, k: int) -> Any:
        """``inv``, ``det`` or ``adj`` (of order ``k``) of ``x``, unchecked."""
        return self.inv(x) if what == "inv" else self.det(x) if what == "det" else self.adj(x, k)

    def namespace(self, x: Any) -> Any:
        """The library's NumPy-like namespace (``svd``, ``where``, ``einsum`` ...) for arrays like ``x``."""
        return importlib.import_module(self.module_name)

    # ------------------------------------------------------------ construction
    def full(self, shape: tuple[int, ...], value: float, like: Any = None) -> Any:
        return self.from_numpy(np.full(shape, float(value)), like)

    def zeros(self, shape: tuple[int, ...], like: Any) -> Any:
        import autoray

        return autoray.do("zeros", shape, dtype=like.dtype, like=self.name)

    def take(self, x: Any, key: tuple) -> Any:
        """``x[key]``: a basic index (integers and slices, negative steps included)."""
        return x[key]

    def embed(self, part: Any, key: tuple, shape: tuple[int, ...], like: Any = None) -> Any:
        """Zeros of ``shape`` with ``part`` written at the basic index ``key`` (a strided write)."""
        out = self.zeros(shape, part)
        out[key] = part
        return out

    def broadcast(self, x: Any, shape: tuple[int, ...]) -> Any:
        import autoray

        return autoray.do("broadcast_to", x, shape)

    def eye(self, shape: tuple[int, ...], like: Any = None) -> Any:
        """delta(n) of the given (2n-axis) shape."""
        n = len(shape) // 2
        size = math.prod(shape[:n])
        return self.from_numpy(np.eye(size).reshape(shape), like)

    # ------------------------------------------------------------ index work
    def einsum(self, eq: str, *arrays: Any) -> Any:
        from opt_einsum.backends import get_func

        return get_func("einsum", self.name)(eq, *arrays)

    def transpose(self, x: Any, perm: Sequence[int]) -> Any:
        import autoray

        return autoray.do("transpose", x, tuple(perm))

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        import autoray

        return autoray.do("reshape", x, shape)

    def write_diagonal(self, core: Any, out: Sequence[int], shape: tuple[int, ...]) -> Any:
        """The array of ``shape`` laid out as ``out`` (repeated letters) that is
        ``core`` (laid out as the unique letters) on its diagonal and 0 elsewhere."""
        unique = tuple(dict.fromkeys(out))
        # one identity matrix per repeated position: core[a..] * I[a, a'] ...
        spec_out, eyes, specs = [], [], [letters(unique)]
        fresh = max(out) + 1
        seen: set[int] = set()
        for position, letter in enumerate(out):
            if letter in seen:
                spec_out.append(fresh)
                eyes.append(self.eye((shape[position], shape[position]), core))
                specs.append(letters((letter, fresh)))
                fresh += 1
            else:
                seen.add(letter)
                spec_out.append(letter)
        return self.einsum(",".join(specs) + "->" + letters(spec_out), core, *eyes)

    def add_diagonal(self, x: Any, n: int, coef: float, shape: tuple[int, ...], fresh: bool) -> Any:
        """``x + coef * delta(n)``."""
        return x + coef * self.eye(shape, x)

    def contraction(self, eq: str, shapes: Sequence[tuple[int, ...]], path: list) -> Callable[..., Any]:
        """A callable contracting arrays of these shapes along a precomputed path."""
        expression = opt_einsum.contract_expression(eq, *shapes, optimize=path)
        backend = self.name
        return lambda *arrays: expression(*arrays, backend=backend)

    def finish(self, value: Any) -> Any:
        """A root's value as handed to the user."""
        return value

    def placed(self, constants: list[Any]) -> Callable[[Any], list[Any]]:
        """``constants`` (made once, at bind time) as a function of a call's dtype/device
        reference: the list itself where the library keeps one device per process."""
        return lambda like: constants

    #: whether :meth:`whole_program` compiles unless the caller says ``jit=False``
    jit_default = False
    #: whether the library's compiler fuses an elementwise chain into the sum reading it
    #: (a sum of full contractions of arrays of one shape is then bound as one sum)
    fuses_sums = False

    def whole_program(self, run: Callable[[Sequence[Any], Any], tuple[Any, ...]]) -> Callable | None:
        """``run`` (a bound program's step loop, of the input arrays and the dtype
        reference) compiled as one function by the library's own compiler, or None
        where the library has none (the loop runs as it is)."""
        return None

    def whole_call(
        self,
        run: Callable[[Sequence[Any], Any], tuple[Any, ...]],
        slots: int,
        single: bool,
        shapes: Sequence[tuple[int, ...]] | None = None,
        names: Sequence[str] = (),
    ) -> Callable | None:
        """The lean form of :meth:`whole_program`, or None where the backend has none: one
        compiled function of every input in order (the first ``slots`` are ``run``'s inputs,
        the others matter only by their dtype), whose results come already cast to the
        inputs' promoted dtype (:meth:`cast`), as one array when ``single``, else a tuple.
        A call then hands the arrays straight to it (see :meth:`native`).  ``shapes``: the
        shape signature ``run`` is bound to; arrays of other shapes are refused when the
        function is traced for them (never at run time); ``names``: the inputs' names (an
        error about a declared matrix reads its value by name)."""
        return None

    def fence(self, fns: Sequence[Callable[[list], Any]], env: list, reads: Sequence[int]) -> list[Any]:
        """The values of ``fns`` (closures over the slot list ``env``, reading the slots
        ``reads``), computed once where a compiler would otherwise copy them into each
        reader (:meth:`.program.Program.traced_steps`).  Eager backends just compute them."""
        return [fn(env) for fn in fns]

    def stack(self, arrays: Sequence[Any]) -> Any:
        """``arrays`` (of one shape) stacked along a new first axis."""
        import autoray

        return autoray.do("stack", list(arrays), like=self.name)

    def native(self, arrays: Sequence[Any]) -> bool:
        """Whether ``arrays`` (a call's values, in input order) may go to a :meth:`whole_call`
        function as they are, unconverted: the backend's own arrays, or arrays its compiler
        takes as :meth:`convert` would have made them (same values and dtypes, no warning
        due).  Only backends that override it are asked, and only for jitted functions."""
        return False

    def cast(self, results: tuple[Any, ...], dtype: np.dtype | None) -> tuple[Any, ...]:
        """The results in ``dtype``, the inputs' promoted dtype (see :mod:`tenscalc.dtypes`):
        constants and identities computed in float64 do not promote a float32 result.
        ``dtype`` None (an input of a dtype NumPy lacks): the results as computed."""
        if dtype is None:
            return results
        return tuple(r.astype(dtype) if needs_cast(numpy_dtype(r) or dtype, dtype) else r for r in results)

    def unalias(self, results: tuple[Any, ...], inputs: Sequence[Any]) -> tuple[Any, ...]:
        """The results, copied where one shares memory with an input (a compiled ``x``
        or transpose is a view; writing into it must not change the caller's array).
        The same root listed twice stays one array, computed once.  Immutable arrays
        (JAX, Dask) need nothing."""
        return results


#: the functions :class:`Backend` looks up through ``autoray.do`` when a program runs
RUNTIME_LOOKUPS = ("zeros", "broadcast_to", "transpose", "reshape", "linalg.inv", "linalg.det")
#: a program's loop wrapped for ``torch.compile``, compiled afresh (one code object) per program
_WHOLE_SOURCE = "def whole(arrays, like):\n    return run(arrays, like)\n"


def positive_key(key: tuple, shape: Sequence[int]) -> tuple[tuple, tuple[int, ...]]:
    """``key`` with each negative-step slice replaced by the positive one over the same
    entries, and the axes of the result to flip back (for libraries without negative
    steps: ``x[::-1]`` is ``x[0:n:1]`` flipped).

    >>> positive_key((slice(None, None, -1), 0, slice(3, 0, -2)), (4, 2, 5))
    ((slice(0, 4, 1), 0, slice(1, 4, 2)), (0, 1))
    """
    positive: list[Any] = []
    flips: list[int] = []
    axis = 0  # the axis of the result an item makes (integers make none)
    for item, length in zip(key, shape):
        if isinstance(item, slice) and item.step is not None and item.step < 0:
            entries = range(length)[item]
            positive.append(slice(entries[-1], entries[0] + 1, -entries.step) if entries else slice(0, 0, 1))
            flips.append(axis)
        else:
            positive.append(item)
        axis += not isinstance(item, int)
    return tuple(positive), tuple(flips)


def _negative_steps(key: tuple) -> bool:
    return any(isinstance(item, slice) and item.step is not None and item.step < 0 for item in key)


def numpy_result(value: Any) -> np.ndarray:
    """A NumPy root's value as handed to the user: an array it may write to."""
    if type(value) is not np.ndarray:
        return np.asarray(value)
    return value if value.flags.writeable else np.array(value)


class ForeignArray(EvaluationError):
    """Raised by the NumPy backend for an array of another library (torch, jax, cupy), so
    that a function compiled without a named backend can run in that library instead."""

    def __init__(self, name: str, library: str):
        super().__init__(f"the value of '{name}' is a {library} array")
        self.library = library


#: the top-level module of an array type -> the backend of its library
_LIBRARIES = {"torch": "torch", "jax": "jax", "jaxlib": "jax", "cupy": "cupy"}


def foreign_library(value: Any) -> str | None:
    """The backend of ``value``'s library when it is a torch, JAX or CuPy array (not imported here)."""
    return _LIBRARIES.get(type(value).__module__.partition(".")[0])


def mixed_dtypes_error(names: Sequence[str], arrays: Sequence[Any], backend: str, exc: Exception) -> Exception | None:
    """An ``EvaluationError`` naming the variables when the inputs lie on different devices
    (a CUDA tensor beside a NumPy array, which is moved in on the CPU) or their dtypes differ
    (torch does not mix float32 and float64 where NumPy promotes), else None (the error is
    another one)."""
    devices = {name: str(a.device) for name, a in zip(names, arrays) if hasattr(a, "device")}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{name}: {device}" for name, device in devices.items())
        target = next(device for device in devices.values() if device != "cpu")
        return EvaluationError(
            f"the inputs lie on different devices ({listed}) and backend {backend!r} does not move them "
            f"(NumPy arrays and numbers are made on the CPU); put every input on one device, "
            f"e.g. torch.as_tensor(value, device={target!r})"
        )
    dtypes = {name: getattr(a, "dtype", None) for name, a in zip(names, arrays)}
    if len({str(d) for d in dtypes.values() if d is not None}) < 2:
        return None
    listed = ", ".join(f"{name}: {str(d).replace('torch.', '')}" for name, d in dtypes.items() if d is not None)
    first = next(name for name, d in dtypes.items() if d is not None)
    return EvaluationError(
        f"the inputs have different dtypes ({listed}) and backend {backend!r} does not mix them "
        f"({exc}); give them one dtype, e.g. {first}.double() for torch or {first}.astype(numpy.float64)"
    )


def numeric(name: str, value: Any) -> np.ndarray:
    """``value`` as a NumPy array of numbers (what the NumPy backend computes with)."""
    return _numeric(name, value)


def _numeric(name: str, value: Any) -> np.ndarray:
    if getattr(value, "requires_grad", False) is True:  # a torch tensor in an autograd graph
        raise EvaluationError(
            f"the value of '{name}' is a torch tensor that requires grad, and this function computes with "
            "NumPy: compile it with backend='torch' (or leave the backend out) to keep torch tensors; "
            "tenscalc's derivatives need no autograd"
        )
    return numbers_of(value, name)  # the text every runner runs (generated.NUMBERS_HELPER)


class NumpyBackend(Backend):
    name = "numpy"
    mutable = True
    runs_numpy_helpers = True
    runs_numpy_kernels = True
    runs_numpy_source = True
    factorises = True
    checks_symmetry = True

    def load(self) -> None:
        pass

    def adj(self, x, k):
        from ..adjugate import adjugate

        return adjugate(x, k)  # NumPy needs no autoray

    def convert(self, name: str, value: Any) -> np.ndarray:
        if type(value) is np.ndarray and value.dtype.kind in "fc":
            return value
        library = foreign_library(value)
        if library is not None:  # CompiledFunction decides: that library's backend, or NumPy if asked for
            raise ForeignArray(name, library)
        return _numeric(name, value)

    def from_numpy(self, array: np.ndarray, like: Any = None) -> np.ndarray:
        return array

    def cast(self, results, dtype):
        return tuple(cast_numpy(r, dtype) for r in results)

    def to_numpy(self, value: Any) -> np.ndarray:
        return np.asarray(value)

    def dtype_kind(self, value: Any) -> str:
        return value.dtype.kind

    def _lookup(self, name: str) -> Callable[[Any], Any]:
        if name in FUNCTIONS:  # the language's functions: their specs' NumPy functions
            return FUNCTIONS[name].numpy
        module: Any = np
        for part in name.split("."):  # "tanh", "linalg.inv" (NumPy needs no autoray)
            module = getattr(module, part)
        return module

    def power(self, base, exponent):
        return np.power(base, exponent)

    def inv(self, x):
        return numpy_inv(x)

    def det(self, x):
        return numpy_det(x)

    def full(self, shape, value, like=None):
        dtype = like.dtype if like is not None else np.float64
        return np.full(shape, value, dtype=dtype)

    def zeros(self, shape, like):
        return np.zeros(shape, dtype=np.result_type(like, 0.0))  # 0.0 weak: float32 stays float32

    def broadcast(self, x, shape):
        return np.broadcast_to(x, shape)

    def eye(self, shape, like=None):
        n = len(shape) // 2
        dtype = like.dtype if like is not None and like.dtype.kind in "fc" else np.float64  # exact in any
        return np.eye(math.prod(shape[:n]), dtype=dtype).reshape(shape)

    def einsum(self, eq, *arrays):
        return np.einsum(eq, *arrays)

    def transpose(self, x, perm):
        return x.transpose(perm)

    def reshape(self, x, shape):
        return x.reshape(shape)

    def write_diagonal(self, core, out, shape):
        full = np.zeros(shape, dtype=np.result_type(core, 0.0))  # calloc: untouched pages stay free
        unique = tuple(dict.fromkeys(out))
        view = np.einsum(letters(out) + "->" + letters(unique), full)  # a writeable view
        view[...] = core
        return full

    def add_diagonal(self, x, n, coef, shape, fresh):
        if not fresh or not x.flags.writeable or x.shape != shape:
            x = np.array(np.broadcast_to(x, shape), dtype=np.result_type(x, 0.0))
        spec = tuple(range(n)) * 2
        np.einsum(letters(spec) + "->" + letters(range(n)), x)[...] += coef
        return x

    def contraction(self, eq, shapes, path):
        from .kernels import numpy_contraction

        return numpy_contraction(eq, shapes, path)

    def finish(self, value):
        return numpy_result(value)

    def unalias(self, results, inputs):
        # an array that owns its memory and is no input was made by this call:
        # nothing to copy (the common case, decided without may_share_memory; plain
        # loops, as this runs on every call)
        fresh = True
        for value in results:
            if value.base is not None:
                fresh = False
                break
            for array in inputs:
                if value is array:
                    fresh = False
                    break
        if fresh:
            return results
        return tuple(
            value.copy() if any(np.may_share_memory(value, array) for array in inputs) else value for value in results
        )


class TorchBackend(Backend):
    name = "torch"
    mutable = True
    factorises = True
    checks_symmetry = True

    def convert(self, name, value):
        value = super().convert(name, value)
        if not (value.is_floating_point() or value.is_complex()):  # integers and booleans, as NumPy's
            import torch

            value = value.to(torch.float64)
        return value

    def cast(self, results, dtype):
        import torch

        target = None if dtype is None else getattr(torch, dtype.name, None)
        if target is None:  # a dtype torch lacks: leave the results as computed
            return results
        return tuple(r.to(target) if needs_cast(numpy_dtype(r) or dtype, dtype) else r for r in results)

    def placed(self, constants):
        # a program is bound to shapes, not to a device: the constants baked on the host
        # are copied to a call's device once, then kept (a CUDA call never meets a CPU tensor)
        copies: dict[Any, list[Any]] = {}

        def on(like):
            device = getattr(like, "device", None)
            if device is None or device.type == "cpu":
                return constants
            found = copies.get(device)
            if found is None:
                found = copies[device] = [None if c is None else c.to(device) for c in constants]
            return found

        return on

    def contraction(self, eq, shapes, path):
        # torch's tensordot and matmul refuse mixed dtypes (float32 inputs with a float64
        # constant): the operands are promoted first, as NumPy would
        contract = torch_contraction(eq, shapes, path)

        def promoted(*arrays):
            dtype = arrays[0].dtype
            if any(a.dtype != dtype for a in arrays):
                import torch

                for a in arrays[1:]:
                    dtype = torch.promote_types(dtype, a.dtype)
                arrays = tuple(a.to(dtype) for a in arrays)
            return contract(*arrays)

        return promoted

    def from_numpy(self, array, like=None):
        import torch

        device = getattr(like, "device", None)
        if any(stride < 0 for stride in getattr(array, "strides", ())):  # torch has no negative strides
            array = np.ascontiguousarray(array)
        elif not getattr(getattr(array, "flags", None), "writeable", True):  # a JAX array's buffer, a broadcast:
            array = np.array(array)  # torch would share it, and warn that writing to it is undefined
        return torch.as_tensor(array, device=device)

    def take(self, x, key):
        if not _negative_steps(key):
            return x[key]
        positive, flips = positive_key(key, tuple(x.shape))  # torch slices have positive steps only
        return x[positive].flip(flips)

    def embed(self, part, key, shape, like=None):
        out = self.zeros(shape, part)
        if _negative_steps(key):
            key, flips = positive_key(key, shape)
            part = part.flip(flips)
        out[key] = part
        return out

    def _lookup(self, name):
        if name == "relu":
            import torch

            return torch.relu
        if name == "sign":  # torch.sign(nan) is 0; NumPy's, JAX's (and abs' and relu's derivatives) nan
            import torch

            # complex: x / |x|, NumPy 2's sign (torch.sign refuses complex tensors)
            return lambda x: torch.sgn(x) if x.is_complex() else torch.where(torch.isnan(x), x, torch.sign(x))
        return super()._lookup(name)

    def power(self, base, exponent):
        result = base**exponent
        if isinstance(exponent, (int, float)) and exponent == -0.5:  # a tensor exponent: pow's own rule
            # torch computes x^-0.5 as rsqrt: -inf at -0.0 and NaN at -inf, where C's pow (NumPy,
            # JAX) gives inf and 0 (the derivatives of sqrt, arcsin and arccos read it)
            import torch

            result = torch.where((base == 0) | (base == -math.inf), base.abs() ** exponent, result)
        return result

    def full(self, shape, value, like=None):
        import torch

        if like is None:
            return torch.full(shape, float(value), dtype=torch.float64)
        return torch.full(shape, float(value), dtype=like.dtype, device=like.device)

    def zeros(self, shape, like):
        import torch

        return torch.zeros(shape, dtype=like.dtype, device=like.device)

    def eye(self, shape, like=None):
        import torch

        n = len(shape) // 2
        kwargs = {"dtype": like.dtype, "device": like.device} if like is not None else {"dtype": torch.float64}
        return torch.eye(math.prod(shape[:n]), **kwargs).reshape(shape)

    def transpose(self, x, perm):
        return x.permute(*perm)

    def whole_program(self, run):
        # only when asked (compile(..., jit=True)): torch.compile's first call takes
        # seconds (see docs/performance.md), more than most derivatives are worth
        import autoray
        import torch

        # the functions the loop looks up through autoray, resolved now: autoray imports a
        # function's module on its first lookup, which Dynamo cannot trace (a graph break
        # on which torch.compile skipped the whole program and compiled op by op instead)
        for name in RUNTIME_LOOKUPS:
            autoray.get_lib_fn(self.name, name)
        # Dynamo keeps its compiled graphs per code object, at most 8 (recompile_limit): every
        # program's loop is Program.run_steps, so from the ninth program (or shape signature) of
        # a process on the loop ran uncompiled.  A wrapper with its own code object per program
        # (run_steps inlined into it) keeps the programs apart.
        namespace = {"run": run}
        exec(compile(_WHOLE_SOURCE, "<tenscalc torch program>", "exec"), namespace)  # noqa: S102 - fixed source
        return torch.compile(namespace["whole"], dynamic=False)

    #: :meth:`Backend.checked_linalg` run eagerly under torch.compile (made on first use)
    _eager_linalg: Callable[..., Any] | None = None

    def checked_linalg(self, what, x, label, k=1):
        import torch

        if not torch.compiler.is_compiling():  # eager: as it is (the wrapper below costs ~15 us a call)
            return super().checked_linalg(what, x, label, k)
        # its checks read values (bool) and its try must see inv's own error: compiled
        # (jit=True), the singular matrix's LinAlgError came from the graph, past the try
        eager = TorchBackend._eager_linalg
        if eager is None:
            eager = TorchBackend._eager_linalg = torch.compiler.disable(Backend.checked_linalg)
        return eager(self, what, x, label, k)

    def all_finite(self, x):
        import torch

        if x.device.type == "cpu" and x.dtype != torch.bfloat16:  # in place: 11 us at n = 3, torch's sum 29
            return bool(np.isfinite(x.detach().numpy()).all())
        # a sum is NaN or inf where an entry is (and where it overflows, each entry is read):
        # isfinite(x).all() took 7 ms at n = 1000, against the sum's 0.6 ms and inv's 100 ms
        return bool(torch.isfinite(x.sum())) or bool(torch.isfinite(x).all())

    def namespace(self, x):
        from ..adjugate import TorchNamespace

        return TorchNamespace(x.device)

    def write_diagonal(self, core, out, shape):
        full = self.zeros(shape, core)
        unique, strides = diagonal_strides(full.stride(), out)
        view = full.as_strided(tuple(shape[out.index(u)] for u in unique), strides)
        view.copy_(core.expand(view.shape) if core.shape != view.shape else core)
        return full

    def unalias(self, results, inputs):
        # as NumPy's: a compiled x or transpose is a view of the input's storage (of the
        # caller's NumPy array too: torch.as_tensor shares it), so such a result is cloned
        import torch

        storages = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor)}
        storages.discard(0)  # an empty tensor has no storage to share
        copies: dict[int, Any] = {}  # one root listed twice stays one tensor
        out = []
        for value in results:
            if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() in storages:
                value = copies.setdefault(id(value), value.clone())
            out.append(value)
        return tuple(out)

    def add_diagonal(self, x, n, coef, shape, fresh):
        if not fresh or tuple(x.shape) != shape:
            x = x.expand(shape).clone()
        spec = tuple(range(n)) * 2
        unique, strides = diagonal_strides(x.stride(), spec)
        x.as_strided(shape[:n], strides).add_(coef)
        return x


class JaxBackend(Backend):
    name = "jax"
    jit_default = True
    factorises = True  # XLA's Cholesky, LAPACK's potri for inv on a CPU (.jax_factor)
    checks_symmetry = True
    jit_reads_no_values = True
    fences = True
    raises_singular = False  # its LU inverse of a singular matrix is inf and NaN: checked_linalg reads the pivots
    fuses_sums = True  # XLA: sum(a*b + c*d) is one loop, sum(a*b) + c*sum(d) two and a reduction each

    def from_numpy(self, array, like=None):
        # a concrete array even inside a trace (jax.jit's, or the caller's jit of a call):
        # a program keeps its constants after their first call, and a tracer kept there
        # made the next trace (another dtype) raise UnexpectedTracerError
        import jax
        import jax.numpy as jnp

        with jax.ensure_compile_time_eval():
            return jnp.asarray(array)

    def fence(self, fns, env, reads):
        import jax

        if jax.default_backend() != "cpu":  # a loop's trip count would be read back from the device
            return [fn(env) for fn in fns]
        token = _JAX_LINALG_FLAGS.set(None)  # traced inside the loop: a flag would leak out of its trace
        try:
            return _fenced_on_cpu(jax, fns, env, tuple(reads))
        finally:
            _JAX_LINALG_FLAGS.reset(token)

    def whole_program(self, run):
        # one XLA computation per shape signature (the program) and dtypes (jit's own
        # cache): the elementwise chains between contractions fuse, as in jax.jit of
        # JAX's own transforms
        import jax

        return jax.jit(run)

    def whole_call(self, run, slots, single, shapes=None, names=()):
        # the inputs as jit's own positional arguments (a list and a dtype reference cost
        # jit ~5 us more per call to flatten), and the dtype cast traced with the program:
        # on a call, nothing is left in Python but the shape key and jit's own dispatch
        import jax

        cast = self.cast
        expected = None if shapes is None else tuple(map(tuple, shapes))
        #: (inv/det/adj, the matrix's label) of each flag pair the program returns (set when traced)
        checks: list[tuple[str, str | None]] = []

        def program(*arrays: Any, flagged: bool = True) -> Any:
            # at trace time only: jit traces again for new shapes, and this program is bound to one
            if expected is not None and tuple(tuple(a.shape) for a in arrays) != expected:
                given = tuple(tuple(a.shape) for a in arrays)
                raise EvaluationError(
                    f"this jitted program is bound to the input shapes {expected}, not {given}: "
                    "take the function for these shapes from CompiledFunction.jitted (or call the CompiledFunction)"
                )
            token = _JAX_LINALG_FLAGS.set([] if flagged else None)
            try:
                results = cast(run(arrays[:slots], arrays[0] if arrays else None), promoted_dtype(arrays))
                found = _JAX_LINALG_FLAGS.get()
            finally:
                _JAX_LINALG_FLAGS.reset(token)
            results = results[0] if single else results
            if not flagged or found is None:  # None only unflagged: the list set above
                return results
            checks[:] = [(what, label) for what, label, _ in found]
            if not found:
                return results, None
            import jax.numpy as jnp

            return results, jnp.stack([flag for _, _, pair in found for flag in pair])  # one read back

        jitted = jax.jit(program)
        tracer = jax.core.Tracer

        def call(*arrays: Any) -> Any:
            results, flags = jitted(*arrays)
            if flags is not None and not isinstance(flags, tracer):  # the caller's jit: no values
                flags = np.asarray(flags)
                if not flags.all():
                    _raise_flagged(checks, flags, dict(zip(names, arrays)))
            return results

        call.flagged = jitted  # type: ignore[attr-defined]  # the program itself: (results, flags or None)
        # the program without the flags, for CompiledFunction.unchecked_jitted (traced on its first call)
        call.unchecked = jax.jit(functools.partial(program, flagged=False))  # type: ignore[attr-defined]
        return call

    def native(self, arrays):
        array_type = self._array_type
        if array_type is None:  # not loaded (a JaxBackend made by hand), or JAX moved it
            return False
        for array in arrays:
            kind = type(array)
            # a NumPy float array goes in as jit's own argument (jit moves it in C++: jnp.asarray
            # costs ~20 us per array); integers, numbers and tracers (the caller's jit) convert
            if kind is not array_type and (kind is not np.ndarray or array.dtype.kind not in "fc"):
                return False
        if JaxBackend.warned_x64 or self._config.jax_enable_x64:
            return True
        return not any(_downcast(array.dtype) for array in arrays)  # convert gives the warning

    def full(self, shape, value, like=None):
        import jax.numpy as jnp

        return jnp.full(shape, float(value), dtype=_jax_dtype(like))

    def eye(self, shape, like=None):
        import jax.numpy as jnp

        n = len(shape) // 2
        return jnp.eye(math.prod(shape[:n]), dtype=_jax_dtype(like)).reshape(shape)

    #: whether the float64-downcast warning was given (it is given once)
    warned_x64 = False

    def convert(self, name, value):
        import jax

        if not jax.config.jax_enable_x64 and not JaxBackend.warned_x64:
            dtype = numpy_dtype(value)
            if dtype is not None and _downcast(dtype):
                JaxBackend.warned_x64 = True
                warnings.warn(
                    f"backend 'jax' computes in float32: the value of '{name}' ({dtype}) was downcast because "
                    "JAX's 64-bit mode is off; call jax.config.update('jax_enable_x64', True) before computing "
                    "for float64 results (this warning is given once)",
                    TensCalcWarning,
                    stacklevel=3,
                )
        return super().convert(name, value)

    def cast(self, results, dtype):
        import jax

        if dtype is not None and not jax.config.jax_enable_x64:  # JAX holds no 64-bit arrays: its 32-bit twin
            dtype = {"float64": np.dtype(np.float32), "complex128": np.dtype(np.complex64)}.get(dtype.name, dtype)
        return super().cast(results, dtype)

    def embed(self, part, key, shape, like=None):
        # a pad, as JAX's own transpose of a slice writes it (not a scatter: JAX arrays are immutable)
        import jax.numpy as jnp

        from .canonical_dots import jax_embed

        key = tuple(key) + (slice(None),) * (len(shape) - len(key))
        key, flips = positive_key(key, shape)  # a pad has no negative steps: x[::-1] is x[0:n:1] flipped
        if flips:
            part = jnp.flip(jnp.asarray(part), flips)
        return jax_embed(part, key, shape)

    def write_diagonal(self, core, out, shape):
        # a select over the output, in its own layout: the einsum with identity matrices
        # of the base class is a batched outer product XLA lays out batch-first and then
        # transposes, with the core's producers recomputed for every output entry
        from .canonical_dots import jax_write_diagonal

        return jax_write_diagonal(core, out, shape)

    def contraction(self, eq, shapes, path):
        from .canonical_dots import jax_contraction  # pairs as the dots XLA's fast kernels take

        return jax_contraction(eq, shapes, path)

    #: the type of a concrete JAX array, which :meth:`native` passes as it is (None: every
    #: value is converted); ``jax.Array`` is its base, which tracers claim too
    _array_type: type | None = None

    def load(self) -> None:
        super().load()
        import jax

        self._config = jax.config
        try:
            from jax._src.array import ArrayImpl
        except ImportError:  # moved in another JAX release: calls convert each value, as before
            return
        self._array_type = ArrayImpl

    def namespace(self, x):
        import jax.numpy as jnp

        return jnp

    def all_finite(self, x):
        import jax

        if type(x) is np.ndarray:  # a call's NumPy value, before jit takes it
            return bool(np.isfinite(x).all())
        if isinstance(x, jax.core.Tracer):  # jit's trace: no values to read (CompiledFunction checks the inputs)
            return None
        if jax.default_backend() == "cpu":  # read in place: 4 us at n = 3, where a JAX reduction costs 30 to 60
            return bool(np.isfinite(np.asarray(x)).all())
        return bool(_jax_all_finite()(x))  # on the device: one scalar comes back

    def checked_linalg(self, what, x, label, k=1):
        traced = _traced(x)
        if not traced and what != "inv":
            return super().checked_linalg(what, x, label, k)
        import jax.numpy as jnp

        if not traced:  # inv: singular where NumPy's is, an exact zero pivot (not an inverse that overflows)
            self.check_finite(what, x, label)
            result, nonsingular = jax_lu_inverse(x)
            if not bool(nonsingular):
                raise matrix_error(what, label, "singular")
            return result
        # traced (jit): nothing can be raised on the data, and JAX's inv of a matrix with an inf
        # entry may be finite (a silent wrong number): NaN instead (n² reads, fused by XLA).
        # LAPACK gets a finite matrix (zeros): its SVD (adj) of one with an inf entry never
        # returned (adj(exp(A)) with an overflowing entry hung a jitted call).  The flags (the
        # matrix finite; for inv, its LU factor has no zero pivot) are read after the program runs
        finite = jnp.isfinite(x).all()
        safe = jnp.where(finite, x, jnp.zeros_like(x))
        nonsingular: Any = True
        if what == "inv":
            result, nonsingular = jax_lu_inverse(safe)
        else:
            result = self._compute_linalg(what, safe, k)
        result = jnp.where(finite, result, jnp.nan)
        jax_linalg_flag(what, label, finite, nonsingular)
        return result


@functools.cache
def _jax_all_finite() -> Callable[[Any], Any]:
    """Whether every entry of a JAX array is finite, one jitted reduction (made once)."""
    import jax
    import jax.numpy as jnp

    return jax.jit(lambda x: jnp.isfinite(x).all())


#: the (inv/det/adj, label, (matrix finite, result finite)) of the linalg steps of the JAX
#: program :meth:`JaxBackend.whole_call` is tracing (None: none is, or its unchecked twin): its
#: steps cannot raise on their data, so the program returns the flags and its call reads them
_JAX_LINALG_FLAGS: contextvars.ContextVar[list | None] = contextvars.ContextVar("tenscalc_jax_flags", default=None)


def _traced(x: Any) -> bool:
    import jax

    return isinstance(x, jax.core.Tracer)


def jax_lu_inverse(x: Any) -> tuple[Any, Any]:
    """``inv(x)`` of a JAX matrix from its LU factorisation (the factor and two triangular
    solves of ``jnp.linalg.inv``), and whether no pivot of the factor is exactly zero: the
    NumPy runners' ``singular`` (LAPACK's getrf reports a zero pivot; ``np.linalg.inv``
    raises).  A non-singular matrix whose inverse overflows is inf there, as NumPy's is,
    where reading the result for a non-finite entry called it singular.  float16 and
    bfloat16 are factorised in float32 (LAPACK has no half precision) and cast back."""
    import jax.numpy as jnp
    from jax import lax
    from jax.scipy.linalg import lu_solve

    dtype = x.dtype
    wider = lapack_dtype(np.dtype(dtype).name)  # bfloat16 too: JAX registers it with NumPy
    work = x if wider is None else x.astype(wider)
    lu, pivots, _ = lax.linalg.lu(work)
    inverse = lu_solve((lu, pivots), jnp.eye(work.shape[-1], dtype=work.dtype))
    nonsingular = jnp.all(_jax_nonzero(jnp.diagonal(lu)))
    return (inverse if wider is None else inverse.astype(dtype)), nonsingular


def _jax_nonzero(x: Any) -> Any:
    """Whether each entry of a float or complex JAX array is not zero, read from its bits: XLA
    compares a subnormal number as 0 (a pivot of 1e-309 is not zero to LAPACK nor NumPy)."""
    import jax.numpy as jnp
    from jax import lax

    if jnp.iscomplexobj(x):
        return _jax_nonzero(x.real) | _jax_nonzero(x.imag)
    bits = lax.bitcast_convert_type(x, {4: jnp.int32, 8: jnp.int64}[x.dtype.itemsize])
    return jnp.left_shift(bits, 1) != 0  # the sign bit shifted out: -0.0 is zero


def jax_linalg_flag(what: str, label: str | None, first: Any, second: Any = True) -> None:
    """Record the flags of a linalg step of the JAX program :meth:`JaxBackend.whole_call` is
    tracing (read after it runs, by :func:`_raise_flagged`); nothing where none is traced with
    flags (the caller's own jit, a fence's loop, the unchecked program)."""
    found = _JAX_LINALG_FLAGS.get()
    if found is not None:
        import jax.numpy as jnp

        found.append((what, label, (jnp.asarray(first), jnp.asarray(second))))


def pd_error(name: str, value: Any) -> EvaluationError:
    """The error of the NumPy runners for ``value``, the value of ``name`` declared positive
    definite, that JAX's check found not to be (their own check run on it: the same words)."""
    try:
        cholesky_factor(np.asarray(value), name)
    except EvaluationError as exc:
        return exc
    # XLA's potrf and SciPy's disagree at the edge (a leading minor about 0)
    return not_pd(name, "its Cholesky factorisation in XLA breaks down")


def _raise_flagged(
    checks: Sequence[tuple[str, str | None]], flags: np.ndarray, values: Mapping[str, Any] | None = None
) -> None:
    """The error every runner says (:func:`tenscalc.linalg.matrix_error`) for the first linalg
    step of a jitted JAX program whose flags (two a step: its matrix finite; for ``inv``, no zero
    pivot in its LU factor) say its matrix was not finite or, for ``inv``, singular; for a matrix declared positive
    definite (``pd``, its value read from ``values``), the NumPy runners' error."""
    for k, (what, label) in enumerate(checks):
        if what == "pd" and not flags[2 * k]:
            name = label or "?"
            value = None if values is None else values.get(name)
            if value is None:  # a program traced without its inputs' names: the check's words alone
                raise not_pd(name, "its check in the jitted program failed")
            raise pd_error(name, value)
        if not flags[2 * k]:
            raise matrix_error(what, label, "finite")
        if not flags[2 * k + 1]:
            raise matrix_error(what, label, "singular")


def _downcast(dtype: np.dtype) -> bool:
    """Whether JAX without 64-bit mode holds a value of ``dtype`` in 32 bits."""
    return dtype.itemsize == 8 and dtype.kind in "fiub" or dtype == np.complex128


def _jax_dtype(like: Any) -> Any:
    """The dtype of constants made to meet ``like``: its own when it is a float array
    (float32 inputs keep float32 results), else JAX's default float (x64 or not)."""
    import jax.numpy as jnp

    return like.dtype if like is not None and jnp.issubdtype(like.dtype, jnp.inexact) else None


class CupyBackend(Backend):
    """CuPy: identities, filled arrays and diagonal writes are made on the GPU (the
    generic ones are NumPy arrays copied over: at n = 8,000 the log-sum-exp Hessian
    spent 115 ms of its 116 ms building and sending an n x n identity)."""

    name = "cupy"
    checks_symmetry = True
    raises_singular = False  # cuSOLVER's inverse of a singular matrix is inf and NaN, unless asked to check

    @staticmethod
    def _float_dtype(like: Any) -> Any:
        import cupy

        return like.dtype if like is not None and like.dtype.kind in "fc" else cupy.float64

    def full(self, shape, value, like=None):
        import cupy

        return cupy.full(shape, float(value), dtype=self._float_dtype(like))

    def zeros(self, shape, like):
        import cupy

        return cupy.zeros(shape, dtype=self._float_dtype(like))

    def eye(self, shape, like=None):
        import cupy

        n = len(shape) // 2
        return cupy.eye(math.prod(shape[:n]), dtype=self._float_dtype(like)).reshape(shape)

    def _diagonal_view(self, full, out):
        from cupy.lib.stride_tricks import as_strided

        unique, strides = diagonal_strides(full.strides, out)
        return as_strided(full, tuple(full.shape[out.index(u)] for u in unique), strides)

    def write_diagonal(self, core, out, shape):
        full = self.zeros(shape, core)
        self._diagonal_view(full, out)[...] = core
        return full

    def add_diagonal(self, x, n, coef, shape, fresh):
        import cupy

        out = cupy.array(cupy.broadcast_to(x, shape), dtype=self._float_dtype(x))  # a new array: x is kept
        self._diagonal_view(out, tuple(range(n)) * 2)[...] += coef
        return out


class DaskBackend(Backend):
    """Dask arrays, built lazily: identities, diagonals and filled arrays are made by
    ``da.eye`` / ``da.diag`` / ``da.full`` on the workers, never as NumPy constants shipped
    in the graph; contractions add their partial sums (``tenscalc/compiler/dask_einsum.py``)
    and cut a result in blocks only past dask's chunk size."""

    name = "dask"
    lazy = True
    checks_symmetry = True  # in the graph: see checked_declaration
    factorises = True  # a task running NumPy's helper text on one block (.dask_factor)

    def convert(self, name, value):
        value = super().convert(name, value)
        if value.dtype.kind not in "biufc":  # a dask array of dates or strings: refused as NumPy's would be
            raise not_numbers(name, value.dtype)
        return value

    def from_numpy(self, array, like=None):
        import dask.array as da

        array = np.asarray(array)
        if array.size > _SMALL_CONSTANT:
            flat = array.reshape(-1)
            if (flat == flat[0]).all():  # a filled array (ones ...): made where it is used
                return da.full(array.shape, flat[0], dtype=array.dtype)
        return da.from_array(array)

    def full(self, shape, value, like=None):
        import dask.array as da

        dtype = like.dtype if like is not None and like.dtype.kind in "fc" else np.float64
        return da.full(shape, value, dtype=dtype)

    def zeros(self, shape, like):
        import dask.array as da

        return da.zeros(
            shape, dtype=np.result_type(like.dtype, np.float64) if like.dtype.kind not in "fc" else like.dtype
        )

    def eye(self, shape, like=None):
        import dask.array as da

        n = len(shape) // 2
        size = math.prod(shape[:n])
        dtype = like.dtype if like is not None and like.dtype.kind in "fc" else np.float64
        identity = da.eye(size, dtype=dtype)
        return identity if n == 1 else identity.reshape(shape)

    def write_diagonal(self, core, out, shape):
        import dask.array as da

        if len(out) == 2 and out[0] == out[1]:  # diag(v): zero blocks off the diagonal, made lazily
            side = _square_side(core.dtype.itemsize)  # each diagonal block side x side fits a chunk
            if max(core.chunks[0], default=0) > side:
                core = core.rechunk(side)
            return da.diag(core)
        return super().write_diagonal(core, out, shape)

    def einsum(self, eq, *arrays):
        from .dask_einsum import einsum

        return einsum(eq, *arrays)

    def contraction(self, eq, shapes, path):
        # pair by pair through dask_einsum: partial sums added, not concatenated as by
        # dask's tensordot and einsum (the Gram Hessian's peak memory, issue 30), and a
        # result cut in blocks only past dask's chunk size (da.einsum cut an outer
        # product of 3-vectors into (2, 1) blocks: a 3x3 det's third derivative was 12,575 tasks)
        from .dask_einsum import contraction

        return contraction(eq, shapes, path)

    def all_finite(self, x):
        return None  # lazy: the blocks that compute inv, det and adj check (see checked_linalg)

    def inv(self, x):
        return self.checked_linalg("inv", x, None)

    def det(self, x):
        return self.checked_linalg("det", x, None)

    def adj(self, x, k):
        return self.checked_linalg("adj", x, None, k)

    def checked_declaration(self, name, x, pd, factored):
        # a lazy array has no values to read at the call: the check is a task of the graph that
        # every block of the matrix handed on waits for, so each result that reads the matrix
        # raises the NumPy runners' error when dask computes it.  Declared pd with its inv or
        # det computed: the factor those read, the NumPy runners' Cholesky text on one block
        # (symmetric, finite, positive definite: their errors; .dask_factor, where the factor
        # step finds it).  Otherwise block by block (a chunked matrix is never gathered): each
        # block against its mirror, the verdict the NumPy text's (_symmetric_verdict)
        word = "positive definite (pd)" if pd else "symmetric"
        if x.ndim == 2 and x.shape[0] != x.shape[1]:  # known now: refused now, before the shapes are bound
            symmetric_check(np.broadcast_to(np.zeros((), x.dtype), x.shape), name, word)  # reads no values
        if x.ndim != 2 or not x.size:
            return x  # as the text: nothing to check
        import dask.array as da

        if pd and factored:
            from .dask_factor import checked_with_factor

            return checked_with_factor(name, x)
        mirror = x.T.rechunk(x.chunks)  # block (I, J) of x meets block (J, I) transposed
        records = tuple((1,) * len(c) for c in x.chunks)
        gaps = da.map_blocks(_block_gap, x, mirror, chunks=records, dtype=object, meta=np.empty((0, 0), object))
        whole = gaps.rechunk(gaps.shape)
        n = x.shape[0]
        verdict = da.map_blocks(_symmetric_verdict, whole, name, word, x.dtype, n, chunks=((1,), (1,)), dtype=bool)
        return da.blockwise(_block_checked, "ij", x, "ij", verdict[0, 0], "", dtype=x.dtype)

    def checked_linalg(self, what, x, label, k=1):
        # one block holds the matrix: the NumPy runners' own text (.generated.LINALG_HELPER)
        # runs on it, checks and errors included, raised when dask computes
        import dask.array as da

        n = x.shape[0]
        if what == "inv":
            # one block holds the matrix, whatever its size (the memory limit checked), as for
            # det: dask's blocked inv pivots only inside its diagonal blocks (a permutation
            # matrix [[0, I], [I, 0]] raised LinAlgError "singular matrix", a small leading block
            # gave an inverse wrong in the first digit without a word, a singular matrix raised
            # LinAlgError, not the error that names it); an einsum's chunks may be any (2, 1)
            _check_block(x.shape, x, "inv")
            return da.map_blocks(_block_inv, x.rechunk(x.shape), label, dtype=x.dtype)
        if what == "det":  # dask.array.linalg has no det
            _check_block(x.shape, x, "det")
            whole = x.rechunk(x.shape)
            value = da.map_blocks(_block_det, whole, label, chunks=((1,), (1,)), dtype=x.dtype)
            return value[0, 0]
        # adj: one block holds the result too
        _check_block((n,) * (2 * k), x, "adj")
        return da.map_blocks(
            _block_adj,
            x.rechunk(x.shape),
            k,
            label,
            chunks=((n,),) * (2 * k),
            new_axis=list(range(2, 2 * k)),
            dtype=x.dtype,
            meta=np.empty((0,) * (2 * k), dtype=x.dtype),
        )


# the functions dask's blocks run: module-level, so that dask names each task by reference
# (it pickled a closure over the exec'd NumPy text by value, searching every module: 240 ms a call at n = 3)
def _block_inv(block: np.ndarray, label: str | None) -> np.ndarray:
    return linalg_inv(block, label)


def _block_det(block: np.ndarray, label: str | None) -> np.ndarray:
    return linalg_det(block, label).reshape(1, 1)


def _block_adj(block: np.ndarray, k: int, label: str | None) -> np.ndarray:
    return linalg_adj(block, k, label)


def _block_gap(block: np.ndarray, mirror: np.ndarray, block_info: dict) -> np.ndarray:
    """What the symmetry check needs of one block of a matrix ``m`` and the block of ``mᵀ``
    at its place: (whether they are equal, max|block|, their largest gap |m - mᵀ| (NaN
    where an entry is not finite), where it is first (row, column of ``m``), ``m`` there,
    ``mᵀ`` there)."""
    (top, _), (left, _) = block_info[0]["array-location"]  # dask passes the block's place
    record = np.empty((1, 1), dtype=object)
    scale = np.abs(block).max()
    if np.array_equal(block, mirror):  # their gap is 0, or NaN where an inf meets itself
        record[0, 0] = (True, scale, 0.0 if np.isfinite(block).all() else np.nan, (top, left), None, None)
        return record
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, said by the verdict (not finite)
        gap = np.abs(block - mirror)
    i, j = (k.item() for k in np.unravel_index(np.argmax(gap), gap.shape))
    record[0, 0] = (False, scale, gap.max(), (top + i, left + j), block[i, j].item(), mirror[i, j].item())
    return record


def _symmetric_verdict(gaps: np.ndarray, name: str, word: str, dtype: np.dtype, n: int) -> np.ndarray:
    """True, or the error the NumPy runners' text (:data:`.generated.SYMMETRIC_HELPER`) raises
    for the whole n x n matrix, decided from its blocks' ``gaps`` (:func:`_block_gap`): equal to its
    transpose; else its largest gap not finite; else within 16 n eps max|m| (a float); else
    the first largest gap in row-major order, named."""
    records = list(gaps.flat)
    if all(record[0] for record in records):
        return np.ones((1, 1), dtype=bool)
    worst = np.max([record[2] for record in records])  # NaN where one is: as the whole gap's max
    if not np.isfinite(worst):
        raise not_finite(name, word)
    scale = max(record[1] for record in records)
    if rounding_gap(worst, n, dtype, scale):
        return np.ones((1, 1), dtype=bool)
    _, _, _, (i, j), a, b = min((r for r in records if r[2] == worst), key=lambda r: r[3])
    raise not_symmetric(name, word, i, j, a, b)


def _block_checked(block: np.ndarray, verdict: np.ndarray) -> np.ndarray:
    """``block`` of a declared matrix, once the check (``verdict``) has passed."""
    return block


#: constants of more entries than this are checked for being one number (then made lazily)
_SMALL_CONSTANT = 4096


def _check_block(shape: tuple[int, ...], x: Any, what: str) -> None:
    """The memory limit for one block a dask step computes in one piece."""
    from ..limits import check_shape

    check_shape(shape, x.dtype.itemsize, what=f"the block dask's {what} computes on")


def _square_side(itemsize: int) -> int:
    """The side of the largest square block that fits dask's chunk size (``array.chunk-size``)."""
    import dask
    from dask.utils import parse_bytes

    return max(1, math.isqrt(parse_bytes(dask.config.get("array.chunk-size")) // itemsize))


_REGISTRY: dict[str, type[Backend]] = {
    "numpy": NumpyBackend,
    "torch": TorchBackend,
    "jax": JaxBackend,
    "cupy": CupyBackend,
    "dask": DaskBackend,
}
_instances: dict[str, Backend] = {}


def get_backend(name: str | Backend) -> Backend:
    """The backend called ``name`` (one of ``BACKENDS``), its library imported."""
    if isinstance(name, Backend):
        return name
    if name not in _REGISTRY:
        raise EvaluationError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    backend = _instances.get(name)
    if backend is None:
        backend = _REGISTRY[name]()
        backend.load()
        _instances[name] = backend
    return backend


def available_backends() -> list[str]:
    """The backends whose library is installed."""
    found = []
    for name in BACKENDS:
        module = "cupy" if name == "cupy" else name
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - a broken install counts as missing
            continue
        found.append(name)
    return found


def _fenced_on_cpu(jax: Any, fns: Sequence[Callable[[list], Any]], env: list, reads: tuple[int, ...]) -> list[Any]:
    """The values of ``fns``, handed on through a ``while`` loop whose trip count XLA cannot
    know, so that they are computed once and read back by every reader: XLA on a CPU
    copies an operation of one operand (``sin(t)``) into the fusion of each reader, and
    removes ``optimization_barrier`` before fusing.  The values are the loop's initial
    state; the loop runs no time (once where the first entry of the first value is nan:
    its body computes the same values from the same operands again), so it costs no copy;
    its condition reads that entry itself (a separate probe of an operand cost XLA one
    more kernel before the loop).  Differentiating
    through it (the caller's ``jax.grad``) differentiates the values directly
    (``custom_jvp``): a ``while`` loop has no reverse mode."""
    import jax.numpy as jnp

    def compute(*operands: Any) -> tuple[Any, ...]:
        local = list(env)
        for slot, value in zip(reads, operands):
            local[slot] = value
        return tuple(fn(local) for fn in fns)

    @jax.custom_jvp
    def fenced(*operands: Any) -> tuple[Any, ...]:
        values = compute(*operands)
        probe = next((k for k, value in enumerate(values) if getattr(value, "size", 0)), None)
        if probe is None:  # nothing to decide a trip count from (numbers, empty arrays)
            return values

        def again(state: tuple) -> Any:  # XLA cannot fold x != x (nan) of a value it computes
            first = jnp.ravel(state[1][probe])[0]
            return (state[0] < 1) & (first != first)

        def body(state: tuple) -> tuple:
            return state[0] + 1, compute(*operands)

        return jax.lax.while_loop(again, body, (jnp.int32(0), values))[1]

    fenced.defjvp(lambda primals, tangents: jax.jvp(compute, primals, tangents))
    return list(fenced(*[env[slot] for slot in reads]))
