"""Sync points: "this work is done", with blocking, timeout-bounded and async waits.

A :class:`SyncPoint` stands for GPU (or CPU) work that finishes some time later. Waiting is not failing:
:meth:`SyncPoint.wait` returns a :class:`WaitResult` (signaled, timed out, or failed with the error
attached) and never raises on a timeout. Backends subclass :class:`SyncPoint` and implement two things:

- ``_poll() -> bool``: non-blocking; True once the work has finished (successfully or not).
- ``_wait_native(timeout_s) -> WaitStatus``: block at most ``timeout_s`` seconds (e.g. ``vkWaitSemaphores``).

Failures are reported either by returning ``WaitStatus.FAILED`` (with the error from ``_failure()``) or by
raising from ``_poll`` / ``_wait_native``; either way the wait returns ``FAILED`` with the error in
``WaitResult.error``.

How a wait runs (a hybrid wait):

- :meth:`SyncPoint.wait` polls, then spins for at most :data:`SPIN_S` (200 µs), polling and yielding the
  GIL between polls (short GPU work finishes here without a system call or a thread hop), then calls
  ``_wait_native`` in the caller's thread: the caller asked to block.
- :meth:`SyncPoint.wait_async` never blocks the event loop, so it does not spin: it polls once and, when
  the work is not done, hands the wait to the :class:`WaiterThread`, which resolves the asyncio future
  through ``loop.call_soon_threadsafe``.
- :meth:`WaiterThread.submit` (or :class:`SyncWaiter`) is the callback-style wait.
- A point with ``blocking_waits`` is not polled by any of them: each goes straight to ``_wait_native``.

The WaiterThread -- exactly what runs on it, and why:

- There is one per process (:meth:`WaiterThread.instance`), a daemon thread named ``alpha2-sync-waiter``,
  started lazily by the first submitted wait and stopped at interpreter exit (``atexit``); waits still
  pending then resolve as ``FAILED`` with a :class:`~alpha2.gpu.errors.ClosedError`.
- It exists because some waits cannot be polled cheaply by the waiter's owner (an asyncio loop must
  not block in ``vkWaitSemaphores``; a callback-style caller has no thread to block). It parks on those
  waits so that no caller has to.
- It runs, and only runs: ``_poll()`` of every pending point each round (except ``blocking_waits``
  points, below); ``_wait_native(slice)`` on one pending point at a time (round-robin), in slices of
  at most :data:`WAITER_SLICE_S` (5 ms) so that one slow point never delays the others by more than a
  slice; and the completion callbacks given to :meth:`WaiterThread.submit` (for ``wait_async`` that
  callback only schedules the future's result on its loop). Callbacks must be short and must not
  block: they run on the waiter thread.
- When every pending point can wake it (``_add_waker``; :class:`CpuSyncPoint` can), it parks on its own
  event instead, with no slicing and no CPU use until a point completes or a deadline passes.
- Points with :attr:`SyncPoint.blocking_waits` (asking them costs more than blocking on them: a CUDA
  event's status query under NVDEC takes milliseconds) are never polled. They are waited on one at a
  time, in submission order, with ``_wait_native`` calls up to the deadline of at most
  :data:`WAITER_BLOCKING_SLICE_S` (50 ms) each, cut to :data:`WAITER_SLICE_S` while other waits are
  pending, so that those keep their turn: a wait submitted while it blocks starts, and a withdrawn
  (cancelled) one is dropped, within 50 ms.
- A sync point whose ``_add_waker`` raises fails its own wait (``FAILED`` with the error), as one whose
  ``_poll`` raises does. Should the thread itself fail, every wait pending on it resolves ``FAILED``
  with an :class:`~alpha2.gpu.errors.InternalError`, and :meth:`WaiterThread.instance` makes a new one
  for the waits after.

The sync points and the WaiterThread are one contract (what each kind of wait may call, and on which
thread), kept in one module on purpose: hence its length, past 600 lines.
"""

from __future__ import annotations

import abc
import atexit
import collections
import enum
import logging
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from alpha2.gpu.errors import ClosedError, InternalError, InvalidInputError, member_of
from alpha2.gpu.identity import BackendKind

