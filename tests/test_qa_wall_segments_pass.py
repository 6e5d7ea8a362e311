"""An outside QA pass of the wall, the segmented transcode, probe and sample: each test is a fault found
and fixed, with its input made here by PyAV."""

from __future__ import annotations

from pathlib import Path

import av

from alpha2.apps.sample import write_sample
from alpha2.gpu.geometry import Size

# -- sample ---------------------------------------------------------------------------------------------


def test_sample_writes_ffv1(tmp_path: Path) -> None:
    """'alpha2 sample x.mkv --codec ffv1' failed with 'ffv1 takes no crf: it is lossless; leave crf out',
    though the user gave no crf: the sample passed its own crf 18 to every encoder."""
    out = tmp_path / "x.mkv"
    result = write_sample(str(out), duration_s=0.2, size=Size(64, 48), codec="ffv1", audio=False)
    assert result.codec == "ffv1"
    with av.open(str(out)) as container:
        assert container.streams.video[0].codec_context.name == "ffv1"
        assert len(list(container.decode(video=0))) == result.frames == 6
