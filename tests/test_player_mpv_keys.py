"""``alpha2 play``'s keys against mpv's defaults (its input.conf), found by an outside pass of a person who
uses mpv daily, driven through rendercanvas's offscreen canvas (no display needed)."""

from __future__ import annotations

import io
import itertools
import json
import time
from pathlib import Path

import pytest

from alpha2.api import pipeline
from alpha2.api.playback import Player, PlayOptions
from alpha2.apps.cli import main
from alpha2.apps.keys import PLAYER_BINDINGS, help_lines, key_name
from alpha2.apps.osd import Osd, OsdView, format_time
from alpha2.apps.window import AudioOnlyPlayback, Playlist, WindowPlayback
from alpha2.gpu.geometry import Size
from tests.media import flip_bits, make_audio_only, make_clip
from tests.test_window_faults import _close, _draw, _playback

LONG_S = 150
"""The long clip's seconds: one frame a second, so two minutes and a half are small and fast to make."""


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    root: Path = tmp_path_factory.mktemp("mpv_keys")
    return make_clip(root / "long.mkv", width=64, height=48, frames=LONG_S, rate=1, gop=10).path


@pytest.mark.vulkan
def test_up_and_down_seek_a_minute_as_mpv(long_clip: str) -> None:
    """mpv's Up / Down seek +60 / -60 s; they went 30 s."""
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": " "})  # paused: the position is where the keys put it
        _draw(playback)
        playback._on_key({"key": "ArrowUp"})
        _draw(playback)
        _draw(playback)
        assert playback.shown_pts == pytest.approx(60.0, abs=1.0)
        playback._on_key({"key": "ArrowUp"})
        _draw(playback)
        _draw(playback)
        assert playback.shown_pts == pytest.approx(120.0, abs=1.0)
        playback._on_key({"key": "ArrowDown"})
        _draw(playback)
        _draw(playback)
        assert playback.shown_pts == pytest.approx(60.0, abs=1.0)
    finally:
        _close(playback)
    assert any(line.startswith("Down / Up") and "-60 / +60 s" in line for line in help_lines(PLAYER_BINDINGS))


@pytest.mark.vulkan
def test_o_shows_the_time_and_the_bar_as_mpv(long_clip: str) -> None:
    """mpv's o shows the progress bar and the time for a moment, playing; it did nothing."""
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback.osd._active_until = float("-inf")  # the bar of the start has faded
        _draw(playback)
        assert not playback.osd.showing_bar(playback.paused)
        before = _draw(playback)
        playback._on_key({"key": "o"})
        after = _draw(playback)
        assert playback.osd.showing_bar(playback.paused) and not playback.paused
        # The bar's track is drawn over the frame's bottom rows (the picture itself holds still at 1 fps).
        bar = playback.osd.bar_rect(playback._window_size())
        rows = slice(bar.y, bar.y + bar.height)
        assert abs(after[rows] - before[rows]).mean() > 10
    finally:
        _close(playback)
    assert any("o or P shows it" in line for line in help_lines(PLAYER_BINDINGS))


class _Positions(pipeline.Progress):
    """Records what the player says of its position on the terminal's line."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def set_position(self, text: str) -> None:
        self.said.append(text)


@pytest.mark.vulkan
def test_the_terminal_line_says_the_position_and_the_pause_as_mpv(long_clip: str) -> None:
    """The status line said the run's elapsed time, which ran on while paused ('0:00:28' at 0:12, paused)
    and did not follow seeks; mpv's says the position and '(Paused)'."""
    pytest.importorskip("rendercanvas")
    said = _Positions()
    playback = WindowPlayback(Player(long_clip, PlayOptions(audio=False), said))
    playback.open("rendercanvas.offscreen", size=Size(160, 120))
    try:
        _draw(playback)
        _draw(playback)
        assert said.said[-1].endswith(f" / {format_time(float(LONG_S))}"), said.said
        playback._on_key({"key": " "})
        _draw(playback)
        assert said.said[-1] == f"0:00 / {format_time(float(LONG_S))} (paused)"
        playback._on_key({"key": "ArrowUp"})
        _draw(playback)
        _draw(playback)
        assert said.said[-1] == f"1:00 / {format_time(float(LONG_S))} (paused)"
        time.sleep(1.2)
        _draw(playback)
        assert said.said[-1].startswith("1:00 / ")  # paused, it holds
    finally:
        _close(playback)


