"""Memory accounting: per-backend caps, reservations released exactly once, pressure events, eviction.

A :class:`MemoryBudget` counts bytes per :class:`~alpha2.gpu.identity.BackendKind`. Each backend has
:class:`BudgetCaps`: a soft cap (crossing it upward raises a :class:`PressureEvent` and asks evictable
pools to shrink back under it) and a hard cap (a reservation that would pass it first asks the pools to
drop unused resources, then fails with :class:`~alpha2.gpu.errors.BudgetExceededError`). ``None`` means
unbounded.

A :class:`BudgetReservation` returns its bytes exactly once: ``release()``, leaving its ``with`` block,
or -- as a backstop -- when it is garbage collected (``weakref.finalize``).

Thread safety: one lock guards the counters; pressure callbacks and evictable pools are always called
outside it, in the thread whose reservation or release caused them, so they may reserve and release
themselves. A release that garbage collection triggers while the same thread holds the lock is queued
and applied before the lock is let go; the events of a release by garbage collection are delivered by
the budget's next operation.
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType

from alpha2.gpu.errors import BudgetExceededError, InvalidInputError, member_of
from alpha2.gpu.identity import BackendKind

_log = logging.getLogger(__name__)

EVICTION_ROUNDS = 3
"""How many times a reservation over a hard cap asks the pools to evict before it fails."""


def _size(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative int of bytes, got {value!r}")
    return value


def _backend(value: object) -> BackendKind:
    """A BackendKind, or one of its values ("cuda"); anything else is refused with the allowed values."""
    return member_of(BackendKind, value, "backend")


def _caps_text(caps: BudgetCaps) -> str:
    if caps.soft_bytes is None and caps.hard_bytes is None:
        return "no caps"
    return f"soft cap {caps.soft_bytes}, hard cap {caps.hard_bytes}"


@dataclass(frozen=True)
class BudgetCaps:
    """The caps of one backend. None means unbounded."""

    soft_bytes: int | None = None
    """Above this, pressure events fire and evictable pools are asked to shrink."""
    hard_bytes: int | None = None
    """Reservations never take usage above this; they evict, then fail with BudgetExceededError."""

    def __post_init__(self) -> None:
        if self.soft_bytes is not None:
            _size("BudgetCaps.soft_bytes", self.soft_bytes)
        if self.hard_bytes is not None:
            _size("BudgetCaps.hard_bytes", self.hard_bytes)
        if self.soft_bytes is not None and self.hard_bytes is not None and self.soft_bytes > self.hard_bytes:
            raise InvalidInputError(
                f"BudgetCaps.soft_bytes {self.soft_bytes} is above hard_bytes {self.hard_bytes}"
            )


@dataclass(frozen=True)
class BudgetUsage:
    """A snapshot of one backend's accounting."""

    backend: BackendKind
    """The backend counted."""
    reserved_bytes: int
    """Bytes held by live reservations."""
    peak_bytes: int
    """Highest reserved_bytes seen (since creation or reset_peak)."""
    reservation_count: int
    """Number of live reservations."""
    caps: BudgetCaps
    """The caps in force."""

    @property
    def over_soft_cap(self) -> bool:
        """Whether usage is above the soft cap."""
        return self.caps.soft_bytes is not None and self.reserved_bytes > self.caps.soft_bytes


class PressureKind(enum.Enum):
    """What a pressure event reports."""

    SOFT_CAP_EXCEEDED = "soft_cap_exceeded"
    """Usage went above the soft cap (fired on the crossing, not on every reservation above it)."""
    RELIEVED = "relieved"
    """Usage went back to or under the soft cap."""
    HARD_CAP_REACHED = "hard_cap_reached"
    """A reservation would pass the hard cap; pools are asked to evict (it fails if they cannot)."""


@dataclass(frozen=True)
class PressureEvent:
    """Delivered to pressure callbacks (outside the budget's lock)."""

    backend: BackendKind
    """The backend under pressure."""
    kind: PressureKind
    """What happened."""
    reserved_bytes: int
    """Usage right after the change that caused the event."""
    requested_bytes: int
    """Size of the reservation (or release) that caused it."""
    caps: BudgetCaps
    """The caps in force."""

    @property
    def excess_bytes(self) -> int:
        """Bytes above the soft cap (0 when under it or without one)."""
        soft = self.caps.soft_bytes
        return 0 if soft is None else max(0, self.reserved_bytes - soft)


