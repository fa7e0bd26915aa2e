"""Shared pytest setup: make the package importable from a checkout and give tests a seeded RNG."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator, so a failing numeric test fails the same way every time."""
    return np.random.default_rng(20240601)
