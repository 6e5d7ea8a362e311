"""What a person used to ffmpeg or mpv types to choose streams is answered with transcode's own option:
-map, -sn, --alang, --slang, --aid, --sid (an outside pass: --sid was 'did you mean --sdr?')."""

from __future__ import annotations

import pytest

from alpha2.apps.cli import main


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["-map", "0:a:1"], "--audio-track and --subtitle-track keep streams"),
        (["-sn"], "ffmpeg's -sn is --no-subtitles here"),
        (["--alang", "jpn"], "mpv's --alang is --audio-track here"),
        (["--slang", "eng"], "mpv's --slang is --subtitle-track here"),
        (["--aid", "2"], "--audio-track N keeps the audio stream N, counted from 0"),
        (["--sid", "2"], "--subtitle-track N keeps the subtitle stream N, counted from 0"),
    ],
)
def test_stream_choice_words_of_ffmpeg_and_mpv_are_answered(
    words: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["transcode", "in.mkv", "out.mp4", *words])
    assert exit_.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert said in err and "did you mean" not in err, err


@pytest.mark.parametrize(
    ("word", "said"),
    [
        ("0:a:1", "(ffmpeg's 0:a:1 is --audio-track 1 here)"),
        ("a:1?", "(ffmpeg's a:1? is --audio-track 1? here)"),
        ("0:s:2", "(ffmpeg's 0:s:2 is --subtitle-track 2 here)"),
        ("1:a:0", "(ffmpeg's 1:a:0 names input 1; transcode takes one input, ffmpeg's 0)"),
    ],
)
def test_an_ffmpeg_stream_specifier_is_read_back_as_the_option(word: str, said: str) -> None:
    """ffmpeg's 0:a:1 typed as the value names the number to give; 1:a:0 (a second input's stream) was
    said to be --audio-track 0, the first input's (an outside pass)."""
    from alpha2.api.transcode_choices import track_specs
    from alpha2.apps.transcode_cli import OPTION_NAMES
    from alpha2.gpu.errors import InvalidInputError
    from alpha2.gpu.option_names import option_names

    with pytest.raises(InvalidInputError) as refused, option_names(OPTION_NAMES):
        track_specs(word, "audio")
    assert said in refused.value.message, refused.value.message