if TYPE_CHECKING:
    import asyncio  # imported where a wait is awaited: asyncio (30 ms) is no import-time cost

_log = logging.getLogger(__name__)

DEFAULT_WAIT_TIMEOUT = 10.0
"""Seconds a wait lasts when the caller does not say (``timeout=None`` waits without a bound)."""
SPIN_S = 200e-6
"""Upper bound of the polling spin before a wait hands off."""
WAITER_SLICE_S = 0.005
"""Longest single ``_wait_native`` call the WaiterThread makes."""
_BLOCKING_SLICE_S = 1.0
"""Slice for unbounded blocking waits (``_wait_native`` always gets a finite timeout)."""
WAITER_BLOCKING_SLICE_S = 0.05
"""Longest single ``_wait_native`` call the WaiterThread makes on a ``blocking_waits`` point while no
other wait is pending: waits submitted meanwhile start, and a withdrawn wait is dropped, within it."""


class WaitStatus(enum.Enum):
    """How a wait ended."""

    SIGNALED = "signaled"
    """The work is done."""
    TIMED_OUT = "timed_out"
    """The timeout passed first; the work may still finish."""
    FAILED = "failed"
    """The work (or the wait) failed; the error is in WaitResult.error."""


@dataclass(frozen=True)
class WaitResult:
    """The outcome of one wait. Truthy when signaled."""

    status: WaitStatus
    """How the wait ended."""
    waited_s: float
    """Seconds the wait took."""
    error: BaseException | None = None
    """The failure, when status is FAILED."""

    def __post_init__(self) -> None:
        if not isinstance(self.status, WaitStatus):
            raise InvalidInputError(f"WaitResult.status must be a WaitStatus, got {self.status!r}")
        if (
            isinstance(self.waited_s, bool)
            or not isinstance(self.waited_s, int | float)
            or self.waited_s < 0
            or math.isnan(self.waited_s)
        ):
            raise InvalidInputError(f"WaitResult.waited_s must be >= 0, got {self.waited_s}")
        if self.error is not None and self.status is not WaitStatus.FAILED:
            raise InvalidInputError("WaitResult.error is only set when status is FAILED")

    @property
    def signaled(self) -> bool:
        """True when the work is done."""
        return self.status is WaitStatus.SIGNALED

    @property
    def timed_out(self) -> bool:
        """True when the timeout passed first."""
        return self.status is WaitStatus.TIMED_OUT

    @property
    def failed(self) -> bool:
        """True when the work or the wait failed."""
        return self.status is WaitStatus.FAILED

    def __bool__(self) -> bool:
        return self.signaled


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or math.isnan(timeout)
        or timeout < 0
    ):
        raise InvalidInputError(f"timeout must be None or a number of seconds >= 0, got {timeout!r}")
    # Past TIMEOUT_MAX (292 years) threading's waits raise OverflowError: such a bound is no bound.
    return math.inf if timeout > threading.TIMEOUT_MAX else float(timeout)


def _deadline(start: float, timeout: float | None) -> float | None:
    if timeout is None or math.isinf(timeout):
        return None
    return start + timeout


