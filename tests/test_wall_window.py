"""The video wall in a window: on Xvfb through ``alpha2 play A B``, and driven in-process through
rendercanvas's offscreen canvas (one submit per tick for the streams' work, letterbox, keys, the end)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.api.devices import open_device
from alpha2.api.streams import StreamGroup
from alpha2.apps.player import PlayOptions, play
from alpha2.apps.wall import play_wall
from alpha2.apps.wall_window import NO_SOUND_REASON, WallWindow
from alpha2.apps.window import letterbox
from alpha2.gpu.errors import InvalidInputError
from alpha2.gpu.geometry import Size
from tests.media import Clip, make_clip
from tests.xvfb import play_under_xvfb

NO_DISPLAY = {"PATH": "/usr/bin"}


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> list[Clip]:
    root = tmp_path_factory.mktemp("wall_window")
    return [
        make_clip(root / "a.mkv", width=64, height=48, frames=12),
        make_clip(root / "b.mkv", width=48, height=64, frames=18),
    ]


def drive(window: WallWindow, seconds: float, hz: float = 60.0) -> None:
    """Draw at ``hz`` (a display's refresh) for ``seconds`` or until the window closes."""
    period = 1 / hz
    next_at = time.perf_counter()
    end = next_at + seconds
    while time.perf_counter() < end and not window.canvas.get_closed():
        window.canvas.draw()
        next_at += period
        time.sleep(max(0.0, next_at - time.perf_counter()))


@pytest.mark.vulkan
def test_wall_window_on_a_virtual_display(clips: list[Clip]) -> None:
    """`alpha2 play a b` opens a glfw window on Xvfb and plays every stream to its end."""
    data = play_under_xvfb(*(c.path for c in clips), "--wall")
    assert data["mode"] == "window", data.get("mode_reason")
    assert NO_SOUND_REASON in data["mode_reason"]
    assert data["clock"]["kind"] == "system"
    assert data["frames"] > 0
    # Every decoded frame of every stream was either shown or overtaken (dropped) before the end.
    for stream, clip in zip(data["streams"], clips, strict=True):
        assert stream["frames_shown"] >= 1
        assert stream["frames_shown"] + stream["frames_dropped"] == clip.frames, stream
    assert data["dropped_frames"] == sum(s["frames_dropped"] for s in data["streams"])
    assert data["submissions"] == data["frames"]


@pytest.mark.vulkan
def test_wall_without_a_display_renders_offscreen(clips: list[Clip]) -> None:
    stats = play_wall([c.path for c in clips], PlayOptions(frames=3), environ=NO_DISPLAY)
    # Each stream says where its GPU copies ran: each frame the GPU copy imported was copied on its
    # decoder's thread or at import, and so were those overtaken before their tick (none on the CPU
    # upload, as on lavapipe; with NVDEC and Dawn, at least one per frame shown).
    copies = [s["gpu_copies"] for s in stats.streams]
    gpu_copied = stats.as_dict()["paths"].get("gpu_copy", 0)
    counted = sum(c["decoder_thread"] + c["at_import"] for c in copies)
    assert counted >= gpu_copied and (counted == 0) == (gpu_copied == 0), (copies, gpu_copied)
    assert ("GPU copies" in stats.summary()) == (gpu_copied > 0)
    assert stats.mode == "offscreen"
    assert stats.mode_reason.startswith("no window: no display"), stats.mode_reason
    assert stats.frames == 3 and stats.submissions == 3


@pytest.mark.vulkan
def test_wall_window_in_process(clips: list[Clip], monkeypatch: pytest.MonkeyPatch) -> None:
    """One queue.submit per tick for every stream's work (plus one present per draw), letterboxed, keys,
    and the run ends when every stream has ended."""
    pytest.importorskip("rendercanvas")
    device = open_device("none")
    group = StreamGroup([c.path for c in clips], device=device, hwaccel="none")
    stats = play_stats(clips)
    window = WallWindow(group, stats)
    submits: list[str] = []
    queue_type = type(device.webgpu_device.queue)
    original = queue_type.submit

    def counting(self: Any, buffers: Any) -> Any:
        # Who submitted: the group's tick, the window's present, or the offscreen canvas's read-back.
        caller = sys._getframe(1).f_code
        if buffers and caller.co_filename.endswith(("streams.py", "wall_window.py")):
            submits.append(caller.co_name)
        return original(self, buffers)

    monkeypatch.setattr(queue_type, "submit", counting)
    try:
        window.open("rendercanvas.offscreen", size=Size(200, 200))
        image = np.asarray(window.canvas.draw())
        assert image.shape[:2] == (200, 200)
        assert submits == ["_draw", "_present"]
        box = letterbox(group.size, Size(200, 200))
        assert box.y > 0 and box.height < 200
        # Bars above and below are black; the streams' tiles are inside.
        assert (image[: box.y - 1, :, :3] == 0).all() and (image[box.y + box.height + 1 :, :, :3] == 0).all()
        assert image[box.y : box.y + box.height, :, :3].mean() > 10

        # Space pauses the clock: no stream moves on, draws still present the wall.
        window._on_key({"key": " "})
        assert window.paused
        shown = [s.frames_shown for s in group.streams]
        frames = stats.frames
        drive(window, 0.15)
        assert [s.frames_shown for s in group.streams] == shown and stats.frames == frames
        window._on_key({"key": " "})
        assert not window.paused

        drive(window, 5.0)
        assert window.canvas.get_closed(), "the window closes once every stream has ended"
        assert group.finished
        for stream, clip in zip(group.streams, clips, strict=True):
            assert stream.frames_shown + stream.frames_dropped == clip.frames
        # Each tick that drew something is one submit with every stream's work; each draw one present.
        assert group.submissions == stats.frames
        assert all(pair != ("_draw", "_draw") for pair in itertools.pairwise(submits)), submits
        assert submits.count("_draw") == group.submissions and submits.count("_present") == window.presents
        assert window.presents <= window.ticks
    finally:
        window.finish()
        group.close()
        device.close()
    assert stats.mode == "window" and stats.clock["kind"] == "system"


@pytest.mark.vulkan
def test_wall_window_quits_on_q(clips: list[Clip]) -> None:
    pytest.importorskip("rendercanvas")
    device = open_device("none")
    group = StreamGroup([c.path for c in clips], device=device, hwaccel="none")
    window = WallWindow(group, play_stats(clips), frames=2)
    try:
        window.open("rendercanvas.offscreen", size=Size(64, 64))
        window.canvas.draw()
        window._on_key({"key": "q"})
        assert window.canvas.get_closed()
    finally:
        window.finish()
        group.close()
        device.close()


@pytest.mark.vulkan
def test_ctrl_c_closes_the_wall_and_is_raised_after_its_loop(clips: list[Clip]) -> None:
    """Ctrl-C in the terminal of a wall: rendercanvas's loop took it ('Received signal Interrupt') and
    the wall ended with 0 as if it had played to its end (an outside pass); now it closes the window
    between two draws and is raised once the loop returned (``alpha2: interrupted``, 130), as the
    player's window does."""
    import signal
    import types

    from alpha2.apps.cli import Interrupted, _SignalsUnwind

    offscreen = pytest.importorskip("rendercanvas.offscreen")
    device = open_device("none")
    group = StreamGroup([c.path for c in clips], device=device, hwaccel="none")
    window = WallWindow(group, play_stats(clips))
    soon: list[Any] = []

    class Loop:
        @staticmethod
        def run() -> None:
            # rendercanvas's loop sets its own SIGINT handler as it starts
            signal.signal(signal.SIGINT, lambda s, f: window.canvas.close())
            deadline = time.monotonic() + 20
            while not window.canvas.get_closed() and time.monotonic() < deadline:
                window.canvas.draw()
                if window.ticks == 2:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.01)
                while soon:
                    soon.pop(0)()
                time.sleep(1 / 60)

        @staticmethod
        def call_soon_threadsafe(callback: Any) -> None:
            soon.append(callback)

    backend = types.ModuleType("alpha2_test_wall_signal_canvas")
    backend.RenderCanvas = offscreen.RenderCanvas  # type: ignore[attr-defined]
    backend.loop = Loop  # type: ignore[attr-defined]
    sys.modules[backend.__name__] = backend
    try:
        with _SignalsUnwind(), pytest.raises(Interrupted):
            window.run(backend.__name__)
        assert window.canvas.get_closed() and window.ticks < 10
    finally:
        del sys.modules[backend.__name__]
        window.finish()
        group.close()
        device.close()