class _Counts(pipeline.Progress):
    """Records the total the player's line starts with and the counts it says."""

    def __init__(self) -> None:
        self.totals: list[int | None] = []
        self.counts: list[int] = []

    def start(self, total: int | None) -> None:
        self.totals.append(total)

    def update(self, frames: int) -> None:
        self.counts.append(frames)


@pytest.mark.vulkan
@pytest.mark.parametrize(("suffix", "total"), [(".mkv", None), (".mp4", 90)])
def test_the_terminal_line_counts_a_variable_rate_files_frames_only_where_known(
    tmp_path: Path, suffix: str, total: int | None
) -> None:
    """A variable-frame-rate file of 90 frames said '122/122 frames' (its duration times its average
    rate); a total is said only where it is known, the container's count (MP4) or a constant rate's
    (test_window_faults' Matroska file), else the frames alone."""
    from tests.test_window_faults import _drive

    pytest.importorskip("rendercanvas")
    clip = make_clip(tmp_path / f"vfr{suffix}", frames=90, vfr=True).path
    counts = _Counts()
    playback = WindowPlayback(Player(clip, PlayOptions(audio=False, speed=4.0), counts))
    playback.open("rendercanvas.offscreen", size=Size(160, 120))
    try:
        _drive(playback, 3.0)  # 4.1 s at 4x: to the end
        assert playback.ended or playback.canvas.get_closed()
    finally:
        _close(playback)
    assert counts.totals == [total]
    assert counts.counts and max(counts.counts) <= 90, counts.counts[-5:]
    from alpha2.apps.player import play

    offscreen = _Counts()  # --offscreen's line too
    play(clip, PlayOptions(audio=False, offscreen=True, hwaccel="none"), progress=offscreen)
    assert offscreen.totals == [total]


def test_rich_status_line_says_the_position_in_80_columns() -> None:
    out = io.StringIO()
    shown = pipeline.RichProgress("play", out, time_left=False)
    shown._progress.console.width = 80  # (a terminal of 80 columns)
    shown.start(108000)
    shown.update(1234)
    shown.set_position("0:41 / 1:00:00 (paused)")
    shown.close(ended=False)
    last = [line for line in out.getvalue().splitlines() if line.strip()][-1]
    assert last.rstrip().endswith("0:41 / 1:00:00 (paused)") and len(last) <= 80, last
    assert "0:00:0" not in last  # no elapsed time beside it
    out = io.StringIO()
    counted = pipeline.RichProgress("play", out, time_left=False)
    counted.start(None)  # no count known: the frames alone ('45/?' said nothing more)
    counted.update(45)
    counted.close(ended=False)
    last = [line for line in out.getvalue().splitlines() if line.strip()][-1]
    assert " 45 frames" in last and "/?" not in last, last


@pytest.mark.vulkan
def test_l_sets_an_a_b_loop_as_mpv(long_clip: str) -> None:
    """mpv's l sets A, then B, then clears the A-B loop (L loops the file); l looped the whole file."""
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": " "})
        playback.seek(10.0)
        _draw(playback)
        playback._on_key({"key": "l"})
        assert playback.osd.current_message == "A-B loop: A 0:10" and not playback.loop
        playback.seek(12.0)
        _draw(playback)
        playback._on_key({"key": "l"})
        assert playback.osd.current_message == "A-B loop: 0:10 - 0:12"
        playback._on_key({"key": " "})  # play on from B: back to A, again and again
        seen: list[float] = []
        end = time.monotonic() + 4.5
        while time.monotonic() < end:
            _draw(playback)
            if playback.shown_pts is not None:
                seen.append(playback.shown_pts)
            time.sleep(1 / 60)
        assert min(seen) >= 10.0 - 1e-6 and max(seen) < 13.0, seen
        assert sum(b < a for a, b in itertools.pairwise(seen)) >= 2, seen  # back to A, twice at least
        playback._on_key({"key": "l"})
        assert playback.osd.current_message == "A-B loop: off" and playback.ab_loop is None
    finally:
        _close(playback)
    assert any(line.startswith("l / L") and "A-B loop" in line for line in help_lines(PLAYER_BINDINGS))


