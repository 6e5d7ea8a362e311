"""``alpha2 play``: offscreen rendering, snapshots against FFmpeg's own conversion, window fallbacks."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from alpha2.api.atomic import png_bytes
from alpha2.apps import player
from alpha2.apps.player import PlayOptions, letterbox, play, window_unavailable_reason
from alpha2.apps.sample import write_sample
from alpha2.gpu.colour import ColourMatrix, ColourRange, rgb_to_yuv
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Rect, Size
from tests.xvfb import play_under_xvfb

W, H = 320, 180
FRAMES = 15
MEAN_ABS_LIMIT = 1.5
"""Mean absolute RGB error (0..255) allowed between a snapshot and FFmpeg's conversion of the frame."""

NO_DISPLAY = {"PATH": "/usr/bin"}


def read_png(path: Path) -> np.ndarray:
    """Decode the PNGs alpha2 writes (8-bit RGB/RGBA, filter 0) with zlib + struct only."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        payload = data[pos + 8 : pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0]
        assert crc == zlib.crc32(kind + payload) & 0xFFFFFFFF, f"bad CRC in {kind!r}"
        if kind == b"IHDR":
            header = payload
        elif kind == b"IDAT":
            idat += payload
        pos += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8
    channels = {6: 4, 2: 3}[colour_type]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(height, width, channels)


def ffmpeg_rgb(path: str, at_s: float) -> np.ndarray:
    """FFmpeg's RGB for the frame on display at ``at_s``: swscale, accurate rounding, full chroma
    interpolation, bilinear, the frame's own matrix and range."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        chosen = None
        for frame in container.decode(stream):
            if frame.time is not None and frame.time > at_s + 1e-6:
                break
            chosen = frame
        assert chosen is not None
    graph = av.filter.Graph()
    src = graph.add_buffer(template=stream)
    scale = graph.add("scale", "flags=bilinear+accurate_rnd+full_chroma_int:out_range=pc")
    fmt = graph.add("format", "rgb24")
    sink = graph.add("buffersink")
    src.link_to(scale)
    scale.link_to(fmt)
    fmt.link_to(sink)
    graph.configure()
    graph.push(chosen)
    return np.asarray(graph.pull().to_ndarray())


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("play_clips")
    return write_sample(str(root / "clip.mp4"), duration_s=FRAMES / 30, size=Size(W, H), audio=False).path


# ---------------------------------------------------------------------------------------------------
# pure parts


def test_letterbox_keeps_aspect_and_centres() -> None:
    assert letterbox(Size(1920, 1080), Size(1920, 1080)) == Rect(0, 0, 1920, 1080)
    assert letterbox(Size(1920, 1080), Size(800, 800)) == Rect(0, 175, 800, 450)
    assert letterbox(Size(1080, 1920), Size(1000, 500)) == Rect(359, 0, 281, 500)
    assert letterbox(Size(4, 3), Size(0, 0)).width >= 1


def _only_modules(monkeypatch: pytest.MonkeyPatch, *installed: str) -> None:
    """Make importlib.util.find_spec see exactly ``installed`` among the window extra's modules."""
    import importlib.util

    window_modules = {"rendercanvas", "glfw", *player._QT_BINDINGS}
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        if name in window_modules:
            return object() if name in installed else None
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_window_unavailable_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    no_display = "no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"
    _only_modules(monkeypatch, "rendercanvas", "glfw")
    assert window_unavailable_reason(NO_DISPLAY) == no_display
    assert window_unavailable_reason() == no_display  # the process's own environment, emptied above
    assert window_unavailable_reason({"DISPLAY": ":0"}) is None
    assert window_unavailable_reason({"WAYLAND_DISPLAY": "wayland-0"}) is None

    _only_modules(monkeypatch)
    assert window_unavailable_reason({"DISPLAY": ":0"}) == (
        "rendercanvas is not installed (pip install rendercanvas glfw)"
    )
    _only_modules(monkeypatch, "rendercanvas")
    assert window_unavailable_reason({"DISPLAY": ":0"}) == (
        "rendercanvas has no window backend: install glfw (pip install glfw) or a Qt binding (PySide6)"
    )
    _only_modules(monkeypatch, "rendercanvas", "PyQt6")
    assert window_unavailable_reason({"DISPLAY": ":0"}) is None

    # Off Linux a display is assumed: the modules decide.
    monkeypatch.setattr(sys, "platform", "darwin")
    _only_modules(monkeypatch, "rendercanvas")
    assert window_unavailable_reason(NO_DISPLAY) == (
        "rendercanvas has no window backend: install glfw (pip install glfw) or a Qt binding (PySide6)"
    )
    _only_modules(monkeypatch, "rendercanvas", "glfw")
    assert window_unavailable_reason(NO_DISPLAY) is None


