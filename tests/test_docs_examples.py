"""The docs' code runs as written (after ``alpha2 sample``).

- Every ```python block in README.md and docs/**/*.md runs in this process.
- Every script of the gallery (``examples/*.py``) is shown on a docs page (``--8<-- "examples/x.py"``,
  pymdownx.snippets) and runs as a user would run it, ``python examples/x.py ...``, in a process of its
  own and within a time limit.
- Every ``alpha2 ...`` command of a ```sh block is one the command's parser takes (no unknown option, no
  bad choice), and every ``python examples/x.py`` names a script of the gallery; running them is left to
  the command's own tests (a few take seconds each on lavapipe).
"""

from __future__ import annotations

import importlib.util
import os
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from media import make_audio_only, make_clip

REPO = Path(__file__).resolve().parent.parent
SAMPLE = "/tmp/alpha2-sample.mp4"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"$', re.M)
_SHELL_BLOCK = re.compile(r"^```(?:sh|bash|shell|console)\n(.*?)^```", re.S | re.M)

GALLERY = sorted((REPO / "examples").glob("*.py"))
GALLERY_LIMIT_S = 180
"""Each gallery script's time limit (CI has 2 cores and lavapipe; they take a few seconds there)."""
NEEDS = {"pygfx_video.py": "pygfx", "dataloader.py": "torch"}
"""Gallery scripts that need an optional package (skipped without it)."""


def _docs() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _is_snippet(code: str) -> bool:
    """A block that only includes files (the gallery's pages): the files run in test_gallery_runs."""
    return all(_SNIPPET.match(line) for line in code.strip().splitlines())


def _examples() -> list[tuple[str, int, str]]:
    found = []
    for doc in _docs():
        for index, match in enumerate(_BLOCK.finditer(doc.read_text())):
            if not _is_snippet(match.group(1)):
                found.append((str(doc.relative_to(REPO)), index, match.group(1)))
    return found


def _shown_scripts() -> set[str]:
    shown = set()
    for doc in _docs():
        for match in _BLOCK.finditer(doc.read_text()):
            shown.update(snippet["path"] for snippet in _SNIPPET.finditer(match.group(1)))
    return shown


def test_there_are_examples() -> None:
    assert sum(1 for doc, _, _ in _examples() if doc == "README.md") >= 3
    assert len(GALLERY) >= 6


def test_every_gallery_script_is_shown_on_a_page() -> None:
    shown = _shown_scripts()
    missing = [script.name for script in GALLERY if f"examples/{script.name}" not in shown]
    assert not missing, f"examples not included by any docs page (--8<-- in a ```python block): {missing}"
    assert all((REPO / path).is_file() for path in shown), f"a page includes a missing file: {shown}"


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


def _gallery_args(name: str, sample: str, tmp_path: Path) -> list[str]:
    """The command-line arguments each script's usage line asks for."""
    if name == "write_from_arrays.py":
        return [str(tmp_path / "out.mp4")]
    if name in ("stream_group.py", "dataloader.py"):
        return [sample, sample]
    return [sample, str(tmp_path / "out.mp4")]


@pytest.mark.vulkan
@pytest.mark.parametrize("script", GALLERY, ids=lambda path: path.name)
def test_gallery_runs(script: Path, sample: str, tmp_path: Path) -> None:
    needed = NEEDS.get(script.name)
    if needed is not None and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{script.name} needs {needed}")
    args = _gallery_args(script.name, sample, tmp_path)
    try:
        done = subprocess.run(
            [sys.executable, str(script), *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=GALLERY_LIMIT_S,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script.name} ran past {GALLERY_LIMIT_S} s; output so far:\n{exc.stdout}\n{exc.stderr}")
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{script.name} printed nothing"


def _dataloader(argument: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """examples/dataloader.py run on ``argument`` (a video or a folder), checked to have made its batches
    of 2 clips of 4 frames 112x112 and ended well."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("dataloader.py needs torch")
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "dataloader.py"), argument],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=GALLERY_LIMIT_S,
    )
    assert done.returncode == 0, done.stderr
    assert "(2, 4, 3, 112, 112)" in done.stdout
    return done


@pytest.mark.vulkan
def test_the_dataloader_example_takes_a_video_shorter_than_a_clip(tmp_path: Path) -> None:
    # Its clips are 4 frames 0.1 s apart: on a 0.2 s video (a folder of them holds some) a worker raised
    # EndOfStreamError at 0.2 s and the loader stopped.
    short = make_clip(tmp_path / "short.mp4", frames=6).path  # 0.2 s at 30 fps
    _dataloader(short, tmp_path)


@pytest.mark.vulkan
def test_the_dataloader_example_leaves_out_a_folders_files_that_are_no_video(tmp_path: Path) -> None:
    # A folder of .mp4 files holding a song (sound alone) and a file that is not a video at all: the
    # example stopped with NoVideoStreamError's traceback before its first batch.
    make_clip(tmp_path / "a.mp4", frames=12)
    make_audio_only(tmp_path / "b.mp4", seconds=1.0)
    (tmp_path / "c.mp4").write_bytes(b"not a video")
    done = _dataloader(str(tmp_path), tmp_path)
    skipped = sorted(line.split(":")[0] for line in done.stderr.splitlines() if line.startswith("skipped "))
    assert skipped == [f"skipped {tmp_path / 'b.mp4'}", f"skipped {tmp_path / 'c.mp4'}"], done.stderr


def _shell_commands() -> list[tuple[str, list[str]]]:
    """Each command of the docs' ```sh blocks as words: comments cut, ``&&`` chains split."""
    found = []
    for doc in _docs():
        for block in _SHELL_BLOCK.finditer(doc.read_text()):
            for line in block.group(1).splitlines():
                for command in line.split("&&"):
                    words = shlex.split(command, comments=True)
                    if words:
                        found.append((str(doc.relative_to(REPO)), words))
    return found


def test_there_are_shell_commands() -> None:
    commands = _shell_commands()
    assert sum(1 for _, words in commands if words[0] == "alpha2") >= 10
    assert (
        sum(1 for _, words in commands if words[:1] == ["python"] and words[1].startswith("examples/")) >= 6
    )


@pytest.mark.parametrize(
    ("doc", "words"),
    [(doc, words) for doc, words in _shell_commands() if words[0] == "alpha2"],
    ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else str(v),
)
def test_shell_command_parses(doc: str, words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from alpha2.apps.cli import build_parser

    argv = words[1:]
    try:
        args, extras = build_parser(argv).parse_known_args(argv)
    except SystemExit:
        pytest.fail(f"{doc}: the parser refuses {shlex.join(words)}:\n{capsys.readouterr().err}")
    assert not extras, f"{doc}: {shlex.join(words)}: unknown arguments {extras}"
    assert getattr(args, "func", None) is not None, f"{doc}: {shlex.join(words)} names no command"


def test_shell_commands_name_gallery_scripts() -> None:
    named = [
        (doc, words[1]) for doc, words in _shell_commands() if words[:1] == ["python"] and len(words) > 1
    ]
    missing = [
        f"{doc}: {script}"
        for doc, script in named
        if script.endswith(".py") and not (REPO / script).is_file()
    ]
    assert not missing, f"commands run scripts that do not exist: {missing}"