@pytest.mark.vulkan
def test_a_paused_window_with_nothing_moving_is_not_redrawn(long_clip: str) -> None:
    """Paused, with no message on screen and no stats, nothing changes: the window waits for input, as
    mpv idles (it drew 4 times a second, 3-4 % of a core on lavapipe); a message brings the timed draws
    back while it fades, and input is answered at once."""
    playback = _playback(long_clip)
    ticks: list[float] = []
    tick = playback._tick

    def counted() -> None:
        ticks.append(time.monotonic())
        tick()

    playback._tick = counted  # type: ignore[method-assign]
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": " "})
        playback.osd.clear_message()
        _draw(playback)
        time.sleep(1.0)
        assert ticks == []
        playback._on_key({"key": "]"})  # 'Speed: 1.25x' on screen, fading: drawn on a timer again
        _draw(playback)
        time.sleep(0.6)
        assert len(ticks) >= 1
    finally:
        _close(playback)


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["--start", "3"], "unknown option --start; mpv's --start is --at here"),
        (["--start=3"], "unknown option --start; mpv's --start is --at here"),
        (["--mute"], "unknown option --mute; mpv's --mute is --volume 0 here"),
        (["--loop-file"], "unknown option --loop-file; mpv's --loop-file is --loop here"),
        (["--keep-open"], "unknown option --keep-open; no --keep-open here: the player quits after"),
        (["--sub-file", "a.srt"], "unknown option --sub-file; mpv's --sub-file is --sub here"),
        (["--fs"], "unknown option --fs; no --fs here: f or a double click goes fullscreen"),
    ],
)
def test_mpv_options_are_answered_with_the_players_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: list[str], said: str
) -> None:
    """mpv's options on 'alpha2 play': --start was answered 'did you mean --stats?', the others 'unknown
    option' alone."""
    with pytest.raises(SystemExit) as exit_info:
        main(["play", str(tmp_path / "in.mp4"), *words])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"alpha2: error: {said}" in err, err


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["play", "in.mp4"], "unknown option --start; mpv's --start is --at here"),
        (["transcode", "in.mp4", "out.mp4"], "unknown option --start; --start is --from here"),
        (["batch", "in.mp4", "--out", "out"], "unknown option --start; --start is --from here"),
    ],
)
def test_start_is_answered_with_the_commands_own_option(
    capsys: pytest.CaptureFixture[str], command: list[str], said: str
) -> None:
    """The hint table held one entry an option name, gated on an option of the player's: 'alpha2
    transcode --start 3' was answered '(alpha2 play has --stats)'; each command now says its own."""
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--start", "3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"alpha2: error: {said}" in err, err
    assert "--stats" not in err


def test_a_playlist_interrupted_closes_its_bar_as_unfinished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in a playlist's window closed the file's bar as a finished run: rich printed its line
    again under the '^C' the terminal echoed ('48/120 ... (paused)' then '49/120 ... (paused)'); one
    file's play closes it as unfinished, and so does the list now."""
    from alpha2.apps import player as player_module
    from alpha2.apps.cli import Interrupted

    class _CtrlC:
        def __init__(self, player: Player, *, playlist: object = None) -> None:
            self.player = player

        def run(self, canvas_module: str = "") -> None:
            raise Interrupted()

    closed: list[bool] = []

    class _Bar(pipeline.Progress):
        def close(self, completed: bool = True, *, ended: bool = True) -> None:
            closed.append(completed)

    a = make_clip(tmp_path / "a.mkv", frames=3).path
    b = make_clip(tmp_path / "b.mkv", frames=3).path
    monkeypatch.setattr(player_module, "_window_class", lambda: _CtrlC)
    monkeypatch.setattr(player_module, "window_unavailable_reason", lambda environ=None: None)
    with pytest.raises(Interrupted):
        player_module.play_list([a, b], PlayOptions(audio=False), progress=_Bar)
    assert closed == [False]


