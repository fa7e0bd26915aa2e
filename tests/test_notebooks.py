"""Every notebook in notebooks/ runs from top to bottom without an error.

The notebooks are executed with nbclient on a Python kernel (the extra
``notebooks``: nbclient, ipykernel, nbformat, matplotlib).  They are kept in git
with the outputs of one run from top to bottom, so that they can be read without
running them (the documentation site runs them again when it is built); after
changing one, store its outputs again with ``python tests/test_notebooks.py``.
"""

from __future__ import annotations

import os
import pathlib

import pytest

# a Jupyter kernel runs every notebook
pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")


def test_notebooks_exist():
    names = {path.name for path in NOTEBOOKS}
    assert {"quickstart.ipynb", "derivative_dags.ipynb", "performance.ipynb"} <= names


def execute(path: pathlib.Path):
    """The notebook at ``path``, run from top to bottom (CellExecutionError on any error)."""
    notebook = nbformat.read(path, as_version=4)
    # the kernel imports tenscalc from this checkout, installed or not
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), "MPLBACKEND": "Agg"}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        client = nbclient.NotebookClient(
            notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        )
        client.execute()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return notebook


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
    execute(path)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_are_stored_with_the_outputs_of_one_run(path):
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    # one run from the top: cells numbered 1, 2, 3 ... in order, none skipped
    assert [cell.get("execution_count") for cell in code] == list(range(1, len(code) + 1)), (
        f"{path.name}: store the outputs of one run (python tests/test_notebooks.py)"
    )
    assert sum(len(cell.get("outputs", [])) for cell in code) >= len(code) // 2, f"{path.name}: outputs missing"
    errors = [out for cell in code for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, f"{path.name}: a stored output is an error"


if __name__ == "__main__":  # store every notebook with the outputs of a fresh run
    for path in NOTEBOOKS:
        nbformat.write(execute(path), path)
        print("stored", path.relative_to(ROOT))
