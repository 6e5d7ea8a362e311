"""Fixed costs on this machine, as ratios against FFmpeg doing the same (issue 14, item 4).

* ``alpha2 transcode --size`` against the same scale + libx264 (same preset and crf): the ``ffmpeg``
  binary when installed, else a plain PyAV loop through the ``scale`` filter;
* ``alpha2 play --snapshot`` of one frame against ``ffmpeg -frames:v 1 x.png`` (else PyAV: decode one
  frame, write a PNG);
* ``alpha2 --help`` against ``python -c "import av"``.

Each is a fresh process; the median of ``--repeat`` runs (wall time, and the CPU time the process and its
threads used, which a machine shared with other jobs disturbs less). The reference tool used is printed:
the ``ffmpeg`` binary when on PATH, else PyAV. alpha2 runs with its bytecode compiled (as an installed
package has it): ``PYTHONDONTWRITEBYTECODE`` is dropped for the children after one warm-up run. Targets:
transcode <= 1.3, snapshot <= 3, help <= 1.

    python benchmarks/bench_fixed_costs.py [--size 1280x720] [--seconds 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PY = sys.executable
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PYAV_TRANSCODE = """
import sys, av
src, dst, w, h = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with av.open(src) as inp, av.open(dst, "w") as out:
    ins = inp.streams.video[0]
    ins.thread_type = "AUTO"
    st = out.add_stream("libx264", rate=ins.average_rate)
    st.width, st.height, st.pix_fmt = w, h, "yuv420p"
    st.options = {"preset": "medium", "crf": "23"}
    g = av.filter.Graph()
    chain = [g.add_buffer(template=ins), g.add("scale", f"{w}:{h}"), g.add("buffersink")]
    for a, b in zip(chain, chain[1:]):
        a.link_to(b)
    g.configure()
    for frame in inp.decode(ins):
        g.push(frame)
        for p in st.encode(g.pull()):
            out.mux(p)
    for p in st.encode(None):
        out.mux(p)
"""

_PYAV_SNAPSHOT = """
import sys, av
with av.open(sys.argv[1]) as inp, av.open(sys.argv[2], "w", format="image2") as out:
    frame = next(inp.decode(video=0)).reformat(format="rgb24")
    st = out.add_stream("png")
    st.width, st.height, st.pix_fmt = frame.width, frame.height, "rgb24"
    for p in [*st.encode(frame), *st.encode(None)]:
        out.mux(p)
"""


ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPATH": ROOT,
    "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"),
}


def measure(command: list[str], repeat: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + system) of ``repeat`` runs after a warm-up."""
    subprocess.run(command, check=True, capture_output=True, env=ENV, cwd=ROOT)
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=ENV, cwd=ROOT)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1280x720", help="the clip's size (default 1280x720)")
    parser.add_argument("--out-size", default="640x360", help="the scaled size (default 640x360)")
    parser.add_argument("--seconds", type=float, default=4.0, help="the clip's length (default 4 s, 30 fps)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="alpha2_fixed_")
    clip = os.path.join(root, "clip.mp4")
    alpha2 = [PY, "-m", "alpha2"]
    subprocess.run(
        [*alpha2, "sample", clip, "--duration", str(args.seconds), "--size", args.size, "--no-audio"],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": ROOT},
        cwd=ROOT,
    )
    w, h = args.out_size.split("x")
    ffmpeg = shutil.which("ffmpeg")
    out = os.path.join(root, "out.mp4")
    ours = [*alpha2, "transcode", clip, out, "--size", args.out_size, "--hwaccel", "none", "--quiet"]
    ours += ["--no-audio", "--preset", "medium", "--crf", "23"]
    if ffmpeg:
        ref_name = "ffmpeg -vf scale"
        ref = [ffmpeg, "-y", "-v", "error", "-i", clip, "-vf", f"scale={w}:{h}", "-c:v", "libx264"]
        ref += ["-preset", "medium", "-crf", "23", "-an", out]
    else:
        ref_name = "PyAV scale filter + libx264"
        ref = [PY, "-c", _PYAV_TRANSCODE, clip, out, w, h]
    png = os.path.join(root, "x.png")
    snap = [*alpha2, "play", clip, "--snapshot", png, "--hwaccel", "none"]
    if ffmpeg:
        snap_name, snap_ref = (
            "ffmpeg -frames:v 1",
            [ffmpeg, "-y", "-v", "error", "-i", clip, "-frames:v", "1", png],
        )
    else:
        snap_name, snap_ref = "PyAV one frame to PNG", [PY, "-c", _PYAV_SNAPSHOT, clip, png]
    rows = [
        ("transcode --size", ours, ref_name, ref, 1.3),
        ("play --snapshot", snap, snap_name, snap_ref, 3.0),
        ("alpha2 --help", [*alpha2, "--help"], "import av", [PY, "-c", "import av"], 1.0),
    ]
    print(
        f"clip {args.size}, {args.seconds:g} s at 30 fps; median of {args.repeat}; reference tool: "
        + (f"the ffmpeg binary ({ffmpeg})" if ffmpeg else "PyAV (no ffmpeg binary on PATH)")
    )
    for name, command, ref_label, reference, target in rows:
        mine, mine_cpu = measure(command, args.repeat)
        theirs, theirs_cpu = measure(reference, args.repeat)
        ratio = mine / theirs
        verdict = "met" if ratio <= target else "NOT met"
        print(
            f"{name:<18} {mine:7.3f} s (cpu {mine_cpu:6.3f})   {ref_label:<28} {theirs:7.3f} s "
            f"(cpu {theirs_cpu:6.3f})   ratio {ratio:5.2f}, cpu ratio {mine_cpu / theirs_cpu:5.2f} "
            f"(target <= {target:g}: {verdict})"
        )
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
