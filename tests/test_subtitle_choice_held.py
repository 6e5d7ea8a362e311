"""A subtitle stream ``--subtitle-track`` names that the output's container cannot hold is refused before
anything is written (it was dropped in a note and the run ended 0: ``--subtitle-track eng`` into .avi
wrote the film without its subtitles; ffmpeg refuses such an explicit ``-map`` too). A word with ``?``
('where it has one') still lets the container leave it out, said; default runs drop as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from alpha2.api.transcode_plan import StreamChoiceError
from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.apps import cli
from alpha2.ffmpeg_bridge.side_streams import subtitle_not_held
from tests.test_transcode_streams_choice import _clip, _kinds


def test_which_containers_hold_which_subtitles() -> None:
    assert subtitle_not_held("matroska", "hdmv_pgs_subtitle") is None
    assert subtitle_not_held("mp4", "subrip") is None  # converted to mov_text
    assert subtitle_not_held("webm", "ass") is None  # converted to WebVTT
    assert subtitle_not_held("mp4", "dvd_subtitle") is None  # MP4 holds DVD pictures
    assert "holds no subtitles" in str(subtitle_not_held("avi", "subrip"))
    assert "text subtitles only" in str(subtitle_not_held("mp4", "hdmv_pgs_subtitle"))
    assert "text subtitles only" in str(subtitle_not_held("webm", "dvd_subtitle"))


def test_a_chosen_subtitle_the_output_cannot_hold_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _clip(tmp_path, subtitles=("eng", "fre"))
    out = str(tmp_path / "out.avi")
    with pytest.raises(
        StreamChoiceError, match=r"subtitle_tracks eng chose the subtitle stream 0 eng"
    ) as caught:
        transcode(src, out, TranscodeOptions(subtitle_tracks="eng"))
    assert "the avi container holds no subtitles" in str(caught.value)
    assert caught.value.option == "--subtitle-track" and len(caught.value.tracks) == 2
    assert not os.path.exists(out)
    assert cli.main(["transcode", src, out, "--subtitle-track", "1"]) == 1
    err = capsys.readouterr().err
    assert "chose the subtitle stream 1 fre" in err and "--no-subtitles" in err, err
    assert "Traceback" not in err and not os.path.exists(out)


def test_optional_words_and_the_default_still_drop_with_a_note(tmp_path: Path) -> None:
    src = _clip(tmp_path, subtitles=("eng",))
    out = str(tmp_path / "out.avi")
    for options in (TranscodeOptions(subtitle_tracks="eng?"), TranscodeOptions()):
        stats = transcode(src, out, options)
        assert _kinds(out, "subtitle") == []
        assert any("holds no subtitles" in d.reason for d in stats.dropped_streams), stats.dropped_streams
    stats = transcode(src, str(tmp_path / "out.mp4"), TranscodeOptions(subtitle_tracks="eng"))
    assert _kinds(str(tmp_path / "out.mp4"), "subtitle") == [("mov_text", "eng")]