def test_a_damaged_file_is_said_damaged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file with bits flipped in its middle played with its frames smeared (concealed) and a packet
    left out, and the player said nothing ('played flipped.mp4: 118 frames'); mpv's terminal shows
    FFmpeg's decode errors. The line, --stats and --json say what the decoder met."""
    clip = make_clip(tmp_path / "clean.mp4", width=320, height=180, frames=30, gop=10).path
    damaged = flip_bits(clip, str(tmp_path / "damaged.mp4"), count=60, skip=4000)
    # The software decoder's concealment (NVDEC skips the packet instead: 'failed to decode and was
    # skipped', said too).
    assert main(["play", damaged, "--offscreen", "--no-audio", "--hwaccel", "none"]) == 0
    err = capsys.readouterr().err
    assert "damaged input: " in err and "corrupt frame" in err, err
    assert main(["play", clip, "--offscreen", "--no-audio", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "damaged" not in err
    data = json.loads(out[out.index("{") :])
    assert data["decode"] == {
        "corrupt_frames_kept": 0,
        "corrupt_frames_skipped": 0,
        "decode_errors": 0,
        "truncated": False,
    }


@pytest.mark.parametrize("paused", [False, True])
def test_the_key_help_stays_above_the_subtitle(paused: bool) -> None:
    """? over a subtitle at 640x360: the help's box reached down over the subtitle, which showed through
    its last lines ('?  this help', 'q, Esc  quit') and made them unreadable; it now ends above it
    (and above the time, as before)."""
    osd = Osd(clock=lambda: 100.0)
    osd.show_help = True
    window = Size(640, 360)
    view = OsdView(
        10.0,
        60.0,
        paused=paused,
        subtitle="Hello, this is the first subtitle line\nand a second line with «quotes»",
        help=help_lines(PLAYER_BINDINGS),
    )
    layers = {layer.key: layer for layer in osd.layers(window, view)}
    helped, sub = layers["help"].rect, layers["subtitle"].rect
    assert helped.y + helped.height <= sub.y, (helped, sub)
    if paused:
        assert sub.y + sub.height <= layers["time"].rect.y


@pytest.mark.vulkan
def test_a_sound_alone_has_a_status_line_and_idles_paused(tmp_path: Path) -> None:
    """A file without video ('alpha2 play song.ogg'): the terminal had no line at all (mpv's says 'A:
    0:03 / 1:00'), and the paused window drew its level at 60 Hz, 14 % of a core on lavapipe."""
    pytest.importorskip("rendercanvas")
    song = make_audio_only(tmp_path / "song.mka", seconds=3.0)
    said = _Positions()
    run = Player(song, PlayOptions(audio=False), said)
    playback = AudioOnlyPlayback(run)
    ticks: list[float] = []
    tick = playback._tick

    def counted() -> None:
        ticks.append(time.monotonic())
        tick()

    playback._tick = counted  # type: ignore[method-assign]
    playback.open("rendercanvas.offscreen")
    try:
        playback.canvas.draw()
        assert said.said and said.said[-1].endswith(" / 0:03"), said.said
        playback._on_key({"key": " "})
        playback.canvas.draw()
        assert said.said[-1].endswith(" / 0:03 (paused)"), said.said
        assert playback._update_mode == "ondemand"  # drawn on input, not 60 times a second
        time.sleep(0.6)
        assert ticks == []  # nothing on screen moves
    finally:
        playback._finish(1.0)
        run.close()


@pytest.mark.vulkan
def test_a_sound_alone_plays_at_speed_and_says_it_has_no_audio_delay(tmp_path: Path) -> None:
    """'alpha2 play song.ogg --speed 2 --audio-delay 0.2': the speed from the start, and the delay, which
    has no picture to delay the sound against, said in the window rather than ignored."""
    pytest.importorskip("rendercanvas")
    song = make_audio_only(tmp_path / "song.mka", seconds=3.0)
    run = Player(song, PlayOptions(audio=False, speed=2.0, audio_delay_s=0.2), pipeline.Progress())
    playback = AudioOnlyPlayback(run)
    playback.open("rendercanvas.offscreen")
    try:
        assert playback.clock is not None and playback.clock.speed == 2.0
        assert playback.osd.current_message == "A-V delay: not in a sound-only window"
        before = playback.clock.now()
        time.sleep(0.3)
        assert playback.clock.now() - before == pytest.approx(0.6, abs=0.15)
    finally:
        playback._finish(1.0)
        run.close()


@pytest.mark.vulkan
def test_ctrl_plus_and_minus_say_where_the_audio_delay_does_not_apply(tmp_path: Path) -> None:
    """Ctrl+- / Ctrl++ did nothing in the window of a sound alone and in a wall, said nowhere; they say
    why there is no delay there."""
    pytest.importorskip("rendercanvas")
    song = make_audio_only(tmp_path / "song.mka", seconds=3.0)
    run = Player(song, PlayOptions(audio=False), pipeline.Progress())
    playback = AudioOnlyPlayback(run)
    playback.open("rendercanvas.offscreen")
    try:
        playback.canvas.draw()
        playback._on_key({"key": "=", "modifiers": ("Control", "Shift")})
        assert playback.osd.current_message == "A-V delay: not in a sound-only window"
        playback.osd.clear_message()
        playback._on_key({"key": "-", "modifiers": ("Control",)})
        assert playback.osd.current_message == "A-V delay: not in a sound-only window"
    finally:
        playback._finish(1.0)
        run.close()
    listed = WindowPlayback.__new__(WindowPlayback)  # a playlist's file without video
    listed.__dict__.update(osd=Osd(), clock=None, audio_delay_s=0.0, audio_only=True, cover_art=False)
    listed.add_audio_delay(0.1)
    assert listed.osd.current_message == "A-V delay: 100 ms (for the videos: this file is sound only)"
    from alpha2.api.devices import open_device
    from alpha2.api.streams import StreamGroup
    from alpha2.apps.wall_window import WallWindow
    from tests.test_wall_window import play_stats_of

    tiles = [make_clip(tmp_path / f"{name}.mkv", width=64, height=48, frames=6).path for name in "ab"]
    device = open_device("none")
    group = StreamGroup(tiles, device=device, hwaccel="none")
    window = WallWindow(group, play_stats_of(tiles))
    try:
        window.open("rendercanvas.offscreen", size=Size(200, 200))
        window.canvas.draw()
        window._on_key({"key": "-", "modifiers": ("Control",)})
        assert window.osd.current_message == "A-V delay: not in a video wall"
    finally:
        window.finish()
        group.close()
        device.close()


def test_rich_status_line_of_a_sound_says_the_position_once() -> None:
    out = io.StringIO()
    shown = pipeline.RichProgress("play", out, time_left=False)
    shown._progress.console.width = 80
    shown.start_seconds(60.0)
    shown.update_seconds(3.0, 10)
    shown.set_position("0:03 / 1:00 (paused)")
    shown.close(ended=False)
    last = [line for line in out.getvalue().splitlines() if line.strip()][-1]
    assert last.rstrip().endswith(" 0:03 / 1:00 (paused)") and len(last) <= 80, last
    assert " of " not in last and "0:00:0" not in last, last  # no 'done' column, no elapsed time


@pytest.mark.vulkan
def test_p_and_a_right_click_pause_and_capital_p_shows_progress_as_mpv(long_clip: str) -> None:
    """mpv's p and right click pause and play on, its P shows the progress; p went to the previous file
    (of a single file: nothing), P too, and a right click did nothing."""
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": "p"})
        _draw(playback)
        assert playback.paused
        playback._on_key({"key": "p"})
        assert not playback.paused
        playback._on_pointer_down({"button": 2, "x": 10.0, "y": 10.0})
        assert playback.paused
        playback._on_pointer_down({"button": 2, "x": 10.0, "y": 10.0})
        assert not playback.paused
        playback._on_double_click({"button": 2})  # a quick second right click: no fullscreen
        assert not playback.fullscreen
        playback.osd._active_until = float("-inf")
        playback._on_key({"key": "P", "modifiers": ("Shift",)})
        assert playback.osd.showing_bar(playback.paused)
    finally:
        _close(playback)
    lines = help_lines(PLAYER_BINDINGS)
    assert any(line.startswith("space, p") for line in lines)
    assert any(line.startswith("> / <, Enter") for line in lines)


@pytest.mark.vulkan
def test_shift_arrows_seek_one_and_five_seconds_as_mpv(long_clip: str) -> None:
    """mpv's Shift+Right / Left seek 1 s, Shift+Up / Down 5 s; with Shift held they went 5 s and 60 s."""
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": " "})
        playback.seek(20.0)
        _draw(playback)
        for key, at in (("ArrowRight", 21.0), ("ArrowUp", 26.0), ("ArrowDown", 21.0), ("ArrowLeft", 20.0)):
            playback._on_key({"key": key, "modifiers": ("Shift",)})
            _draw(playback)
            _draw(playback)
            assert playback.shown_pts == pytest.approx(at, abs=0.5), key
    finally:
        _close(playback)
    assert any("(Shift: 1 s)" in line for line in help_lines(PLAYER_BINDINGS))


_CUES = """1
00:00:02,000 --> 00:00:03,000
first

2
00:00:03,000 --> 00:00:05,000
second
"""


@pytest.fixture(scope="module")
def subbed_clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 6 s clip at 1 fps with a sidecar subtitle file: 'first' from 2 to 3 s, 'second' from 3 to 5 s."""
    root: Path = tmp_path_factory.mktemp("mpv_sub_keys")
    (root / "subbed.srt").write_text(_CUES, encoding="utf-8")
    return make_clip(root / "subbed.mkv", width=64, height=48, frames=6, rate=1, gop=2).path


@pytest.mark.vulkan
def test_v_hides_the_subtitles_and_z_delays_them_as_mpv(subbed_clip: str) -> None:
    """mpv's v hides and shows the subtitles, z / Z move them 0.1 s earlier / later (sub-delay); here v
    and z did nothing, and Z was taken for nothing either."""
    playback = _playback(subbed_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": " "})
        assert playback.subtitles is not None and playback.subtitles.selected is not None
        assert playback.subtitles.selected.wait(10)
        playback.seek(2.95)
        _draw(playback)
        assert playback._osd_view().subtitle == "first"
        playback._on_key({"key": "v"})
        assert playback.osd.current_message == "Subtitles hidden"
        assert playback._osd_view().subtitle is None
        playback._on_key({"key": "v"})
        assert playback.osd.current_message == "Subtitles visible"
        assert playback._osd_view().subtitle == "first"
        playback._on_key({"key": "z"})  # earlier: at 2.95 s the cue of 3.05 s shows
        assert playback.osd.current_message == "Sub delay: -100 ms"
        assert playback._osd_view().subtitle == "second"
        playback._on_key({"key": "Z", "modifiers": ("Shift",)})
        playback._on_key({"key": "Z", "modifiers": ("Shift",)})
        playback._on_key({"key": "Z", "modifiers": ("Shift",)})
        assert playback.osd.current_message == "Sub delay: 200 ms"
        assert playback._osd_view().subtitle == "first"  # later: the cue of 2.75 s
        playback.seek(2.1)
        _draw(playback)
        assert playback._osd_view().subtitle is None  # 'first' not yet: it comes at 2.2 s
        assert any("delay 200 ms" in line for line in playback._stats_lines())
    finally:
        _close(playback)
    lines = help_lines(PLAYER_BINDINGS)
    assert any(line.startswith("j / v") for line in lines)
    assert any(line.startswith("z / Z") and "subtitle delay" in line for line in lines)


@pytest.mark.vulkan
def test_mpv_speed_delay_and_sub_visibility_options_hold_from_the_first_frame(
    subbed_clip: str, tmp_path: Path
) -> None:
    """mpv's --speed, --audio-delay, --sub-delay and --sub-visibility=no on 'alpha2 play' were answered
    'no --speed here: [ / ] set it in the window'; they are options now, in the window from the start and
    from file to file of a playlist, as the keys' values are."""
    pytest.importorskip("rendercanvas")
    from alpha2.apps.cli import build_parser
    from alpha2.apps.player import options_from_args

    words = ["play", subbed_clip, "--speed", "1.5", "--audio-delay", "0.2", "--sub-delay", "-0.5"]
    options = options_from_args(build_parser(words).parse_args([*words, "--sub-visibility=no"]))
    assert (options.speed, options.audio_delay_s, options.sub_delay_s, options.sub_visible) == (
        1.5,
        0.2,
        -0.5,
        False,
    )
    words = ["play", subbed_clip, "--no-sub-visibility", "--sub-delay", "0.2", "--speed", "2"]
    words += ["--audio-delay", "-0.3"]
    options = options_from_args(build_parser(words).parse_args(words))
    assert options.sub_visible is False
    second = make_clip(tmp_path / "second.mkv", width=64, height=48, frames=6, rate=1).path
    from alpha2.api.devices import open_device

    device = open_device(options.hwaccel, gpu_copy=False)  # the playlist's, as play_list's
    playlist = Playlist(
        [subbed_clip, second], lambda name: Player(name, options, pipeline.Progress(), device=device)
    )
    playback = WindowPlayback(playlist.make_player(subbed_clip), playlist=playlist)
    try:
        playback.open("rendercanvas.offscreen", size=Size(320, 180))
        _draw(playback)
        _draw(playback)
        assert playback.clock is not None
        assert playback.clock.speed == 2.0 and playback.scheduler.speed == 2.0
        playback._on_key({"key": " "})
        assert playback.subtitles is not None and playback.subtitles.selected is not None
        assert playback.subtitles.selected.wait(10)
        playback.seek(3.1)
        _draw(playback)
        assert playback._osd_view().subtitle is None  # hidden from the start, the track chosen
        playback._on_key({"key": "v"})
        assert playback._osd_view().subtitle == "first"  # 0.2 s later: the cue of 2.9 s
        assert any("delay 200 ms" in line for line in playback._stats_lines())
        assert any("A-V delay -300 ms" in line for line in playback._stats_lines())
        assert playback._next_file()
        _draw(playback)
        _draw(playback)
        assert playback.clock is not None and playback.clock.speed == 2.0
        assert playback.sub_delay_s == 0.2
    finally:
        _close(playback)
        device.close()


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["--speed", "5"], "argument --speed: the speed is 0.25 to 4"),
        (["--speed", "0.1"], "argument --speed: the speed is 0.25 to 4"),
        (["--audio-delay", "soon"], "argument --audio-delay: seconds, e.g. 0.2 or -0.5"),
        (["--sub-visibility", "maybe"], "argument --sub-visibility: yes or no"),
        (["IN", "--speed", "2", "--wall"], "--speed is for one file or a playlist"),
        (["--sub-delay", "-0.5", "--snapshot", "a.png"], "--sub-delay is for the player's window"),
    ],
)
def test_mpv_speed_and_delay_options_refuse_what_they_cannot_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: list[str], said: str
) -> None:
    clip = make_clip(tmp_path / "in.mp4", frames=2).path
    code: object
    try:
        code = main(["play", clip, *(clip if word == "IN" else word for word in words)])
    except SystemExit as exit_info:
        code = exit_info.code
    assert code in (1, 2)
    err = capsys.readouterr().err
    assert f"alpha2: error: {said}" in err, err


