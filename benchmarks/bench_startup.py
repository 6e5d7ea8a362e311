"""Start-up of ``alpha2 play CLIP`` in a window against a plain PyAV + wgpu + rendercanvas player, on Xvfb.

Times from the launch of each process (``subprocess.Popen``):
- ``window``: the window's appearance on the X display (its title found among the root window's children,
  polled every 5 ms through Xlib; the benchmark's own clock);
- ``first frame``: the first frame drawn, as the player itself reports it (``first_frame_s`` of ``--json``,
  seconds from the process's start, which the kernel records: ``/proc/self/stat``).

The plain player (``--child plain``) is the same work written without alpha2: PyAV decodes the first frame,
wgpu opens a device, rendercanvas a glfw window of the frame's size, three plane textures are written and
one sampler shader draws them into the window; it plays ``--frames`` frames and reports the same way.
``--baseline-tree DIR`` adds ``alpha2 play`` run from another checkout (a git worktree of an earlier commit),
so that before and after are alternated in one run. Each player is launched once untimed first (the
bytecode (written even where ``PYTHONDONTWRITEBYTECODE`` is set), the file cache, and alpha2's cache of
wgpu-py's declarations, as every later start finds them).
Also times ``--help`` of ``alpha2`` and of each subcommand (the median of ``--help-rounds`` fresh processes,
the commands taken in turn, after a warm-up run that leaves the bytecode compiled), where 100 ms is the
aim; ``--only-help`` stops there.

    python benchmarks/bench_startup.py [--clip FILE] [--rounds 5] [--frames 30] [--help-rounds 10]
        [--baseline-tree DIR] [--no-plain] [--no-help]
    python benchmarks/bench_startup.py --only-help

Needs Xvfb (apt-get install xvfb) and the window extra (rendercanvas, glfw), except with ``--only-help``.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


def _commands() -> tuple[str, ...]:
    """Every subcommand of ``alpha2`` (the command line's own list)."""
    from alpha2.apps.cli import _SUBCOMMANDS

    return tuple(command for command, _module, _help in _SUBCOMMANDS)


def _since_start() -> float:
    """Seconds since this process started (the kernel's start time, to its 10 ms tick)."""
    with open("/proc/self/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------------
# the plain player


def plain_window(clip: str, frames: int) -> dict[str, Any]:
    """Open a window and play ``frames`` frames of ``clip``: PyAV, wgpu and rendercanvas, nothing else."""
    import av
    import rendercanvas.auto
    import wgpu
    from bench_play_cost import plain_pipeline

    container = av.open(clip)
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    decoded = container.decode(stream)
    frame = next(decoded)
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync()
    canvas = rendercanvas.auto.RenderCanvas(
        title=f"{os.path.basename(clip)} plain", size=(frame.width, frame.height), update_mode="continuous"
    )
    context = canvas.get_context("wgpu")
    surface_format = context.get_preferred_format(adapter)
    context.configure(device=device, format=surface_format)
    layout, pipeline = plain_pipeline(wgpu, device, surface_format)
    usage = wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST
    sizes = [(frame.width, frame.height)] + [((frame.width + 1) // 2, (frame.height + 1) // 2)] * 2
    planes = [device.create_texture(size=(w, h, 1), format="r8unorm", usage=usage) for w, h in sizes]
    sampler = device.create_sampler(mag_filter="linear", min_filter="linear")
    group = device.create_bind_group(
        layout=layout,
        entries=[
            *({"binding": i, "resource": p.create_view()} for i, p in enumerate(planes)),
            {"binding": 3, "resource": sampler},
        ],
    )
    state: dict[str, Any] = {"frame": frame, "shown": 0, "first": None}

    def draw() -> None:
        current = state["frame"]
        if current is None or state["shown"] >= frames:
            canvas.close()
            return
        for plane, texture in zip(current.planes, planes):
            w, h = texture.size[0], texture.size[1]
            device.queue.write_texture(
                {"texture": texture},
                plane,
                {"offset": 0, "bytes_per_row": plane.line_size, "rows_per_image": h},
                (w, h, 1),
            )
        encoder = device.create_command_encoder()
        rp = encoder.begin_render_pass(
            color_attachments=[
                {
                    "view": context.get_current_texture().create_view(),
                    "clear_value": (0, 0, 0, 1),
                    "load_op": "clear",
                    "store_op": "store",
                }
            ]
        )
        rp.set_pipeline(pipeline)
        rp.set_bind_group(0, group)
        rp.draw(3, 1, 0, 0)
        rp.end()
        device.queue.submit([encoder.finish()])
        if state["first"] is None:
            state["first"] = _since_start()
        state["shown"] += 1
        state["frame"] = next(decoded, None)

    canvas.request_draw(draw)
    rendercanvas.auto.loop.run()
    container.close()
    return {"first_frame_s": state["first"], "frames": state["shown"]}


# ---------------------------------------------------------------------------------------------------
# the X display


class _Display:
    """Xlib through ctypes: find a top-level window by a part of its title."""

    def __init__(self, name: str) -> None:
        x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        x11.XOpenDisplay.restype = ctypes.c_void_p
        x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        x11.XDefaultRootWindow.restype = ctypes.c_ulong
        x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        x11.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong, *[ctypes.c_void_p] * 4]
        x11.XFetchName.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p]
        x11.XFree.argtypes = [ctypes.c_void_p]
        x11.XInternAtom.restype = ctypes.c_ulong
        x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        x11.XGetWindowProperty.argtypes = [
            ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long, ctypes.c_long, ctypes.c_int,
            ctypes.c_ulong, *[ctypes.c_void_p] * 5,
        ]  # fmt: skip
        handler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
        self._ignore = handler(lambda display, event: 0)  # a window gone between two calls: not fatal
        x11.XSetErrorHandler(self._ignore)
        self._x11 = x11
        self._display = x11.XOpenDisplay(name.encode())
        if not self._display:
            raise RuntimeError(f"cannot open X display {name}")
        self._root = x11.XDefaultRootWindow(self._display)
        self._net_wm_name = x11.XInternAtom(self._display, b"_NET_WM_NAME", 0)

    def _title(self, window: int) -> bytes:
        """The window's UTF-8 title (_NET_WM_NAME, which glfw sets), else its WM_NAME."""
        x11, display = self._x11, self._display
        kind, size = ctypes.c_ulong(), ctypes.c_int()
        items, after = ctypes.c_ulong(), ctypes.c_ulong()
        data = ctypes.c_char_p()
        refs = (ctypes.byref(kind), ctypes.byref(size), ctypes.byref(items), ctypes.byref(after))
        status = x11.XGetWindowProperty(
            display, window, self._net_wm_name, 0, 256, 0, 0, *refs, ctypes.byref(data)
        )
        if status == 0 and data.value:
            title = bytes(data.value)
            x11.XFree(data)
            return title
        name = ctypes.c_char_p()
        if x11.XFetchName(display, window, ctypes.byref(name)) and name.value:
            title = bytes(name.value)
            x11.XFree(name)
            return title
        return b""

    def find(self, title_part: str) -> bool:
        x11, display = self._x11, self._display
        root, parent = ctypes.c_ulong(), ctypes.c_ulong()
        children = ctypes.POINTER(ctypes.c_ulong)()
        count = ctypes.c_uint()
        if not x11.XQueryTree(
            display, self._root, ctypes.byref(root), ctypes.byref(parent), ctypes.byref(children),
            ctypes.byref(count),
        ):  # fmt: skip
            return False
        try:
            for i in range(count.value):
                if title_part.encode() in self._title(children[i]):
                    return True
        finally:
            if children:
                x11.XFree(children)
        return False


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """A virtual X display of its own (the first free number from 90)."""
    if shutil.which("Xvfb") is None:
        raise SystemExit("Xvfb is not installed (apt-get install xvfb)")
    for number in range(90, 200):
        if os.path.exists(f"/tmp/.X{number}-lock") or os.path.exists(f"/tmp/.X11-unix/X{number}"):
            continue
        server = subprocess.Popen(
            ["Xvfb", f":{number}", "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not os.path.exists(f"/tmp/.X11-unix/X{number}"):
            time.sleep(0.02)
        time.sleep(0.1)
        return server, f":{number}"
    raise SystemExit("no free X display number")


def launch(
    command: list[str], display: _Display, env: dict[str, str], title: str, cwd: Path = ROOT
) -> dict[str, Any]:
    """Run ``command`` in ``cwd``; the seconds until its window appeared (polled) and its own JSON report."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    window_s = None
    while process.poll() is None and window_s is None:
        if display.find(title):
            window_s = time.perf_counter() - start
        else:
            time.sleep(0.005)
    out, err = process.communicate(timeout=120)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{err.decode()}")
    text = out.decode()
    report = json.loads(text[text.index("{") :])
    return {"window_s": window_s, "first_frame_s": report.get("first_frame_s")}


def _wall(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True, cwd=ROOT, env=env)
    return time.perf_counter() - start


def time_help(rounds: int) -> None:
    """Print the wall time of ``python -m alpha2 [COMMAND] --help`` for each command and of ``python -c
    pass``: the median (and best) of ``rounds`` fresh processes, the commands taken in turn so that a
    busy moment hits all alike."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    commands = [
        [sys.executable, "-m", "alpha2", *argv, "--help"] for argv in ([], *([c] for c in _commands()))
    ]
    baseline = [sys.executable, "-c", "pass"]
    for command in commands:  # warm-up: the file cache, and the bytecode written
        _wall(command, env)
    times: dict[int, list[float]] = {i: [] for i in range(len(commands) + 1)}
    for _ in range(rounds):
        for i, command in enumerate([*commands, baseline]):
            times[i].append(_wall(command, env))
    print(f"--help, {rounds} fresh processes each (load average {os.getloadavg()[0]:.1f}):")
    for i, command in enumerate([*commands, baseline]):
        label = " ".join(["alpha2", *command[3:]]) if i < len(commands) else "python -c pass"
        ms = [t * 1000 for t in times[i]]
        print(
            f"  {label:<26} median {statistics.median(ms):4.0f} ms (best {min(ms):.0f}, worst {max(ms):.0f})"
        )


def _summary(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "n/a"
    return f"median {statistics.median(got):.3f} s (best {min(got):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", help="play this file (default: a generated 1280x720 clip with sound)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--help-rounds", type=int, default=10, help="fresh processes per --help timing")
    parser.add_argument("--no-help", action="store_true", help="skip the --help timings")
    parser.add_argument("--only-help", action="store_true", help="only the --help timings (no Xvfb)")
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        metavar="DIR",
        help="also time alpha2 play from this checkout (e.g. a git worktree of the commit before), "
        "alternated with this tree's in the same run",
    )
    parser.add_argument("--no-plain", action="store_true", help="skip the plain PyAV + wgpu player")
    parser.add_argument("--child", choices=("plain",), help=argparse.SUPPRESS)
    parser.add_argument("clips", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "plain":
        print(json.dumps(plain_window(args.clips[0], args.frames)))
        return
    if not args.no_help:
        time_help(args.help_rounds)
    if args.only_help:
        return
    with tempfile.TemporaryDirectory() as tmp:
        clip = args.clip
        if clip is None:
            from alpha2.apps.sample import write_sample
            from alpha2.gpu.geometry import Size

            clip = os.path.join(tmp, "startup.mp4")
            write_sample(clip, duration_s=max(2.0, args.frames / 30 + 1), size=Size(1280, 720))
        server, name = start_xvfb()
        try:
            display = _Display(name)
            # Bytecode written at the warm-up launch, as an installed package has it: with
            # PYTHONDONTWRITEBYTECODE set, a tree without __pycache__ (a fresh worktree) compiled every
            # module of alpha2 at every launch (60-120 ms), and a checkout only its changed modules.
            dropped = ("WAYLAND_DISPLAY", "PYTHONDONTWRITEBYTECODE")
            env = {k: v for k, v in os.environ.items() if k not in dropped}
            env["DISPLAY"] = name
            title = os.path.basename(clip)
            alpha2_cmd = [
                sys.executable,
                "-m",
                "alpha2",
                "play",
                clip,
                "--frames",
                str(args.frames),
                "--json",
            ]
            plain_cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "plain", clip]
            plain_cmd += ["--frames", str(args.frames)]
            players: dict[str, tuple[list[str], Path]] = {"alpha2": (alpha2_cmd, ROOT)}
            if args.baseline_tree is not None:
                players["baseline"] = (alpha2_cmd, args.baseline_tree.resolve())
            if not args.no_plain:
                players["plain"] = (plain_cmd, ROOT)
            for command, cwd in players.values():  # warm-up: bytecode, the file cache, alpha2's caches
                launch(command, display, env, title, cwd)
            runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in players}
            for round_index in range(args.rounds):  # alternately, so that a busy moment hits all alike
                order = list(players.items())
                if round_index % 2:  # and in turn first: the one launched after another starts slower
                    order.reverse()
                for kind, (command, cwd) in order:
                    runs[kind].append(launch(command, display, env, title, cwd))
        finally:
            server.terminate()
            server.wait()
    print(f"alpha2 play {os.path.basename(clip)} under Xvfb, {args.rounds} rounds (seconds from launch):")
    labels = {
        "alpha2": "alpha2 play",
        "baseline": f"alpha2 play from {args.baseline_tree}",
        "plain": "plain PyAV + wgpu + rendercanvas",
    }
    for kind in runs:
        print(
            f"  {labels[kind]}: window {_summary([r['window_s'] for r in runs[kind]])}, "
            f"first frame {_summary([r['first_frame_s'] for r in runs[kind]])}"
        )
    a = statistics.median(r["first_frame_s"] for r in runs["alpha2"])
    for kind in ("baseline", "plain"):
        if kind in runs:
            b = statistics.median(r["first_frame_s"] for r in runs[kind])
            print(f"  first frame, alpha2 / {kind}: {a / b:.2f} (below 1: this tree is up sooner)")


if __name__ == "__main__":
    main()
