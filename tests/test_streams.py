"""Many streams into one device: StreamGroup (one submit per tick, order, budget, release) and the wall."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from alpha2.api.streams import StreamGroup, grid_shape
from alpha2.apps.cli import main
from alpha2.apps.sample import write_sample
from alpha2.ffmpeg_bridge import DecodeSession
from alpha2.gpu.errors import ClosedError, InvalidInputError
from alpha2.gpu.geometry import Size
from alpha2.gpu.surfaces import SurfaceBudget

sys.path.insert(0, os.path.dirname(__file__))
from media import make_clip


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("streams")
    return [
        make_clip(root / "a.mp4", width=64, height=48, frames=10).path,
        write_sample(str(root / "b.mp4"), duration_s=0.2, size=Size(64, 48), audio=False).path,
        make_clip(root / "c.mp4", width=96, height=48, frames=7).path,
    ]


def read_png(path: str) -> np.ndarray:
    import av

    with av.open(path) as container:
        frame = next(container.decode(video=0))
        return frame.to_ndarray(format="rgba")


def _decoded_pts(path: str) -> list[float]:
    with DecodeSession(path, hwaccel="none") as decoder:
        out = []
        for frame in decoder:
            out.append(frame.pts_seconds)
            frame.release()
        return out


def test_grid_shape() -> None:
    assert grid_shape(1) == (1, 1)
    assert grid_shape(2) == (2, 1)
    assert grid_shape(4) == (2, 2)
    assert grid_shape(7) == (3, 3)
    assert grid_shape(16) == (4, 4)
    assert grid_shape(28) == (6, 5)
    with pytest.raises(InvalidInputError):
        grid_shape(0)


def test_budget_too_small_is_refused(clips: list[str]) -> None:
    with pytest.raises(InvalidInputError, match="surface budget"):
        StreamGroup(clips, hwaccel="none", budget=SurfaceBudget(max_surfaces=2))


@pytest.mark.vulkan
def test_misused_arguments_are_typed_errors_naming_them(clips: list[str]) -> None:
    """Found by an outside pass: device='cpu' was an AttributeError from inside, columns='2' a TypeError,
    a tile too large a raw wgpu validation error, a 1x1 tile an internal 'draw rectangle' message,
    seek('x') a ValueError and tick(at_s=nan) showed every stream's last frame."""
    for kwargs, said in (
        ({"device": "cpu"}, "device='cpu'"),
        ({"columns": "2"}, "columns"),
        ({"columns": 2.5}, "columns"),
        ({"tile": (1, 1)}, "tile must be at least 2x2"),
        ({"fit": (3, 3)}, "fit: a 2x2 wall"),
        ({"tile": (100_000, 100_000)}, "more than this device's textures take"),
        ({"decoders": "processes", "broken": "tile"}, "broken='tile' is for decoders='threads'"),
    ):
        with pytest.raises(InvalidInputError, match=said):
            StreamGroup(clips, hwaccel="none", **kwargs)
    with StreamGroup(clips, hwaccel="none") as group:
        for bad in ("x", float("nan"), float("inf")):
            with pytest.raises(InvalidInputError, match="at_s"):
                group.tick(at_s=bad)
            with pytest.raises(InvalidInputError, match="at_s"):
                group.seek(bad)
        group.tick(at_s=0.0)


@pytest.mark.vulkan
def test_misused_arguments_of_the_constructor_and_calls_name_them(clips: list[str]) -> None:
    """Found by an outside pass: sources=None was a TypeError, budget=4 an AttributeError from inside,
    slots='3' a TypeError, copy_ahead='yes' was taken; paint_tile('0', ...) and preroll(timeout_s='x')
    were TypeErrors."""
    for sources, kwargs, said in (
        (None, {}, "sources must be a list of paths"),
        (clips, {"budget": 4}, "budget must be a SurfaceBudget"),
        (clips, {"slots": "3"}, "slots must be a whole number"),
        (clips, {"copy_ahead": "yes"}, "copy_ahead must be True or False"),
        (clips, {"record_order": 1}, "record_order must be True or False"),
    ):
        with pytest.raises(InvalidInputError, match=said):
            StreamGroup(sources, hwaccel="none", **kwargs)  # type: ignore[arg-type]
    with StreamGroup(clips, hwaccel="none") as group:
        group.tick(at_s=0.0)
        with pytest.raises(InvalidInputError, match="index must be a whole number"):
            group.paint_tile("0", np.zeros((2, 2, 4), np.uint8))  # type: ignore[arg-type]
        for bad in ("x", -1.0, float("nan")):
            with pytest.raises(InvalidInputError, match="timeout_s"):
                group.preroll(timeout_s=bad)  # type: ignore[arg-type]


