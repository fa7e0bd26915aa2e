"""Declared structure in the compiler: one Cholesky factorisation per positive-definite matrix.

``tc.compile(exprs, assumptions={"K": "pd"})`` (the words of a problem's ``declare K 2
pd``: see :func:`declared`) tells the compiler that the values of ``K`` are
symmetric positive definite.  Every ``inv(K)``, ``det(K)`` and ``log(det(K))`` of the
program then reads one Cholesky factorisation ``K = L Lᵀ``, computed once per call
and shared by all of them, instead of an LU factorisation each:

* ``inv(K)`` from the factor (LAPACK ``potrf`` then ``potri`` through SciPy: about half
  the work of an LU inverse), its two triangles made equal;
* ``det(K) = prod(diag L)²`` and ``log(det(K)) = 2 sum(log(diag L))``, which stays
  finite where ``det(K)`` overflows (a 1,000 x 1,000 kernel matrix's often does).

The declaration is checked on every call, never trusted: a value that is not
symmetric beyond rounding (``|K - Kᵀ| > 16 n eps max|K|``) or not positive definite
(the factorisation fails: indefinite, singular, not finite) raises an
``EvaluationError`` naming the variable, where a factorisation that reads one
triangle would return the inverse of another matrix.

Where it applies: the NumPy backend, real floating dtypes (float16 and longdouble
through the dtype LAPACK has, as :mod:`tenscalc.linalg`), LAPACK's ``potrf`` and
``potri`` through SciPy (without SciPy, ``numpy.linalg.cholesky`` factorises and
checks, ``det`` reads its factor and ``inv`` is NumPy's LU inverse); PyTorch
(``torch.linalg.cholesky_ex``, ``torch.cholesky_inverse``; under ``torch.compile``,
``jit=True``, reading the factorisation's status is a graph break: correct, with
dynamo's warning); JAX, jitted or not (XLA's Cholesky, LAPACK's ``potri`` for ``inv``
on a CPU; the check a flag the call reads after the program ran: :mod:`.jax_factor`); Dask
(:mod:`.dask_factor`: the factor a task of the graph on one block holding the matrix, as
dask's LU ``inv`` and ``det`` take it, running :data:`.generated.CHOLESKY_HELPER`, and
``inv``, ``det`` and ``log(det)`` tasks reading it: NumPy's numbers and, raised when dask
computes, NumPy's errors); the code ``tc.to_python(..., assumptions=...)`` writes (the
readers found by :func:`plan_factors` with ``shapes``).  Every NumPy runner (the loop
of closures, the fused function, both generated modules) runs one text,
:data:`.generated.CHOLESKY_HELPER`: the same numbers and the same errors.  CuPy,
and complex values, take the generic path: the same numbers through LU,
positive definiteness trusted.
Dask's arrays are lazy: its check is a task of the graph that every block of the matrix
handed on waits for, so each result that reads the matrix, itself or through its factor,
raises the NumPy runner's error, same message, when dask computes it (NumPy arrays given
to it are checked the same way, not at the call; a matrix that is not square is refused
at the call, its shape known).  Where the program computes the matrix's ``inv`` or
``det`` and it is declared ``pd``, that task is the factor itself (one factorisation: an
indefinite, singular or non-finite matrix is refused as NumPy refuses it); otherwise the
symmetry check of :data:`.generated.SYMMETRIC_HELPER` is decided block by block (each
block against its mirror, a chunked matrix never gathered: the same verdict and message;
:meth:`.backends.DaskBackend.checked_declaration`).  On
NumPy, PyTorch, JAX and Dask a complex value is checked symmetric and finite, as the compiler
writes the matrix's transpose as itself (a Hermitian positive-definite matrix that
is not real is refused: not symmetric), and a singular one raises the error of every
``inv``, naming it.

>>> import numpy as np, tenscalc as tc
>>> f = tc.parse("y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))", {"y": 1, "K": 2})
>>> run = tc.compile([f, tc.gradient(f, "K")], assumptions={"K": "pd"})
>>> [op.kind for op in run._bind({"y": (3,), "K": (3, 3)}).ops if op.kind in ("cholesky", "inv", "det")]
['cholesky', 'inv', 'det']
>>> value, grad = run(y=np.ones(3), K=2 * np.eye(3))
>>> round(float(value), 12), np.round(grad[0], 12).tolist()  # 3/2 + log 8; inv(K)ᵀ - inv(K) y yᵀ inv(K)ᵀ
(3.57944154168, [0.25, -0.25, -0.25])
>>> run(y=np.ones(3), K=-np.eye(3))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
tenscalc.errors.EvaluationError: 'K' is declared positive definite (pd) but its value is not: ...
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.vocabulary import ASSUMPTION_WORDS
from ..errors import EvaluationError
from ..linalg import lapack_dtype
from .backends import Backend
from .cost import OpCost
from .dask_factor import DaskFactor, dask_factor, dask_factor_det, dask_factor_inv
from .generated import mirror_block, not_finite, not_pd, symmetric_check
from .jax_factor import JaxFactor, jax_factor, jax_factor_det, jax_factor_inv
from .plan import Plan, Step, step_reads
from .records import FactorReaderRecord, FactorRecord

__all__ = [
    "Declared",
    "Factors",
    "bind_factor",
    "bind_reader",
    "check_symmetric",
    "declared",
    "factored",
    "plan_factors",
]

#: the declaration words that ask for a Cholesky factorisation
PD_WORDS = ("pd",)
#: the words about matrices only (as :mod:`tenscalc.convexity.assumptions` reads them)
MATRIX_WORDS = ("symmetric", "psd", "pd", "diagonal")
#: blocks of this many rows are mirrored at a time when the inverse's triangles are made
#: equal (the helper text's ``_cho_block``): each block is a cache-sized copy, no n x n temporary
MIRROR_BLOCK: int = mirror_block


def _words(name: str, given: Any) -> list[str]:
    """The words of one variable's assumptions (intervals such as ``(0, 1)`` skipped)."""
    items = [given] if isinstance(given, str) else list(given) if isinstance(given, (tuple, list)) else [given]
    if len(items) == 2 and all(v is None or isinstance(v, (int, float)) for v in items):
        return []  # one interval (lo, hi)
    words = []
    for item in items:
        if isinstance(item, (tuple, list)):
            continue  # an interval among words
        if not isinstance(item, str) or item.strip().lower() not in ASSUMPTION_WORDS:
            raise EvaluationError(
                f"unknown assumption {item!r} about '{name}'; use one of {', '.join(ASSUMPTION_WORDS)} "
                f"or an interval (lo, hi)"
            )
        words.append(item.strip().lower())
    return words


