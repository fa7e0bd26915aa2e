"""NumPy contraction kernels: an opt_einsum path turned into matmul/multiply calls.

opt_einsum chooses the pairwise order; each pair is then specialised once, for
its shapes, into the cheapest NumPy call: summing letters only one side has,
then either a (batched) ``matmul`` when letters are contracted, or a broadcast
``multiply`` when none are.  Permutations and reshapes are precomputed, so a
call costs a few microseconds of Python per pair, which is what lets small
problems beat a JIT-compiled gradient.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

Kernel = Callable[..., np.ndarray]

#: Matrix-vector products over at least this many entries run as a single-threaded
#: ``np.einsum`` pass instead of BLAS.  Off by default (infinite): on a machine of
#: one's own, BLAS's threaded gemv is about 3x faster (quadratic gradient n = 1000:
#: 0.15 ms vs 0.53 ms).  On cores shared with other busy processes OpenBLAS's
#: threads can wait whole scheduler ticks (a 4000x1000 product took 0.4 to 8 ms
#: through BLAS and a steady 1.1 ms through einsum on our loaded 2-core machine);
#: there, setting this to ``1 << 16`` trades speed for steadiness.
MATVEC_EINSUM_SIZE: float = float("inf")


def is_identity_permutation(perm: Sequence[int]) -> bool:
    return tuple(perm) == tuple(range(len(perm)))


def _reducer(spec: str, drop: str) -> tuple[Callable[[np.ndarray], np.ndarray], str]:
    """Sum the axes labelled by ``drop`` away."""
    if not drop:
        return (lambda x: x), spec
    axes = tuple(k for k, c in enumerate(spec) if c in drop)
    rest = "".join(c for c in spec if c not in drop)
    return (lambda x: x.sum(axis=axes)), rest


def _preparer(reduce: Callable[[np.ndarray], np.ndarray], perm: tuple[int, ...] | None):
    """One operand's preparation before a pairwise step: sum away the axes only it
    has, then bring its axes into the step's order."""
    if perm is None:
        return reduce
    return lambda x: reduce(x).transpose(perm)


@dataclass(frozen=True)
class PairLayout:
    """How one pairwise contraction of a path is laid out, decided once (by
    :func:`oriented_pair`): the kernel (:func:`pair_kernel`) and the source writer of
    ``tc.to_python(shapes=)`` (:mod:`.source`) both read it.

    ``a`` and ``b``: the operands' labels in the order the kernel takes them; ``swapped``:
    that order is the path's pair reversed (it lays the result out closer to where it is
    read next); ``drop_a``/``drop_b``: letters only one side has and nothing later needs,
    summed first; then ``batch`` letters (both sides, kept), ``inner`` (both, summed: a
    ``matmul``), ``left`` (``a``'s own) and ``right`` (``b``'s own); the result is laid
    out as ``result``, ``batch + left + right``.

    >>> layout = oriented_pair("ij", "jk", {"i", "k"}, {"k": 0, "i": 1})  # wanted (k, i): Bᵀ Aᵀ
    >>> layout.swapped, layout.a, layout.b, layout.inner, layout.result
    (True, 'jk', 'ij', ('j',), 'ki')
    """

    a: str
    b: str
    drop_a: str
    drop_b: str
    batch: tuple[str, ...]
    inner: tuple[str, ...]
    left: tuple[str, ...]
    right: tuple[str, ...]
    swapped: bool = False

    @property
    def result(self) -> str:
        return "".join(self.batch + self.left + self.right)

    @property
    def reduced(self) -> tuple[str, str]:
        """The operands' labels once the dropped letters are summed away."""
        return _without(self.a, self.drop_a), _without(self.b, self.drop_b)


def _without(spec: str, drop: str) -> str:
    return "".join(c for c in spec if c not in drop)


