"""What a user installs: lean runtime dependencies, complete extras, clear errors.

The wheel itself is built, installed without extras and smoke-tested by
.ci/wheel-smoke (run by .ci/run); these tests check the same promises from the
source tree, quickly.
"""

from __future__ import annotations

import configparser
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    return config


def requirements(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_runtime_dependencies_are_numpy_and_opt_einsum_only() -> None:
    config = setup_cfg()
    runtime = requirements(config["options"]["install_requires"])
    assert [re.split(r"[<>=!~;\[ ]", req)[0] for req in runtime] == ["numpy", "opt_einsum"]
    # each with a tested floor (.ci/floors installs exactly these versions and runs the suite):
    # opt_einsum 3.3 crashes on a logistic loss's gradient (KeyError 'combo')
    floors = dict(re.fullmatch(r"([\w.-]+)>=([\d.]+)", req).groups() for req in runtime)  # type: ignore[union-attr]
    assert tuple(map(int, floors["opt_einsum"].split("."))) >= (3, 4), floors
    assert (ROOT / ".ci" / "floors").is_file()
    extras = {name: requirements(value) for name, value in config["options.extras_require"].items()}
    assert {"jax", "dask", "viz", "bench", "docs", "test"} <= set(extras)
    assert "sympy" in extras["test"] and "mypy" in extras["test"]
    for backend in ("jax", "dask"):  # every non-NumPy backend imports autoray
        assert "autoray" in extras[backend], backend
    assert {"dask[array]", "scipy"} <= set(extras["dask"])  # dask.array's inv needs scipy
    assert not any(req.startswith("torch") for reqs in extras.values() for req in reqs)


def test_license_and_metadata() -> None:
    metadata = setup_cfg()["metadata"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert metadata["license"] == "MIT" and metadata["author"]
    classifiers = requirements(metadata["classifiers"])
    assert "License :: OSI Approved :: MIT License" in classifiers
    for version in ("3.10", "3.11", "3.12", "3.13"):  # the suite passes on each
        assert f"Programming Language :: Python :: {version}" in classifiers
    # no relative links in the package description (they break on a package index)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)]+)\)", readme):
        assert target.startswith("https://"), target


def run_without(blocked: tuple[str, ...], code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where importing any of ``blocked`` fails."""
    prelude = f"import sys; sys.modules.update({{m: None for m in {blocked!r}}});"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )


OPTIONAL = ("sympy", "scipy", "autoray", "graphviz", "torch", "jax", "dask", "dask.array", "cupy", "distributed")


def test_import_cli_and_adapters_need_no_optional_package() -> None:
    code = """
import numpy as np, tenscalc as tc
from tenscalc.cli import main
assert main(["--example"]) == 0
assert main(["convexity", "--quiet", "declare x 1 expression log(exp(x) *(i,i->) 1)"]) == 0
f = tc.parse("x *(i,i->) x", {"x": 1})
assert tc.scipy_objective(f, "x")["hess"](np.ones(3)).tolist() == (2 * np.eye(3)).tolist()
assert tc.grad(f, "x")(np.ones(3)).tolist() == [2.0, 2.0, 2.0]
print("fine")
"""
    out = run_without(OPTIONAL, code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("fine")


def test_missing_optional_packages_name_the_pip_command() -> None:
    code = """
import tenscalc as tc
f = tc.parse("x *(i,i->) x", {"x": 1})
for backend in ("jax", "dask", "torch", "cupy"):
    try:
        tc.compile(f, backend=backend)
    except tc.EvaluationError as error:
        print(backend, "|", error)
try:
    import tenscalc.oracle
except tc.TensCalcError as error:
    print("oracle |", error)
"""
    out = run_without(OPTIONAL, code)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" | ", 1) for line in out.stdout.strip().splitlines())
    assert 'pip install "tenscalc[jax]"' in lines["jax"]
    assert 'pip install "tenscalc[dask]"' in lines["dask"]
    assert "pip install torch==2.13.0 autoray" in lines["torch"] and "torch, autoray" in lines["torch"]
    assert "pip install cupy-cuda12x autoray" in lines["cupy"]
    assert "pip install sympy" in lines["oracle"] and 'pip install "tenscalc[test]"' in lines["oracle"]


def test_autoray_alone_missing_is_named_with_the_backend_command() -> None:
    code = """
import tenscalc as tc
try:
    tc.compile(tc.parse("x *(i,i->) x", {"x": 1}), backend="dask")
except tc.EvaluationError as error:
    print(error)
"""
    out = run_without(("autoray",), code)
    assert out.returncode == 0, out.stderr
    message = out.stdout.strip()
    # one message, all at once: no second "needs ..." after installing the first
    assert message.startswith("backend 'dask' needs the package") and "autoray" in message
    assert 'pip install "tenscalc[dask]"' in message
