"""Every notebook in notebooks/ runs from top to bottom without an error.

The notebooks are executed with nbclient on a Python kernel (the extra
``notebooks``: nbclient, ipykernel, nbformat, matplotlib).  Outputs are not
written back: the notebooks are kept in git without outputs.
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    notebook = nbformat.read(path, as_version=4)
    # the kernel imports tenscalc from this checkout, installed or not
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and the traceback, on any error


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_are_stored_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, f"{path.name}: clear the outputs"
