"""JAX contractions as canonical matmuls (tenscalc/compiler/canonical_dots.py) agree with
NumPy's einsum, and reach XLA as dots with the canonical dimension numbers."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest

jax = pytest.importorskip("jax")

from tenscalc.compiler.backends import get_backend  # noqa: E402
from tenscalc.compiler.canonical_dots import jax_contraction  # noqa: E402


@pytest.fixture(autouse=True)
def _on_cpu():
    """XLA's CPU backend (whose kernels these layouts are for) also where a GPU is the default."""
    with jax.default_device(jax.devices("cpu")[0]):
        yield


SIZES = {"a": 2, "b": 3, "c": 4, "d": 5, "e": 6}

EQUATIONS = [
    "ca,cb->ab",  # the left operand contracted on its first axis
    "ac,cb->ab",  # canonical already
    "ac,bc->ab",
    "ca,bc->ba",
    "abc,acd->abd",  # a batch letter
    "bac,dca->adb",  # batch letter inside, outputs permuted
    "abc,cd->",  # everything summed but d, then d: one operand's letter summed alone
    "ab,bc,cd->ad",  # three operands: two pairs
    "a,ab->b",  # a vector
    "ab,ab->ab",  # nothing summed: a broadcast product
    "ab,bc,ca->",  # a trace of three
]


def _contraction_case(eq: str, sizes: dict[str, int]):
    """``jax_contraction`` of ``eq`` along opt_einsum's path, random operands at ``sizes``,
    and NumPy's einsum of them."""
    jax.config.update("jax_enable_x64", True)
    inputs, _ = eq.split("->")
    shapes = [tuple(sizes[x] for x in spec) for spec in inputs.split(",")]
    rng = np.random.default_rng(len(eq))
    arrays = [rng.standard_normal(shape) for shape in shapes]
    path, _ = opt_einsum.contract_path(eq, *shapes, shapes=True)
    return jax_contraction(eq, shapes, path), arrays, np.einsum(eq, *arrays)


@pytest.mark.parametrize("eq", EQUATIONS)
def test_canonical_contraction_agrees_with_numpy_einsum(eq):
    run, arrays, expected = _contraction_case(eq, SIZES)
    assert np.allclose(np.asarray(run(*arrays)), expected, rtol=1e-12, atol=1e-12)
    assert np.allclose(np.asarray(jax.jit(run)(*arrays)), expected, rtol=1e-12, atol=1e-12)


def test_the_transposed_read_reaches_xla_as_a_canonical_dot():
    """``ca,cb->ab`` (200x10 by 200x1000): the small operand is copied to 10x200 and the
    dot contracts the left operand's last axis (XLA's fast GEMM path), not its first."""
    jax.config.update("jax_enable_x64", True)
    shapes = [(200, 10), (200, 1000)]
    run = jax_contraction("ca,cb->ab", shapes, [(0, 1)])
    args = [np.ones(s) for s in shapes]
    dots = [line for line in jax.jit(run).lower(*args).as_text().splitlines() if "dot_general" in line]
    assert len(dots) == 1 and "contracting_dims = [1] x [0]" in dots[0] and "tensor<10x200xf64>" in dots[0], dots
    # jnp.einsum as opt_einsum calls it reads the left operand along its first axis
    plain = jax.jit(lambda a, b: jax.numpy.einsum("ca,cb->ab", a, b)).lower(*args).as_text()
    assert "contracting_dims = [0] x [0]" in plain


# (pattern, lengths of its unique letters): the diagonal writes a bound program asks for
DIAGONALS = [
    ((0, 0), (3,)),  # diag(v)
    ((0, 1, 0, 2), (4, 2, 3)),  # block diagonal (the Rosenbrock Hessian's layout)
    ((0, 1, 1, 0), (2, 5)),  # two repeated letters, nested
    ((0, 1, 0, 1), (3, 4)),  # two repeated letters, interleaved
    ((0, 0, 0), (4,)),  # a letter three times
    ((1, 0, 2, 0), (5, 2, 3)),  # the core laid out as the letters first occur, not sorted
    ((0, 1), (2, 3)),  # nothing repeated: the core itself
]


def _dense_shape(pattern, lengths):
    unique = tuple(dict.fromkeys(pattern))
    return tuple(lengths[unique.index(letter)] for letter in pattern)