def pair_layout(a: str, b: str, keep: set[str]) -> PairLayout:
    """The layout of contracting ``a`` and ``b`` (in this order) into the letters of
    ``keep`` they carry."""
    drop_a = "".join(c for c in a if c not in b and c not in keep)
    drop_b = "".join(c for c in b if c not in a and c not in keep)
    a2, b2 = _without(a, drop_a), _without(b, drop_b)
    batch = tuple(c for c in a2 if c in b2 and c in keep)
    inner = tuple(c for c in a2 if c in b2 and c not in keep)
    left = tuple(c for c in a2 if c not in b2)
    right = tuple(c for c in b2 if c not in a2)
    return PairLayout(a, b, drop_a, drop_b, batch, inner, left, right)


def pair_kernel(
    a: str, b: str, keep: set[str], sizes: dict[str, int]
) -> tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], str]:
    """A function contracting arrays labelled ``a`` and ``b`` into the letters of
    ``keep`` they carry; returns it with the result's labels."""
    layout = pair_layout(a, b, keep)
    return layout_kernel(layout, sizes), layout.result


def layout_kernel(layout: PairLayout, sizes: dict[str, int]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The function contracting arrays labelled ``layout.a`` and ``layout.b`` as ``layout`` says."""
    a, b = layout.a, layout.b
    reduce_a, a2 = _reducer(a, layout.drop_a)
    reduce_b, b2 = _reducer(b, layout.drop_b)
    batch, inner, left, right = list(layout.batch), list(layout.inner), list(layout.left), list(layout.right)
    out_shape = tuple(sizes[c] for c in layout.result)
    if inner:
        perm_a = [a2.index(c) for c in batch + left + inner]
        perm_b = [b2.index(c) for c in batch + inner + right]
        nb = math.prod(sizes[c] for c in batch)
        nl = math.prod(sizes[c] for c in left)
        nk = math.prod(sizes[c] for c in inner)
        nr = math.prod(sizes[c] for c in right)
        if batch:
            shape_a, shape_b = (nb, nl, nk), (nb, nk, nr)
        else:
            # always 2-D: OpenBLAS's threaded gemv stalls for whole scheduler ticks when
            # the cores are shared (medians of 0.4 ms to 8 ms for one 4000x1000 product on
            # our 2-core machine), its gemm with one column much less often
            shape_a, shape_b = (nl, nk), (nk, nr)
        ta = None if is_identity_permutation(perm_a) else tuple(perm_a)
        tb = None if is_identity_permutation(perm_b) else tuple(perm_b)
        if not batch and not left and not right and a == a2 == b == b2 and len(a) == 1:
            return np.dot  # two vectors: np.dot itself (a NumPy scalar, see below)
        if not batch and not left and not right:  # a full inner product: one dot, no reshapes to 2-D
            # a NumPy scalar, not a 0-d array: scaling and adding it costs ~0.1 µs, not
            # ~1 µs of a ufunc call (the result is made an array when handed out)
            dot = np.dot
            prepare_a, prepare_b = _preparer(reduce_a, ta), _preparer(reduce_b, tb)

            def inner_product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
                return dot(prepare_a(x).reshape(nk), prepare_b(y).reshape(nk))

            return inner_product
        if not batch and min(nl, nr) == 1 and nl * nk * nr >= MATVEC_EINSUM_SIZE:
            return _matvec(reduce_a, reduce_b, ta, tb, shape_a, shape_b, out_shape)
        matmul = np.matmul

        prepare_a, prepare_b = _preparer(reduce_a, ta), _preparer(reduce_b, tb)

        def contract(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return matmul(prepare_a(x).reshape(shape_a), prepare_b(y).reshape(shape_b)).reshape(out_shape)

        return contract
    perm_a = [a2.index(c) for c in batch + left]
    perm_b = [b2.index(c) for c in batch + right]
    ta = None if is_identity_permutation(perm_a) else tuple(perm_a)
    tb = None if is_identity_permutation(perm_b) else tuple(perm_b)
    if a2 == a and b2 == b and a == b and ta is None and tb is None and not left and not right:
        return np.multiply  # the same labels in the same order: elementwise, no wrapper
    nl = math.prod(sizes[c] for c in left)
    nr = math.prod(sizes[c] for c in right)
    if not batch and left and right and nr <= COLUMN_OUTER_MAX and nl >= COLUMN_OUTER_MIN_ROWS:
        return _column_outer(reduce_a, reduce_b, ta, tb, tuple(sizes[c] for c in left), nr, out_shape)
    index_a = (slice(None),) * (len(batch) + len(left)) + (None,) * len(right)
    index_b = (slice(None),) * len(batch) + (None,) * len(left) + (slice(None),) * len(right)
    need_a, need_b = bool(right), bool(left)
    multiply = np.multiply

    prepare_a, prepare_b = _preparer(reduce_a, ta), _preparer(reduce_b, tb)

    def outer(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x = prepare_a(x)
        y = prepare_b(y)
        if need_a:
            x = x[index_a]
        if need_b:
            y = y[index_b]
        return multiply(x, y)

    return outer


#: An outer product whose trailing group has at most this many entries (and whose
#: leading group at least ``COLUMN_OUTER_MIN_ROWS``) is written one trailing column
#: at a time.  A broadcast ``multiply`` into a C-ordered (n, 2) result runs NumPy's
#: inner loop over 2 entries n times: at n = 1,000 / 100,000 it takes 8.9 / 796 us,
#: the columns 2.7 / 71 us (m = 4: 9.2 / 853 against 5.1 / 170 us; m = 8 gains nothing,
#: and below 500 rows the two extra calls cost more than they save).
COLUMN_OUTER_MAX = 4
COLUMN_OUTER_MIN_ROWS = 512


#: ``x ⊗ y`` one trailing column at a time: the kernel's one text, run here and written
#: into the modules ``tc.to_python(shapes=)`` generates and the fused function (:mod:`.source`)
COLUMN_OUTER_SOURCE = '''
def _outer_columns(x, y, left_shape, nr, out_shape):
    """``x ⊗ y`` for a long ``x`` and a short ``y``: ``out[..., j] = x * y[j]`` (the same
    single rounding per entry as the broadcast product)."""
    y = y.reshape(nr)
    out = _np.empty((*left_shape, nr), dtype=_np.result_type(x, y))
    for j in _range(nr):
        _np.multiply(x, y[j], out=out[..., j])
    return out.reshape(out_shape)
'''
_columns_namespace: dict = {"_np": np, "_range": range}
exec(compile(COLUMN_OUTER_SOURCE, "<tenscalc outer columns>", "exec"), _columns_namespace)  # noqa: S102 - the text above
outer_columns: Callable[..., np.ndarray] = _columns_namespace["_outer_columns"]


def _column_outer(reduce_a, reduce_b, ta, tb, left_shape, nr, out_shape):
    """``x ⊗ y`` for a long ``x`` and a short ``y`` (:data:`COLUMN_OUTER_SOURCE`)."""
    prepare_a, prepare_b = _preparer(reduce_a, ta), _preparer(reduce_b, tb)

    def outer(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return outer_columns(prepare_a(x), prepare_b(y), left_shape, nr, out_shape)

    return outer


def _matvec(reduce_a, reduce_b, ta, tb, shape_a, shape_b, out_shape):
    """``(l, k) @ (k, r)`` with ``l`` or ``r`` equal to 1, as one einsum pass."""
    eq = "lk,kr->lr"
    einsum = np.einsum

    prepare_a, prepare_b = _preparer(reduce_a, ta), _preparer(reduce_b, tb)

    def contract(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return einsum(eq, prepare_a(x).reshape(shape_a), prepare_b(y).reshape(shape_b)).reshape(out_shape)

    return contract


def _layout_rank(specs: Sequence[str], target: str) -> dict[str, int]:
    """The order in which letters should lie in memory: the target's letters in its
    order, then the contracted ones by first appearance."""
    rank = {c: k for k, c in enumerate(target)}
    for spec in specs:
        for c in spec:
            rank.setdefault(c, len(rank))
    return rank


def _reference(remaining: Sequence[str], keep: set[str], rank: dict[str, int]) -> dict[str, int]:
    """The layout a pair's result should have: that of a remaining operand carrying all
    its letters (they will be multiplied entrywise, best in the same layout), else
    ``rank``."""
    for spec in remaining:
        if keep <= set(spec):
            return {c: k for k, c in enumerate(spec)}
    return rank


def _inversions(labels: str, rank: dict[str, int]) -> int:
    order = [rank[c] for c in labels]
    return sum(1 for k, r in enumerate(order) for later in order[k + 1 :] if r > later)


def oriented_pair(a: str, b: str, keep: set[str], rank: dict[str, int]) -> PairLayout:
    """The layout of ``(a, b)`` or of ``(b, a)`` (``swapped``), whichever lays its result
    out closer to ``rank`` (the target's order): the one place a pair's orientation is
    decided.

    ``A @ B`` and ``(Bᵀ @ Aᵀ)ᵀ`` cost the same, but a result in the transposed layout
    is read strided by every later elementwise step (a 256x64 multiply with one
    transposed operand: 38 us against 4 us), and handed out as a transposed view.
    Swapping is considered only where it adds no copy: a plain 2-D product (one
    letter per group, no batch) or a broadcast multiply."""
    layout = pair_layout(a, b, keep)
    here = _inversions(layout.result, rank)
    if here == 0 or not _swappable(a, b, keep):
        return layout
    other = pair_layout(b, a, keep)
    if _inversions(other.result, rank) < here:
        return replace(other, swapped=True)
    return layout


def _flipped(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda x, y: fn(y, x)


def _swappable(a: str, b: str, keep: set[str]) -> bool:
    shared = set(a) & set(b)
    if shared & keep:  # a batch letter: a batched matmul's transposed operands would copy
        return not (shared - keep)  # (an entrywise or broadcast product is fine)
    if not shared:
        return True  # an outer product: broadcast multiply
    left = [c for c in a if c not in shared and c in keep]
    right = [c for c in b if c not in shared and c in keep]
    # letters only one side has and nobody needs are summed first, then the groups are 2-D
    return len(shared) == 1 and len(left) <= 1 and len(right) <= 1


def _parse(eq: str) -> tuple[list[str], str]:
    lhs, target = eq.split("->")
    return lhs.split(","), target


@dataclass(frozen=True)
class PathStep:
    """One step of a contraction path: the operands it pops (positions, in the order
    popped), and either the pair's layout or, for one operand, its labels and the
    letters summed away."""

    positions: tuple[int, ...]
    pair: PairLayout | None
    spec: str = ""
    drop: str = ""


@dataclass(frozen=True)
class ContractionLayout:
    """``np.einsum(eq, ...)`` along a path as pairwise kernels, decided once
    (:func:`contraction_layout`); the closure (:func:`contraction_kernel`) and the
    generated source (:mod:`.source`) are both made from it.  ``final``: the last
    result's labels as laid out (summed over the letters not in ``target``, then
    transposed to it)."""

    steps: tuple[PathStep, ...]
    final: str
    target: str
    sizes: tuple[tuple[str, int], ...]


def contraction_layout(eq: str, shapes: Sequence[tuple[int, ...]], path: Sequence[Sequence[int]]) -> ContractionLayout:
    """The layout of every pairwise step of ``path`` (an opt_einsum path) for ``eq``
    (distinct letters per operand) at ``shapes``."""
    specs, target = _parse(eq)
    sizes: dict[str, int] = {}
    for spec, shape in zip(specs, shapes):
        sizes.update(zip(spec, shape))
    current = list(specs)
    rank = _layout_rank(specs, target)
    steps: list[PathStep] = []
    held = Counter("".join(specs))  # letter -> operands still carrying it
    for positions in path:
        positions = tuple(sorted(positions, reverse=True))
        picked = [current[p] for p in positions]
        for p in positions:
            current.pop(p)
        held.subtract("".join(picked))
        # the picked letters still needed (a set over all remaining operands per step
        # was quadratic in the operands of a long product)
        keep = {c for c in "".join(picked) if c in target or held[c] > 0}
        if len(picked) == 1:
            drop = "".join(c for c in picked[0] if c not in keep)
            steps.append(PathStep(positions, None, picked[0], drop))
            labels = _without(picked[0], drop)
        else:
            # positions are popped in reverse: (later, earlier), unless swapped
            pair = oriented_pair(picked[0], picked[1], keep, _reference(current, keep, rank))
            steps.append(PathStep(positions, pair))
            labels = pair.result
        current.append(labels)
        held.update(labels)
    if len(current) != 1:
        raise AssertionError("a contraction path must leave one operand")
    return ContractionLayout(tuple(steps), current[-1], target, tuple(sizes.items()))


def numpy_contraction(eq: str, shapes: Sequence[tuple[int, ...]], path: list) -> Kernel:
    """A callable computing ``np.einsum(eq, *arrays)`` (distinct letters per operand)
    along ``path`` (an opt_einsum path) with matmul and multiply."""
    return contraction_kernel(contraction_layout(eq, shapes, path))


def contraction_kernel(layout: ContractionLayout) -> Kernel:
    """The callable computing the contraction ``layout`` lays out."""
    sizes = dict(layout.sizes)
    program: list[tuple[tuple[int, ...], Callable]] = []
    for step in layout.steps:
        if step.pair is None:
            fn: Callable = _reducer(step.spec, step.drop)[0]
        else:
            fn = layout_kernel(step.pair, sizes)
            if step.pair.swapped:  # the kernel takes (earlier, later)
                fn = _flipped(fn)
        program.append((step.positions, fn))
    target = layout.target
    drop = "".join(c for c in layout.final if c not in target)
    reduce_final, final = _reducer(layout.final, drop)
    perm = tuple(final.index(c) for c in target)
    transpose = None if is_identity_permutation(perm) else perm
    single = len(program) == 1 and len(program[0][0]) == 2

    if single:  # the common case: one pair, no bookkeeping
        (p, q), fn = program[0]
        if (fn is np.multiply or fn is np.dot) and not drop and transpose is None:
            return fn  # elementwise or a dot of vectors: symmetric in its operands

        def run_one(*arrays: np.ndarray) -> np.ndarray:
            result = reduce_final(fn(arrays[p], arrays[q]))
            return result if transpose is None else result.transpose(transpose)

        return run_one

    def run(*arrays: np.ndarray) -> np.ndarray:
        stack = list(arrays)
        for positions, fn in program:
            picked = [stack.pop(p) for p in positions]
            stack.append(fn(*picked))
        result = reduce_final(stack[-1])
        return result if transpose is None else result.transpose(transpose)

    return run


def laid_in_order(eq: str, shapes: Sequence[tuple[int, ...]], path: list) -> bool:
    """Whether :func:`numpy_contraction` along ``path`` leaves its result in ``eq``'s
    output order (no transposed view for the elementwise steps that read it).

    >>> laid_in_order("ir,kr,jr->ijk", [(4, 2), (3, 2), (5, 2)], [(0, 2), (0, 1)])  # (i, j) then k
    True
    >>> laid_in_order("ir,kr,jr->ijk", [(4, 2), (3, 2), (5, 2)], [(0, 1), (0, 1)])  # (i, k) then j
    False
    """
    layout = contraction_layout(eq, shapes, path)
    return [c for c in layout.final if c in layout.target] == list(layout.target)


class GramPattern(NamedTuple):
    """Where a product is ``Xᵀ diag(d) X``: operand positions and X's summed axis."""

    first: int  # the two operands holding X
    second: int
    vectors: list[int]  # the other operands: vectors on the summed letter, or scalars
    axis: int  # X's axis carrying the summed letter (0: Xᵀ diag(d) X, 1: X diag(d) Xᵀ)


def gram_pattern(
    specs: Sequence[tuple[int, ...]], slots: Sequence[object], target: tuple[int, ...]
) -> GramPattern | None:
    """Recognise ``X[a,j] X[a,k] d1[a] d2[a] ... -> (j, k)`` (or with ``a`` second in
    both): a Gram matrix ``Xᵀ diag(d) X``, symmetric, computable with half the flops.

    This is the compiler's one recogniser of the form: the binder (:mod:`.program`)
    and the source writer (:mod:`.source`) both ask it.  Returns the operand
    positions, or None.
    """
    matrices = [k for k, spec in enumerate(specs) if len(spec) == 2]
    if len(matrices) != 2 or len(set(target)) != 2 or len(target) != 2:
        return None
    p, q = matrices
    if slots[p] is None or slots[p] != slots[q]:
        return None
    sp, sq = specs[p], specs[q]
    for axis in (0, 1):
        a = sp[axis]
        if sq[axis] != a or a in target:
            continue
        j, k = sp[1 - axis], sq[1 - axis]
        if j == k or {j, k} != set(target):
            return None
        vectors = [m for m in range(len(specs)) if m not in (p, q)]
        if all(specs[m] in ((a,), ()) for m in vectors):
            return GramPattern(p, q, vectors, axis)
    return None


def gram_contraction(
    pattern: GramPattern, specs: Sequence[tuple[int, ...]], target: tuple[int, ...], factor: float = 1.0
) -> Kernel:
    """``Xᵀ diag(d) X`` through ``Bᵀ B`` with ``B = X sqrt(|d|)``, which NumPy hands
    to BLAS ``syrk`` (half the flops of ``gemm``), when ``d`` has one sign;
    ``(X d)ᵀ X`` by ``gemm`` otherwise.  The result is symmetric, so its order is
    the target's either way."""
    p, q, vectors, axis = pattern
    scalars = [m for m in vectors if len(specs[m]) == 0]
    lines = [m for m in vectors if len(specs[m]) == 1]

    def run(*arrays: np.ndarray) -> np.ndarray:
        x = arrays[p] if axis == 0 else arrays[p].T  # (a, j)
        scale = factor
        for m in scalars:
            scale = scale * arrays[m]
        d = None
        for m in lines:
            d = arrays[m] if d is None else d * arrays[m]
        return gram(x, d, scale)

    return run


#: ``scale * xᵀ diag(d) x``: the Gram kernel's one text, run here and written into the
#: modules ``tc.to_python(shapes=)`` generates (:mod:`.source`)
GRAM_SOURCE = '''
def _gram(x, d, scale):
    """``scale * xᵀ diag(d) x`` (``d`` None: ``xᵀ x``); through ``bᵀ b`` when ``d`` has one sign."""
    if d is None:
        gram = x.T @ x
        return gram if scale == 1.0 else gram * scale
    if scale != 1.0:
        d = d * scale
    if d.size == 0 or d.min() >= 0:  # an empty batch: min() of nothing raises
        b = x * _np.sqrt(d)[:, None]
        return b.T @ b
    if d.max() <= 0:
        b = x * _np.sqrt(-d)[:, None]
        gram = b.T @ b
        _np.negative(gram, out=gram)
        return gram
    return (x * d[:, None]).T @ x
'''
_namespace: dict = {"_np": np}
exec(compile(GRAM_SOURCE, "<tenscalc gram>", "exec"), _namespace)  # noqa: S102 - the text above
gram: Callable[[np.ndarray, np.ndarray | None, float], np.ndarray] = _namespace["_gram"]
