"""Several inputs play in turn (a playlist): in one window (> / <, a broken file passed over with its
error on screen, a file without video under the level visual), offscreen one after the other, and on
Xvfb through ``alpha2 play A B``."""

from __future__ import annotations

import json
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from alpha2.api import pipeline
from alpha2.api.playback import PlayOptions
from alpha2.apps import player, window
from tests.media import Clip, make_audio_only, make_clip
from tests.xvfb import play_under_xvfb

NO_DISPLAY = {"PATH": "/usr/bin"}


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> list[Clip]:
    root = tmp_path_factory.mktemp("playlist")
    return [
        make_clip(root / "a.mkv", width=64, height=48, frames=6),
        make_clip(root / "b.mkv", width=48, height=64, frames=9),
    ]


@pytest.fixture(scope="module")
def songs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("songs")
    return [make_audio_only(root / "song.mka", seconds=0.5), make_audio_only(root / "tune.mp4", seconds=0.4)]


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("broken") / "broken.mkv"
    path.write_bytes(b"this is not a video file" * 40)
    return str(path)


@pytest.mark.vulkan
def test_offscreen_playlist_plays_each_file(clips: list[Clip], capsys: pytest.CaptureFixture[str]) -> None:
    from alpha2.apps.cli import main

    code = main(["play", *(c.path for c in clips), "--offscreen", "--json", "--hwaccel", "none"])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert [item["input"] for item in data["playlist"]] == [c.path for c in clips]
    assert [item["frames"] for item in data["playlist"]] == [c.frames for c in clips]
    assert data["errors"] == []