@dataclass(frozen=True)
class Declared:
    """What the compiler uses of the assumptions: the matrices declared positive definite
    (factorised by Cholesky) and those declared symmetric (``symmetric``, ``psd``, ``pd``
    or ``diagonal``: the simplifier writes their transposes as themselves)."""

    pd: frozenset[str] = frozenset()
    symmetric: frozenset[str] = frozenset()


def declared(assumptions: Mapping[str, Any] | None, orders: Mapping[str, int]) -> Declared:
    """The matrices among ``orders`` that ``assumptions`` declares positive definite, and
    those it declares symmetric.

    ``assumptions`` is read as :func:`tenscalc.check_convexity` reads it (a word or a
    tuple of words and intervals per variable; a problem's ``.assumptions`` as it is).
    Variables the compiled expressions do not read are skipped, so a problem's
    declarations can be passed whole.

    >>> d = declared({"K": "pd", "S": "symmetric", "x": ("positive",), "z": "pd"}, {"K": 2, "S": 2, "x": 1})
    >>> sorted(d.pd), sorted(d.symmetric)
    (['K'], ['K', 'S'])
    >>> declared({"x": "pd"}, {"x": 1})
    Traceback (most recent call last):
    ...
    tenscalc.errors.EvaluationError: 'pd' is an assumption about matrices, but 'x' has order 1
    """
    if assumptions is None:
        return Declared()
    if not isinstance(assumptions, Mapping):
        raise EvaluationError(f"assumptions must map variable names to words such as 'pd', not {assumptions!r}")
    pd, symmetric = set(), set()
    for name, given in assumptions.items():
        words = _words(name, given)
        if name not in orders:
            continue
        for word in words:
            if word in MATRIX_WORDS and orders[name] != 2:
                order = orders[name]
                raise EvaluationError(f"'{word}' is an assumption about matrices, but '{name}' has order {order}")
        if any(word in PD_WORDS for word in words):
            pd.add(name)
        if any(word in MATRIX_WORDS for word in words):
            symmetric.add(name)
    return Declared(frozenset(pd), frozenset(symmetric))


