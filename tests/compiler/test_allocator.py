"""``tc.keep_freed_memory``: checked arguments, and on glibc a heap that keeps its pad.

The setting is process-wide, so its effect is checked in a child process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import tenscalc as tc
from tenscalc.allocator import _glibc


@pytest.mark.parametrize("bad", [-1, 2**31, 1.5, "64M", True, None])
def test_bad_pads_get_a_clear_error(bad):
    with pytest.raises(tc.TensCalcError, match="keep_freed_memory needs a number of bytes"):
        tc.keep_freed_memory(bad)


CHILD = textwrap.dedent(
    """
    import ctypes, sys
    import numpy as np
    import tenscalc as tc

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                     "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Mallinfo2
    if sys.argv[1] == "pad":
        assert tc.keep_freed_memory(64 * 2**20) is True
    for _ in range(3):  # arrays of 1 MiB, freed again: the heap's top after the frees
        arrays = [np.ones(2**17) for _ in range(8)]
        del arrays
    print(libc.mallinfo2().fordblks)
    """
)


@pytest.mark.skipif(_glibc() is None, reason="mallopt(M_TOP_PAD) is glibc's")
def test_the_heap_keeps_its_freed_top_with_the_pad():
    def free_bytes(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True)
        return int(out.stdout.strip())

    # default: the freed 8 MiB (more than twice the largest array) are given back;
    # with the pad the heap keeps at least 64 MiB of free memory for the next call
    assert free_bytes("default") < 8 * 2**20
    assert free_bytes("pad") >= 64 * 2**20