PressureCallback = Callable[[PressureEvent], None]
"""Called with each pressure event; must not raise (exceptions are logged and ignored)."""
EvictCallback = Callable[[int], int]
"""An evictable pool: asked to free at least N bytes of unused resources, returns the bytes it freed."""


@dataclass
class _Ledger:
    reserved: int = 0
    peak: int = 0
    count: int = 0


@dataclass
class _Evictable:
    callback: EvictCallback
    backend: BackendKind | None


class BudgetReservation:
    """Bytes held against a :class:`MemoryBudget`; returned exactly once (release, ``with``, or GC)."""

    __slots__ = ("__weakref__", "_budget", "_finalizer", "backend", "label", "size_bytes")

    def __init__(self, budget: MemoryBudget, backend: BackendKind, size_bytes: int, label: str) -> None:
        # Made by MemoryBudget.reserve only, after the bytes were counted.
        self.backend = backend
        """The backend the bytes are counted against."""
        self.size_bytes = size_bytes
        """Bytes held."""
        self.label = label
        """What the bytes are for (for diagnostics)."""
        self._budget = budget
        self._finalizer = weakref.finalize(self, budget._return_bytes, backend, size_bytes)
        self._finalizer.atexit = False

    @property
    def released(self) -> bool:
        """True once the bytes were returned."""
        return not self._finalizer.alive

    def release(self) -> None:
        """Return the bytes. Idempotent: only the first call (or the GC backstop) counts."""
        self._finalizer()
        self._budget._flush()

    def __enter__(self) -> BudgetReservation:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"BudgetReservation({self.backend.value}, {self.size_bytes} bytes, {self.label!r}, {state})"


class EvictableRegistration:
    """Handle of a registered evictable pool; :meth:`unregister` removes it."""

    def __init__(self, budget: MemoryBudget, entry: _Evictable) -> None:
        self._budget = weakref.ref(budget)
        self._entry = entry

    def unregister(self) -> None:
        """Stop asking this pool to evict. Idempotent."""
        budget = self._budget()
        if budget is not None:
            budget._remove_evictable(self._entry)

    def __repr__(self) -> str:
        budget = self._budget()
        registered = budget is not None and budget._has_evictable(self._entry)
        callback = getattr(self._entry.callback, "__qualname__", type(self._entry.callback).__name__)
        backend = "every backend" if self._entry.backend is None else self._entry.backend.value
        state = "registered" if registered else "unregistered"
        return f"EvictableRegistration({callback}, {backend}, {state})"