def play_stats(clips: list[Clip]) -> Any:
    from alpha2.apps.wall import WallStats

    return WallStats(input=", ".join(c.path for c in clips))


# ---------------------------------------------------------------------------------------------------
# rotation, a broken input, seeking every tile, the sound of one tile


@pytest.mark.vulkan
def test_the_wall_honours_rotation(tmp_path: Path) -> None:
    """A clip whose display matrix turns it a quarter shows turned in its tile, as it does alone."""
    from tests.test_apps_play import read_png

    turned = make_clip(tmp_path / "turned.mkv", width=64, height=48, frames=3, rotation_ccw=90).path
    plain = make_clip(tmp_path / "plain.mkv", width=48, height=64, frames=3).path
    options = PlayOptions(snapshot=str(tmp_path / "wall.png"), hwaccel="none", audio=False)
    stats = play_wall([turned, plain], options, environ=NO_DISPLAY)
    wall = read_png(tmp_path / "wall.png")
    assert stats.size == Size(96, 64) and wall.shape[:2] == (64, 96)  # two 48 x 64 tiles
    alone = tmp_path / "alone.png"
    play(turned, PlayOptions(snapshot=str(alone), hwaccel="none"), environ=NO_DISPLAY)
    single = read_png(alone)
    assert single.shape[:2] == (64, 48)
    error = np.abs(wall[:, :48, :3].astype(int) - single[..., :3].astype(int)).mean()
    assert error <= 1.0, error


