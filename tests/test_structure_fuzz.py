"""Structure-aware fuzz of ``alpha2 transcode`` and ``alpha2 play --snapshot`` (tests/mutate.py).

The test encodes small clips with PyAV (H.264 in MP4, Matroska and MPEG-TS, raw H.264 and HEVC, AV1 in
IVF, and a hand-written Y4M), mutates what the demuxers and parsers trust (box sizes and sample tables,
EBML sizes and lacing, SPS / PPS fields, continuity counters and PES headers, OBU sizes and sequence
headers, IVF frame sizes, Y4M headers) and runs both commands on each mutated file in a subprocess
with a time limit. The contract, as for tests/test_real_world_fuzz.py: exit 0 (with a valid output) or
1 with one ``alpha2: error:`` line; no traceback, no ``internal error``, no signal, no file left behind,
no hang, and a bounded peak resident size. Each family also gets a file whose headers claim 8192x8192
pictures over a few kilobytes of data, which must be refused before anything that size is allocated.

Seeded: the same mutations each run. ``ALPHA2_FUZZ_N`` (default 5) mutations per family;
``ALPHA2_FUZZ_SEED`` changes the seed for longer runs.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import av
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import mutate
from media import encoder_available, make_clip

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUTATIONS = int(os.environ.get("ALPHA2_FUZZ_N", "5"))
SEED = os.environ.get("ALPHA2_FUZZ_SEED", "alpha2-structure-fuzz")
TIMEOUT_S = 30.0
"""Per command; a clip of a few frames takes well under a second here."""
PEAK_RSS_LIMIT = 1536 * 2**20
"""Peak resident size of one command on a mutated clip (a healthy run peaks near 200 MB here)."""
HUGE_PEAK_RSS_MARGIN = 64 * 2**20
"""How far above a healthy transcode's peak a command on a file claiming 8192x8192 may go: one such
picture is 96 MiB in 4:2:0 (256 MiB as RGBA), so refusing it before anything that size is allocated
keeps it under. FFmpeg's probing decoded one before the refusal (344 MB), until the bridge passed
``max_pixels`` to it."""

FAMILIES = {
    # name: (file name, codec, audio, mutator family in mutate.MUTATORS)
    "mp4": ("src.mp4", "h264", True, "mp4"),
    "mp4-hevc": ("src.mp4", "hevc", False, "mp4"),
    "mkv": ("src.mkv", "h264", True, "mkv"),
    "ts": ("src.ts", "h264", False, "ts"),
    "h264": ("src.h264", "h264", False, "h264"),
    "hevc": ("src.hevc", "hevc", False, "hevc"),
    "ivf": ("src.ivf", "av1", False, "ivf"),
    "y4m": ("src.y4m", "", False, "y4m"),
}

REGRESSIONS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    # What the fuzz found, kept as fixed cases: (source family, damage).
    # The snapshot's swscale path gave PyAV back a frame's time base of None: internal error.
    "ivf-frame-size-0": ("ivf", lambda data: mutate.ivf_with_frame_size(data, 1, 0)),
}


@dataclass(frozen=True)
class Run:
    """One finished command."""

    args: tuple[str, ...]
    code: int
    """Exit status; -N for signal N."""
    stderr: str
    peak_rss_bytes: int
    """The process's own high-water resident size (0 when it did not exit through Python)."""
    timed_out: bool
    seconds: float


# ``python -m alpha2`` that writes its VmHWM at exit. Not ``wait4``'s ru_maxrss: Linux carries the
# parent's high-water mark over the exec into the child's, so a child of a 400 MB pytest reads 400 MB.
_MEASURED_MAIN = """
import atexit, os, runpy, sys
def _high_water():
    with open("/proc/self/status") as status, open(os.environ["ALPHA2_FUZZ_HWM"], "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")))
atexit.register(_high_water)
sys.argv[0] = "alpha2"
runpy.run_module("alpha2", run_name="__main__", alter_sys=True)
"""


