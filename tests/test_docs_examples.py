"""Every ```python block in README.md and docs/*.md runs as written (after ``alpha2 sample``)."""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = "/tmp/alpha2-sample.mp4"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _examples() -> list[tuple[str, int, str]]:
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for index, match in enumerate(_BLOCK.finditer(doc.read_text())):
            found.append((str(doc.relative_to(REPO)), index, match.group(1)))
    return found


def test_there_are_examples() -> None:
    assert sum(1 for doc, _, _ in _examples() if doc == "README.md") >= 3


@pytest.fixture(scope="module")
def sample() -> str:
    """The clip the examples read, made as the README says (``alpha2 sample``)."""
    if not os.path.exists(SAMPLE):
        from alpha2.apps.sample import write_sample

        write_sample(SAMPLE)
    return SAMPLE


@pytest.mark.vulkan
@pytest.mark.parametrize(("doc", "index", "code"), _examples(), ids=lambda v: str(v)[:40])
def test_example_runs(doc: str, index: int, code: str, sample: str, tmp_path: Path) -> None:
    script = tmp_path / f"example_{index}.py"
    script.write_text(code)
    runpy.run_path(str(script), run_name="__main__")


@pytest.mark.vulkan
def test_pygfx_example_runs_offscreen(sample: str) -> None:
    pytest.importorskip("pygfx")
    runpy.run_path(str(REPO / "examples" / "pygfx_video.py"), run_name="__main__")
