"""The API reference documents every public name, so that a new name cannot go undocumented.

The site is built once (``mkdocs build --strict``, as CI does; about 15 s) and read back:

- every name that ``alpha2``, ``alpha2.api``, ``alpha2.api.errors``, ``alpha2.gpu``,
  ``alpha2.native_gpu`` and ``alpha2.ffmpeg_bridge`` list in ``__all__`` has an entry in the site's
  objects inventory (``objects.inv``, written by mkdocstrings), under its public path or where it is
  defined;
- the main names have a page of their own group, not one page for everything;
- no Sphinx role (``:class:`...```) is left as text: docs/_ext/sphinx_roles.py turns them into links;
- every error class alpha2 defines is on the errors page;
- the site has a front page.
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD_LIMIT_S = 300
PACKAGES = (
    "alpha2",
    "alpha2.api",
    "alpha2.api.errors",
    "alpha2.gpu",
    "alpha2.native_gpu",
    "alpha2.ffmpeg_bridge",
)
PAGES = {
    "alpha2.api.source.VideoSource": "reference/source/",
    "alpha2.api.source.Frame": "reference/source/",
    "alpha2.api.source.open": "reference/source/",
    "alpha2.api.writer.Writer": "reference/writer/",
    "alpha2.api.writer.create": "reference/writer/",
    "alpha2.api.streams.StreamGroup": "reference/streams/",
    "alpha2.api.decode_process.DecodeProcess": "reference/streams/",
    "alpha2.api.transcoder.transcode": "reference/transcode/",
    "alpha2.api.transcode_plan.TranscodeOptions": "reference/transcode/",
    "alpha2.ffmpeg_bridge.audio.AudioDecodeSession": "reference/audio/",
    "alpha2.native_gpu.device.device.Device": "reference/devices/",
    "alpha2.gpu.errors.Error": "reference/errors/",
    "alpha2.gpu.formats.PixelFormat": "reference/gpu/formats/",
    "alpha2.gpu.formats.PlaneFormat": "reference/gpu/formats/",
    "alpha2.gpu.identity.ExecutionPath": "reference/gpu/identity/",
    "alpha2.gpu.identity.DecoderPlacement": "reference/gpu/identity/",
    "alpha2.gpu.colour.ColourInfo": "reference/gpu/colour/",
    "alpha2.gpu.geometry.FrameMetadata": "reference/gpu/geometry/",
    "alpha2.gpu.geometry.Rotation": "reference/gpu/geometry/",
    "alpha2.gpu.hdr.HdrMetadata": "reference/gpu/hdr/",
    "alpha2.ffmpeg_bridge.media.StreamInfo": "reference/ffmpeg_bridge/",
}
"""Where the main names are documented: one page per group."""
_ROLE_TEXT = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj|const):(?:`|<code>)")
_ERROR_CLASS = re.compile(r"^class (\w+Error)\b", re.M)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=BUILD_LIMIT_S,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    return out


def _inventory(site: Path) -> dict[str, str]:
    """Name -> page URI (without the anchor) of every entry in the site's objects.inv (Sphinx format 2)."""
    data = (site / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):  # four header lines, then the zlib-compressed body
        header_end = data.index(b"\n", header_end) + 1
    entries = {}
    for line in zlib.decompress(data[header_end:]).decode().splitlines():
        name, _domain_role, _priority, uri = line.split(" ", 4)[:4]
        entries[name] = uri.split("#", 1)[0]
    return entries


def _paths(package: str, name: str) -> set[str]:
    """The paths ``package.name`` may be documented under: public, where it is listed, where defined."""
    module = importlib.import_module(package)
    paths = {f"{package}.{name}"}
    where = getattr(module, "_EXPORTS", {}).get(name)
    if where is not None:
        paths.add(f"{where if where.startswith('alpha2') else f'{package}.{where}'}.{name}")
    obj = getattr(module, name)
    if inspect.ismodule(obj):
        paths.add(obj.__name__)
    else:
        defined_in, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if isinstance(defined_in, str) and isinstance(qualname, str):
            paths.add(f"{defined_in}.{qualname}")
    return paths


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_an_entry(site: Path, package: str) -> None:
    inventory = set(_inventory(site))
    missing = {}
    for name in importlib.import_module(package).__all__:
        paths = _paths(package, name)
        if not paths & inventory:
            missing[name] = sorted(paths)
    assert not missing, f"{package}: names with no reference entry (add their module to a page): {missing}"


def test_main_names_have_their_group_page(site: Path) -> None:
    inventory = _inventory(site)
    wrong = {name: inventory.get(name) for name, page in PAGES.items() if inventory.get(name) != page}
    assert not wrong, f"documented elsewhere than their group's page: {wrong}"


def test_no_sphinx_role_is_left_as_text(site: Path) -> None:
    leftovers = {}
    for page in sorted(site.rglob("*.html")):
        found = _ROLE_TEXT.findall(page.read_text())
        if found:
            leftovers[str(page.relative_to(site))] = len(found)
    assert not leftovers, f"Sphinx roles shown as text: {leftovers}"


def test_roles_become_links(site: Path) -> None:
    writer = (site / "reference" / "writer" / "index.html").read_text()
    # Writer's docstring says "made by :func:`create`": a link to create's entry.
    assert re.search(r'<a [^>]*href="#alpha2\.api\.writer\.create"[^>]*><code>create</code></a>', writer)


def test_every_error_class_is_on_the_errors_page(site: Path) -> None:
    page = (site / "reference" / "errors" / "index.html").read_text()
    defined = set()
    for module in (REPO / "alpha2").rglob("*.py"):
        defined.update(_ERROR_CLASS.findall(module.read_text()))
    missing = sorted(name for name in defined if not re.search(rf"\b{name}\b", page))
    assert not missing, f"error classes not on docs/reference/errors.md: {missing}"


def test_front_page(site: Path) -> None:
    front = (site / "index.html").read_text()
    assert "A first program" in front and 'href="reference/"' in front
