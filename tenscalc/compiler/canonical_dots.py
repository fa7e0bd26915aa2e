"""Contractions for XLA: each pair of operands as a canonical batched matmul.

opt_einsum hands ``jax.numpy`` each pairwise contraction as a ``dot_general`` with
whatever dimension numbers the operands' layouts give (``ca,cb->ab``: the left
operand contracted on its first axis).  XLA's CPU backend (XNNPACK's kernels) is fast
only where the left operand is ``[batch, free, contracted]``; the right one may be
``[batch, contracted, free]`` or ``[batch, free, contracted]`` (read as it is, no
slower: ``X @ W.T`` as JAX writes it), and its transpose-folding pass turns an
explicit transpose of an operand back into dimension numbers.  So here each pair is
written as a dot of the two operands in such a layout, the operand that must move
(the orientation copying fewest entries, the product's own transpose counted)
copied behind ``lax.optimization_barrier``, which the folding cannot see through.
The last pair writes the result's own order: a transpose after it is folded into the
dot by swapping its operands, which reads the left one along its first axis (the
3-layer network HVP's last product, 256x512 by 512x256, took 1.8x as long).  On one
core, the 3-layer ``R^1000 -> R^10`` Jacobian's last product (a 10x200 by 200x1000
dot read transposed) takes half the time this way.  (Examples need JAX: see
tests/compiler/test_canonical_dots.py.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["jax_contraction", "jax_embed", "jax_write_diagonal"]


def jax_contraction(eq: str, shapes: Sequence[tuple[int, ...]], path: Sequence[tuple[int, ...]]) -> Callable[..., Any]:
    """A function of JAX arrays contracting ``eq`` along ``path`` (opt_einsum's form:
    the positions of the operands each step contracts, its result appended last)."""
    inputs, out = eq.split("->")
    specs = inputs.split(",")
    sizes = {letter: n for spec, shape in zip(specs, shapes) for letter, n in zip(spec, shape)}
    steps = []
    remaining = list(specs)
    for positions in path:
        picked = [remaining[p] for p in positions]
        for p in sorted(positions, reverse=True):
            remaining.pop(p)
        keep = set(out).union(*remaining)
        result = "".join(dict.fromkeys(letter for spec in picked for letter in spec if letter in keep))
        if not remaining and sorted(result) == sorted(out):
            # the last step writes the result's own order: a transpose after it, unseen by
            # the pair, is one XLA folds into the dot by swapping its operands, which reads
            # the left one along its first axis (the slow form)
            result = out
        steps.append((tuple(positions), picked, result))
        remaining.append(result)

    def run(*arrays: Any) -> Any:
        import jax.numpy as jnp

        values = list(arrays)
        for positions, picked, result in steps:
            operands = [values[p] for p in positions]
            for p in sorted(positions, reverse=True):
                values.pop(p)
            if len(operands) == 2:
                values.append(_pair(operands[0], picked[0], operands[1], picked[1], result, sizes))
            else:
                values.append(jnp.einsum(",".join(picked) + "->" + result, *operands))
        (value,) = values
        spec = remaining[0]
        return value if spec == out else jnp.einsum(f"{spec}->{out}", value)

    return run


def _pair(a: Any, sa: str, b: Any, sb: str, result: str, sizes: dict[str, int]) -> Any:
    """``einsum(f"{sa},{sb}->{result}", a, b)`` as a canonical batched matmul."""
    import jax.numpy as jnp
    from jax import lax

    if len(set(sa)) < len(sa) or len(set(sb)) < len(sb) or not (set(sa) & set(sb) - set(result)):
        # a diagonal read, or nothing summed between the two (a broadcast product: XLA
        # makes it a fused multiply): einsum as it is
        return jnp.einsum(f"{sa},{sb}->{result}", a, b)
    only_a = "".join(x for x in sa if x not in sb and x not in result)
    only_b = "".join(x for x in sb if x not in sa and x not in result)
    if only_a:  # summed in one operand alone: sum it first
        sa, a = "".join(x for x in sa if x not in only_a), a.sum(axis=tuple(sa.index(x) for x in only_a))
    if only_b:
        sb, b = "".join(x for x in sb if x not in only_b), b.sum(axis=tuple(sb.index(x) for x in only_b))
    batch = "".join(x for x in result if x in sa and x in sb)
    summed = "".join(x for x in sa if x in sb and x not in result)
    free_a = "".join(x for x in sa if x not in sb)
    free_b = "".join(x for x in sb if x not in sa)
    # left @ right with a's free letters first, or b's: the orientation copying fewer entries
    ab = _orientation_cost(a, sa, free_a, b, sb, free_b, batch, summed, result, sizes)
    ba = _orientation_cost(b, sb, free_b, a, sa, free_a, batch, summed, result, sizes)
    if ba < ab:
        a, sa, free_a, b, sb, free_b = b, sb, free_b, a, sa, free_a
    left = _laid(a, sa, batch + free_a + summed, lax)
    n_batch, n_summed = (math.prod(sizes[x] for x in letters) for letters in (batch, summed))
    n_a, n_b = math.prod(sizes[x] for x in free_a), math.prod(sizes[x] for x in free_b)
    left = left.reshape(n_batch, n_a, n_summed)
    columns = _padded_columns(n_a, n_b) if _on_cpu() else n_b
    if sb == batch + free_b + summed:  # the right operand read along its last axis, as it is
        right = b.reshape(n_batch, n_b, n_summed)
        if columns > n_b:
            right = jnp.pad(right, ((0, 0), (0, columns - n_b), (0, 0)))
        product = lax.dot_general(left, right, (((2,), (2,)), ((0,), (0,))))
    else:
        right = _laid(b, sb, batch + summed + free_b, lax).reshape(n_batch, n_summed, n_b)
        if columns > n_b:  # zero columns appended (in the operand's producer) and cut off the result
            right = jnp.pad(right, ((0, 0), (0, 0), (0, columns - n_b)))
        product = jnp.matmul(left, right)
    if columns > n_b:
        product = product[:, :, :n_b]
    got = batch + free_a + free_b
    product = product.reshape(tuple(sizes[x] for x in got))
    if got == result:
        return product
    # the dot's own layout kept: a transpose folded into it would make it non-canonical again
    return jnp.transpose(lax.optimization_barrier(product), tuple(got.index(x) for x in result))


#: XLA's CPU GEMM kernels (XNNPACK's) compute 8 result columns at a time (AVX-512: 8
#: doubles a register); a remainder of columns takes a far slower path.  On one core,
#: [1000,200] @ [200,n] in float64 took 1.3x to 1.7x as long for n = 9 ... 15 as for n = 16
#: and twice n = 8 (the tall Jacobian's last product, 1000x10); float32 alike.  Zero
#: columns up to the next multiple are cheaper than the remainder where the result has
#: many rows.
COLUMN_TILE = 8
#: the fewest result rows (left free entries) for which the padding pays
PAD_MIN_ROWS = 128
#: no padding from this many columns on: the remainder is a small part of the work
PAD_MAX_COLUMNS = 64


def _on_cpu() -> bool:
    """Whether JAX computes on the CPU (the column tile is XNNPACK's, not a GPU's): the
    default device where one is set (``jax.default_device``), else the default backend."""
    import jax

    device = jax.config.jax_default_device
    platform = getattr(device, "platform", device) or jax.default_backend()
    return bool(platform == "cpu")


def _padded_columns(rows: int, columns: int) -> int:
    """The number of columns to compute a ``rows`` x ``columns`` product with.

    >>> _padded_columns(1000, 10), _padded_columns(1000, 16), _padded_columns(10, 10), _padded_columns(1000, 1)
    (16, 16, 10, 1)
    """
    if rows < PAD_MIN_ROWS or not COLUMN_TILE < columns < PAD_MAX_COLUMNS:
        return columns
    return -(-columns // COLUMN_TILE) * COLUMN_TILE


def _moved(spec: str, target: str, x: Any) -> int:
    """Entries copied to lay ``x`` (laid ``spec``; an array, or the lengths of its letters)
    out as ``target``."""
    if spec == target:
        return 0
    return math.prod(x[letter] for letter in spec) if isinstance(x, dict) else math.prod(x.shape)


def _orientation_cost(
    a: Any, sa: str, free_a: str, b: Any, sb: str, free_b: str, batch: str, summed: str, result: str, sizes: dict
) -> tuple[int, bool]:
    """The entries copied to compute the pair as ``a`` (left) by ``b`` (right): the
    operands' and the product's own (a transpose into the result's order); then, at
    equal copies, whether the right operand is read across (the vector of a
    matrix-vector product is better on the right)."""
    copied = _moved(sa, batch + free_a + summed, a) + _moved_right(sb, batch, summed, free_b, b)
    copied += _moved(batch + free_a + free_b, result, sizes)
    return copied, sb != batch + summed + free_b


def _moved_right(spec: str, batch: str, summed: str, free: str, x: Any) -> int:
    """Entries copied to make ``x`` (laid ``spec``) a dot's right operand: none where it is
    ``[batch, summed, free]`` or ``[batch, free, summed]`` (XLA's CPU kernels read both)."""
    return 0 if spec in (batch + summed + free, batch + free + summed) else math.prod(x.shape)


def _laid(x: Any, spec: str, target: str, lax: Any) -> Any:
    """``x`` laid out as ``target``: a copy the compiler cannot fold back into the dot."""
    if spec == target:
        return x
    import jax.numpy as jnp

    return lax.optimization_barrier(jnp.transpose(x, tuple(spec.index(letter) for letter in target)))


def jax_write_diagonal(core: Any, out: Sequence[int], shape: tuple[int, ...]) -> Any:
    """The array of ``shape`` laid out as ``out`` (repeated letters) that is ``core`` (laid
    out as the unique letters, in the order they first occur) on its diagonal, 0 elsewhere.

    One select in the output's own layout (``where(i == i', core, 0)``), which XLA fuses
    into a single loop writing each entry once.  The einsum with identity matrices that
    other libraries get is a batched outer product, which XLA computes batch-first and
    then transposes: for the block-diagonal Hessian of the extended Rosenbrock function
    (1000 2x2 blocks) that loop took twice the CPU time of this one."""
    import jax.numpy as jnp
    from jax import lax

    first: dict[int, int] = {}
    for position, letter in enumerate(out):
        first.setdefault(letter, position)
    # the core's axes at each letter's first position, length 1 at the repeats
    spread = tuple(n if first[letter] == position else 1 for position, (letter, n) in enumerate(zip(out, shape)))
    mask = None
    for position, letter in enumerate(out):
        at = first[letter]
        if at == position:
            continue
        sides = tuple(shape[p] if p in (at, position) else 1 for p in range(len(shape)))
        same = lax.broadcasted_iota(jnp.int32, sides, at) == lax.broadcasted_iota(jnp.int32, sides, position)
        mask = same if mask is None else mask & same
    if mask is None:  # no letter repeated: the core is the array
        return core.reshape(shape)
    return jnp.where(mask, core.reshape(spread), jnp.zeros((), core.dtype))


def jax_embed(part: Any, key: tuple, shape: tuple[int, ...]) -> Any:
    """Zeros of ``shape`` with ``part`` written at the basic index ``key`` (integers and
    slices of positive step: the backend's ``embed`` turns a negative step into a flip of
    ``part`` first, with :func:`.backends.positive_key`), as one ``lax.pad`` of ``part``.

    ``zeros.at[key].set(part)`` is a scatter: XLA's CPU pipeline turns it back into a pad,
    but only late, and other platforms' pipelines need not; a pad (an integer index is a
    length-1 axis padded on both sides, a step ``s`` is ``s - 1`` interior zeros) is what
    JAX's own transpose of a slice writes, and fuses into its consumer everywhere."""
    import jax.numpy as jnp
    from jax import lax

    key = tuple(key) + (slice(None),) * (len(shape) - len(key))
    part = jnp.asarray(part)
    config: list[tuple[int, int, int]] = []  # (low, high, interior) zeros per axis
    sub_shape: list[int] = []
    for item, length in zip(key, shape):
        entries = range(length)[item] if isinstance(item, slice) else range(length)[item : item + 1 or None]
        if not entries:  # nothing written: the zeros themselves
            return jnp.zeros(shape, dtype=part.dtype)
        config.append((entries[0], length - 1 - entries[-1], entries.step - 1))
        sub_shape.append(len(entries))
    # integers drop their axes in part; a part of fewer entries broadcasts, as in a set
    part = jnp.broadcast_to(part, tuple(n for n, item in zip(sub_shape, key) if not isinstance(item, int)))
    return lax.pad(part.reshape(sub_shape), jnp.zeros((), part.dtype), config)