def test_png_writer_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, size=(7, 5, 4), dtype=np.uint8)
    path = tmp_path / "x.png"
    path.write_bytes(png_bytes(pixels))
    assert np.array_equal(read_png(path), pixels)
    with pytest.raises(InvalidInputError):
        png_bytes(np.zeros((2, 2), np.uint8))


# ---------------------------------------------------------------------------------------------------
# offscreen playback (lavapipe counts)


@pytest.mark.vulkan
@pytest.mark.parametrize("gpu", [False, True])
@pytest.mark.parametrize("at_s", [None, 0.2])
def test_snapshot_matches_ffmpeg(clip: str, tmp_path: Path, at_s: float | None, gpu: bool) -> None:
    out = tmp_path / "snap.png"
    stats = play(clip, PlayOptions(snapshot=str(out), at_s=at_s, gpu=gpu), environ=NO_DISPLAY)
    assert stats.snapshot == str(out) and out.exists()
    assert stats.frames == 1 and stats.mode == "offscreen"
    got = read_png(out)
    assert got.shape == (H, W, 4) and (got[..., 3] == 255).all()
    expected = ffmpeg_rgb(clip, at_s or 0.0)
    error = np.abs(got[..., :3].astype(np.int32) - expected.astype(np.int32))
    print(f"at {at_s}: mean abs error {error.mean():.3f}, max {error.max()}")
    assert error.mean() <= MEAN_ABS_LIMIT
    if at_s:
        assert stats.snapshot_pts_s == pytest.approx(at_s, abs=1 / 30 + 1e-6)
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]


