"""Faults found by an outside pass over ``alpha2 play`` in a window under Xvfb with sound on the JACK
dummy server, as a person who plays with mpv every day would meet them, each with the check that it
stays fixed."""

from __future__ import annotations

from pathlib import Path

import av
import pytest

from alpha2.api.audio import open_audio
from tests.media import flip_bits, make_audio_only


def _refused_otherwise(path: str) -> tuple[int, float]:
    """How many of the file's audio packets FFmpeg's decoder refuses with an error other than invalid
    data (the AAC decoder's EPERM, or a code of no name), and where its last decoded frame ends, every
    refused packet left out."""
    refused, end = 0, 0.0
    with av.open(path) as container:
        for packet in container.demux(container.streams.audio[0]):
            try:
                frames = packet.decode()
            except av.error.InvalidDataError:
                continue
            except av.error.FFmpegError:
                refused += 1
                continue
            for frame in frames:
                end = max(end, float(frame.time or 0.0) + frame.samples / frame.sample_rate)
    return refused, end


def test_a_damaged_aac_sound_plays_on_past_packets_refused_with_any_error(tmp_path: Path) -> None:
    """A damaged MP4's AAC decoder refused packets with EPERM ('Operation not permitted'), which the
    reader raised (as MediaNotFoundError, or MediaFormatError for a code of no name) where it skips
    packets refused as invalid data: the player's feeder then sought the sound ahead, doubling, and the
    picture, following the clock, leapt from 0:03 to 0:16 of a 20 s clip. Such packets are now left
    out and counted as FFmpeg's and mpv's do, the gap filled with silence, and the sound keeps its time
    to its end."""
    clean = make_audio_only(tmp_path / "tone.mp4", seconds=3.0)
    damaged = None
    for seed in range(1, 40):  # the flips that make the decoder answer so, found without a player
        candidate = flip_bits(clean, str(tmp_path / f"damaged{seed}.mp4"), count=60, seed=seed, skip=1000)
        try:
            if _refused_otherwise(candidate)[0]:
                damaged = candidate
                break
        except av.error.FFmpegError:
            continue  # damaged in its header: it does not open
    if damaged is None:
        pytest.skip("no flip of bits made this FFmpeg's AAC decoder refuse a packet but as invalid data")
    refused, decodable_end = _refused_otherwise(damaged)
    with open_audio(damaged) as sound:
        end = 0.0
        for block in sound:
            end = block.pts_seconds + block.frames / block.sample_rate
        assert sound.damaged_packets >= refused
    assert decodable_end > 1.0 and end == pytest.approx(decodable_end, abs=0.05)


SRT = "1\n00:00:00,100 --> 00:00:05,000\n{text}\n"


def test_subtitles_named_with_a_language_next_to_the_video_are_found(tmp_path: Path) -> None:
    """``film.en.srt`` and ``film.pt-BR.ass`` next to ``film.mkv`` (how most downloaded subtitles are
    named) were not found, only ``film.srt`` (j had one track); mpv's default --sub-auto=exact loads them
    all. Other files with a subtitle extension are still left alone."""
    from alpha2.api.subtitles import open_subtitles, sidecar_files

    video = tmp_path / "film.mkv"
    video.write_bytes(b"")  # only its name matters for the search
    for name, text in [
        ("film.srt", "plain"),
        ("film.en.srt", "english"),
        ("film.pt-BR.srt", "portugues"),
        ("film.part2.srt", "not a language"),
        ("filmography.en.srt", "another name"),
        ("other.en.srt", "another film"),
    ]:
        (tmp_path / name).write_text(SRT.format(text=text), encoding="utf-8")
    found = [Path(path).name for path in sidecar_files(video)]
    assert found == ["film.srt", "film.en.srt", "film.pt-BR.srt"]
    subtitles = open_subtitles(video)
    try:
        assert [track.label for track in subtitles.tracks] == found
        assert subtitles.selected is not None and subtitles.selected.wait(10)
        assert subtitles.text_at(1.0) == "plain"
        english = subtitles.cycle()
        assert english is not None and english.wait(10) and subtitles.text_at(1.0) == "english"
    finally:
        subtitles.close()


def test_sound_packets_left_out_are_said_in_the_players_report() -> None:
    """The sound's decoder leaves damaged packets out (silence in their place) and counted them, but the
    player's report said only the video's damage: a file whose sound was half silence played 'clean'."""
    from alpha2.api.playback import PlayStats

    stats = PlayStats(input="damaged.mp4", mode="window")
    assert stats.damage_note() is None
    stats.clock = {"kind": "audio", "reason": "the sound's clock", "damaged_packets": 2, "decode_errors": 1}
    assert stats.damage_note() == "3 sound packets failed to decode and were skipped (silence in its place)"
    stats.clock = {"kind": "audio", "reason": "the sound's clock", "damaged_packets": 1, "decode_errors": 0}
    stats.decode = {"decode_errors": 2}
    assert stats.damage_note() == (
        "2 packets failed to decode and were skipped; "
        "1 sound packet failed to decode and was skipped (silence in its place)"
    )