@pytest.mark.vulkan
def test_ctrl_w_quits_as_mpv(long_clip: str) -> None:
    """mpv's Ctrl+w quits, as q; it did nothing (and w alone still does nothing)."""
    assert key_name({"key": "w", "modifiers": ("Control",)}) == "Ctrl+w"
    assert key_name({"key": "W", "modifiers": ("Control", "Shift")}) == "Ctrl+w"
    assert key_name({"key": "ArrowRight", "modifiers": ("Control",)}) == "ArrowRight"  # as before
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        playback._on_key({"key": "w"})
        assert not playback.canvas.get_closed()
        playback._on_key({"key": "w", "modifiers": ("Control",)})
        assert playback.canvas.get_closed()
    finally:
        _close(playback)
    assert any(line.startswith("q, Esc, Ctrl+W") for line in help_lines(PLAYER_BINDINGS))


@pytest.mark.vulkan
def test_speed_keys_multiply_as_mpv_and_volume_steps_two_percent(long_clip: str) -> None:
    """mpv's [ / ] multiply the speed by 1/1.1 and 1.1, { / } by 0.5 and 2, Backspace resets it, and 9 / 0
    and the wheel step the volume by 2 %; here [ / ] went along 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 4,
    { / } did nothing and the volume went 10 % a step."""
    assert key_name({"key": "[", "modifiers": ("Shift",)}) == "{"
    assert key_name({"key": "]", "modifiers": ("Shift",)}) == "}"
    playback = _playback(long_clip)
    try:
        _draw(playback)
        _draw(playback)
        _draw(playback)
        assert playback.clock is not None
        playback._on_key({"key": "]"})
        assert playback.speed == pytest.approx(1.1) and playback.osd.current_message == "Speed: 1.10"
        assert playback.clock.speed == pytest.approx(1.1)
        playback._on_key({"key": "]"})
        assert playback.osd.current_message == "Speed: 1.21"
        playback._on_key({"key": "["})
        playback._on_key({"key": "["})
        assert playback.speed == 1.0
        playback._on_key({"key": "]", "modifiers": ("Shift",)})
        assert playback.speed == 2.0 and playback.osd.current_message == "Speed: 2.00"
        for _ in range(3):
            playback._on_key({"key": "]", "modifiers": ("Shift",)})
        assert playback.speed == 4.0 and playback.osd.current_message == "Speed: 4.00"  # the fastest
        playback._on_key({"key": "Backspace"})
        assert playback.speed == 1.0
        for _ in range(3):
            playback._on_key({"key": "[", "modifiers": ("Shift",)})
        assert playback.speed == 0.25 and playback.clock.speed == 0.25  # the slowest
        playback._on_key({"key": "0"})
        assert playback.osd.current_message == "Volume: 102%"
        playback._on_wheel({"dy": 1.0})
        playback._on_wheel({"dy": 1.0})
        assert playback.osd.current_message == "Volume: 98%"
    finally:
        _close(playback)
    lines = help_lines(PLAYER_BINDINGS)
    assert any(line.startswith("[ / ], { / }") and "x1.1" in line for line in lines)
    assert any(line.startswith("9 / 0, wheel") and "2 %" in line for line in lines)