@pytest.mark.vulkan
def test_offscreen_frames_and_path_counts(clip: str) -> None:
    stats = play(clip, PlayOptions(frames=10, hwaccel="none"), environ=NO_DISPLAY)
    data = stats.as_dict()
    assert data["frames"] == 10
    assert data["mode"] == "offscreen" and "no display" in data["mode_reason"]
    # Software-decoded planes into wgpu-native: every frame is a CPU upload, said so.
    assert data["paths"] == {"cpu_upload": 10}
    assert data["bytes_through_cpu"] == 10 * (W * H * 3 // 2)
    assert data["peak_surfaces"] >= 1
    assert data["device"]["implementation"] == "wgpu"
    assert "render" in data["stages"] and data["fps"] > 0


@pytest.mark.vulkan
def test_whole_clip_offscreen(clip: str) -> None:
    stats = play(clip, PlayOptions(offscreen=True), environ={"DISPLAY": ":0"})
    assert stats.frames == FRAMES
    assert stats.mode_reason == "--offscreen"


def test_at_past_the_end_is_an_error(clip: str, tmp_path: Path) -> None:
    out = tmp_path / "late.png"
    with pytest.raises(InvalidInputError, match="past the end"):
        play(clip, PlayOptions(snapshot=str(out), at_s=30.0), environ=NO_DISPLAY)
    assert not out.exists()
    assert not list(tmp_path.iterdir())


def test_options_validate() -> None:
    with pytest.raises(InvalidInputError):
        PlayOptions(frames=0)
    assert player.SEEK_STEPS_S["ArrowRight"] > 0 > player.SEEK_STEPS_S["ArrowLeft"]


@pytest.mark.vulkan
def test_real_window_on_a_virtual_display(clip: str) -> None:
    """`alpha2 play` opens a glfw window on Xvfb (CI installs xvfb and the window extra) and plays."""
    data = play_under_xvfb(clip)
    assert data["mode"] == "window", data.get("mode_reason")
    # Paced by presentation time: a frame already late when the window is ready is dropped and counted.
    shown = data["frames"]
    assert shown >= 1 and shown + data["dropped_frames"] <= FRAMES
    assert data["paths"] == {"cpu_upload": shown}


# ---------------------------------------------------------------------------------------------------
# the window path, driven through rendercanvas's offscreen canvas (no display needed)


@pytest.mark.vulkan
def test_window_playback_letterboxes_and_handles_keys(clip: str) -> None:
    pytest.importorskip("rendercanvas")
    stats_player = player.Player(clip, PlayOptions(frames=4), player.pipeline.Progress())
    playback = player._WindowPlayback(stats_player)
    try:
        playback.open("rendercanvas.offscreen", size=Size(200, 200))
        image = np.asarray(playback.canvas.draw())
        assert image.shape[:2] == (200, 200)
        box = letterbox(Size(W, H), Size(200, 200))
        assert box.height < 200 and box.y > 0
        # Bars above and below are black; the picture is inside.
        assert (image[: box.y - 1, :, :3] == 0).all() and (image[box.y + box.height + 1 :, :, :3] == 0).all()
        assert image[box.y + 2 : box.y + box.height - 2, :, :3].mean() > 20
        assert stats_player.stats.frames == 1
        playback._on_key({"key": " "})
        assert playback.paused
        playback.canvas.draw()  # paused: the same frame is shown again
        playback._on_key({"key": " "})
        assert not playback.paused
        playback._on_key({"key": "ArrowRight"})  # seek 5 s: past this clip, so to its end
        playback._on_key({"key": "q"})
        assert playback.canvas.get_closed()
    finally:
        stats = playback.finish(1.0)
        stats_player.close()
    assert stats.mode == "window"
    assert stats.as_dict()["paths"] == {"cpu_upload": stats.frames}


@pytest.mark.nvidia
@pytest.mark.dawn
def test_nvdec_frames_are_gpu_copied(clip: str) -> None:
    stats = play(clip, PlayOptions(frames=10, hwaccel="cuda"), environ=NO_DISPLAY)
    data = stats.as_dict()
    assert data["frames"] == 10
    assert data["hwaccel"]["active"] == "cuda"
    assert data["paths"] == {"gpu_copy": 10}, data.get("device")
    assert data["bytes_through_cpu"] == 0
    assert data["device"]["implementation"] == "wgpudawn"


# ---------------------------------------------------------------------------------------------------
# untagged colour: guessed from the size, as mpv and libplacebo do


def _untagged_red(path: Path, width: int, height: int, matrix: ColourMatrix) -> str:
    """Two lossless (FFV1 4:4:4) frames of pure red coded with ``matrix``, limited range, no colour tags."""
    codes = np.rint(rgb_to_yuv(matrix, ColourRange.LIMITED, 8).apply(np.array([1.0, 0.0, 0.0])))
    with av.open(str(path), "w") as out:
        stream = out.add_stream("ffv1", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv444p"
        for index in range(2):
            frame = av.VideoFrame(width, height, "yuv444p")
            for plane, code in zip(frame.planes, codes, strict=True):
                plane.update(np.full(plane.line_size * plane.height, int(code), np.uint8).tobytes())
            frame.pts = index
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    with av.open(str(path)) as check:
        decoded = next(check.decode(video=0))
        assert int(decoded.colorspace) == int(ColourMatrix.UNSPECIFIED)
    return str(path)


@pytest.mark.vulkan
@pytest.mark.parametrize(
    ("width", "height", "matrix", "name"),
    [(1280, 720, ColourMatrix.BT709, "BT.709"), (720, 576, ColourMatrix.BT470BG, "BT.601")],
)
@pytest.mark.parametrize("gpu", [False, True])
def test_untagged_colour_is_guessed_from_the_size(
    tmp_path: Path, width: int, height: int, matrix: ColourMatrix, name: str, gpu: bool
) -> None:
    """Pure red coded as mpv would guess (HD: BT.709, SD: BT.601) comes out pure red, on the GPU and
    through swscale's snapshot route alike; the colour line says the matrix was guessed."""
    clip = _untagged_red(tmp_path / "red.mkv", width, height, matrix)
    out = tmp_path / "red.png"
    stats = play(clip, PlayOptions(snapshot=str(out), gpu=gpu), environ=NO_DISPLAY)
    got = read_png(out)[height // 2, width // 2, :3].astype(int)
    assert np.abs(got - [255, 0, 0]).max() <= 2, got
    if gpu:
        colour = stats.as_dict()["colour"]
        assert colour["matrix"] == name
        assert f"matrix {name} guessed from the size (untagged)" in colour["guessed"]
        assert "range limited, primaries BT709, transfer BT709 assumed (untagged)" in colour["guessed"]
        assert f"matrix {name} guessed from the size (untagged)" in stats.summary()


# ---------------------------------------------------------------------------------------------------
# start-up: what --help loads, the first frame's time, a missing window backend said at once


def test_play_help_loads_neither_pyav_nor_wgpu() -> None:
    """``alpha2 play --help`` builds its parser without PyAV, wgpu or the window (they load when a file
    plays), which keeps it near the interpreter's own start-up."""
    code = (
        "import sys\n"
        "from alpha2.apps.cli import build_parser\n"
        "build_parser(['play'])\n"
        "print(sorted(m for m in ('av', 'wgpu', 'rendercanvas', 'sounddevice', 'alpha2.apps.window',"
        " 'alpha2.ffmpeg_bridge', 'alpha2.native_gpu') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout


@pytest.mark.vulkan
def test_first_frame_time_is_reported(clip: str) -> None:
    stats = play(clip, PlayOptions(offscreen=True, frames=3), environ=NO_DISPLAY)
    data = stats.as_dict()
    assert data["first_frame_s"] is not None and 0 < data["first_frame_s"] < 600
    assert "first frame:" in stats.summary()
    # Each file's --stats block names it (a playlist's blocks could not be told apart: a person's pass).
    assert stats.summary().startswith(f"alpha2: played {os.path.basename(clip)}: 3 frames in ")


@pytest.mark.vulkan
def test_missing_window_backend_is_said_before_playing(
    clip: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A display but no window backend: one line on stderr with the install line, before the file plays
    offscreen (the report at the end says it again)."""
    why = "rendercanvas is not installed (pip install rendercanvas glfw)"
    monkeypatch.setattr(player, "window_unavailable_reason", lambda environ=None: why)
    said: list[str] = []
    real_offscreen = player.Player.offscreen

    def offscreen(self: Any, reason: str) -> Any:
        said.append(capsys.readouterr().err)  # what was on stderr when playback began
        return real_offscreen(self, reason)

    monkeypatch.setattr(player.Player, "offscreen", offscreen)
    stats = play(clip, PlayOptions(frames=2), environ={"DISPLAY": ":7"})
    assert stats.mode == "offscreen" and why in stats.mode_reason
    assert said == [f"alpha2: no window: {why}; playing offscreen, without sound\n"]
    # No display at all: nothing to say at once (offscreen is what was to be expected).
    said.clear()
    play(clip, PlayOptions(frames=1), environ=NO_DISPLAY)
    assert said == [""]


# ---------------------------------------------------------------------------------------------------
# the summaries fit the terminal: --stats and the one line, wrapped under their text


@pytest.mark.vulkan
@pytest.mark.parametrize("stats", [False, True])
def test_play_summaries_fit_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stats: bool
) -> None:
    """An untagged clip (the longest ``colour:`` line: the matrix guessed, the rest assumed) played with
    ``--stats``, and a snapshot's one line with a long path: every line within 80 columns, no word lost
    or broken, a continued line indented under its text; ``--json`` is left as it was."""
    from alpha2.apps.cli import main

    clip = _untagged_red(tmp_path / "red.mkv", 1280, 720, ColourMatrix.BT709)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(player, "_say_offscreen", lambda why, environ: None)
    out = tmp_path / "a-snapshot-with-a-rather-long-name.png"
    args = ["play", "--offscreen", clip, "--no-audio"]
    args += ["--frames", "2", "--stats"] if stats else ["--snapshot", str(out), "-y"]
    assert main(args) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith(("alpha2: played", " "))]
    # Within 80 columns, but for the line of the snapshot's path, one word longer than that.
    assert lines and all(len(line) < 80 for line in lines if str(out) not in line), err
    assert lines[0].startswith("alpha2: played") and all(line.startswith("  ") for line in lines[1:])
    text = " ".join(" ".join(lines).split())
    if stats:
        colour = [i for i, line in enumerate(lines) if line.startswith("  colour: ")]
        after = lines[colour[0] + 1] if colour else ""
        assert after.startswith(" " * len("  colour: ")) and after[len("  colour: ")] != " ", err
        assert "matrix BT.709 guessed from the size (untagged)" in text
        assert "range limited, primaries BT709, transfer BT709 assumed (untagged)" in text
    else:
        assert len(lines) > 1 and f"snapshot {out}" in text and "1 frame (" in text, err
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["command"] == "play" and data["frames"] == (2 if stats else 1)
