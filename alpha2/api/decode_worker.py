"""A decoder process: one DecodeSession whose frames go into another process's slots, and the messages.

Started by :class:`~alpha2.api.decode_process.DecodeProcess` as
``python -m alpha2.api.decode_worker FD``, FD being its end of a ``SOCK_SEQPACKET`` socket
pair: one message per record, a pickled tuple, with file descriptors beside it (``SCM_RIGHTS``). Both
ends are alpha2's own, made by the same user; nothing else can reach the socket.

The conversation, consumer (C) and this process (W):

* C: ``("open", options)``; W opens the source and answers ``("info", StreamInfo, HwAccelReport)``, or
  ``("error", ...)``. C: ``("start", seek_s)``; W seeks there (None: from the start) and decodes.
* W, at the first frame and at every change of format or size: ``("layout", set_id, pixel_format, width,
  height, geometry, on_gpu)``; C makes a slot set and answers ``("slots", set_id, SlotLayout)`` with the
  slots' memory fds.
* W, per frame: takes a free slot (all are free at first), writes the frame into it
  (:mod:`alpha2.native_gpu.interop.handoff`; a GPU copy is waited for), lets the decoded frame go and
  sends ``("frame", set_id, index, FrameMetadata, ColourInfo, strides)``. With no slot free it waits for
  C's ``("free", set_id, index, fence_kinds)``, whose fds are what the next write into that slot waits
  for.
* W, at the end: ``("end", DecodeStats)``; on a failure: ``("error", module, class name, message)``, and it
  exits. C's ``("close",)``, or the socket's end, makes it exit at once.
"""

from __future__ import annotations

import collections
import importlib
import os
import pickle
import select
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from alpha2.gpu.errors import Error, InternalError
from alpha2.gpu.handles import OwnedFd

if TYPE_CHECKING:
    from alpha2.ffmpeg_bridge.decode import DecodeSession
    from alpha2.gpu.frames import DecodedFrame

__all__ = [
    "PeerGone",
    "error_message",
    "main",
    "receive",
    "send",
    "send_failure",
    "serve",
    "start_worker",
    "worker_main",
]

_MAX_MESSAGE = 1 << 20
_MAX_FDS = 64


class PeerGone(Exception):
    """The other end closed the socket (or said ``close``)."""


def send(
    sock: socket.socket, message: tuple[Any, ...], fds: list[OwnedFd] | tuple[OwnedFd, ...] = ()
) -> None:
    """Send one message (a record) with ``fds`` beside it; the fds stay the caller's.

    Raises:
        PeerGone: the other end is gone.
    """
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        if fds:
            socket.send_fds(sock, [data], [fd.fileno() for fd in fds])
        else:
            sock.send(data)
    except (BrokenPipeError, ConnectionResetError) as exc:
        raise PeerGone(str(exc)) from exc


def receive(sock: socket.socket, timeout_s: float | None) -> tuple[tuple[Any, ...], list[OwnedFd]] | None:
    """The next message and its fds (now the caller's); None when none came within ``timeout_s``
    (None: wait for one).

    Raises:
        PeerGone: the other end closed the socket.
        InternalError: a record was cut short (larger than any message here).
    """
    if timeout_s is not None:
        readable, _, _ = select.select([sock], [], [], max(0.0, timeout_s))
        if not readable:
            return None
    try:
        data, raw_fds, flags, _ = socket.recv_fds(sock, _MAX_MESSAGE, _MAX_FDS)
    except (ConnectionResetError, BrokenPipeError) as exc:
        raise PeerGone(str(exc)) from exc
    fds = [OwnedFd(fd) for fd in raw_fds]
    if not data:
        for fd in fds:
            fd.close()
        raise PeerGone("the other end closed the socket")
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        for fd in fds:
            fd.close()
        raise InternalError("a decoder process's message was cut short")
    message = pickle.loads(data)
    if not isinstance(message, tuple) or not message:
        raise InternalError(f"a decoder process's message is not a tuple: {type(message).__name__}")
    return message, fds