class SyncPoint(abc.ABC):
    """'This work is done': a point a consumer waits on before using a resource.

    Subclasses implement :meth:`_poll` and :meth:`_wait_native`; optionally :meth:`_failure` (the error
    of finished-but-failed work) and :meth:`_add_waker` (a push notification, which lets the
    WaiterThread sleep instead of slicing native waits). Set ``backend`` as a class attribute or pass it
    to ``__init__``. A subclass whose ``_poll`` is dear sets ``blocking_waits``: :meth:`wait`,
    :meth:`wait_async` and the WaiterThread then block in ``_wait_native`` without polling first
    (:meth:`is_signaled` still polls: it is asked for).
    """

    backend: BackendKind = BackendKind.CPU
    """The API whose work this point tracks."""
    blocking_waits: bool = False
    """True when polling costs more than blocking: waits skip polling and block in ``_wait_native``."""

    def __init__(self, backend: BackendKind | None = None) -> None:
        if backend is not None:
            self.backend = member_of(BackendKind, backend, "backend")

    def __repr__(self) -> str:
        """The point's backend and state, as a non-blocking poll says (a point with ``blocking_waits``,
        whose poll is dear, is not asked)."""
        if self.blocking_waits:
            state = "not polled (blocking waits)"
        else:
            try:
                finished = self._poll()
                error = self._failure() if finished else None
            except Exception as exc:
                state = f"failed: {exc!r}"
            else:
                state = (
                    ("failed: " + repr(error)) if error is not None else ("done" if finished else "pending")
                )
        return f"<{type(self).__name__} {self.backend.value}: {state}>"

    # -- subclass interface -------------------------------------------------------------------------

    @abc.abstractmethod
    def _poll(self) -> bool:
        """True once the work has finished, successfully or not. Must not block. May raise to fail."""

    @abc.abstractmethod
    def _wait_native(self, timeout_s: float) -> WaitStatus:
        """Block for at most ``timeout_s`` seconds (finite, >= 0). May raise to fail."""

    def _failure(self) -> BaseException | None:
        """The error of finished work that failed; None when it succeeded (the default)."""
        return None

    def _add_waker(self, waker: Callable[[], None]) -> bool:
        """Arrange for ``waker()`` to be called once the point finishes; False when not supported.

        ``waker`` must be called from whichever thread completes the work, without locks held; it is
        cheap and never raises. If the point has already finished, call it at once.
        """
        return False

    # -- public API ---------------------------------------------------------------------------------

    def is_signaled(self) -> bool:
        """Non-blocking: True when the work is done and did not fail."""
        finished, error = self._check()
        return finished and error is None

    def wait(self, timeout: float | None = DEFAULT_WAIT_TIMEOUT) -> WaitResult:
        """Wait up to ``timeout`` seconds (None: no bound; 0: poll once). Never raises on a timeout.

        Raises:
            InvalidInputError: ``timeout`` is negative or not a number.
        """
        bounded = _check_timeout(timeout)
        start = time.monotonic()
        deadline = _deadline(start, bounded)
        if self.blocking_waits:
            return self._wait_blocking_only(start, deadline)
        result = self._spin(start, deadline)
        if result is not None:
            return result
        while True:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return WaitResult(WaitStatus.TIMED_OUT, now - start)
            slice_s = _BLOCKING_SLICE_S if deadline is None else deadline - now
            status, error = self._native(slice_s)
            if status is not WaitStatus.TIMED_OUT:
                return WaitResult(status, time.monotonic() - start, error)

    def wait_blocking(self) -> WaitResult:
        """Wait without a bound until the work is done or has failed."""
        return self.wait(None)

    async def wait_async(self, timeout: float | None = DEFAULT_WAIT_TIMEOUT) -> WaitResult:
        """Wait without blocking the event loop: the WaiterThread waits and resolves a future.

        Cancelling the awaiting task withdraws the wait from the WaiterThread.

        Raises:
            InvalidInputError: ``timeout`` is negative or not a number.
        """
        bounded = _check_timeout(timeout)
        start = time.monotonic()
        if not self.blocking_waits:  # a blocking-only point is not polled here either: the waiter blocks
            finished, error = self._check()
            if finished:
                return self._finished_result(start, error)
            if bounded == 0:
                return WaitResult(WaitStatus.TIMED_OUT, time.monotonic() - start)
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[WaitResult] = loop.create_future()

        def resolve(result: WaitResult) -> None:
            try:
                loop.call_soon_threadsafe(_set_result, future, result)
            except RuntimeError:
                pass  # the loop is closed: nobody is waiting any more

        ticket = WaiterThread.instance().submit(self, bounded, resolve, started_at=start)
        try:
            return await future
        finally:
            ticket.cancel()

    # -- internals ----------------------------------------------------------------------------------

    def _check(self) -> tuple[bool, BaseException | None]:
        """(finished, error) without blocking; an exception from the subclass is a failure."""
        try:
            if not self._poll():
                return False, None
            return True, self._failure()
        except Exception as exc:
            return True, exc

    def _native(self, timeout_s: float) -> tuple[WaitStatus, BaseException | None]:
        try:
            status = self._wait_native(max(0.0, timeout_s))
            if status is WaitStatus.FAILED:
                return status, self._failure() or InternalError(
                    f"{type(self).__name__} failed without saying why"
                )
            if status is WaitStatus.SIGNALED:
                error = self._failure()
                if error is not None:
                    return WaitStatus.FAILED, error
            return WaitStatus(status), None
        except Exception as exc:
            return WaitStatus.FAILED, exc

    @staticmethod
    def _finished_result(start: float, error: BaseException | None) -> WaitResult:
        status = WaitStatus.SIGNALED if error is None else WaitStatus.FAILED
        return WaitResult(status, time.monotonic() - start, error)

    def _wait_blocking_only(self, start: float, deadline: float | None) -> WaitResult:
        """Block in ``_wait_native`` up to the deadline, at least once, never polling (``blocking_waits``)."""
        while True:
            slice_s = _BLOCKING_SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            status, error = self._native(slice_s)
            now = time.monotonic()
            if status is not WaitStatus.TIMED_OUT:
                return WaitResult(status, now - start, error)
            if deadline is not None and now >= deadline:
                return WaitResult(WaitStatus.TIMED_OUT, now - start)

    def _spin(self, start: float, deadline: float | None) -> WaitResult | None:
        """Poll for at most SPIN_S (or the deadline); a result when finished, else None."""
        spin_end = start + SPIN_S if deadline is None else min(start + SPIN_S, deadline)
        while True:
            finished, error = self._check()
            if finished:
                return self._finished_result(start, error)
            if time.monotonic() >= spin_end:
                return None
            time.sleep(0)  # yield the GIL to whichever thread completes the work