@pytest.mark.parametrize(("pattern", "lengths"), DIAGONALS)
def test_jax_diagonal_write_agrees_with_numpy(pattern, lengths):
    from tenscalc.compiler.backends import get_backend

    jax.config.update("jax_enable_x64", True)
    core = np.random.default_rng(len(pattern)).standard_normal(lengths)
    shape = _dense_shape(pattern, lengths)
    expected = get_backend("numpy").write_diagonal(core, pattern, shape)
    jax_backend = get_backend("jax")
    assert np.array_equal(np.asarray(jax_backend.write_diagonal(jax.numpy.asarray(core), pattern, shape)), expected)
    jitted = jax.jit(lambda c: jax_backend.write_diagonal(c, pattern, shape))
    assert np.array_equal(np.asarray(jitted(core)), expected)
    # an independent reference: every entry by its indices
    for index in np.ndindex(*shape):
        at: dict[int, int] = {}
        on_diagonal = [at.setdefault(letter, i) == i for letter, i in zip(pattern, index)]
        unique_index = tuple(at[letter] for letter in dict.fromkeys(pattern))
        assert expected[index] == (core[unique_index] if all(on_diagonal) else 0.0)


def test_jax_diagonal_write_is_one_loop_in_the_output_layout():
    """The block-diagonal write (1000 2x2 blocks into 1000x2x1000x2) compiles to one
    fusion with no transpose and no dot: each output entry written once, in its layout
    (the einsum with an identity it replaced is a batch-first outer product that XLA
    then transposes)."""
    from tenscalc.compiler.backends import get_backend

    jax.config.update("jax_enable_x64", True)
    backend = get_backend("jax")
    pattern, shape = (0, 1, 0, 2), (1000, 2, 1000, 2)
    compiled = jax.jit(lambda c: backend.write_diagonal(c, pattern, shape)).lower(np.ones((1000, 2, 2))).compile()
    text = compiled.as_text()
    entry = text[text.index("ENTRY") :]
    assert entry.count("fusion(") == 1, entry
    assert "transpose(" not in text and "dot(" not in text, text
    # one compare per entry and the select (XLA counts 5e6 flops; the einsum with an
    # identity it replaced, 6e6: a multiply by the identity per entry as well)
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    assert cost["flops"] < 1.5 * np.prod(shape)


@pytest.mark.parametrize(("rows", "columns", "padded"), [(300, 10, 16), (300, 17, 24), (300, 16, 16), (100, 10, 10)])
def test_few_result_columns_are_computed_as_a_whole_tile(rows, columns, padded):
    """A product with many rows and a few columns not a multiple of 8 (the tall Jacobian's
    1000x200 by 200x10) reaches XLA as a dot with the columns padded to the next multiple
    (XNNPACK's kernels take 8 at a time; a remainder is slower than zero columns), and
    agrees with NumPy; under 128 rows it is left as it is."""
    jax.config.update("jax_enable_x64", True)
    shapes = [(rows, 20), (20, columns)]
    rng = np.random.default_rng(columns)
    arrays = [rng.standard_normal(s) for s in shapes]
    run = jax.jit(jax_contraction("ac,cb->ab", shapes, [(0, 1)]))
    got = np.asarray(run(*arrays))
    assert got.shape == (rows, columns)
    assert np.allclose(got, arrays[0] @ arrays[1], rtol=1e-12, atol=1e-12)
    dots = [line for line in run.lower(*arrays).as_text().splitlines() if "dot_general" in line]
    assert len(dots) == 1 and f"tensor<{rows}x{padded}xf64>" in dots[0].split("->")[-1], dots


def _compiled_dots(run, shapes):
    """The dot instructions of the optimised HLO of ``run`` at these shapes, and the whole text."""
    args = [np.ones(s) for s in shapes]
    text = jax.jit(run).lower(*args).compile().as_text()
    return [line.split(", metadata")[0] for line in text.splitlines() if " dot(" in line], text


def test_a_right_operand_read_along_its_last_axis_is_not_copied():
    """``X @ W.T`` (``ab,cb->ac``, 512x256 by 256x256): the right operand read as it is
    (XNNPACK's kernels take it so, no slower), as JAX writes it; no transpose copied."""
    jax.config.update("jax_enable_x64", True)
    shapes = [(512, 256), (256, 256)]
    dots, text = _compiled_dots(jax_contraction("ab,cb->ac", shapes, [(0, 1)]), shapes)
    assert len(dots) == 1 and "lhs_contracting_dims={1}, rhs_contracting_dims={1}" in dots[0], dots
    assert "transpose" not in text