def error_message(exc: BaseException) -> tuple[str, str, str, str]:
    """The ``error`` message for ``exc``: its class (module, name) and its text."""
    text = exc.message if isinstance(exc, Error) else str(exc)
    return ("error", type(exc).__module__, type(exc).__qualname__, text)


def typed_error(module: str, name: str, text: str) -> Error | None:
    """The alpha2 error class a worker named (:func:`error_message`'s module and name), made with
    ``text``; None when it names no alpha2 Error (the caller says what failed in its own terms)."""
    if not module.startswith("alpha2."):
        return None
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    if isinstance(cls, type) and issubclass(cls, Error):
        try:
            error: Error = cls(text)
        except TypeError:  # a class whose constructor takes more than a message
            return None
        return error
    return None


class _Worker:
    """The decoding loop: frames into the consumer's slots, as the conversation above says."""

    def __init__(self, sock: socket.socket, session: DecodeSession, options: dict[str, Any]) -> None:
        self.sock = sock
        self.session = session
        self.cuda_ordinal: int | None = options.get("cuda_ordinal")
        self.timeout_s = float(options.get("wait_timeout_s", 10.0))
        self.set_id = 0
        self.writer: Any = None
        self.free: collections.deque[int] = collections.deque()
        self.fences: dict[int, list[tuple[str, OwnedFd]]] = {}
        self.slots_message: tuple[tuple[Any, ...], list[OwnedFd]] | None = None

    def run(self) -> None:
        current: tuple[Any, ...] | None = None
        while True:
            self._handle_waiting(block=False)
            frame = self.session.next_frame()
            if frame is None:
                send(self.sock, ("end", self.session.stats))
                return
            try:
                shape = (frame.pixel_format, frame.identity.width, frame.identity.height, frame.on_gpu)
                if shape != current:
                    self._new_layout(frame)
                    current = shape
                while not self.free:
                    self._handle_waiting(block=True)
                index = self.free.popleft()
                strides = self.writer.write(index, frame, self.fences.pop(index, []), self.timeout_s)
                metadata, colour = frame.metadata, frame.colour
            finally:
                frame.release()
            send(self.sock, ("frame", self.set_id, index, metadata, colour, strides))

    def _new_layout(self, frame: DecodedFrame) -> None:
        from alpha2.native_gpu.interop import handoff
        from alpha2.native_gpu.interop.cpu_upload import frame_geometry

        self._drop_writer()
        self.set_id += 1
        width, height = frame.identity.width, frame.identity.height
        geometry = frame_geometry(frame.pixel_format, width, height)
        send(self.sock, ("layout", self.set_id, frame.pixel_format, width, height, geometry, frame.on_gpu))
        while self.slots_message is None:
            self._handle_waiting(block=True)
        (_, _, layout), fds = self.slots_message
        self.slots_message = None
        if layout.kind == "vulkan":
            if self.cuda_ordinal is None or not frame.on_gpu:
                for fd in fds:
                    fd.close()
                raise InternalError("Vulkan slots were sent for frames that are not NVDEC's")
            self.writer = handoff.CudaSlotWriter(self.cuda_ordinal, layout, fds)
        else:
            self.writer = handoff.HostSlotWriter(layout, fds)
        self.free = collections.deque(range(layout.count))

    def _drop_writer(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()
        for fences in self.fences.values():
            for _, fd in fences:
                fd.close()
        self.fences.clear()
        self.free.clear()

    def _handle_waiting(self, *, block: bool) -> None:
        """Handle the consumer's messages waiting (``block``: at least one)."""
        timeout: float | None = None if block else 0.0
        while True:
            got = receive(self.sock, timeout)
            if got is None:
                return
            message, fds = got
            kind = message[0]
            if kind == "free":
                _, set_id, index, kinds = message
                if set_id == self.set_id and self.writer is not None:
                    self.free.append(index)
                    self.fences[index] = list(zip(kinds, fds))
                else:  # a slot of a set this process has let go
                    for fd in fds:
                        fd.close()
            elif kind == "slots":
                self.slots_message = (message, fds)
            elif kind == "close":
                raise PeerGone("closed")
            else:
                for fd in fds:
                    fd.close()
                raise InternalError(f"a decoder process got an unknown message {kind!r}")
            timeout = 0.0

    def close(self) -> None:
        self._drop_writer()


def serve(sock: socket.socket) -> int:
    """Run the conversation on ``sock`` until the end, a failure (reported to the consumer) or close."""
    from alpha2.ffmpeg_bridge.decode import DecodeSession

    worker: _Worker | None = None
    session: DecodeSession | None = None
    try:
        got = receive(sock, None)
        assert got is not None
        (kind, options), _ = got
        if kind != "open":
            raise InternalError(f"a decoder process must be opened first, got {kind!r}")
        session = DecodeSession(
            options["source"],
            hwaccel=options["hwaccel"],
            cuda_ordinal=options.get("cuda_ordinal"),
            prefetch=int(options.get("prefetch", 2)),
            on_corrupt=options.get("on_corrupt", "keep"),
            stream_index=options.get("stream_index"),
            threads=int(options.get("threads", 0)),
        )
        send(sock, ("info", session.info, session.hwaccel_report))
        got = receive(sock, None)
        assert got is not None
        (kind, seek_s), _ = got
        if kind != "start":
            raise InternalError(f"a decoder process must be started after open, got {kind!r}")
        if seek_s is not None:
            session.seek(float(seek_s))
        worker = _Worker(sock, session, options)
        worker.run()
        while True:  # ended: wait for the consumer's close (its slots stay imported until then)
            worker._handle_waiting(block=True)
    except PeerGone:
        return 0
    except BaseException as exc:  # reported to the consumer, which raises it as a typed error
        return send_failure(sock, exc)
    finally:
        if worker is not None:
            worker.close()
        if session is not None:
            session.close()


def send_failure(sock: socket.socket, exc: BaseException) -> int:
    """Tell the other end what failed (it raises it as a typed error); the worker's exit status, 1."""
    try:
        send(sock, error_message(exc))
    except (PeerGone, OSError):
        pass  # the other end is gone: nobody to tell
    return 1


def start_worker(
    module: str, what: str, *, buffer_bytes: int | None = None
) -> tuple[socket.socket, subprocess.Popen[bytes], IO[bytes]]:
    """Start ``python -m module FD``: this process's end of the socket pair, the process, and the file
    its stderr goes to (read when it dies). The package is found from here whatever the caller's path.

    Raises:
        InternalError: the process could not be started (``what`` names it).
    """
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if buffer_bytes is not None:
        for end in (parent, child):
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buffer_bytes)
    stderr = tempfile.TemporaryFile()
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", module, str(child.fileno())],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            start_new_session=True,  # a Ctrl-C reaches the caller's process, which closes it
        )
    except OSError as exc:
        parent.close()
        stderr.close()
        raise InternalError(f"could not start {what}: {exc}") from exc
    finally:
        child.close()
    return parent, process, stderr


def worker_main(
    argv: list[str] | None, module: str, starter: str, run: Callable[[socket.socket], int]
) -> int:
    """A worker process's ``main``: ``python -m module FD`` serves the socket ``FD`` with ``run``."""
    args = sys.argv if argv is None else argv
    if len(args) != 2 or not args[1].isdigit():
        print(f"usage: python -m {module} FD (started by {starter})", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=int(args[1]))
    try:
        return run(sock)
    finally:
        sock.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m alpha2.api.decode_worker FD``."""
    return worker_main(argv, "alpha2.api.decode_worker", "DecodeProcess", serve)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