# ------------------------------------------------------------------ which steps read a factor


@dataclass
class Factors:
    """The factorisations of one bound program.

    ``slots``: matrix slot -> the slot holding its factor (numbered by :func:`plan_factors`'s
    caller); ``first``: step index -> the matrix slots to factorise before that step;
    ``readers``: step index -> (matrix slot, what the step computes: ``inv``, ``det`` or
    ``logdet``); ``last``: step index -> the factor slots dead after that step.
    """

    slots: dict[int, int] = field(default_factory=dict)
    first: dict[int, list[int]] = field(default_factory=dict)
    readers: dict[int, tuple[int, str]] = field(default_factory=dict)
    last: dict[int, list[int]] = field(default_factory=dict)


def plan_factors(plan: Plan, pd_slots: frozenset[int], next_slot: int) -> Factors:
    """Which steps of ``plan`` read the factor of a matrix in ``pd_slots``: its ``inv``
    and ``det`` steps, and the ``log`` of such a ``det`` (the log of the determinant is
    summed from the factor's diagonal, finite where the determinant overflows)."""
    factors = Factors()
    if not pd_slots:  # the common case: no pass over the plan
        return factors
    det_of: dict[int, int] = {}
    order: dict[int, list[int]] = {}
    for step in plan.steps:
        what = _reader_kind(step, pd_slots, det_of)
        if what is None:
            continue
        matrix = det_of[step.args[0]] if what == "logdet" else step.args[0]
        if what == "inv" and (matrix, "inv") in factors.readers.values():
            continue  # a second inverse (nodes are interned: not in a plan of tc.compile): LU, as potri overwrites
        if what == "det":
            det_of[step.index] = matrix
        factors.readers[step.index] = (matrix, what)
        order.setdefault(matrix, []).append(step.index)
    for index, (matrix, what) in list(factors.readers.items()):
        if what == "det" and index not in plan.outputs and _read_by_logs_only(plan, index, factors):
            factors.readers[index] = (matrix, "unused")  # its log reads the factor: no product of n numbers
    for matrix, steps in order.items():
        factors.slots[matrix] = next_slot
        factors.first.setdefault(steps[0], []).append(matrix)
        factors.last.setdefault(steps[-1], []).append(next_slot)
        next_slot += 1
    return factors


def factored(plan: Plan, pd: frozenset[str]) -> frozenset[str]:
    """The matrices among ``pd`` whose ``inv`` or ``det`` the plan computes: the factorisation
    checks their declaration (the others are checked as symmetric by the call)."""
    slots = frozenset(plan.inputs[name] for name in pd if name in plan.inputs)
    read = plan_factors(plan, slots, 0).slots
    return frozenset(name for name in pd if plan.inputs.get(name) in read)


def _read_by_logs_only(plan: Plan, det: int, factors: Factors) -> bool:
    """Whether every step reading slot ``det`` is a log computed from the factor."""
    return all(
        det not in step_reads(step) or factors.readers.get(step.index, (0, ""))[1] == "logdet" for step in plan.steps
    )


