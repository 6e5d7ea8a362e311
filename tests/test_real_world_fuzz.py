"""A bounded fuzz of ``alpha2 transcode`` over damaged files, and SIGTERM / SIGHUP mid-transcode.

Each damaged input must give exit 0 with a valid output, or exit 1 with one ``alpha2: error:`` line;
never a traceback, never ``internal error``, never a file left behind.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import av
import pytest

from alpha2.apps import cli

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip, mkv_clusters, mp4_boxes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS_PER_CONTAINER = int(os.environ.get("ALPHA2_FUZZ_VARIANTS", "16"))


def _top_level_boxes(data: bytes) -> list[tuple[int, int]]:
    boxes, pos = [], 0
    while pos + 8 <= len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        if size < 8 or pos + size > len(data):
            break
        boxes.append((pos, pos + size))
        pos += size
    return boxes


def _swap(data: bytes, a: tuple[int, int], b: tuple[int, int]) -> bytes:
    (a0, a1), (b0, b1) = sorted([a, b])
    return data[:a0] + data[b0:b1] + data[a1:b0] + data[a0:a1] + data[b1:]


def _swapped_blocks(data: bytes, ext: str, rng: random.Random) -> bytes:
    """Swap two structural blocks: MP4 boxes, Matroska clusters, or runs of TS packets."""
    if ext == ".mp4":
        blocks = _top_level_boxes(data)
        moov = mp4_boxes(data, b"trak")
        if moov:
            blocks += [(p, p + int.from_bytes(data[p : p + 4], "big")) for p in moov]
    elif ext == ".mkv":
        blocks = mkv_clusters(data)
    else:
        count = len(data) // 188
        blocks = [(i * 188, (i + 4) * 188) for i in range(0, count - 4, 4)]
    blocks = [b for b in blocks if b[1] <= len(data)]
    if len(blocks) < 2:
        return data
    a, b = rng.sample(blocks, 2)
    if a[0] < b[1] and b[0] < a[1]:
        return data  # nested boxes: leave this one alone
    return _swap(data, a, b)


def damage(data: bytes, ext: str, rng: random.Random) -> tuple[str, bytes]:
    """One seeded damage: bit flips, a truncation, a zeroed block or swapped blocks."""
    kind = rng.choice(["flips", "truncate", "zero", "swap"])
    out = bytearray(data)
    if kind == "flips":
        for _ in range(rng.randrange(1, 60)):
            pos = rng.randrange(len(out))
            out[pos] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        out = out[: rng.randrange(1, len(out))]
    elif kind == "zero":
        start = rng.randrange(len(out))
        out[start : start + rng.randrange(16, 2048)] = bytes(min(len(out) - start, 2048))[
            : len(out[start : start + 2048])
        ]
    else:
        out = bytearray(_swapped_blocks(data, ext, rng))
    return kind, bytes(out)


@pytest.mark.parametrize("ext", [".mkv", ".mp4", ".ts"])
def test_fuzzed_inputs_keep_the_contract(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ext: str
) -> None:
    clip = make_clip(tmp_path / f"src{ext}", "h264", 64, 48, 12, audio=ext != ".ts")
    data = open(clip.path, "rb").read()
    rng = random.Random(f"alpha2-fuzz{ext}")
    work = tmp_path / "work"
    work.mkdir()
    for index in range(VARIANTS_PER_CONTAINER):
        kind, bad = damage(data, ext, rng)
        src = work / f"bad{index}{ext}"
        src.write_bytes(bad)
        out = work / f"out{index}.mkv"
        code = cli.main(["transcode", str(src), str(out), "--quiet"])
        err = capsys.readouterr().err
        what = f"variant {index} ({kind}) of {ext}: exit {code}, stderr {err!r}"
        assert "Traceback" not in err and "internal error" not in err, what
        if code == 0:
            with av.open(str(out)) as container:
                assert sum(1 for _ in container.decode(video=0)) >= 1, what
            out.unlink()
        else:
            lines = err.strip().splitlines()
            assert code == 1 and len(lines) == 1 and lines[0].startswith("alpha2: error: "), what
            assert not out.exists(), what
        src.unlink()
        assert list(work.iterdir()) == [], what


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_transcode_leaves_nothing_behind(tmp_path: Path, signum: int) -> None:
    clip = make_clip(tmp_path / "long.mkv", "h264", 320, 240, 240)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "alpha2.apps.cli",
            "transcode",
            clip.path,
            str(out_dir / "o.mkv"),
            "--preset",
            "veryslow",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while not any(".partial" in p.name for p in out_dir.iterdir()):
            assert proc.poll() is None, f"finished before the partial file appeared: {proc.communicate()}"
            assert time.monotonic() < deadline, "no partial output appeared"
            time.sleep(0.02)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, err
    lines = err.strip().splitlines()
    assert lines == [f"alpha2: terminated ({signal.Signals(signum).name})"], err
    assert list(out_dir.iterdir()) == []