def _set_result(future: asyncio.Future[WaitResult], result: WaitResult) -> None:
    if not future.done():
        future.set_result(result)


class CpuSyncPoint(SyncPoint):
    """A sync point completed by Python code: :meth:`signal` or :meth:`fail`, from any thread."""

    backend = BackendKind.CPU

    def __init__(self) -> None:
        super().__init__()
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._wakers: list[Callable[[], None]] = []

    def signal(self) -> bool:
        """Mark the work done. Returns False when the point had already finished (signal or fail)."""
        return self._finish(None)

    def fail(self, exc: BaseException) -> bool:
        """Mark the work failed with ``exc``. Returns False when the point had already finished."""
        if not isinstance(exc, BaseException):
            raise InvalidInputError(f"fail() needs an exception, got {exc!r}")
        return self._finish(exc)

    def _finish(self, error: BaseException | None) -> bool:
        with self._lock:
            if self._event.is_set():
                return False
            self._error = error
            self._event.set()
            wakers, self._wakers = self._wakers, []
        for waker in wakers:
            waker()
        return True

    def _poll(self) -> bool:
        return self._event.is_set()

    def _failure(self) -> BaseException | None:
        return self._error

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        if not self._event.wait(timeout_s):
            return WaitStatus.TIMED_OUT
        return WaitStatus.SIGNALED if self._error is None else WaitStatus.FAILED

    def _add_waker(self, waker: Callable[[], None]) -> bool:
        with self._lock:
            if not self._event.is_set():
                if waker not in self._wakers:  # one per WaiterThread, however many waits time out
                    self._wakers.append(waker)
                return True
        waker()
        return True


class SignaledSyncPoint(SyncPoint):
    """A point whose work is already done (a CPU-only path, or nothing to wait for)."""

    def __init__(self, backend: BackendKind = BackendKind.CPU) -> None:
        super().__init__(backend)

    def _poll(self) -> bool:
        return True

    def _wait_native(self, timeout_s: float) -> WaitStatus:
        return WaitStatus.SIGNALED

    def _add_waker(self, waker: Callable[[], None]) -> bool:
        waker()
        return True


WaitCallback = Callable[[WaitResult], None]
"""Completion callback of a submitted wait; runs on the WaiterThread."""