def _reader_kind(step: Step, pd_slots: frozenset[int], det_of: Mapping[int, int]) -> str | None:
    if step.kind in ("inv", "det") and step.args[0] in pd_slots:
        return step.kind
    if step.kind == "func" and step.data == "log" and step.args and step.args[0] in det_of:
        return "logdet"
    return None


# ------------------------------------------------------------------ the factorisation


@dataclass(frozen=True)
class _Factor:
    """A PyTorch factorisation of ``matrix`` (converted to a dtype LAPACK has).

    ``kind``: ``torch`` (``torch.linalg.cholesky_ex``) or ``generic`` (a complex matrix:
    the backend's LU ``inv`` and ``det`` of ``matrix``); ``diagonal``: ``L``'s; ``dtype``:
    the matrix's own (results are cast back).  A NumPy factor is the helper text's
    (:data:`.generated.CHOLESKY_HELPER`), which every NumPy runner runs."""

    kind: str
    matrix: Any
    dtype: Any
    lower: Any = None
    diagonal: Any = None
    #: the variable factorised: the generic path's errors name it
    name: str | None = None


def _not_pd(name: str, detail: str) -> EvaluationError:
    return not_pd(name, detail)  # the helper text's message, for PyTorch too


def check_symmetric(name: str, x: Any, pd: bool = False) -> None:
    """Raise an ``EvaluationError`` unless ``x`` (the value of ``name``, a NumPy array or a
    PyTorch tensor, declared symmetric, or positive definite where ``pd``) equals its
    transpose up to rounding (16 n eps max|x|).

    >>> check_symmetric("S", np.array([[1.0, 2.0], [2.0, 1.0]]))
    >>> check_symmetric("S", np.array([[1.0, 2.0], [3.0, 1.0]]))
    Traceback (most recent call last):
    ...
    tenscalc.errors.EvaluationError: 'S' is declared symmetric but its value is not: S[0, 1] = 2.0, S[1, 0] = 3.0
    """
    if not isinstance(x, np.ndarray):  # a tensor: exactly symmetric is decided on its device
        if getattr(x, "ndim", 0) != 2 or _traced(x) or (x.shape[0] == x.shape[1] and bool((x == x.T).all())):
            return
        x = _on_host(x)
    symmetric_check(x, name, "positive definite (pd)" if pd else "symmetric")  # the generated module's text


def _traced(x: Any) -> bool:
    """Whether ``x`` is a JAX tracer (a call inside the caller's ``jax.jit``): it has no
    value to check, and the declaration is trusted."""
    if not type(x).__module__.startswith("jax"):
        return False
    import jax

    return isinstance(x, jax.core.Tracer)


def _on_host(x: Any) -> np.ndarray:
    """A PyTorch tensor, CuPy or JAX array as a NumPy array (for the error's numbers)."""
    if hasattr(x, "detach"):  # torch
        return x.detach().cpu().numpy()
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def _finite_diagonal(name: str, diagonal: Any) -> Any:
    if not diagonal.isfinite().all():
        raise _not_pd(name, "it has an entry that is not finite")
    return diagonal


def torch_factor(name: str, x: Any) -> _Factor:
    """The Cholesky factor of the tensor ``x`` (``torch.linalg.cholesky_ex``), or a clear error."""
    import torch

    if not x.is_floating_point():  # complex: the generic path (LU), checked as the NumPy runners' helper text checks
        check_symmetric(name, x, pd=True)  # the compiler wrote its transpose as itself (a Hermitian x is not)
        if not bool(x.isfinite().all()):
            raise not_finite(name, "positive definite (pd)")
        return _Factor("generic", x, x.dtype, name=name)
    wider = lapack_dtype(str(x.dtype).replace("torch.", ""))
    work = x.to(getattr(torch, wider)) if wider is not None else x
    check_symmetric(name, work, pd=True)
    if not bool(work.isfinite().all()):  # as the NumPy runners' helper text says it
        raise not_finite(name, "positive definite (pd)")
    lower, info = torch.linalg.cholesky_ex(work)
    if int(info) > 0:
        detail = f"its Cholesky factorisation breaks down at row {int(info) - 1} (a leading minor is not positive)"
        raise _not_pd(name, detail)
    return _Factor("torch", work, x.dtype, lower, _finite_diagonal(name, lower.diagonal()))


