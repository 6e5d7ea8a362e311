"""Each channel of a surround track encoded to Opus comes back in its own place.

FFmpeg's libopus wrapper, left to its default, hands libopus 5 and 7 channels under a stream map that
does not match the family 1 table it writes in the header: a 6.1 track came out of ``alpha2 transcode
in.wav out.opus`` with front centre at back centre, back centre at side left and side left at front
centre (5.0: centre at back right), read so by FFmpeg's Opus decoder and libopus's alike; 4.0, which
alpha2 keeps in 6.1 with LFE and the side pair silent, too. Found by an outside pass.

Each source channel holds a tone of its own frequency; each decoded channel's strongest frequency
must be its own (an LFE tone is low, as libopus codes that channel with a narrow band).
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


def _places(path: str, decoder: str) -> tuple[str, dict[str, int]]:
    """The decoded layout, and each channel's strongest frequency in Hz (0 where it is silent),
    decoded with FFmpeg's ``decoder``."""
    with av.open(path) as container:
        stream = container.streams.audio[0]
        assert stream.codec_context.name == "opus"
        cc: av.AudioCodecContext = av.CodecContext.create(decoder, "r")  # type: ignore[assignment]
        cc.extradata = stream.codec_context.extradata
        cc.sample_rate = RATE
        parts = [interleaved(f)[0] for p in container.demux(stream) if p.size for f in cc.decode(p)]
        layout = cc.layout
    data = np.concatenate(parts).astype(np.float64)[RATE // 10 :]  # past the encoder's ramp-up
    spectra = np.abs(np.fft.rfft(data, axis=0))
    freqs = np.fft.rfftfreq(len(data), 1 / RATE)
    loud = spectra.max(axis=0) > 0.01 * spectra.max()
    found = [round(float(freqs[k])) if on else 0 for k, on in zip(spectra.argmax(axis=0), loud)]
    return str(layout.name), dict(zip((str(c.name) for c in layout.channels), found))


@pytest.mark.parametrize(
    ("layout", "ext", "encoded", "decoder"),
    [
        ("6.1", ".opus", "6.1", "opus"),
        ("6.1", ".opus", "6.1", "libopus"),
        ("5.0", ".opus", "5.0", "opus"),
        ("4.0", ".webm", "6.1", "opus"),  # kept in 6.1, LFE+SL+SR silent
        ("7.1", ".opus", "7.1", "opus"),  # right before the fix too
        ("5.1", ".webm", "5.1", "opus"),  # right before the fix too
    ],
)
def test_each_channel_comes_back_in_its_place(
    tmp_path: Path, layout: str, ext: str, encoded: str, decoder: str
) -> None:
    src = make_channel_tones(tmp_path / "in.wav", layout)
    out = str(tmp_path / f"out{ext}")
    transcode(src, out, TranscodeOptions())
    got_layout, places = _places(out, decoder)
    assert got_layout == encoded
    wanted = {name: channel_tones(layout).get(name, 0) for name in places}
    assert all(abs(places[n] - wanted[n]) <= 3 for n in places), f"wanted {wanted}, got {places}"