def test_ctrl_plus_and_minus_delay_the_sound_against_the_picture(tmp_path: Path) -> None:
    """mpv's Ctrl++ / Ctrl+- move the audio delay 0.1 s: the sound is heard that much after the picture
    it goes with. They did nothing. The media clock (the picture's time) runs on; the samples handed to
    the device are those of the clock's time less the delay, also after a seek."""
    from tests.test_audio_tracks import _keys, _output, _settled

    assert key_name({"key": "=", "modifiers": ("Control", "Shift")}) == "Ctrl++"
    assert key_name({"key": "=", "modifiers": ("Control",)}) == "Ctrl++"
    assert key_name({"key": "-", "modifiers": ("Control",)}) == "Ctrl+-"
    song = make_audio_only(tmp_path / "song.mka", seconds=3.0)
    output, stream = _output(song)
    playback = WindowPlayback.__new__(WindowPlayback)  # the keys, on the clock alone
    keys = _keys(song, output)
    playback.__dict__.update(keys.__dict__, audio_delay_s=0.0, audio_only=False, cover_art=False)
    try:
        _settled(output)
        for _ in range(10):
            stream.play(480)
        before = output.now()
        assert before > 0.05
        for _ in range(2):
            playback._on_key({"key": "=", "modifiers": ("Control", "Shift")})
        assert playback.osd.current_message == "A-V delay: 200 ms"
        assert output.now() == pytest.approx(before, abs=0.01)  # the picture's time runs on
        _settled(output)
        stream.play(480)
        heard = output._anchor[0] if output._anchor is not None else None  # the samples just handed over
        assert heard == pytest.approx(before - 0.2, abs=0.01)
        assert output.now() - heard == pytest.approx(0.2, abs=0.015)
        output.seek(2.0)  # a seek: the picture at 2 s, the sound at 1.8 s
        _settled(output)
        stream.play(480)
        assert output._anchor is not None and output._anchor[0] == pytest.approx(1.8, abs=0.01)
        assert output.now() == pytest.approx(2.0, abs=0.015)
        output.pause()
        paused = output.now()
        playback._on_key({"key": "-", "modifiers": ("Control",)})
        assert playback.osd.current_message == "A-V delay: 100 ms"
        assert output.now() == pytest.approx(paused, abs=1e-6)  # paused, the picture stays
    finally:
        output.close()
    assert any(line.startswith("Ctrl+- / Ctrl++") for line in help_lines(PLAYER_BINDINGS))