def library_factor(name: str, x: Any) -> Any:
    """The factor of ``x``, a PyTorch tensor, a JAX array or a Dask array (the libraries besides
    NumPy that factorise: ``Backend.factorises``), the value of ``name`` declared positive definite."""
    module = type(x).__module__
    if module.startswith("jax"):
        return jax_factor(name, x)
    if module.startswith("dask"):
        return dask_factor(name, x)
    return _torch_factor_eager()(name, x)


@functools.cache
def _torch_factor_eager() -> Any:
    """:func:`torch_factor`, run eagerly under ``torch.compile``: its checks read the values
    (bool, int), so Dynamo breaks its graph here either way, and said so in 20 lines of
    warnings ("Graph break from Tensor.item()")."""
    import torch

    return torch.compiler.disable(torch_factor)


def factor_inv(factor: Any, backend: Backend) -> Any:
    """``inv`` of the matrix PyTorch, JAX or Dask factorised, symmetric, in its own dtype."""
    if isinstance(factor, JaxFactor):
        return jax_factor_inv(factor, backend)
    if isinstance(factor, DaskFactor):
        return dask_factor_inv(factor)
    if factor.kind == "generic":  # checked as every runner checks an inv (a singular matrix named)
        return backend.checked_linalg("inv", factor.matrix, factor.name)
    import torch

    result = torch.cholesky_inverse(factor.lower)
    return result if result.dtype == factor.dtype else result.to(factor.dtype)


def factor_det(factor: Any, log: bool, backend: Backend) -> Any:
    """``det`` (or ``log(det)``) of the matrix PyTorch, JAX or Dask factorised, a 0-d array in its own dtype."""
    if isinstance(factor, JaxFactor):
        return jax_factor_det(factor, log, backend)
    if isinstance(factor, DaskFactor):
        return dask_factor_det(factor, log)
    if factor.kind == "generic":
        det = backend.checked_linalg("det", factor.matrix, factor.name)
        return backend.func("log")(det) if log else det
    diagonal = factor.diagonal
    return (2 * diagonal.log().sum() if log else diagonal.prod() ** 2).to(factor.dtype)


# ------------------------------------------------------------------ binding


def bind_factor(name: str, matrix: int, n: int) -> tuple[FactorRecord, OpCost]:
    """The op factorising the matrix in slot ``matrix`` (``n`` x ``n``, the value of ``name``):
    ``potrf``'s n³/3 flops (n³/6 multiplications).  Its closure (:mod:`.closures`) runs, for
    NumPy, the helper text every NumPy runner runs (:data:`.generated.CHOLESKY_HELPER`)."""
    return FactorRecord(name, matrix), OpCost(n**3 / 3, 1, n * n, multiplications=n**3 / 6)


def bind_reader(what: str, factor: int, n: int) -> tuple[FactorReaderRecord, OpCost]:
    """The op computing ``inv``, ``det`` or ``logdet`` from the factor in slot ``factor``:
    ``potri``'s 2n³/3 flops for ``inv``, the diagonal's n for the others."""
    record = FactorReaderRecord(what, factor)
    if what == "unused":  # a det read only by logs computed from the factor
        return record, OpCost(0, 0, 0)
    if what == "inv":
        return record, OpCost(2 * n**3 / 3, 1, n * n, multiplications=n**3 / 3)
    return record, OpCost(n, 1, 1, multiplications=n)
