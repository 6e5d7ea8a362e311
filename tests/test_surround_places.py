"""Each channel of a 6.1 or wide 7.1 track encoded to Opus or AAC comes back where the note says.

Found by an outside pass: 6.1(back) (FL FR FC LFE BL BR BC) into Opus was taken as the same speakers as
Opus's 6.1 (FL FR FC LFE BC SL SR), but FFmpeg's resampler mixed BL and BR into back centre and left
SL and SR silent, with no word; AAC's 6.1 (and 6.1(back), 6.1(front), 7.1(wide), 7.1(wide-side)) went
into a program config element that FFmpeg reads back as '7 channels' ('8 channels') in no known place,
unsaid. Now 6.1(back) goes one for one into Opus's 6.1 (BL as SL, BR as SR), AAC gets 7.1 (the one
layout of more than 6 channels it reads back in place), and every mix is said channel by channel.

Each source channel holds a tone of its own; each decoded channel must hold exactly the tones of the
source channels the test names for it (none: silent).
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from alpha2.api.transcoder import TranscodeOptions, transcode
from alpha2.ffmpeg_bridge.channel_layouts import interleaved
from tests.media import channel_tones, make_channel_tones

RATE = 48_000


def _heard(path: str, source: str) -> tuple[str, list[tuple[str, set[str]]]]:
    """The decoded layout, and for each decoded channel (in order) the source channels whose tone it
    holds (above a tenth of the loudest tone anywhere)."""
    with av.open(path) as container:
        stream = container.streams.audio[0]
        parts = [interleaved(f)[0] for f in container.decode(stream)]
        layout = stream.codec_context.layout
    data = np.concatenate(parts).astype(np.float64)[RATE // 10 : RATE // 10 + int(RATE * 0.3)]
    spectra = np.abs(np.fft.rfft(data, axis=0))
    freqs = np.fft.rfftfreq(len(data), 1 / RATE)
    tones = channel_tones(source)
    at = {name: spectra[int(np.argmin(np.abs(freqs - hz)))] for name, hz in tones.items()}
    loudest = max(float(v.max()) for v in at.values())
    heard = [{n for n, v in at.items() if v[k] > 0.1 * loudest} for k in range(data.shape[1])]
    return str(layout.name), list(zip((str(c.name) for c in layout.channels), heard))


_FRONT = {"FL": {"FL"}, "FR": {"FR"}, "FC": {"FC"}, "LFE": {"LFE"}}
_WIDE = {"FL": {"FL", "FLC"}, "FR": {"FR", "FRC"}}


@pytest.mark.parametrize(
    ("layout", "ext", "encoded", "places", "said"),
    [
        # Opus: 6.1(back)'s surround pair is 6.1's (before: BL, BR mixed into BC, SL, SR silent, unsaid).
        (
            "6.1(back)",
            ".opus",
            "6.1",
            {**_FRONT, "BC": {"BC"}, "SL": {"BL"}, "SR": {"BR"}},
            "passed one for one as 6.1 (BL as SL, BR as SR",
        ),
        (
            "6.1(front)",
            ".opus",
            "6.1",
            {**_FRONT, **_WIDE, "FC": set(), "BC": set(), "SL": {"SL"}, "SR": {"SR"}},
            "mixed into 6.1 (FLC into FL, FRC into FR, FC+BC silent)",
        ),
        (
            "7.1(wide)",
            ".webm",
            "7.1",
            {**_FRONT, **_WIDE, "BL": {"BL"}, "BR": {"BR"}, "SL": set(), "SR": set()},
            "mixed into 7.1 (FLC into FL, FRC into FR, SL+SR silent)",
        ),
        (
            "7.1(wide-side)",
            ".opus",
            "7.1",
            {**_FRONT, **_WIDE, "BL": set(), "BR": set(), "SL": {"SL"}, "SR": {"SR"}},
            "mixed into 7.1 (FLC into FL, FRC into FR, BL+BR silent)",
        ),
        # AAC: 7.1, its one layout of 7 or 8 channels read back in place (before: '7 channels', unsaid).
        (
            "6.1",
            ".m4a",
            "7.1",
            {**_FRONT, "BL": {"BC"}, "BR": {"BC"}, "SL": {"SL"}, "SR": {"SR"}},
            "mixed into 7.1 (BC into BL+BR): aac's 6.1 reads back as 7 channels in no known place",
        ),
        (
            "6.1",
            ".mp4",
            "7.1",
            {**_FRONT, "BL": {"BC"}, "BR": {"BC"}, "SL": {"SL"}, "SR": {"SR"}},
            "BC into BL+BR",
        ),
        (
            "6.1(back)",
            ".mkv",
            "7.1",
            {**_FRONT, "BL": {"BL", "BC"}, "BR": {"BR", "BC"}, "SL": set(), "SR": set()},
            "mixed into 7.1 (BC into BL+BR, SL+SR silent)",
        ),
        (
            "6.1(front)",
            ".m4a",
            "7.1",
            {**_FRONT, **_WIDE, "FC": set(), "BL": set(), "BR": set(), "SL": {"SL"}, "SR": {"SR"}},
            "mixed into 7.1 (FLC into FL, FRC into FR, FC+BL+BR silent)",
        ),
        (
            "7.1(wide)",
            ".m4a",
            "7.1",
            {**_FRONT, **_WIDE, "BL": {"BL"}, "BR": {"BR"}, "SL": set(), "SR": set()},
            "mixed into 7.1 (FLC into FL, FRC into FR, SL+SR silent): aac's 7.1(wide) reads back as 8",
        ),
        (
            "7.1(wide-side)",
            ".mkv",
            "7.1",
            {**_FRONT, **_WIDE, "BL": set(), "BR": set(), "SL": {"SL"}, "SR": {"SR"}},
            "mixed into 7.1 (FLC into FL, FRC into FR, BL+BR silent)",
        ),
    ],
)
def test_each_channel_lands_where_the_note_says(
    tmp_path: Path, layout: str, ext: str, encoded: str, places: dict[str, set[str]], said: str
) -> None:
    src = make_channel_tones(tmp_path / "in.wav", layout)
    out = str(tmp_path / f"out{ext}")
    stats = transcode(src, out, TranscodeOptions())
    note = str(stats.encoder.get("audio"))
    assert said in note, note
    got_layout, heard = _heard(out, layout)
    assert got_layout == encoded, heard
    assert dict(heard) == places, heard