@pytest.mark.vulkan
def test_a_broken_input_is_a_tile_with_its_error(
    clips: list[Clip], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from alpha2.apps.cli import main
    from tests.test_apps_play import read_png

    broken = tmp_path / "broken.mkv"
    broken.write_bytes(b"not a video at all" * 50)
    out = tmp_path / "wall.png"
    code = main(["play", clips[0].path, str(broken), "--wall", "--snapshot", str(out), "--json"])
    captured = capsys.readouterr()
    assert code == 1 and f"alpha2: error: {broken}:" in captured.err
    data = json.loads(captured.out)
    assert data["streams"][0]["error"] is None and data["streams"][0]["frames_shown"] == 1
    assert data["streams"][1]["error"] and data["streams"][1]["frames_shown"] == 0
    wall = read_png(out)
    tile = wall[:, 64:128, :3].astype(int)
    assert (np.abs(tile - [48, 16, 16]).max(axis=2) == 0).mean() > 0.5  # the error tile's ground
    assert (tile.min(axis=2) > 200).any()  # and its white text
    assert wall[:, :64, :3].mean() > 10  # the good input plays beside it
    screenshots = os.environ.get("ALPHA2_SCREENSHOTS")
    if screenshots:
        shutil.copy(out, Path(screenshots) / "wall-broken-tile.png")


@pytest.mark.vulkan
def test_arrows_seek_every_tile(tmp_path: Path) -> None:
    pytest.importorskip("rendercanvas")
    long = [make_clip(tmp_path / f"{n}.mkv", width=32, height=24, frames=240).path for n in "ab"]
    device = open_device("none")
    group = StreamGroup(long, device=device, hwaccel="none")
    window = WallWindow(group, play_stats_of(long))
    try:
        window.open("rendercanvas.offscreen", size=Size(128, 64))
        drive(window, 0.2)
        window._on_key({"key": "ArrowRight"})
        drive(window, 0.2)
        assert all(s.shown_pts_s is not None and s.shown_pts_s >= 5.0 for s in group.streams), [
            s.shown_pts_s for s in group.streams
        ]
        window._on_key({"key": "ArrowLeft"})
        drive(window, 0.2)
        assert all(s.shown_pts_s is not None and s.shown_pts_s < 2.0 for s in group.streams)
        window._on_key({"key": "/", "modifiers": ("Shift",)})
        assert window.osd.show_help
        # One file's keys (chapters, audio tracks) say so in a wall; they raised AttributeError (no player).
        for key in ("PageDown", "PageUp", "#"):
            window._on_key({"key": key})
            assert "not a wall's" in (window.osd.current_message or ""), key
    finally:
        window.finish()
        group.close()
        device.close()


@pytest.mark.vulkan
def test_the_sound_of_one_tile(audio_server: str, tmp_path: Path) -> None:
    """The first tile with sound plays it and paces the wall; a cycles to the next, then silence."""
    pytest.importorskip("rendercanvas")
    sources = [
        make_clip(tmp_path / "silent.mkv", width=32, height=24, frames=60).path,
        make_clip(tmp_path / "one.mkv", width=32, height=24, frames=60, audio=True).path,
        make_clip(tmp_path / "two.mkv", width=32, height=24, frames=60, audio=True).path,
    ]
    device = open_device("none")
    group = StreamGroup(sources, device=device, hwaccel="none")
    stats = play_stats_of(sources)
    window = WallWindow(group, stats, audio=True)
    try:
        window.open("rendercanvas.offscreen", size=Size(96, 48))
        drive(window, 0.3)
        assert window.clock is not None and window.clock.kind.value == "audio", window.clock
        assert window.sound_index == 1
        window._on_key({"key": "a"})
        assert window.sound_index == 2 and window.osd.current_message == "Sound: tile 3 (two.mkv)"
        drive(window, 0.2)
        window._on_key({"key": "a"})
        assert window.sound_index is None and window.clock.kind.value == "system"
        window._on_key({"key": "a"})
        assert window.sound_index == 1
        drive(window, 3.0)
    finally:
        window.finish()
        group.close()
        device.close()
    assert "the sound of" in stats.mode_reason and stats.clock["kind"] == "audio"


def play_stats_of(sources: list[str]) -> Any:
    from alpha2.apps.wall import WallStats

    return WallStats(input=", ".join(sources))


@pytest.mark.vulkan
def test_loop_plays_the_wall_again(clips: list[Clip]) -> None:
    """--loop: once every tile has ended the wall starts again from 0 (each tile shown more than once
    through), until the frame limit; a wall of decoder processes (which cannot seek) refuses --loop."""
    pytest.importorskip("rendercanvas")
    device = open_device("none")
    group = StreamGroup([c.path for c in clips], device=device, hwaccel="none")
    stats = play_stats(clips)
    longest = max(c.frames for c in clips)
    window = WallWindow(group, stats, loop=True, frames=longest * 2 + 3)
    try:
        window.open("rendercanvas.offscreen", size=Size(200, 200))
        drive(window, 30.0)
        assert window.canvas.get_closed() and stats.frames == longest * 2 + 3
        for stream, clip in zip(group.streams, clips, strict=True):
            assert stream.frames_shown + stream.frames_dropped > clip.frames
    finally:
        window.finish()
        group.close()
        device.close()
    with pytest.raises(InvalidInputError, match=r"--loop .* cannot seek"):
        play_wall([c.path for c in clips], PlayOptions(loop=True, decoders="processes"))


def test_a_wall_refuses_sub_rather_than_ignore_it(
    clips: list[Clip], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sub with --wall played on without it, said nowhere (an outside pass)."""
    from alpha2.apps.cli import main

    code = main(["play", clips[0].path, clips[1].path, "--wall", "--sub", str(tmp_path / "x.srt")])
    err = capsys.readouterr().err
    assert code == 1 and "--sub is for one file or a playlist" in err


def test_a_wall_none_of_whose_sources_opens_names_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the first source's error was named (an outside pass)."""
    from alpha2.apps.cli import main

    bad = [tmp_path / "a.mp4", tmp_path / "b.mkv"]
    for path in bad:
        path.write_bytes(b"not a video" * 30)
    code = main(["play", *map(str, bad), "--wall", "--snapshot", str(tmp_path / "w.png")])
    err = capsys.readouterr().err
    assert code == 1 and "none of the 2 sources opened" in err and "a.mp4" in err and "b.mkv" in err


def test_at_past_a_short_file_shows_its_last_frame(
    clips: list[Clip], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--at past one file's end refused the whole wall (an outside pass); that tile shows its last frame,
    as at the end of playing, and only --at past every input is refused."""
    from alpha2.apps.cli import main

    out = tmp_path / "w.png"
    args = ["play", clips[0].path, clips[1].path, "--wall", "--snapshot", str(out), "--json"]
    assert main([*args, "--at", "0.5"]) == 0  # a: 0.4 s, b: 0.6 s
    data = json.loads(capsys.readouterr().out)
    assert [s["frames_shown"] for s in data["streams"]] == [1, 1] and out.exists()
    assert main([*args, "--at", "5", "-y"]) == 1
    assert "past the end of every input (the longest is 0.600 s)" in capsys.readouterr().err
