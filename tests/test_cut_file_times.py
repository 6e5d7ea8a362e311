"""Times in the missing tail of a cut file: frame_at / frames_at say the file ends early, where they gave
the last frame decoded for any time up to the duration its container announces; files that are whole
(variable frame rate, starting late, beside longer sound) keep their last frame on display to their end."""

from __future__ import annotations

from pathlib import Path

import av
import pytest

import alpha2
from alpha2.api.errors import EndOfStreamError
from tests.media import make_clip, make_late_video_with_sound, mux_silence, opus_mono, truncate

EARLY = r"the file ends early at 0\.\d{3} s of the 1\.000 s its container announces"


@pytest.mark.parametrize(("ext", "codec", "audio"), [("mkv", "h264", False), ("webm", "vp9", True)])
def test_a_time_in_a_cut_files_missing_tail_says_the_file_ends_early(
    tmp_path: Path, ext: str, codec: str, audio: bool
) -> None:
    clip = make_clip(tmp_path / f"clip.{ext}", codec=codec, frames=30, audio=audio)
    cut = truncate(clip.path, str(tmp_path / f"cut.{ext}"), 0.5)
    with alpha2.open(cut, hwaccel="none") as source:
        shown = [round(f.pts_seconds - source.info.start_seconds, 3) for f in source]
        last, step = shown[-1], shown[-1] - shown[-2]
        assert last < 0.8, shown  # cut: the container still announces 1 s
        # Within the last frame's display time (and one frame interval on), still the last frame.
        with source.frame_at(last + step * 1.5) as frame:
            assert frame.pts_seconds - source.info.start_seconds == pytest.approx(last, abs=1e-3)
        for asked in (last + step * 2.5, 0.9, 0.999):
            with pytest.raises(EndOfStreamError, match=f"no frame is on display at {asked} s: {EARLY}"):
                source.frame_at(asked)
        with pytest.raises(EndOfStreamError, match=f"at 0.9 s: {EARLY}"):
            source.frames_at([0.0, 0.9])
        assert source.frame_at(0.0).pts_seconds == pytest.approx(source.info.start_seconds)  # goes on
        source.seek(0.9)
        assert list(source) == []  # a seek into the tail ends iteration, as past any end


def _assert_last_frame_lasts_to_the_end(path: str) -> None:
    """frame_at / frames_at give the last frame for times from it to the stream's announced end."""
    with alpha2.open(path, hwaccel="none") as source:
        start, end = source.info.start_seconds, source.info.duration_seconds
        assert end is not None
        shown = [f.pts_seconds - start for f in source]
        last = shown[-1]
        times = [last, (last + end) / 2, end - 0.002]
        for asked in times:
            with source.frame_at(asked) as frame:
                assert frame.pts_seconds - start == pytest.approx(last, abs=1e-3), (path, asked)
        frames = source.frames_at([0.0, *times])
        assert [round(f.pts_seconds - start, 3) for f in frames] == [round(shown[0], 3)] + [
            round(last, 3)
        ] * 3
        for frame in frames:
            frame.release()
        with pytest.raises(EndOfStreamError, match="long; ask for an earlier time"):
            source.frame_at(end + 0.5)


def test_whole_files_keep_their_last_frame_to_their_end(tmp_path: Path) -> None:
    _assert_last_frame_lasts_to_the_end(make_clip(tmp_path / "cfr.mkv", frames=30).path)
    _assert_last_frame_lasts_to_the_end(make_clip(tmp_path / "cfr.mp4", frames=30, audio=True).path)
    _assert_last_frame_lasts_to_the_end(make_clip(tmp_path / "vfr.mkv", frames=16, vfr=True).path)


def test_late_starting_video_and_video_beside_longer_sound_are_not_cut(tmp_path: Path) -> None:
    late = make_late_video_with_sound(tmp_path / "late.mkv")
    _assert_last_frame_lasts_to_the_end(late)
    clip = make_clip(tmp_path / "v.mkv", frames=30, rate=30)
    for name, seconds in (("long_audio.mkv", 3.0), ("long_audio.webm", 3.0)):
        src = str(tmp_path / name)
        with av.open(clip.path) as inp, av.open(src, "w") as out:
            template = inp.streams.video[0]
            if name.endswith(".webm"):
                video = out.add_stream("libvpx-vp9", rate=30)
                video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
                sound = opus_mono(out)
                for frame in inp.decode(template):
                    frame.pict_type = av.video.frame.PictureType.NONE
                    out.mux(video.encode(frame))
                out.mux(video.encode(None))
            else:
                video = out.add_stream_from_template(template)
                sound = opus_mono(out)
                for packet in inp.demux():
                    if packet.dts is not None:
                        packet.stream = video
                        out.mux(packet)
            mux_silence(out, sound, seconds)
        with alpha2.open(src, hwaccel="none") as source:
            end = source.info.duration_seconds
            assert end is not None and end < 1.2, (name, end)  # the video's own, not the sound's 3 s
        _assert_last_frame_lasts_to_the_end(src)