def run_cli(args: list[str], timeout_s: float = TIMEOUT_S) -> Run:
    """``python -m alpha2 ARGS`` with its peak resident size, killed after ``timeout_s``."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        hwm = os.path.join(folder, "hwm")
        env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
        env.update({"ALPHA2_FUZZ_HWM": hwm, "SVT_LOG": env.get("SVT_LOG", "1")})
        with open(os.path.join(folder, "err"), "w+b") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", _MEASURED_MAIN, *args],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
            timed_out = False
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                proc.kill()
                proc.wait()
            err.seek(0)
            text = err.read().decode("utf-8", "replace")
        try:
            peak = int(open(hwm).read().split()[1]) * 1024  # "VmHWM:   12345 kB"
        except (OSError, IndexError, ValueError):
            peak = 0
    return Run(tuple(args), proc.returncode, text, peak, timed_out, time.monotonic() - start)


def _decodes(path: Path) -> int:
    """The output's video frames; its audio frames where it holds sound alone (a mutation that leaves
    FFmpeg only the audio: alpha2 transcode writes that, as ffmpeg does)."""
    with av.open(str(path)) as container:
        if not container.streams.video and container.streams.audio:
            return sum(1 for _ in container.decode(audio=0))
        return sum(1 for _ in container.decode(video=0))


def contract_violations(run: Run, output: Path, work: Path, allowed: set[str], rss_limit: int) -> list[str]:
    """What ``run`` did against the contract (empty: nothing)."""
    bad = []
    if run.timed_out:
        bad.append(f"no exit after {TIMEOUT_S:.0f} s")
    elif run.code not in (0, 1):
        bad.append(f"exit {run.code}")
    if "Traceback" in run.stderr or "internal error" in run.stderr:
        bad.append("a traceback or an internal error")
    if run.peak_rss_bytes > rss_limit:
        bad.append(f"peak resident size {run.peak_rss_bytes / 2**20:.0f} MiB")
    if run.code == 1:
        lines = [line for line in run.stderr.strip().splitlines() if line.startswith("alpha2: error: ")]
        if len(lines) != 1:
            bad.append("not one 'alpha2: error:' line")
        if output.exists():
            bad.append("an output left after the failure")
    elif run.code == 0 and not run.timed_out:
        if not output.exists():
            bad.append("exit 0 without an output")
        elif output.suffix == ".png":
            if output.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
                bad.append("the snapshot is not a PNG")
        else:
            try:
                if _decodes(output) < 1:
                    bad.append("an output without a frame")
            except av.FFmpegError as exc:
                bad.append(f"an output that does not decode ({exc})")
    left = sorted(p.name for p in work.iterdir() if p.name not in allowed | {output.name})
    if left:
        bad.append(f"left behind: {left}")
    return bad


def check_both(src: Path, what: str, rss_limit: int = PEAK_RSS_LIMIT) -> tuple[list[str], list[Run]]:
    """Transcode ``src`` and take a snapshot of it; the violations (each naming ``what``) and the runs."""
    work = src.parent
    found, runs = [], []
    commands = {
        "transcode": (
            work / f"{src.stem}.out.mkv",
            ["transcode", str(src), str(work / f"{src.stem}.out.mkv")],
        ),
        "play": (work / f"{src.stem}.png", ["play", "--snapshot", str(work / f"{src.stem}.png"), str(src)]),
    }
    for name, (output, args) in commands.items():
        run = run_cli([*args, "--quiet"] if name == "transcode" else args)
        runs.append(run)
        for problem in contract_violations(run, output, work, {src.name}, rss_limit):
            tail = run.stderr.strip().splitlines()[-3:]
            found.append(f"{what}: alpha2 {name}: {problem} (exit {run.code}; stderr ends {tail})")
        output.unlink(missing_ok=True)
    return found, runs


def make_source(folder: Path, family: str) -> bytes:
    name, codec, audio, _ = FAMILIES[family]
    path = folder / name
    if family == "y4m":
        path.write_bytes(mutate.y4m(64, 48, 4, random.Random(0)))
    else:
        if not encoder_available(codec):
            pytest.skip(f"this PyAV cannot encode {codec}")
        make_clip(path, codec, 64, 48, 8, audio=audio, gop=4)
    return path.read_bytes()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_structure_mutations_keep_the_contract(tmp_path: Path, family: str) -> None:
    data = make_source(tmp_path, family)
    rng = random.Random(f"{SEED}-{family}")
    cases = []
    for index in range(MUTATIONS):
        stack = 1 + index % 3  # 1, 2 or 3 mutations at once
        what, bad = mutate.mutate(FAMILIES[family][3], data, rng, stack=stack)
        folder = tmp_path / f"m{index}"
        folder.mkdir()
        src = folder / f"in{index}{Path(FAMILIES[family][0]).suffix}"
        src.write_bytes(bad)
        cases.append((src, f"{family} #{index} ({what})"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda case: check_both(*case), cases))
    problems = [p for found, _ in results for p in found]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", sorted(REGRESSIONS))
def test_found_cases_keep_the_contract(tmp_path: Path, case: str) -> None:
    family, damage = REGRESSIONS[case]
    data = make_source(tmp_path, family)
    src = tmp_path / "case" / f"{case}{Path(FAMILIES[family][0]).suffix}"
    src.parent.mkdir()
    src.write_bytes(damage(data))
    problems, _ = check_both(src, case)
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def healthy_peak_rss_bytes(tmp_path_factory: pytest.TempPathFactory) -> int:
    """Peak resident size of ``alpha2 transcode`` on a healthy small clip (this machine's baseline)."""
    folder = tmp_path_factory.mktemp("healthy")
    make_source(folder, "mp4")
    run = run_cli(["transcode", str(folder / "src.mp4"), str(folder / "out.mkv"), "--quiet"])
    assert run.code == 0, run.stderr
    return run.peak_rss_bytes


@pytest.mark.parametrize("family", sorted(f for f in FAMILIES if FAMILIES[f][3] in mutate.HUGE))
def test_a_small_file_claiming_8192x8192_is_refused_before_allocating(
    tmp_path: Path, family: str, healthy_peak_rss_bytes: int
) -> None:
    data = make_source(tmp_path, family)
    huge = mutate.HUGE[FAMILIES[family][3]](data)
    src = tmp_path / "huge" / f"huge{Path(FAMILIES[family][0]).suffix}"
    src.parent.mkdir()
    src.write_bytes(huge)
    with av.open(str(src)) as container:  # the lie is read as meant
        stream = container.streams.video[0]
        assert (stream.codec_context.width, stream.codec_context.height) == (8192, 8192)
    limit = healthy_peak_rss_bytes + HUGE_PEAK_RSS_MARGIN
    problems, runs = check_both(src, f"{family} claiming 8192x8192 ({len(huge)} bytes)", limit)
    assert not problems, "\n".join(problems)
    for run in runs:  # refused, saying how to allow it
        assert run.code == 1 and "8192x8192" in run.stderr and "--max-pixels" in run.stderr, run
