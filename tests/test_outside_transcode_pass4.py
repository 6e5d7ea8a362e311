"""Faults an outside pass found in ``alpha2 transcode``'s stream choice, its progress count, and
``alpha2 batch``'s table, each pinned by what the outputs and the display really hold (read back with
PyAV, or the display's own numbers)."""

from __future__ import annotations

from pathlib import Path

import av
import pytest

from alpha2.api import pipeline
from alpha2.api.transcode_plan import StreamChoiceError
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps import cli
from alpha2.apps.batch import fold_name
from tests.test_transcode_streams_choice import _clip

Capsys = pytest.CaptureFixture[str]


def _streams(path: str) -> list[tuple[str, str | None]]:
    """Each audio and subtitle stream of the file at ``path``: its kind and language tag."""
    with av.open(path) as container:
        return [
            (s.type, s.metadata.get("language")) for s in container.streams if s.type in ("audio", "subtitle")
        ]


# -- 'und' chooses the untagged streams ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["in.mkv", "in.mp4"])
def test_und_chooses_the_untagged_streams_the_messages_call_und(tmp_path: Path, name: str) -> None:
    """The streams are listed as ``1 und (aac, 2 ch)`` (a Matroska stream with no tag, an MP4 one
    tagged ``und``): ``--audio-track und`` was refused with 'matches none of the 2 audio streams ...:
    0 eng (aac, 2 ch), 1 und (aac, 2 ch)'. It keeps them now, and only them."""
    src = _clip(tmp_path, name, audio=("eng", None), subtitles=(None, "eng"))
    out = str(tmp_path / "out.mkv")
    stats = transcode(src, out, TranscodeOptions(audio_tracks="und", subtitle_tracks="und"))
    assert _streams(out) == [("audio", None), ("subtitle", None)]
    choice = stats.as_dict()["stream_choice"]
    assert [(t["number"], t["language"]) for t in choice["audio"]["kept"]] == [(1, None)]
    assert [(t["number"], t["language"]) for t in choice["audio"]["dropped"]] == [(0, "eng")]
    assert [t["number"] for t in choice["subtitle"]["kept"]] == [0]


def test_und_on_the_command_line_and_a_file_with_every_stream_tagged(tmp_path: Path, capsys: Capsys) -> None:
    src = _clip(tmp_path, audio=(None, "jpn"), subtitles=())
    out = str(tmp_path / "out.mkv")
    assert cli.main(["transcode", src, out, "--audio-track", "und"]) == 0
    assert "audio 0 und kept; audio 1 jpn dropped (not chosen by --audio-track und)" in " ".join(
        line.strip() for line in capsys.readouterr().err.splitlines()
    )
    assert _streams(out) == [("audio", None)]
    # Every stream tagged: 'und' matches none, refused as any language is, naming them.
    tagged = _clip(tmp_path, "tagged.mkv", audio=("eng", "jpn"), subtitles=())
    with pytest.raises(StreamChoiceError, match=r"audio_tracks und matches none .* 0 eng .* 1 jpn"):
        transcode(tagged, str(tmp_path / "never.mkv"), TranscodeOptions(audio_tracks="und"))
    assert not (tmp_path / "never.mkv").exists()
    # 'und?' may match none: the audio is then all dropped, as ffmpeg's -map 0:a:m:language:und? does.
    transcode(tagged, out, TranscodeOptions(audio_tracks="und?"))
    assert _streams(out) == []


# -- the progress display's count of a cut ----------------------------------------------------------


class _Counted(pipeline.Progress):
    """Keeps what the display was told: the frames expected, and the last count."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.frames = 0

    def start(self, total: int | None) -> None:
        self.total = total

    def update(self, frames: int) -> None:
        self.frames = frames


@pytest.mark.parametrize(
    ("cut", "segments"),
    [
        ({"from_seconds": 0.3, "to_seconds": 0.8}, 1),
        ({"from_seconds": 0.3}, 1),
        ({"to_seconds": 0.5}, 1),
        ({"from_seconds": 0.1, "duration_seconds": 0.4}, 1),
        ({"from_seconds": 0.3, "to_seconds": 0.8}, 2),
    ],
)
def test_a_cut_of_a_video_that_starts_after_its_audio_counts_its_frames_right(
    tmp_path: Path, cut: dict[str, float], segments: int
) -> None:
    """The clip's video starts at 0.021 s, its audio at 0 (what --from and --to count from): the display
    said '16/15 frames' for --from 0.3 --to 0.8, its count of the cut made as if the video began at 0."""
    src = _clip(tmp_path, audio=("eng",), subtitles=())
    with av.open(src) as container:
        video = container.streams.video[0]
        assert video.start_time is not None and float(video.start_time * video.time_base) > 0.01
    progress = _Counted()
    out = str(tmp_path / "out.mkv")
    options = TranscodeOptions(segments=segments if segments > 1 else None, **cut)  # type: ignore[arg-type]
    stats = transcode(src, out, options, progress=progress)
    with av.open(out) as container:
        written = sum(1 for _ in container.decode(video=0))
    assert written == stats.frames
    assert progress.total == written, (progress.total, written)


# -- the batch table's names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "width", "lines"),
    [
        # A break near the start left a lone 'a.' or '-' on a line, the word after it cut all the same.
        (
            "a.bcdefghijklmnopqrstuvwxyz0123456789.mp4",
            16,
            ["a.bcdefghijklmno", "pqrstuvwxyz01234", "56789.mp4"],
        ),
        ("-abcdefghijklmnopqrstuvwxyz.mp4", 16, ["-abcdefghijklmno", "pqrstuvwxyz.mp4"]),
        # Where the part after the break fits a line of its own, the name still breaks there.
        ("clip_from_the_camera_2024.mp4", 16, ["clip_from_the_", "camera_2024.mp4"]),
        ("path/to/some dir/file name.mp4", 10, ["path/to/", "some dir/", "file name.", "mp4"]),
    ],
)
def test_a_name_folds_without_wasting_a_line(name: str, width: int, lines: list[str]) -> None:
    folded = fold_name(name, width).split("\n")
    assert folded == lines
    assert "".join(folded) == name
