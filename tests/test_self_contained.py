"""The repository is self-contained: no file reads or points at a path outside it.

A fresh clone has no sibling directories, so a test, benchmark or doc that reaches
for ``../something`` works only in the workspace it was written in.  This test
reads every tracked text file and fails on

* a relative path (``../x``) that climbs above the repository root from the file's
  own folder;
* ``Path(__file__)`` followed by more ``.parent`` steps, or a higher
  ``.parents[k]``, than the file is deep below the root;
* ``ROOT.parent``-style escapes from a variable that holds the root.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parent.parent

RELATIVE = re.compile(r"(?<![\w.])((?:\.\./)+)[\w.-]")
FILE_PARENTS = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?((?:\.parent\b)+)(?:\.parents\[(\d+)\])?")
FILE_PARENTS_INDEX = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?\.parents\[(\d+)\]")
ROOT_PARENT = re.compile(r"\bROOT\.parent\b")


def tracked_text_files() -> list[Path]:
    try:
        listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True).stdout
        names = [n for n in listing.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist): walk the tree
        names = [
            str(p.relative_to(ROOT))
            for p in ROOT.rglob("*")
            if p.is_file() and not any(part.startswith(".") or part in {"site", "build"} for part in p.parts)
        ]
    files = []
    for name in names:
        path = ROOT / name
        if path.suffix in {".png", ".svg", ".json"} or not path.is_file():
            continue
        files.append(path)
    return files


def escapes(relative_file: PurePosixPath, ups: int) -> bool:
    """Whether climbing ``ups`` folders from the file's folder leaves the repository."""
    return ups > len(relative_file.parent.parts)


def line_escapes(rel: PurePosixPath, line: str) -> bool:
    """Whether ``line`` of the file at ``rel`` (relative to the root) points outside the repository."""
    for m in RELATIVE.finditer(line):
        if escapes(rel, m.group(1).count("../")):
            return True
    for m in FILE_PARENTS.finditer(line):
        # Path(__file__).parent is the file's folder (no climb); each further .parent climbs one
        ups = m.group(1).count(".parent") - 1 + (int(m.group(2)) + 1 if m.group(2) else 0)
        if escapes(rel, ups):
            return True
    for m in FILE_PARENTS_INDEX.finditer(line):
        if escapes(rel, int(m.group(1))):
            return True
    return bool(ROOT_PARENT.search(line))


def outside_references(path: Path) -> list[str]:
    rel = PurePosixPath(path.relative_to(ROOT).as_posix())
    if rel.name == "test_self_contained.py":  # its own examples of what is refused
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    return [f"{rel}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if line_escapes(rel, line)]


def test_no_file_refers_to_a_path_outside_the_repository():
    files = tracked_text_files()
    assert len(files) > 50, "expected to read the repository's files"
    found = [hit for path in files for hit in outside_references(path)]
    assert not found, "these lines refer to paths outside the repository:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "file, line, outside",
    [
        ("tests/test_x.py", 'BENCH = Path(__file__).resolve().parents[2] / "shared"', True),
        ("tests/test_x.py", "ROOT = Path(__file__).resolve().parents[1]", False),
        ("tests/test_x.py", "ROOT = Path(__file__).resolve().parent.parent", False),
        ("tests/test_x.py", "ROOT = Path(__file__).resolve().parent.parent.parent", True),
        ("docs/page.md", "see [the bench](../../shared/bench/problems.py)", True),
        ("docs/page.md", "see [the readme](../README.md)", False),
        ("benchmarks/run.py", 'BENCH_DIR = ROOT.parent / "shared" / "bench"', True),
    ],
)
def test_the_detector_tells_inside_from_outside(file, line, outside):
    # the detector must catch what the first version of this repository did, and only that
    assert line_escapes(PurePosixPath(file), line) is outside
