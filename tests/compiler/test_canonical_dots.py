"""JAX contractions as canonical matmuls (tenscalc/compiler/canonical_dots.py) agree with
NumPy's einsum, and reach XLA as dots with the canonical dimension numbers."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest

jax = pytest.importorskip("jax")

from tenscalc.compiler.canonical_dots import jax_contraction  # noqa: E402

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


@pytest.mark.parametrize("eq", EQUATIONS)
def test_canonical_contraction_agrees_with_numpy_einsum(eq):
    jax.config.update("jax_enable_x64", True)
    inputs, _ = eq.split("->")
    shapes = [tuple(SIZES[x] for x in spec) for spec in inputs.split(",")]
    rng = np.random.default_rng(len(eq))
    arrays = [rng.standard_normal(shape) for shape in shapes]
    path, _ = opt_einsum.contract_path(eq, *shapes, shapes=True)
    run = jax_contraction(eq, shapes, path)
    expected = np.einsum(eq, *arrays)
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
