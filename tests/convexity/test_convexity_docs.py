"""The Python examples of docs/convexity.md run, in order, in one namespace."""

from __future__ import annotations

import pathlib
import re

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def test_convexity_page_examples_run():
    text = (DOCS / "convexity.md").read_text(encoding="utf-8")
    sources = [body for lang, body in FENCE.findall(text) if lang == "python"]
    assert len(sources) >= 6
    namespace: dict = {}
    for source in sources:
        exec(compile(source, "docs/convexity.md", "exec"), namespace)  # noqa: S102 - the page's own examples


def test_convexity_page_images_exist():
    text = (DOCS / "convexity.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images
    for image in images:
        assert (DOCS / image).is_file(), image