class _CountingQueue:
    """Stands in for device.queue: counts alpha2's submits that carry command buffers (the CPU upload's
    flushing submits carry none)."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue
        self.work_submits = 0

    def submit(self, buffers: Any) -> Any:
        # wgpu-py's own map_async submits an empty command buffer before a read mapping (its workaround
        # for wgpu-native#305): not alpha2's work, so not counted.
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if list(buffers) and not caller.startswith("wgpu"):
            self.work_submits += 1
        return self._queue.submit(buffers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)


@pytest.mark.vulkan
def test_stream_group_one_submit_per_tick(clips: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    budget = SurfaceBudget(max_surfaces=2 * len(clips))
    expected = [_decoded_pts(c) for c in clips]
    group = StreamGroup(clips, hwaccel="none", budget=budget, record_order=True, prefetch=2)
    webgpu = group.device.webgpu_device
    counting = _CountingQueue(webgpu.queue)
    monkeypatch.setattr(type(webgpu), "queue", property(lambda self: counting), raising=True)
    try:
        # One Device for all: the importers share it (and so its Vulkan context and CUDA context).
        assert {id(s.importer.gpu_device) for s in group.streams} == {id(group.device)}
        assert len({id(s.importer) for s in group.streams}) == len(clips)
        ticks = 0
        while True:
            tick = group.tick()
            if not tick.submitted:
                break
            ticks += 1
            assert counting.work_submits == ticks  # ONE submit per tick, every stream in it
            assert budget.usage().surfaces <= budget.max_surfaces
        assert ticks == max(len(e) for e in expected)
        assert group.finished
        for stream, pts in zip(group.streams, expected, strict=True):
            assert stream.shown_order == pts  # every frame, in order
            assert stream.frames_shown == len(pts)
        assert budget.usage().peak_surfaces <= budget.max_surfaces
        wall = group.read_wall()
        assert wall.shape == (group.size.height, group.size.width, 4)
    finally:
        group.close()
    assert budget.usage().surfaces == 0 and budget.usage().size_bytes == 0
    assert all(s.importer.closed and s.decoder.closed for s in group.streams)
    assert all(s.importer.stats().in_flight == 0 for s in group.streams)
    group.close()  # idempotent


@pytest.mark.vulkan
def test_preroll_waits_for_every_decoder_to_fill_its_queue(clips: list[str]) -> None:
    with StreamGroup(clips, hwaccel="none", prefetch=2, budget=SurfaceBudget(max_surfaces=None)) as group:
        assert all(s.decoder.decoded_ahead == (0, 2) for s in group.streams), "not started before a tick"
        group.tick(at_s=0.0)
        waited = group.preroll(timeout_s=10.0)
        assert 0.0 <= waited < 10.0
        # Every decoder has its two frames waiting (or its end): the clock may start.
        assert [s.decoder.decoded_ahead for s in group.streams] == [(2, 2)] * len(clips)
        shown = [s.frames_shown for s in group.streams]
        assert shown == [1] * len(clips), "the pre-roll only waits: it draws nothing"
    with pytest.raises(ClosedError):
        group.preroll()


@pytest.mark.vulkan
def test_preroll_is_bounded_and_stops_at_a_full_budget(
    clips: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with StreamGroup(clips, hwaccel="none", prefetch=2, budget=SurfaceBudget(max_surfaces=None)) as group:
        group.tick(at_s=0.0)
        stuck = group.streams[0].decoder
        monkeypatch.setattr(type(stuck), "decoded_ahead", property(lambda self: (0, 2)))  # never fills
        waited = group.preroll(timeout_s=0.2)
        assert 0.2 <= waited < 5.0
    with StreamGroup(clips, hwaccel="none", prefetch=2) as group:  # 2 surfaces a stream, shared
        group.tick(at_s=0.0)
        usage = group.budget.usage()
        monkeypatch.setattr(
            type(group.budget), "usage", lambda self: replace(usage, surfaces=usage.max_surfaces)
        )
        assert group.preroll(timeout_s=5.0) < 1.0, "a full budget: nothing more can be decoded ahead"


def test_decoded_ahead_counts_the_prefetch_queue(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "p.mkv", width=64, height=48, frames=6)
    with DecodeSession(clip.path, hwaccel="none", prefetch=0) as session:
        assert session.decoded_ahead == (0, 0)
    with DecodeSession(clip.path, hwaccel="none", prefetch=3) as session:
        assert session.decoded_ahead == (0, 3)
        session.next_frame().release()
        deadline = time.monotonic() + 10.0
        while session.decoded_ahead[0] < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert session.decoded_ahead == (3, 3)
        for _ in range(5):
            frame = session.next_frame()
            assert frame is not None
            frame.release()
        deadline = time.monotonic() + 10.0
        while session.decoded_ahead[0] < 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert session.decoded_ahead == (1, 3), "the end of the stream waits in the queue"
        assert session.next_frame() is None


@pytest.mark.vulkan
def test_stream_group_latest_due_frame(clips: list[str]) -> None:
    with StreamGroup(clips[:2], hwaccel="none", record_order=True) as group:
        first = group.tick(at_s=0.0)
        assert first.updated == (True, True) and first.dropped == 0
        later = group.tick(at_s=0.1)  # 30 fps: frames at 1/30 and 2/30 overtaken by 3/30
        assert later.dropped == 4
        assert later.shown_pts_s == (pytest.approx(0.1), pytest.approx(0.1))
        same = group.tick(at_s=0.11)  # nothing new due: no work, nothing submitted
        assert not same.submitted and same.updated == (False, False)
        for stream in group.streams:
            assert stream.shown_order == sorted(stream.shown_order)
            assert stream.frames_dropped == 2


@pytest.mark.vulkan
def test_wall_snapshot_quadrants_match_each_clip(clips: list[str], tmp_path: Path) -> None:
    a, b = clips[0], clips[1]
    assert main(["play", a, b, "--snapshot", str(tmp_path / "wall.png"), "--hwaccel", "none"]) == 0
    for clip, name in ((a, "a.png"), (b, "b.png")):
        assert main(["play", clip, "--snapshot", str(tmp_path / name), "--hwaccel", "none"]) == 0
    wall = read_png(str(tmp_path / "wall.png"))
    assert wall.shape[:2] == (48, 128)
    for index, name in enumerate(("a.png", "b.png")):
        single = read_png(str(tmp_path / name))
        tile = wall[:, 64 * index : 64 * (index + 1)]
        error = np.abs(tile[..., :3].astype(int) - single[..., :3].astype(int)).mean()
        assert error <= 1.0, (name, error)
    # The two clips differ, so each quadrant is its own clip's frame.
    assert np.abs(wall[:, :64].astype(int) - wall[:, 64:].astype(int)).mean() > 10


@pytest.mark.nvidia
@pytest.mark.cuda
@pytest.mark.dawn
def test_a_wall_of_nvdec_streams_copied_on_the_decoders_threads_matches_one_copied_at_import(
    tmp_path: Path,
) -> None:
    sources = [
        make_clip(tmp_path / "a.mkv", width=128, height=72, frames=12).path,
        make_clip(tmp_path / "b.mkv", width=96, height=72, frames=12, gop=3).path,
        make_clip(tmp_path / "c.mkv", codec="hevc", width=256, height=144, frames=12).path,  # NVDEC: >= 144
    ]
    walls = []
    for copy_ahead in (True, False):
        with StreamGroup(sources, hwaccel="cuda", copy_ahead=copy_ahead) as group:
            group.run(frames=8)
            group.drain()
            walls.append(group.read_wall())
            stats = [s.importer.stats() for s in group.streams]
            paths = [
                {k.value: n for k, n in s.importer.path_report.frames_by_path.items()} for s in group.streams
            ]
            assert paths == [{"gpu_copy": 8}] * 3, paths
            ahead = sum(s.copied_ahead for s in stats)
            if copy_ahead:
                assert ahead > 0, stats
            else:
                assert ahead == 0 and sum(s.not_copied_ahead for s in stats) == 0
        assert group.budget.usage().surfaces == 0
    assert np.array_equal(walls[0], walls[1]), "the same pixels, whichever thread made the copy"


@pytest.mark.vulkan
def test_a_wall_made_to_fit_draws_its_tiles_at_the_size_shown(clips: list[str]) -> None:
    """``fit`` (a window's size): the tiles are halved until the wall fits, so the wall is drawn at the
    size it is shown (a window used to get the full-size wall scaled down at every present); every
    stream's picture still lands in its tile."""
    with StreamGroup(clips, hwaccel="none") as full:
        natural = full.tile
    assert natural == Size(96, 48) and full.columns == 2 and full.rows == 2
    with StreamGroup(clips, hwaccel="none", fit=Size(100, 60)) as group:
        assert group.tile == Size(48, 24), group.tile  # a 192x96 wall does not fit: tiles 48x24
        assert group.size == Size(96, 48)
        while group.tick().submitted:
            pass
        wall = group.read_wall()
        assert wall.shape == (48, 96, 4)
        for index, stream in enumerate(group.streams):  # each tile shows its (grey-ish, not black) picture
            x, y = stream.origin
            tile = wall[y : y + 24, x : x + 48, :3]
            assert tile.mean() > 8, f"tile {index} is black"
    with StreamGroup(clips, hwaccel="none", fit=Size(192, 96)) as roomy:
        assert roomy.tile == natural, "a wall that fits already is drawn as it is"
    with pytest.raises(InvalidInputError, match="cannot fit"):
        StreamGroup(clips, hwaccel="none", fit=Size(1, 1))


def _last_frame_alone(group: StreamGroup, path: str, size: Size) -> np.ndarray:
    """``path``'s last frame rendered alone at ``size`` (turned as its display matrix says) by the
    group's renderer into a texture of its own, read back."""
    from alpha2.native_gpu.interop.importer import FrameImporter
    from alpha2.native_gpu.render.renderer import read_texture_rgba

    with DecodeSession(path, hwaccel="none") as decoder:
        last = None
        for frame in decoder:
            if last is not None:
                last.release()
            last = frame
    assert last is not None
    with FrameImporter(group.device, slots=1) as importer:
        with importer.import_frame(last) as lease:
            target = group.renderer.target_texture(size.width, size.height)
            group.renderer.render(lease, target=target, rotation=lease.frame.metadata.rotation)
            pixels: np.ndarray = read_texture_rgba(group.device.webgpu_device, target)
    return pixels


@pytest.mark.vulkan
def test_each_tile_is_its_stream_rendered_alone_on_black(tmp_path: Path) -> None:
    """The wall draws every tile straight into its rectangle: each tile holds exactly what its stream's
    last frame renders alone at the letterboxed size (scaled, turned), centred, on black bars; a stream
    that ended early keeps its picture while the others go on; a tile whose letterbox changes is
    blackened before its new picture."""
    sources = [
        make_clip(tmp_path / "wide.mkv", width=96, height=48, frames=6).path,  # 96x48: bars above, below
        make_clip(tmp_path / "turned.mkv", width=64, height=48, frames=3, rotation_ccw=90).path,  # 48x64
        make_clip(tmp_path / "small.mkv", width=64, height=32, frames=5).path,  # scaled up to 96x48
    ]
    fitted = [Size(96, 48), Size(48, 64), Size(96, 48)]
    with StreamGroup(sources, hwaccel="none") as group:
        assert group.tile == Size(96, 64) and (group.columns, group.rows) == (2, 2)
        group.tick()
        # Paint the first tile white and make its letterbox "change": only the blackening clears its bars.
        white = np.full((64, 96, 4), 255, np.uint8)
        group.device.webgpu_device.queue.write_texture(
            {"texture": group.wall, "mip_level": 0, "origin": (0, 0, 0)},
            white,
            {"offset": 0, "bytes_per_row": 96 * 4, "rows_per_image": 64},
            (96, 64, 1),
        )
        group.streams[0].fitted = Size(2, 2)
        while group.tick().submitted:
            pass
        assert [s.fitted for s in group.streams] == fitted
        wall = group.read_wall()
        for stream, source, size in zip(group.streams, sources, fitted, strict=True):
            x, y = stream.origin
            tile = wall[y : y + 64, x : x + 96]
            left, top = (96 - size.width) // 2, (64 - size.height) // 2
            alone = _last_frame_alone(group, source, size)
            picture = tile[top : top + size.height, left : left + size.width]
            assert np.array_equal(picture, alone), (source, np.abs(picture.astype(int) - alone).max())
            bars = np.ones((64, 96), bool)
            bars[top : top + size.height, left : left + size.width] = False
            assert (tile[bars] == [0, 0, 0, 255]).all(), source
        assert (wall[64:, 96:] == [0, 0, 0, 255]).all()  # the grid's empty cell


@pytest.mark.vulkan
def test_a_seek_past_a_short_stream_s_end_shows_its_last_frame(tmp_path: Path) -> None:
    """A wall sought past a short clip's end left that tile on the frame from before the seek (a 3 s clip
    sought from 0:02 to 0:07 still showed 0:02, an outside pass); it shows its last frame, as when the
    wall played there."""
    long = make_clip(tmp_path / "long.mp4", width=64, height=48, frames=60).path  # 2 s at 30 fps
    short = make_clip(tmp_path / "short.mp4", width=64, height=48, frames=30).path  # 1 s
    with StreamGroup([long, short], hwaccel="none") as group:
        for at in (0.0, 0.5, 0.6):
            tick = group.tick(at)
        assert tick.shown_pts_s == pytest.approx((0.6, 0.6))
        group.seek(1.5)
        for at in (1.5, 1.55):
            tick = group.tick(at)
    assert tick.shown_pts_s == pytest.approx((1.5333, 29 / 30), abs=1e-3)