@pytest.mark.vulkan
def test_the_audio_delay_keeps_the_frames_in_step_after_a_seek(audio_server: str, tmp_path: Path) -> None:
    """With sound (JACK), Ctrl++ twice: the frames follow the clock (the time heard plus 0.2 s), after a
    seek too, and the delay holds for the next clock."""
    from tests.media import make_av_clip

    clip = make_av_clip(tmp_path / "av.mp4", seconds=4.0)
    run = Player(clip, PlayOptions(hwaccel="none"), pipeline.Progress())
    playback = WindowPlayback(run)

    def drive(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end and not playback.canvas.get_closed():
            playback.canvas.draw()
            time.sleep(1 / 60)

    try:
        playback.open("rendercanvas.offscreen", size=Size(160, 90))
        drive(0.4)
        clock = playback.clock
        assert clock is not None and clock.kind.value == "audio", clock.reason
        playback._on_key({"key": "=", "modifiers": ("Control",)})
        playback._on_key({"key": "=", "modifiers": ("Control",)})
        drive(0.5)
        assert clock.now() - clock._heard() == pytest.approx(0.2, abs=0.005)  # type: ignore[attr-defined]
        playback.seek(2.0)
        drive(0.6)
        assert playback.shown_pts is not None and 2.0 <= playback.shown_pts < 3.0
        heard = clock._heard()  # type: ignore[attr-defined]
        assert abs(playback.shown_pts - (heard + 0.2)) < 0.1, (playback.shown_pts, heard)
        seeked = [s for s in playback.scheduler.segments if s.label == "seek"]
        assert seeked and seeked[-1].count > 5 and seeked[-1].mean_abs < 0.05, seeked
    finally:
        playback.finish(1.0)
        run.close()
