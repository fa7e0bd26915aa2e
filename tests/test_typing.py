"""The package is typed for its users: py.typed ships, and .ci/typecheck passes.

.ci/typecheck runs ``mypy --strict`` on a user's script of the public API
(tests/typing/user_script.py) and mypy on the public modules.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_py_typed_marker_is_packaged() -> None:
    assert (ROOT / "tenscalc" / "py.typed").is_file()
    setup = (ROOT / "setup.cfg").read_text(encoding="utf-8")
    assert "[options.package_data]\n" in setup and "tenscalc = py.typed" in setup


def test_user_script_runs() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, str(ROOT / "tests" / "typing" / "user_script.py")], check=True, env=env, cwd=ROOT)


@pytest.mark.slow  # about a minute of mypy; .ci/typecheck runs it in CI too
def test_mypy_passes(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("mypy", reason='mypy is in the test extra: pip install -e ".[test]"')
    result = subprocess.run(
        ["bash", str(ROOT / ".ci" / "typecheck"), "--cache-dir", str(tmp_path / "mypy-cache")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