class WaitTicket:
    """A wait submitted to the WaiterThread; :meth:`cancel` withdraws it (its callback is then not called)."""

    __slots__ = ("_callback", "_cancelled", "_done", "_lock", "_wakeable", "deadline", "point", "started_at")

    def __init__(
        self, point: SyncPoint, deadline: float | None, callback: WaitCallback, started_at: float
    ) -> None:
        self.point = point
        """The point waited on."""
        self.deadline = deadline
        """time.monotonic() deadline, or None."""
        self.started_at = started_at
        """time.monotonic() when the wait began."""
        self._callback = callback
        self._lock = threading.Lock()
        self._cancelled = False
        self._done = False
        self._wakeable = False

    @property
    def done(self) -> bool:
        """True once the callback has been called (or is being called)."""
        return self._done

    @property
    def cancelled(self) -> bool:
        """True when withdrawn before completion."""
        return self._cancelled

    def cancel(self) -> bool:
        """Withdraw the wait. False when it already completed."""
        with self._lock:
            if self._done:
                return False
            self._cancelled = True
            return True

    def __repr__(self) -> str:
        state = "done" if self._done else "cancelled" if self._cancelled else "pending"
        left = "" if self.deadline is None else f", {max(0.0, self.deadline - time.monotonic()):.3g} s left"
        return f"<WaitTicket {state} on {self.point!r}{left}>"

    def _complete(self, result: WaitResult) -> None:
        with self._lock:
            if self._done or self._cancelled:
                return
            self._done = True
        try:
            self._callback(result)
        except Exception:
            _log.exception("sync wait callback raised; ignored")


