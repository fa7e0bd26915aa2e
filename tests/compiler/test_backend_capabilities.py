"""The compiler asks a backend what it can do, never what it is called (issue 26).

What the binder and the runners may choose for an array library (NumPy's helper texts run in
place, its pair-by-pair kernels, the fused NumPy source, a Cholesky factor per call, a symmetry
check on the values, a jitted program's inputs checked first) is a named capability of
:class:`tenscalc.compiler.backends.Backend`, documented there, so a new backend states what it
can do instead of being compared by name.  Here: no compiler module but ``backends.py``
compares a backend's name (``backend.name == "numpy"``, ``program.backend.name != ...``,
``backend.name in NAMES``), read from the source with ``ast``, and each capability is off
unless a backend states it.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from tenscalc.compiler.backends import _REGISTRY, BACKENDS, Backend

COMPILER = pathlib.Path(__file__).resolve().parents[2] / "tenscalc" / "compiler"
#: capability -> the shipped backends stating it: NumPy's helper texts, kernels and fused source;
#: the backends that factorise a declared positive-definite matrix and check a declared
#: symmetric one (the name lists ``cholesky.FACTORISING`` and ``SYMMETRY_CHECKED`` were); JAX's
#: check of a jitted program's linalg inputs
CAPABILITIES = {
    "runs_numpy_helpers": {"numpy"},
    "runs_numpy_kernels": {"numpy"},
    "runs_numpy_source": {"numpy"},
    "factorises": {"numpy", "torch", "jax", "dask"},
    "checks_symmetry": {"numpy", "torch", "jax", "cupy", "dask"},
    "jit_reads_no_values": {"jax"},
}


def _name_comparisons(path: pathlib.Path) -> list[str]:
    """The source of every comparison in ``path`` that reads a backend's ``name``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(
            isinstance(side, ast.Attribute) and side.attr == "name" and "backend" in ast.unparse(side.value).lower()
            for side in sides
        ):
            found.append(ast.unparse(node))
    return found


def test_the_finder_sees_each_spelling_of_a_name_comparison(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        "a = backend.name == 'numpy'\n"
        "b = program.backend.name != 'numpy'\n"
        "c = self._backend.name in ('torch', 'jax')\n"
        "d = backend.mutable and record.name == 'relu'\n"  # a function's name, not a backend's
    )
    assert sorted(_name_comparisons(module)) == [
        "backend.name == 'numpy'",
        "program.backend.name != 'numpy'",
        "self._backend.name in ('torch', 'jax')",
    ]


@pytest.mark.parametrize("path", sorted(COMPILER.glob("*.py")), ids=lambda p: p.name)
def test_no_compiler_module_compares_a_backends_name(path):
    if path.name == "backends.py":  # where each backend states its capabilities
        return
    assert _name_comparisons(path) == [], path.name


def test_each_capability_is_documented_and_off_unless_stated():
    """Every capability defaults to False (a new backend claims none it lacks), is documented
    where it is declared, and is stated by the backends that did what it names by name before."""
    source = (COMPILER / "backends.py").read_text()
    for capability, stating in CAPABILITIES.items():
        assert getattr(Backend, capability) is False, capability
        declared = source.index(f"    {capability} = False")
        assert source[:declared].rstrip().splitlines()[-1].strip().startswith("#:"), capability
        assert {name for name in BACKENDS if getattr(_REGISTRY[name], capability)} == stating, capability
