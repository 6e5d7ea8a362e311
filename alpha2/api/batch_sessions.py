"""A batch of frames at many times, spread over several decode sessions (one per NVDEC engine).

:meth:`VideoSource.frames_at <alpha2.api.source.VideoSource.frames_at>` sorts the times and decodes
forward through each GOP that holds one, seeking only to skip to a later key frame. One session runs on
one of the GPU's video decoders; a batch whose times lie in several GOPs can run on several at once.
:class:`BatchSessions` groups the asked timestamps by the key frame each is decoded from (the session's
frame index says where they lie), gives the groups to ``sessions`` lanes (the source's own session and
helpers opened on the same GPU once, then kept for the source's life), balancing the frames each lane
decodes, and decodes the lanes in threads at once (PyAV lets go of the GIL while it decodes). Each lane
is an ordinary ``frames_at_pts`` call on its session, so every frame is exactly the one the source's
session would have found (VFR, B-frames, open GOPs, backward jumps: that method's rules). The lane of
the latest time asked for is the source's own session, so that the source goes on from there.

Frames come back in the order asked. A batch spread over sessions copies every NVDEC frame into the
source's frame pool as it is found (the ``keep`` hook), so no frame pins a helper's surfaces.

The source spreads only NVDEC batches: software decoding already runs on FFmpeg's frame threads (every
core). Helpers decode where the main session does; one that could not (no further NVDEC session) is
closed and the batch stays on fewer sessions; :attr:`BatchSessions.reason` says why (never a silent
fallback to the CPU).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from alpha2.api.devices import open_decoder, place_decoder
from alpha2.ffmpeg_bridge.decode import DecodeSession, MediaSource
from alpha2.ffmpeg_bridge.seeking import FrameIndex
from alpha2.gpu.frames import DecodedFrame

__all__ = ["BatchSessions", "plan_lanes"]

Keep = Callable[[DecodedFrame], DecodedFrame]


def plan_lanes(index: FrameIndex, pts: Sequence[int], lanes: int) -> list[list[int]]:
    """Which asks (positions in ``pts``) each lane decodes: asks grouped by the key frame they are
    decoded from, each group on one lane, the groups dealt so that no lane decodes many more frames
    than another (greedy, largest group first). Lane 0 gets the group of the latest time asked for (it
    ends the batch, so that the caller's session goes on from there). Lanes with nothing are left out.
    """
    if not pts:
        return []
    groups: dict[int | None, list[int]] = {}
    for i, p in enumerate(pts):
        groups.setdefault(index.key_at_or_before(p), []).append(i)
    # A group's cost: the frames decoded from its key frame up to its latest ask (in the index's order).
    costs: dict[int | None, int] = {}
    for key, asks in groups.items():
        first = 0 if key is None else bisect.bisect_left(index.pts, key)
        last = bisect.bisect_right(index.pts, max(pts[i] for i in asks))
        costs[key] = max(1, last - first)
    latest = max(range(len(pts)), key=lambda i: (pts[i], i))
    last_key = index.key_at_or_before(pts[latest])
    count = max(1, min(lanes, len(groups)))
    plan: list[list[int]] = [[] for _ in range(count)]
    load = [0] * count
    plan[0].extend(groups[last_key])
    load[0] = costs[last_key]
    others = sorted((k for k in groups if k != last_key), key=lambda k: (-costs[k], k is None, k or 0))
    for key in others:  # all earlier than lane 0's: its session still ends at the latest time
        lane = min(range(count), key=lambda j: (load[j], j))
        plan[lane].extend(groups[key])
        load[lane] += costs[key]
    return [asks for asks in plan if asks]


class BatchSessions:
    """The helper sessions one source spreads its batches over, opened on first use and kept.

    Args:
        source: The file (a path: every helper opens it again).
        main: The source's own session (lane 0).
        device: The device the source renders on (the helpers decode on its GPU).
        sessions: Lanes at most, the main session included.
        reason: Why that many (shown by :attr:`reason` with what was done).
        options: The source's decoder options (``hwaccel``, ``max_pixels``, ...), for the helpers too.
    """

    def __init__(
        self,
        source: MediaSource,
        main: DecodeSession,
        device: Any,
        *,
        sessions: int,
        reason: str,
        options: dict[str, Any],
    ) -> None:
        self._source = source
        self._main = main
        self._device = device
        self._sessions = max(1, sessions)
        self._options = dict(options)
        self._helpers: list[DecodeSession] = []
        self._refused = False  # a helper could not be opened on NVDEC: no more are tried
        self._lock = threading.Lock()
        self.reason = reason
        """How batches are decoded: on how many sessions, and why."""
        self.last_lanes = 1
        """Sessions the latest batch ran on."""

    def _helpers_for(self, wanted: int) -> list[DecodeSession]:
        """Up to ``wanted`` helper sessions on the main session's GPU (opened now where missing)."""
        if len(self._helpers) >= wanted or self._refused:
            return self._helpers[:wanted]
        on_gpu = self._main.hwaccel_report.on_gpu
        options = dict(self._options)
        options["hwaccel"] = "cuda" if on_gpu else "none"  # where the main session decodes, or not at all
        options.setdefault("prefetch", 0)
        placement = place_decoder(self._device, options["hwaccel"])
        while len(self._helpers) < wanted:
            n = len(self._helpers) + 2
            try:
                session = open_decoder(self._source, self._device, placement=placement, **options)
            except Exception as exc:  # a helper is a speed-up: the batch runs on fewer sessions
                self._refuse(f"decode session {n} could not be opened ({exc})")
                break
            report = session.hwaccel_report
            if report.on_gpu != on_gpu:
                session.close()
                self._refuse(f"decode session {n} did not decode where the first does ({report.reason})")
                break
            session.use_frame_index(self._main.frame_index())
            self._helpers.append(session)
        return self._helpers[:wanted]

    def _refuse(self, why: str) -> None:
        self._refused = True
        self.reason = f"{self.reason}; {why}: batches run on {len(self._helpers) + 1} session(s)"

    def frames_at_pts(self, pts: Sequence[int], keep: Keep | None) -> list[DecodedFrame | None]:
        """The frames at ``pts`` (the stream's time base), in the order asked, decoded on as many
        sessions as there are groups of asks (up to ``sessions``)."""
        with self._lock:
            if self._sessions < 2 or len(set(pts)) < 2:
                self.last_lanes = 1
                return self._main.frames_at_pts(pts, keep=keep)
            plan = plan_lanes(self._main.frame_index(), pts, self._sessions)
            sessions = [self._main, *self._helpers_for(len(plan) - 1)]
            if len(sessions) < len(plan):  # fewer helpers than lanes: deal the groups again
                plan = plan_lanes(self._main.frame_index(), pts, len(sessions))
            self.last_lanes = len(plan)
            return _run_lanes(sessions, plan, pts, keep)

    def close(self) -> None:
        """Close the helper sessions (the main one is the source's)."""
        with self._lock:
            helpers, self._helpers = self._helpers, []
        for session in helpers:
            session.close()


def _run_lanes(
    sessions: Sequence[DecodeSession], plan: list[list[int]], pts: Sequence[int], keep: Keep | None
) -> list[DecodedFrame | None]:
    out: list[DecodedFrame | None] = [None] * len(pts)
    errors: list[BaseException] = []

    def lane(session: DecodeSession, asks: list[int]) -> None:
        try:
            found = session.frames_at_pts([pts[i] for i in asks], keep=keep)
        except BaseException as exc:  # raised in the caller's thread below
            errors.append(exc)
            return
        for i, frame in zip(asks, found):
            out[i] = frame

    threads = [
        threading.Thread(target=lane, args=(session, asks), name=f"alpha2-batch-{n}", daemon=True)
        for n, (session, asks) in enumerate(zip(sessions[1:], plan[1:]), start=1)
    ]
    for thread in threads:
        thread.start()
    lane(sessions[0], plan[0])
    for thread in threads:
        thread.join()
    if errors:
        for frame in out:
            if frame is not None:
                frame.release()
        raise errors[0]
    return out