class WaiterThread:
    """The one thread that parks on waits its callers cannot block on (see the module docstring)."""

    _instance: WaiterThread | None = None
    _instance_lock = threading.Lock()

    def __init__(self, name: str = "alpha2-sync-waiter") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._kick = threading.Event()
        self._incoming: list[WaitTicket] = []
        self._thread: threading.Thread | None = None
        self._stopped = False

    @classmethod
    def instance(cls) -> WaiterThread:
        """The process-wide waiter (made on first use; a new one replaces one that was stopped)."""
        with cls._instance_lock:
            if cls._instance is None or cls._instance._stopped or cls._instance._died:
                cls._instance = cls()
            return cls._instance

    @property
    def _died(self) -> bool:
        """Whether its thread started and is gone without being stopped (it cannot be: see ``_run``)."""
        return self._thread is not None and not self._thread.is_alive() and not self._stopped

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def __repr__(self) -> str:
        if self._stopped:
            state = "stopped"
        elif self._thread is None:
            state = "not started"
        else:
            state = "running" if self._thread.is_alive() else "gone"
        return f"<WaiterThread {self._name!r} {state}>"

    def submit(
        self,
        sync_point: SyncPoint,
        timeout: float | None,
        callback: WaitCallback,
        *,
        started_at: float | None = None,
    ) -> WaitTicket:
        """Wait for ``sync_point`` on the waiter thread; ``callback(result)`` is called there once.

        Args:
            sync_point: the point to wait on.
            timeout: seconds (None: no bound). The callback gets TIMED_OUT when it passes.
            callback: completion callback; keep it short and non-blocking (it runs on the waiter thread).
            started_at: time.monotonic() the wait counts from (default: now).

        Raises:
            ClosedError: the waiter was stopped.
            InvalidInputError: not a SyncPoint, a bad timeout, or a callback that cannot be called.
        """
        if not isinstance(sync_point, SyncPoint):
            raise InvalidInputError(f"submit() needs a SyncPoint, got {type(sync_point).__name__}")
        if not callable(callback):
            raise InvalidInputError(f"submit() needs a callable callback, got {type(callback).__name__}")
        bounded = _check_timeout(timeout)
        start = time.monotonic() if started_at is None else started_at
        ticket = WaitTicket(sync_point, _deadline(start, bounded), callback, start)
        with self._lock:
            if self._stopped:
                raise ClosedError("the WaiterThread was stopped (interpreter exit?)")
            self._incoming.append(ticket)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
                _started.add(self)
        self._kick.set()
        return ticket

    def stop(self, timeout: float = 1.0) -> None:
        """Stop the thread; pending waits resolve FAILED with ClosedError. Idempotent."""
        with self._lock:
            self._stopped = True
            thread = self._thread
        self._kick.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        pending: list[WaitTicket] = []
        blocking: collections.deque[WaitTicket] = collections.deque()  # blocking_waits points, oldest first
        try:
            self._loop(pending, blocking)
        except BaseException as exc:  # a fault of the waiter's own: no wait may hang on a dead thread
            _log.exception("the sync WaiterThread failed; the waits pending on it fail")
            with self._lock:
                self._stopped = True  # instance() makes a new waiter for the waits after
                incoming, self._incoming = self._incoming, []
            error = InternalError(f"the sync WaiterThread failed: {exc!r}")
            for ticket in [*blocking, *pending, *incoming]:
                ticket._complete(WaitResult(WaitStatus.FAILED, time.monotonic() - ticket.started_at, error))

    def _loop(self, pending: list[WaitTicket], blocking: collections.deque[WaitTicket]) -> None:
        turn = 0
        while True:
            self._kick.clear()
            with self._lock:
                stopping = self._stopped
                incoming, self._incoming = self._incoming, []
            for ticket in incoming:
                if ticket.point.blocking_waits:
                    blocking.append(ticket)
                    continue
                # Register a waker once per ticket; a point that can push lets us sleep instead of slicing.
                try:
                    ticket._wakeable = ticket.point._add_waker(self._kick.set)
                except Exception as exc:  # the point's fault: its wait fails, the others go on
                    ticket._complete(WaitResult(WaitStatus.FAILED, time.monotonic() - ticket.started_at, exc))
                    continue
                pending.append(ticket)
            if stopping:
                for ticket in [*blocking, *pending]:
                    ticket._complete(
                        WaitResult(
                            WaitStatus.FAILED,
                            time.monotonic() - ticket.started_at,
                            ClosedError("the WaiterThread stopped before the wait finished"),
                        )
                    )
                return
            pending = self._resolve_finished(pending)
            while blocking and blocking[0].cancelled:
                blocking.popleft()
            if not pending and not blocking:
                self._kick.wait()
                continue
            now = time.monotonic()
            deadlines = [t.deadline for t in pending if t.deadline is not None]
            until_deadline = max(0.0, min(deadlines) - now) if deadlines else None
            if blocking:
                # The oldest blocking point: slices of at most 50 ms alone, WAITER_SLICE_S beside others.
                share = None
                if pending:
                    share = WAITER_SLICE_S if until_deadline is None else min(WAITER_SLICE_S, until_deadline)
                self._wait_oldest_blocking(blocking, share)
                if not pending:
                    continue
            native = [t for t in pending if not t._wakeable]
            if not native:
                if not blocking:
                    self._kick.wait(until_deadline)
                continue
            turn = (turn + 1) % len(native)
            ticket = native[turn]
            slice_s = WAITER_SLICE_S if until_deadline is None else min(WAITER_SLICE_S, until_deadline)
            status, error = ticket.point._native(slice_s)
            if status is not WaitStatus.TIMED_OUT:
                pending.remove(ticket)
                ticket._complete(WaitResult(status, time.monotonic() - ticket.started_at, error))

    @staticmethod
    def _wait_oldest_blocking(blocking: collections.deque[WaitTicket], share: float | None) -> None:
        """One ``_wait_native`` on the oldest blocking point: up to its deadline, at most
        :data:`WAITER_BLOCKING_SLICE_S` seconds, or ``share`` seconds beside other waits."""
        ticket = blocking[0]
        slice_s = WAITER_BLOCKING_SLICE_S if share is None else share
        if ticket.deadline is not None:
            slice_s = min(slice_s, max(0.0, ticket.deadline - time.monotonic()))
        status, error = ticket.point._native(slice_s)
        now = time.monotonic()
        if status is WaitStatus.TIMED_OUT and (ticket.deadline is None or now < ticket.deadline):
            return  # a share of the wait, or an unbounded one: waited on again next round
        blocking.popleft()
        ticket._complete(WaitResult(status, now - ticket.started_at, error))

    @staticmethod
    def _resolve_finished(pending: list[WaitTicket]) -> list[WaitTicket]:
        still: list[WaitTicket] = []
        now = time.monotonic()
        for ticket in pending:
            if ticket.cancelled:
                continue
            finished, error = ticket.point._check()
            if finished:
                ticket._complete(SyncPoint._finished_result(ticket.started_at, error))
            elif ticket.deadline is not None and now >= ticket.deadline:
                ticket._complete(WaitResult(WaitStatus.TIMED_OUT, now - ticket.started_at))
            else:
                still.append(ticket)
        return still


