"""Contractions of dask arrays whose partial sums are added, never concatenated.

``dask.array.einsum`` and ``dask.array.tensordot`` contract each pair of blocks and then
sum the partial results with ``Array.sum``, whose tree reduction first concatenates the
partials of a group into one array (a copy of all of them) and copies each partial once
more in its first stage.  For a Gram matrix ``XᵀX`` of a tall X in row blocks every partial
is a whole d x d result, so these copies set the peak memory: run one task at a time,
tenscalc's dask Gram Hessian needed 1.33x the memory of hand-written ``2 * (X.T @ X)``
(``benchmarks/dask_gram.py``).  ``dask.array.matmul`` avoids both by adding the partials
(dask issue 6874); ``einsum`` here does the same for any contraction, and ``contraction``
runs an opt_einsum path pair by pair through it.  A result's blocks are cut only where
they would pass dask's chunk size.  Dask is imported only when these run (the DaskBackend
calls them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import opt_einsum


def einsum(eq: str, *arrays: Any) -> Any:
    """``eq`` (explicit ``->`` form, letters a-z A-Z) of dask arrays: each tuple of blocks
    contracted where it lies (opt_einsum, one path per block shape), the contracted axes
    kept as axes of length 1 and reduced by adding the blocks (no concatenation)."""
    import dask.array as da

    inputs, output = eq.split("->")
    specs = inputs.split(",")
    contracted = "".join(dict.fromkeys(letter for spec in specs for letter in spec if letter not in output))
    operands = _limit_output_chunks(specs, output, [da.asarray(a) for a in arrays])
    dtype = np.result_type(*(a.dtype for a in operands))
    blocks = da.blockwise(
        _contract_blocks,
        output + contracted,
        *(item for pair in zip(operands, specs) for item in pair),
        adjust_chunks=dict.fromkeys(contracted, 1),
        dtype=dtype,
        subscripts=eq,
        kept=len(contracted),
    )
    axes = tuple(range(len(output), len(output) + len(contracted)))
    if not axes:
        return blocks
    if all(blocks.numblocks[axis] == 1 for axis in axes):  # one block along each: nothing to add
        return blocks[(Ellipsis,) + (0,) * len(axes)]
    return da.reduction(
        blocks,
        _keep,
        _add_blocks,
        combine=_add_blocks,
        axis=axes,
        keepdims=False,
        dtype=dtype,
        concatenate=False,
    )


def contraction(eq: str, shapes: Sequence[tuple[int, ...]], path: list) -> Callable[..., Any]:
    """A callable contracting dask arrays of these shapes along ``path`` (opt_einsum's
    form), each step through ``einsum``."""
    _, info = opt_einsum.contract_path(eq, *shapes, optimize=path, shapes=True)
    valid = opt_einsum.parser.convert_to_valid_einsum_chars  # np.einsum knows only a-z A-Z
    steps = [(positions, valid(step)) for positions, _, step, *_ in info.contraction_list]

    def contract(*arrays: Any) -> Any:
        operands = list(arrays)
        for positions, step in steps:  # positions in decreasing order, as opt_einsum pops them
            picked = [operands.pop(position) for position in positions]
            operands.append(einsum(step, *picked))
        return operands[0]

    return contract


def _contract_blocks(*blocks: Any, subscripts: str, kept: int) -> Any:
    """One tuple of blocks contracted, with ``kept`` axes of length 1 appended (the
    contracted axes, reduced across blocks afterwards)."""
    result = _expression(subscripts, tuple(block.shape for block in blocks))(*blocks)
    return result.reshape(result.shape + (1,) * kept)


@functools.lru_cache(maxsize=256)
def _expression(subscripts: str, shapes: tuple[tuple[int, ...], ...]) -> Any:
    """opt_einsum's contraction of blocks of these shapes, its path found once per worker
    (``opt_einsum.contract`` finds it on every call: 0.1 ms, more than a 10 x 10 block's product)."""
    return opt_einsum.contract_expression(subscripts, *shapes)


def _keep(block: Any, axis: Any = None, keepdims: bool = True) -> Any:
    """A reduction's first stage: the block itself (it already holds its partial sum)."""
    return block


def _add_blocks(blocks: Any, axis: tuple[int, ...] = (), keepdims: bool = True) -> Any:
    """The sum of a (nested) list of partial sums, added into one new array (a group of
    one is that block itself: dask never writes to a block, nor does this)."""
    flat = list(_flatten(blocks))
    total = flat[0] + flat[1] if len(flat) > 1 else flat[0]
    for block in flat[2:]:
        total += block  # into the sum made just above, never into an input
    return total if keepdims else total.reshape([n for i, n in enumerate(total.shape) if i not in axis])


def _flatten(blocks: Any) -> Any:
    if isinstance(blocks, (list, tuple)):
        for item in blocks:
            yield from _flatten(item)
    else:
        yield blocks


def _limit_output_chunks(specs: Sequence[str], output: str, arrays: list[Any]) -> list[Any]:
    """The operands rechunked along output axes where a block of the result would be
    over ``array.chunk-size-tolerance`` times both dask's ``array.chunk-size`` and the
    largest input block, each such axis cut by an equal share of the excess: an outer
    product of chunked vectors stays in blocks, as in ``dask.array.einsum``, but a result
    block within the chunk size is left whole, as by ``dask.array.matmul`` (da.einsum cut
    the d x d Gram matrix of X in blocks of fewer than d rows: 1.5x the flops, 4x the tasks)."""
    import dask
    from dask.utils import parse_bytes

    if len(arrays) < 2 or not output:
        return arrays
    tolerance = dask.config.get("array.chunk-size-tolerance")
    itemsize = np.result_type(*(a.dtype for a in arrays)).itemsize
    allowed = max(
        max(math.prod(max(c, default=1) for c in a.chunks) for a in arrays),
        parse_bytes(dask.config.get("array.chunk-size")) // itemsize,
    )
    sizes: dict[str, int] = {}
    for a, spec in zip(arrays, specs):
        for letter, chunks in zip(spec, a.chunks):
            if letter in output:
                sizes[letter] = max(sizes.get(letter, 1), max(chunks, default=1))
    factor = math.prod(sizes.values()) / (allowed * tolerance)
    if not factor > 1:  # also NaN: blocks of unknown length stay as they are
        return arrays
    limit = {letter: size / factor ** (1 / len(output)) for letter, size in sizes.items()}
    return [
        a.rechunk(
            {
                axis: _cut(a.chunks[axis], limit[letter], tolerance)
                for axis, letter in enumerate(spec)
                if letter in limit
            }
        )
        for a, spec in zip(arrays, specs)
    ]


def _cut(chunks: tuple[int, ...], limit: float, tolerance: float) -> tuple[int, ...]:
    """``chunks`` with each one over ``tolerance * limit`` cut into near-equal pieces of at most ``limit``.

    >>> _cut((10, 3), 4.0, 1.25)
    (4, 3, 3, 3)
    """
    out: list[int] = []
    for size in chunks:
        pieces = min(size, math.ceil(size / limit)) if size > tolerance * limit else 1
        whole, extra = divmod(size, pieces)
        out.extend(whole + (k < extra) for k in range(pieces))
    return tuple(out)