@pytest.mark.vulkan
def test_a_broken_file_is_passed_over(
    clips: list[Clip], broken: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from alpha2.apps.cli import main

    code = main(["play", clips[0].path, broken, clips[1].path, "--offscreen", "--hwaccel", "none"])
    err = capsys.readouterr().err
    assert code == 1  # some file failed: said, and the others played
    assert f"alpha2: error: {broken}:" in err
    assert "played a.mkv: 6 frames" in err and "played b.mkv: 9 frames" in err
    # Said as it is passed over (it was said only after the whole list), and again in the end summary.
    said = [i for i, line in enumerate(err.splitlines()) if line.startswith(f"alpha2: error: {broken}:")]
    played = next(i for i, line in enumerate(err.splitlines()) if "played a.mkv" in line)
    assert len(said) == 2 and said[0] < played, err
    # The name leads once: FFmpeg's "opening '<name>': " after it said the name twice in a line.
    assert f"opening {broken!r}" not in err, err


@pytest.mark.vulkan
def test_a_broken_file_s_error_is_folded_at_words_on_a_terminal(
    clips: list[Clip], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns the error of a playlist's broken file was one long line, which the terminal cut
    mid-word ('Invalid data found when pro' / 'cessing input'), where the lines before it were folded."""
    import io

    from alpha2.apps.cli import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.chdir(tmp_path)  # a short name: a path longer than the line is cut where it must be
    broken = Path("a-file-with-a-rather-long-name.mp4")
    broken.write_bytes(b"this is not a video file" * 40)
    term = Terminal()
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys, "stderr", term)
    code = main(["play", clips[0].path, str(broken), "--offscreen", "--hwaccel", "none"])
    lines = [line for line in term.getvalue().splitlines() if "\x1b" not in line]  # not the progress
    assert code == 1 and any(line.startswith("alpha2: error:") for line in lines), lines
    assert all(len(line) <= 80 for line in lines), lines


class _DrawingLoop:
    """A rendercanvas backend module whose loop draws the offscreen canvas at 60 Hz, pressing keys on
    the way (``presses``: draw count -> key, or (source, draws since it started) -> key: one press the
    first time a given file plays, whatever the machine's load made of the draws before it)."""

    def __init__(self, presses: dict[Any, str]) -> None:
        self.presses = presses
        self.playback: Any = None
        self.canvases: set[int] = set()
        self.sources: list[str] = []
        self.sizes: list[tuple[int, int]] = []  # the window's logical size as each file starts

    def module(self) -> types.ModuleType:
        import rendercanvas.offscreen as offscreen

        loop = self

        class Loop:
            @staticmethod
            def run() -> None:
                draws = since = 0
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    canvas = loop.playback.canvas
                    if canvas.get_closed():
                        return
                    loop.canvases.add(id(canvas))
                    if not loop.sources or loop.sources[-1] != loop.playback.player.source:
                        loop.sources.append(loop.playback.player.source)
                        width, height = canvas.get_logical_size()
                        loop.sizes.append((round(width), round(height)))
                        since = 0
                    canvas.draw()
                    draws += 1
                    since += 1
                    key = loop.presses.get(draws) or loop.presses.pop((loop.sources[-1], since), None)
                    if key is not None:
                        loop.playback._on_key({"key": key})
                    time.sleep(1 / 60)

        backend = types.ModuleType("alpha2_test_playlist_canvas")
        backend.RenderCanvas = offscreen.RenderCanvas  # type: ignore[attr-defined]
        backend.loop = Loop  # type: ignore[attr-defined]
        return backend


def _run_window(
    sources: list[str],
    presses: dict[Any, str],
    options: PlayOptions | None = None,
    on_error: Any = None,
) -> tuple[Any, Any, _DrawingLoop]:
    """``play_list`` in a window on the offscreen canvas (without sound unless ``options`` say); the
    window object is caught as it is made."""
    pytest.importorskip("rendercanvas")
    driver = _DrawingLoop(presses)
    backend = driver.module()
    sys.modules[backend.__name__] = backend
    made = window.WindowPlayback.__init__

    def catching(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        driver.playback = self

    monkey = pytest.MonkeyPatch()
    monkey.setattr(window.WindowPlayback, "__init__", catching)
    try:
        results, errors = player.play_list(
            sources,
            options or PlayOptions(audio=False, hwaccel="none"),
            progress=pipeline.Progress,
            environ={"DISPLAY": ":0"},
            canvas_module=backend.__name__,
            # Called with the files started by then too.
            on_error=None if on_error is None else lambda name, message: on_error(name, list(driver.sources)),
        )
    finally:
        monkey.undo()
        del sys.modules[backend.__name__]
    return results, errors, driver


@pytest.mark.vulkan
def test_window_plays_the_files_in_turn(clips: list[Clip], broken: str) -> None:
    """One window for the whole list: each file to its end, the broken one said and passed over."""
    sources = [clips[0].path, broken, clips[1].path]
    said: list[tuple[str, list[str]]] = []  # each error said, with the files started by then
    results, errors, driver = _run_window(
        sources, {}, on_error=lambda name, started: said.append((name, started))
    )
    assert said == [(broken, [clips[0].path])]  # as it was passed over, before the next file played
    assert len(driver.canvases) == 1  # the same window all along
    assert driver.sources == [clips[0].path, clips[1].path]
    assert [(s.input, s.frames + s.dropped_frames) for s in results] == [
        (clips[0].path, clips[0].frames),
        (clips[1].path, clips[1].frames),
    ]
    assert [name for name, _ in errors] == [broken]
    assert all(s.mode == "window" for s in results)
    # The window takes each file's size (64x48, then 48x64), as mpv's does, not letterboxing the next.
    assert driver.sizes == [(64, 48), (48, 64)]


@pytest.mark.vulkan
def test_enter_and_less_than_go_to_the_next_and_previous_file(clips: list[Clip]) -> None:
    sources = [clips[0].path, clips[1].path]
    # Enter (mpv's playlist-next) on the third draw; < three draws later (back to the first); then it
    # plays to the end.
    results, errors, driver = _run_window(sources, {3: "Enter", 6: "<"})
    assert not errors
    assert driver.sources == [clips[0].path, clips[1].path, clips[0].path, clips[1].path]
    assert [s.input for s in results] == driver.sources
    assert results[0].frames < clips[0].frames  # cut short by n


@pytest.mark.vulkan
def test_no_file_plays_is_an_error(broken: str) -> None:
    from alpha2.gpu.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="none of the 2 files could be played"):
        _run_window([broken, broken], {})


@pytest.mark.vulkan
def test_playlist_in_a_real_window(clips: list[Clip]) -> None:
    """``alpha2 play a b`` on Xvfb: one after the other in a glfw window."""
    data = play_under_xvfb(*(c.path for c in clips), "--no-audio")
    assert [item["input"] for item in data["playlist"]] == [c.path for c in clips]
    for item, clip in zip(data["playlist"], clips, strict=True):
        assert item["mode"] == "window" and item["frames"] >= 1
        assert item["frames"] + item["dropped_frames"] == clip.frames


@pytest.mark.vulkan
def test_offscreen_list_in_process(clips: list[Clip]) -> None:
    results, errors = player.play_list(
        [c.path for c in clips], PlayOptions(frames=2, hwaccel="none"), environ=NO_DISPLAY
    )
    assert [s.frames for s in results] == [2, 2] and not errors


@pytest.mark.vulkan
def test_a_broken_last_file_is_only_an_error(clips: list[Clip], broken: str) -> None:
    results, errors, _ = _run_window([clips[0].path, broken], {})
    assert [s.input for s in results] == [clips[0].path]
    assert [name for name, _ in errors] == [broken]


@pytest.mark.vulkan
def test_a_file_without_video_plays_in_the_same_window(clips: list[Clip], songs: list[str]) -> None:
    """``alpha2 play a.mkv song.mka b.mkv``: the song plays to its end under the level visual in the
    window of the list, which keeps its size for it (it ended with 'song.mka has no video stream')."""
    sources = [clips[0].path, songs[0], clips[1].path]
    results, errors, driver = _run_window(sources, {})
    assert not errors
    assert len(driver.canvases) == 1
    assert driver.sources == sources
    assert [s.input for s in results] == sources
    song = results[1]
    assert (song.mode, song.mode_reason) == ("window", "audio only, level visual")
    assert song.frames >= 10 and song.size is None and song.sync is None
    assert song.audio_seconds is not None and 0.45 <= song.audio_seconds <= 0.8
    assert song.clock["kind"] == "system"  # audio=False: the system clock runs the song's duration
    assert [s.frames + s.dropped_frames for s in (results[0], results[2])] == [c.frames for c in clips]
    assert driver.sizes == [(64, 48), (64, 48), (48, 64)]


@pytest.mark.vulkan
def test_a_playlist_of_sound_files_plays_and_n_p_move_in_it(songs: list[str]) -> None:
    """``alpha2 play *.mp3`` was refused ('none of the 2 files could be played'): both play, in a window
    of the audio-only window's size, and n / < go to the next and previous one."""
    results, errors, driver = _run_window(songs, {3: "n", 6: "<"})
    assert not errors
    assert driver.sources == [songs[0], songs[1], songs[0], songs[1]]
    assert [s.input for s in results] == driver.sources
    assert all(s.mode_reason == "audio only, level visual" for s in results)
    assert results[0].audio_seconds is not None and results[0].audio_seconds < 0.3  # cut short by n
    assert driver.sizes[0] == (window.AudioOnlyPlayback.WINDOW.width, window.AudioOnlyPlayback.WINDOW.height)


@pytest.mark.vulkan
def test_the_song_of_a_playlist_is_heard_and_lights_the_window(
    audio_server: str, clips: list[Clip], songs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With sound: the song's clock is the sound's, the level visual follows it, the keys of a file
    without video work there (the arrows seek it, ? shows its keys), and the next video plays after."""
    colours: list[tuple[float, ...]] = []
    clear = window._clear

    def recording_clear(encoder: Any, texture: Any, colour: tuple[float, ...]) -> None:
        colours.append(colour)
        clear(encoder, texture, colour)

    monkeypatch.setattr(window, "_clear", recording_clear)
    helps: list[list[str]] = []
    view = window.WindowPlayback._osd_view

    def recording_view(self: Any) -> Any:
        made = view(self)
        if made.help:
            helps.append(list(made.help))
        return made

    monkeypatch.setattr(window.WindowPlayback, "_osd_view", recording_view)
    results, errors, driver = _run_window(
        [songs[0], clips[0].path], {2: "?", 3: "ArrowRight"}, PlayOptions(hwaccel="none")
    )
    assert not errors and driver.sources == [s.input for s in results] == [songs[0], clips[0].path]
    song = results[0]
    assert song.seconds < 0.4  # the arrow went to the song's end (0.5 s long)
    assert helps and any(line.startswith("> / <, Enter") for line in helps[0])
    assert not any(line.startswith(", / .") for line in helps[0])  # no frames to step
    assert song.clock["kind"] == "audio", song.clock
    assert max(c[2] for c in colours) > 0.2  # the tone lights the window
    assert song.audio_track is not None and song.audio_track["label"] == "1/1 (opus, 2 ch)"
    assert results[1].mode_reason == "vsync, letterboxed" and results[1].frames >= 1


@pytest.mark.vulkan
def test_a_file_s_message_goes_with_it(clips: list[Clip], monkeypatch: pytest.MonkeyPatch) -> None:
    """A message said over one file ('No chapters') stayed over the next after n (a person's pass)."""
    from alpha2.apps.osd import Osd

    said: list[str | None] = []
    message, clear = Osd.message, Osd.clear_message

    def recording_message(self: Osd, text: str) -> None:
        said.append(text)
        message(self, text)

    def recording_clear(self: Osd) -> None:
        said.append(None)
        clear(self)

    monkeypatch.setattr(Osd, "message", recording_message)
    monkeypatch.setattr(Osd, "clear_message", recording_clear)
    _run_window([clips[0].path, clips[1].path], {2: "]", 4: "n"})
    assert said[:2] == ["Speed: 1.10", None]  # said, then taken off as the next file starts


@pytest.mark.vulkan
def test_page_up_past_the_last_chapter_goes_to_the_next_file(clips: list[Clip], tmp_path: Path) -> None:
    """As mpv's: PgUp (its next chapter) on the last chapter plays the playlist's next file (it said 'No
    next chapter')."""
    from tests.test_window_faults import _chaptered_clip

    chaptered = _chaptered_clip(tmp_path / "ch.mkv")  # 3 s, chapters at 0, 1 and 2 s
    presses = {(chaptered, 2): "PageUp", (chaptered, 3): "PageUp", (chaptered, 4): "PageUp"}
    results, errors, driver = _run_window([chaptered, clips[0].path], presses)
    assert not errors and driver.sources == [chaptered, clips[0].path]
    assert results[0].frames < 30  # left at its last chapter, not played to its end


@pytest.mark.vulkan
def test_volume_mute_and_sound_off_are_kept_for_the_next_file(
    audio_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mpv keeps the volume, mute, ``aid=no`` and pause from file to file: each file of a playlist started
    at ``--volume``'s level, unmuted, with sound and playing, whatever 9 / 0, m, # and space had set in
    the one before."""
    first = make_clip(tmp_path / "first.mkv", width=64, height=48, frames=60, audio=True)
    second = make_clip(tmp_path / "second.mkv", width=64, height=48, frames=60, audio=True)
    third = make_clip(tmp_path / "third.mkv", width=64, height=48, frames=60, audio=True)
    started: list[tuple[str, str, float, bool, bool]] = []
    start_clock = window.WindowPlayback._start_clock

    def recording_start_clock(self: Any, pts: float) -> None:
        start_clock(self, pts)
        clock = self.clock
        name = os.path.basename(self.player.source)
        started.append((name, clock.kind.value, clock.volume, clock.muted, clock.paused))

    said: list[str] = []
    monkeypatch.setattr(window.WindowPlayback, "_start_clock", recording_start_clock)
    monkeypatch.setattr(window.WindowPlayback, "_say", lambda self, text: said.append(text))
    presses = {
        (first.path, 3): "9",
        (first.path, 4): "9",
        (first.path, 5): "m",
        (first.path, 6): "n",
        (second.path, 3): "#",  # its one track, then none
        (second.path, 4): " ",
        (second.path, 5): "n",
        (third.path, 3): "#",  # the first track again
        (third.path, 4): "q",
    }
    results, errors, driver = _run_window(
        [first.path, second.path, third.path], presses, PlayOptions(hwaccel="none")
    )
    assert not errors and driver.sources == [first.path, second.path, third.path]
    assert started[0] == ("first.mkv", "audio", 1.0, False, False)
    assert started[1] == ("second.mkv", "audio", pytest.approx(0.96), True, False)
    assert started[2] == ("third.mkv", "system", pytest.approx(0.96), True, True)
    assert "Audio: off (# turns it on)" in said
    assert results[2].clock["kind"] == "audio" and said[-1] == "Audio: 1/1 (opus, 2 ch)"