def _sync_points(points: Iterable[SyncPoint]) -> list[SyncPoint]:
    """``points`` as a list, each checked to be a SyncPoint (before any wait starts)."""
    if isinstance(points, SyncPoint):
        raise InvalidInputError("wait_all takes a list of sync points; wait on one with point.wait()")
    listed = list(points)
    for index, point in enumerate(listed):
        if not isinstance(point, SyncPoint):
            raise InvalidInputError(f"points[{index}] is not a SyncPoint: {point!r}")
    return listed


_started: weakref.WeakSet[WaiterThread] = weakref.WeakSet()


@atexit.register
def _stop_waiters_at_exit() -> None:
    for waiter in list(_started):
        waiter.stop(timeout=0.5)


class SyncWaiter:
    """Waits on several sync points at once, sharing one deadline, through the WaiterThread."""

    def __init__(self, waiter: WaiterThread | None = None) -> None:
        self._waiter = waiter
        self._lock = threading.Lock()
        self._tickets: list[WaitTicket] = []

    @property
    def waiter(self) -> WaiterThread:
        """The WaiterThread used (the process-wide one unless given)."""
        return self._waiter if self._waiter is not None else WaiterThread.instance()

    def submit(self, sync_point: SyncPoint, timeout: float | None, callback: WaitCallback) -> WaitTicket:
        """Callback-style wait (see :meth:`WaiterThread.submit`); :meth:`cancel_all` withdraws it."""
        ticket = self.waiter.submit(sync_point, timeout, callback)
        with self._lock:
            self._tickets = [t for t in self._tickets if not t.done] + [ticket]
        return ticket

    def __repr__(self) -> str:
        with self._lock:
            pending = sum(1 for t in self._tickets if not t.done and not t.cancelled)
        return f"<SyncWaiter {pending} pending on {self.waiter!r}>"

    def wait_all(
        self, points: Iterable[SyncPoint], timeout: float | None = DEFAULT_WAIT_TIMEOUT
    ) -> list[WaitResult]:
        """Block until every point finished or the shared deadline passed; one result per point, in order."""
        points = _sync_points(points)
        bounded = _check_timeout(timeout)
        deadline = _deadline(time.monotonic(), bounded)
        results: list[WaitResult] = []
        for point in points:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            results.append(point.wait(remaining))
        return results

    async def wait_all_async(
        self, points: Sequence[SyncPoint], timeout: float | None = DEFAULT_WAIT_TIMEOUT
    ) -> list[WaitResult]:
        """Await every point (concurrently) with one shared timeout; one result per point, in order."""
        import asyncio

        checked = _sync_points(points)
        _check_timeout(timeout)
        return list(await asyncio.gather(*(point.wait_async(timeout) for point in checked)))

    def cancel_all(self) -> int:
        """Withdraw every wait submitted through this SyncWaiter that has not completed; returns how many."""
        with self._lock:
            tickets, self._tickets = self._tickets, []
        return sum(1 for ticket in tickets if ticket.cancel())


__all__ = [
    "DEFAULT_WAIT_TIMEOUT",
    "SPIN_S",
    "WAITER_BLOCKING_SLICE_S",
    "WAITER_SLICE_S",
    "CpuSyncPoint",
    "SignaledSyncPoint",
    "SyncPoint",
    "SyncWaiter",
    "WaitCallback",
    "WaitResult",
    "WaitStatus",
    "WaitTicket",
    "WaiterThread",
]
