"""Fixtures the compiler's test modules share."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def jax_numpy():
    """JAX's NumPy in 64-bit mode (the tests compare with float64 NumPy); skips without JAX."""
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax jaxlib)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    return jnp