class MemoryBudget:
    """Per-backend byte accounting with soft and hard caps, pressure events and evictable pools."""

    def __init__(
        self,
        caps: Mapping[BackendKind, BudgetCaps] | None = None,
        default_caps: BudgetCaps | None = None,
    ) -> None:
        """A budget with ``caps`` per backend.

        Args:
            caps: caps per backend (keys: BackendKind or its value, e.g. ``"cuda"``).
            default_caps: caps of backends not in ``caps`` (default: unbounded).

        Raises:
            InvalidInputError: a key is not a backend, or a value is not BudgetCaps.
        """
        self._lock = threading.RLock()
        self._depth = 0
        self._events: list[PressureEvent] = []
        self._deferred: collections.deque[tuple[BackendKind, int]] = collections.deque()
        self._default_caps = (
            BudgetCaps() if default_caps is None else self._checked_caps(default_caps, "default_caps")
        )
        self._caps: dict[BackendKind, BudgetCaps] = {}
        if caps is not None and not isinstance(caps, Mapping):
            raise InvalidInputError(
                f"caps must be a mapping of backend to BudgetCaps, got {type(caps).__name__}"
            )
        for key, value in (caps or {}).items():
            backend = _backend(key)
            self._caps[backend] = self._checked_caps(value, f"caps[{backend.value!r}]")
        self._ledgers: dict[BackendKind, _Ledger] = collections.defaultdict(_Ledger)
        self._callbacks: list[PressureCallback] = []
        self._evictables: list[_Evictable] = []

    # -- configuration ------------------------------------------------------------------------------

    @staticmethod
    def _checked_caps(value: BudgetCaps, what: str = "caps") -> BudgetCaps:
        if not isinstance(value, BudgetCaps):
            raise InvalidInputError(f"{what} must be BudgetCaps, got {type(value).__name__}")
        return value

    def caps(self, backend: BackendKind) -> BudgetCaps:
        """The caps in force for ``backend``."""
        return self._caps.get(_backend(backend), self._default_caps)

    def set_caps(self, backend: BackendKind, caps: BudgetCaps) -> None:
        """Change a backend's caps. Usage already above a new hard cap stays; new reservations wait for it."""
        backend = _backend(backend)
        caps = self._checked_caps(caps)
        with self._locked():
            self._caps[backend] = caps

    def add_pressure_callback(self, callback: PressureCallback) -> Callable[[], None]:
        """Register ``callback(event)``; returns a function that removes it."""
        if not callable(callback):
            raise InvalidInputError(
                f"add_pressure_callback needs a callable(PressureEvent), got {type(callback).__name__}"
            )
        with self._locked():
            self._callbacks.append(callback)

        def remove() -> None:
            with self._locked():
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return remove

    def register_evictable(
        self, callback: EvictCallback, backend: BackendKind | None = None
    ) -> EvictableRegistration:
        """Register a pool that can drop unused resources: ``callback(bytes_wanted) -> bytes_freed``.

        The pool frees by releasing its own reservations. It is asked when usage crosses the soft cap
        (to get back under it) and when a reservation would pass the hard cap (before it fails).

        Args:
            callback: frees at least ``bytes_wanted`` if it can; returns the bytes actually freed.
            backend: the backend its memory counts against (None: asked for every backend).
        """
        if not callable(callback):
            raise InvalidInputError("register_evictable needs a callable(bytes_wanted) -> bytes_freed")
        entry = _Evictable(callback, None if backend is None else _backend(backend))
        with self._locked():
            self._evictables.append(entry)
        return EvictableRegistration(self, entry)

    def _remove_evictable(self, entry: _Evictable) -> None:
        with self._locked():
            if entry in self._evictables:
                self._evictables.remove(entry)

    def _has_evictable(self, entry: _Evictable) -> bool:
        with self._locked():
            return any(e is entry for e in self._evictables)

    # -- reservations -------------------------------------------------------------------------------

    def reserve(
        self, size_bytes: int, backend: BackendKind, *, label: str = "", evict: bool = True
    ) -> BudgetReservation:
        """Count ``size_bytes`` against ``backend``.

        Raises:
            BudgetExceededError: the reservation would pass the hard cap, and evictable pools (asked
                up to EVICTION_ROUNDS times unless ``evict`` is False) could not make room.
            InvalidInputError: a size that is not a non-negative int, or ``backend`` is not a backend.
        """
        size_bytes = _size("size_bytes", size_bytes)
        backend = _backend(backend)
        for attempt in range(EVICTION_ROUNDS + 1):
            with self._locked():
                caps = self.caps(backend)
                ledger = self._ledgers[backend]
                hard = caps.hard_bytes
                if hard is None or ledger.reserved + size_bytes <= hard:
                    before = ledger.reserved
                    ledger.reserved += size_bytes
                    ledger.count += 1
                    ledger.peak = max(ledger.peak, ledger.reserved)
                    reservation = BudgetReservation(self, backend, size_bytes, label)
                    soft = caps.soft_bytes
                    crossed: PressureEvent | None = None
                    if soft is not None and before <= soft < ledger.reserved:
                        crossed = PressureEvent(
                            backend, PressureKind.SOFT_CAP_EXCEEDED, ledger.reserved, size_bytes, caps
                        )
                        self._events.append(crossed)
                    break
                over_by = ledger.reserved + size_bytes - hard
                reserved_now = ledger.reserved
                evictors = self._evictors_locked(backend) if evict and size_bytes <= hard else []
                if attempt == 0:
                    self._events.append(
                        PressureEvent(backend, PressureKind.HARD_CAP_REACHED, reserved_now, size_bytes, caps)
                    )
            self._flush()
            if not evictors or attempt == EVICTION_ROUNDS or self._evict(evictors, over_by) == 0:
                raise BudgetExceededError(
                    f"reserving {size_bytes} bytes of {backend.value} memory ({label or 'unlabelled'}) would "
                    f"pass the hard cap of {hard} bytes with {reserved_now} bytes reserved"
                    + ("" if evictors else " and no evictable pool to ask")
                    + "; release frames or surfaces, or raise BudgetCaps.hard_bytes"
                )
        self._flush()
        if crossed is not None:
            evictors = self._evictors(backend)
            if evictors and crossed.excess_bytes > 0:
                self._evict(evictors, crossed.excess_bytes)
        return reservation

    def try_reserve(
        self, size_bytes: int, backend: BackendKind, *, label: str = ""
    ) -> BudgetReservation | None:
        """Like :meth:`reserve` (evicting if needed), but None instead of BudgetExceededError."""
        try:
            return self.reserve(size_bytes, backend, label=label)
        except BudgetExceededError:
            return None

    # -- queries ------------------------------------------------------------------------------------

    def usage(self, backend: BackendKind) -> BudgetUsage:
        """A snapshot of ``backend``'s accounting."""
        backend = _backend(backend)
        with self._locked():
            ledger = self._ledgers.get(backend, _Ledger())
            snapshot = BudgetUsage(backend, ledger.reserved, ledger.peak, ledger.count, self.caps(backend))
        self._flush()
        return snapshot

    def usages(self) -> dict[BackendKind, BudgetUsage]:
        """Snapshots of every backend that has caps or has had a reservation."""
        with self._locked():
            backends = set(self._ledgers) | set(self._caps)
        return {backend: self.usage(backend) for backend in sorted(backends, key=lambda b: b.value)}

    def reset_peak(self, backend: BackendKind) -> None:
        """Set the peak back to the current usage."""
        backend = _backend(backend)
        with self._locked():
            ledger = self._ledgers[backend]
            ledger.peak = ledger.reserved

    def __repr__(self) -> str:
        # No _flush: a repr must not run pressure callbacks.
        with self._locked():
            backends = sorted(set(self._ledgers) | set(self._caps), key=lambda b: b.value)
            ledgers = [(b, self._ledgers.get(b, _Ledger())) for b in backends]
            parts = [
                f"{b.value}: {ledger.reserved} bytes in {ledger.count} reservations "
                f"({_caps_text(self.caps(b))})"
                for b, ledger in ledgers
            ]
            default = _caps_text(self._default_caps)
        return f"MemoryBudget({'; '.join(parts) or 'nothing reserved'}; other backends {default})"

    # -- internals ----------------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # An RLock, so that a reservation collected (finalized) while this thread holds the lock does
        # not deadlock; _depth tells _return_bytes to leave the bytes to the section in progress.
        with self._lock:
            self._depth += 1
            try:
                self._apply_deferred()
                yield
                self._apply_deferred()
            finally:
                self._depth -= 1

    def _return_bytes(self, backend: BackendKind, size_bytes: int) -> None:
        """The finalizer of a reservation (explicit release or GC). Events wait for the next _flush."""
        self._deferred.append((backend, size_bytes))
        with self._lock:
            if self._depth == 0:
                self._apply_deferred()

    def _apply_deferred(self) -> None:
        while self._deferred:
            backend, size_bytes = self._deferred.popleft()
            ledger = self._ledgers[backend]
            before = ledger.reserved
            ledger.reserved -= size_bytes
            ledger.count -= 1
            caps = self.caps(backend)
            soft = caps.soft_bytes
            if soft is not None and ledger.reserved <= soft < before:
                self._events.append(
                    PressureEvent(backend, PressureKind.RELIEVED, ledger.reserved, size_bytes, caps)
                )

    def _evictors_locked(self, backend: BackendKind) -> list[EvictCallback]:
        return [e.callback for e in self._evictables if e.backend is None or e.backend is backend]

    def _evictors(self, backend: BackendKind) -> list[EvictCallback]:
        with self._locked():
            return self._evictors_locked(backend)

    @staticmethod
    def _evict(evictors: list[EvictCallback], wanted: int) -> int:
        freed = 0
        for callback in evictors:
            if freed >= wanted:
                break
            try:
                freed += max(0, int(callback(wanted - freed)))
            except Exception:
                _log.exception("evictable pool raised while evicting; ignored")
        return freed

    def _flush(self) -> None:
        """Deliver queued pressure events, outside the lock, in the calling thread."""
        with self._locked():
            if not self._events:
                return
            events, self._events = self._events, []
            callbacks = list(self._callbacks)
        for event in events:
            for callback in callbacks:
                try:
                    callback(event)
                except Exception:
                    _log.exception("budget pressure callback raised; ignored")


__all__ = [
    "EVICTION_ROUNDS",
    "BudgetCaps",
    "BudgetReservation",
    "BudgetUsage",
    "EvictCallback",
    "EvictableRegistration",
    "MemoryBudget",
    "PressureCallback",
    "PressureEvent",
    "PressureKind",
]