def test_the_last_pair_writes_the_result_order_so_the_dot_stays_canonical():
    """``ab,ac,ac->cb`` (the network HVP's last product, three 512x256): the pair writes
    ``cb`` itself, as a dot whose left operand is contracted on its last axis.  With the
    result transposed afterwards, XLA swapped the dot's operands and read the left one
    along its first axis (1.8x the time on one core)."""
    jax.config.update("jax_enable_x64", True)
    shapes = [(512, 256)] * 3
    dots, _ = _compiled_dots(jax_contraction("ab,ac,ac->cb", shapes, [(1, 2), (0, 1)]), shapes)
    assert len(dots) == 1 and "lhs_contracting_dims={1}" in dots[0], dots
    arrays = [np.random.default_rng(k).standard_normal(s) for k, s in enumerate(shapes)]
    got = jax_contraction("ab,ac,ac->cb", shapes, [(1, 2), (0, 1)])(*arrays)
    assert np.allclose(np.asarray(got), np.einsum("ab,ac,ac->cb", *arrays), rtol=1e-12, atol=1e-12)


def test_a_matrix_vector_product_keeps_the_matrix_on_the_left():
    """``a,ba->b`` (W @ x, 200x1000): no copy either way, so the tie goes to the
    orientation reading the right operand (the vector) as it is: the matrix-vector dot."""
    jax.config.update("jax_enable_x64", True)
    shapes = [(1000,), (200, 1000)]
    dots, text = _compiled_dots(jax_contraction("a,ba->b", shapes, [(0, 1)]), shapes)
    assert len(dots) == 1 and "f64[200,1]" in dots[0], dots  # W @ x, not x @ W.T (a 1x200 result)
    assert "lhs_contracting_dims={1}, rhs_contracting_dims={0}" in dots[0], dots
    assert "transpose" not in text


@pytest.mark.parametrize(
    "eq",
    [
        "xac,xbc->xab",  # a batch letter, the right operand read along its last axis, columns padded
        "xac,xbc->xba",  # the same, the result transposed: the other orientation
        "axc,bcx->xab",  # batch letter inside both operands: moved
        "ac,bc->ba",  # two matrices read along their last axes, result transposed
        "ca,cb->ba",  # both read along their first axes
        "ac,cb,bd->da",  # the last pair writes the result's own order
    ],
)
def test_layouts_and_padding_agree_with_numpy_at_distinct_lengths(eq):
    sizes = {"x": 3, "a": 130, "b": 10, "c": 5, "d": 7}  # a: rows enough to pad b's 10 columns
    run, arrays, expected = _contraction_case(eq, sizes)
    assert np.allclose(np.asarray(jax.jit(run)(*arrays)), expected, rtol=1e-12, atol=1e-12)
    float32 = [a.astype(np.float32) for a in arrays]
    got32 = jax.jit(run)(*float32)
    assert got32.dtype == np.float32 and np.allclose(np.asarray(got32), expected, rtol=1e-4, atol=1e-4)


EMBED_ITEMS = [0, -1, 2, slice(None), slice(1, None), slice(None, -1), slice(None, None, 2), slice(None, None, -1),
               slice(3, 0, -2), slice(-2, None, -1), slice(2, 2)]  # fmt: skip


@pytest.mark.parametrize("first", EMBED_ITEMS)
def test_jax_embed_agrees_with_numpy_strided_write(first):
    """The pad written for an embed (integers, steps, negative steps, an empty slice) is
    NumPy's ``zeros(shape); out[key] = part``, at distinct axis lengths, a short key too."""
    import itertools

    embed = get_backend("jax").embed  # negative steps made flips there, then canonical_dots.jax_embed's pad

    shape = (5, 4, 3)
    rng = np.random.default_rng(1)
    keys = [(first, second, third) for second, third in itertools.product(EMBED_ITEMS, EMBED_ITEMS[:6])]
    for key in [*keys, (first,), (first, slice(None, None, -1))]:
        expected = np.zeros(shape, dtype=np.float32)  # float32: exact with JAX's 64-bit mode on or off
        part = rng.standard_normal(expected[key].shape).astype(np.float32)
        expected[key] = part
        got = np.asarray(embed(jax.numpy.asarray(part), key, shape))
        assert got.shape == shape and np.array_equal(got, expected), key


def test_jax_embed_is_a_pad_not_a_scatter():
    """What JAX's own transpose of a slice writes, on every platform's pipeline."""
    embed = get_backend("jax").embed

    part = jax.numpy.ones((2, 4))
    text = jax.jit(lambda p: embed(p, (slice(1, None, 2), 1, slice(None, None, -1)), (5, 3, 4))).lower(part)
    text = text.as_text()
    assert "stablehlo.pad" in text and "scatter" not in text
