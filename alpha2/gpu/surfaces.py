"""Bounded decoded surfaces: a budget that decoders reserve against for every frame they hand out.

A hardware decoder draws its frames from a fixed pool; a consumer that holds on to frames (a render
queue, an encoder's look-ahead) can drain that pool and stall the decoder. :class:`SurfaceBudget`
makes the limit explicit and shared: every frame a session hands out carries a
:class:`SurfaceReservation` that counts against the budget until it is released, and when the budget
is full the next reservation waits (bounded) or fails at once, as configured. The decoder's pool is
sized from the same numbers (``extra_hw_frames``), so holding up to ``max_surfaces`` frames never
deadlocks it.

The bytes are accounted through a :class:`~alpha2.gpu.budget.MemoryBudget`: the budget's own (one
whose hard cap is ``max_bytes``) or one the caller passes, so that decoded surfaces, the importers'
texture pools and any other user count against one cap. A reservation that would pass that cap first
asks the budget's evictable pools (idle texture sets, ring slots) to make room; then it waits (WAIT
policy: woken by releases here and by the budget's pressure events, re-checked every
``MEMORY_RETRY_S``) or fails (FAIL policy). Each :class:`SurfaceReservation` holds a
:class:`~alpha2.gpu.budget.BudgetReservation`.

Thread-safe: one budget may be shared by several sessions on several threads.
"""

from __future__ import annotations

import enum
import math
import threading
import time
import weakref
from dataclasses import dataclass

from alpha2.gpu.budget import BudgetCaps, BudgetReservation, MemoryBudget, PressureCallback, PressureEvent
from alpha2.gpu.errors import BudgetExceededError, InvalidInputError, OutOfMemoryError, member_of
from alpha2.gpu.formats import PixelFormat
from alpha2.gpu.identity import BackendKind

__all__ = [
    "MEMORY_RETRY_S",
    "SurfaceBudget",
    "SurfaceBudgetError",
    "SurfaceBudgetPolicy",
    "SurfaceIdentity",
    "SurfaceReservation",
    "SurfaceUsage",
]


MEMORY_RETRY_S = 0.05
"""How often a waiting reservation re-tries a shared MemoryBudget (other users' releases send no event)."""


class SurfaceBudgetError(OutOfMemoryError):
    """A surface reservation did not fit the budget (at once, or within the wait timeout)."""


class SurfaceBudgetPolicy(enum.Enum):
    """What :meth:`SurfaceBudget.reserve` does when the budget is full."""

    WAIT = "wait"
    """Block until enough surfaces are released, up to the wait timeout; then raise."""
    FAIL = "fail"
    """Raise :class:`SurfaceBudgetError` at once."""


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be an int, got {value!r}")
    return value


def _check_seconds(name: str, value: object) -> float:
    """A wait in seconds: a number >= 0, infinity for no bound (not NaN, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value < 0:
        raise InvalidInputError(
            f"{name} must be a number of seconds >= 0 (math.inf: no bound), got {value!r}"
        )
    return float(value)


def _left(deadline: float) -> float | None:
    """Seconds to ``deadline`` for a Condition wait (None: no bound, where the deadline is infinite)."""
    return None if math.isinf(deadline) else max(0.0, deadline - time.monotonic())


@dataclass(frozen=True)
class SurfaceIdentity:
    """Which decoder, and which configuration of it, produced a surface."""

    decoder_id: int
    """Unique per decode session in this process."""
    generation: int
    """Increments when the decoder is re-opened, reset by a seek, or changes size or format."""
    width: int
    """Coded width of the surface, in pixels."""
    height: int
    """Coded height of the surface, in pixels."""
    pixel_format: PixelFormat
    """Software layout of the surface (nv12 / p010 for NVDEC surfaces)."""

    def __post_init__(self) -> None:
        for name in ("decoder_id", "generation", "width", "height"):
            _check_int(name, getattr(self, name))
        if not isinstance(self.pixel_format, PixelFormat):
            raise InvalidInputError(
                f"pixel_format must be a PixelFormat, got {self.pixel_format!r} "
                "(PixelFormat.from_ffmpeg_name turns FFmpeg's names into one)"
            )
        if self.decoder_id < 0 or self.generation < 0:
            raise InvalidInputError("decoder_id and generation must be non-negative")
        if self.width <= 0 or self.height <= 0:
            raise InvalidInputError(f"surface size must be positive, got {self.width}x{self.height}")

    def same_configuration(self, other: SurfaceIdentity) -> bool:
        """True when both surfaces come from the same decoder and generation (their pools match)."""
        return (self.decoder_id, self.generation) == (other.decoder_id, other.generation)


@dataclass(frozen=True)
class SurfaceUsage:
    """A snapshot of a budget's accounting."""

    surfaces: int
    """Reservations currently held."""
    size_bytes: int
    """Bytes currently reserved."""
    peak_surfaces: int
    """Most reservations held at once since the budget was made."""
    peak_bytes: int
    """Most bytes reserved at once since the budget was made."""
    max_surfaces: int | None
    """The surface limit, or None for no limit."""
    max_bytes: int | None
    """The byte limit, or None for no limit."""


class _ReservationState:
    """The part of a reservation its GC backstop may touch (never the reservation itself)."""

    __slots__ = ("budget", "memory", "size_bytes")

    def __init__(self, budget: SurfaceBudget, memory: BudgetReservation) -> None:
        self.budget: SurfaceBudget | None = budget
        self.memory = memory
        self.size_bytes = memory.size_bytes


def _release_state(state: _ReservationState) -> None:
    # Swap the budget out first, so a second call (explicit release racing the finalizer) is a no-op.
    budget, state.budget = state.budget, None
    if budget is None:
        return
    # The bytes first: a reservation woken by _give_back must find them returned.
    state.memory.release()
    budget._give_back(state.size_bytes)


class SurfaceReservation:
    """One surface counted against a :class:`SurfaceBudget` (and its bytes against its MemoryBudget).

    Released exactly once: by :meth:`release` (idempotent), or, as a backstop, when the last
    reference to the reservation goes away.
    """

    __slots__ = ("__weakref__", "_finalizer", "_state", "identity")

    def __init__(self, budget: SurfaceBudget, memory: BudgetReservation, identity: SurfaceIdentity) -> None:
        self._state = _ReservationState(budget, memory)
        self.identity = identity
        """The surface this reservation accounts for."""
        self._finalizer = weakref.finalize(self, _release_state, self._state)
        # Nothing to do at interpreter exit: the budget dies with the process.
        self._finalizer.atexit = False

    @property
    def size_bytes(self) -> int:
        """Bytes this reservation counts."""
        return self._state.size_bytes

    @property
    def memory(self) -> BudgetReservation:
        """The bytes, as held against the SurfaceBudget's MemoryBudget."""
        return self._state.memory

    @property
    def released(self) -> bool:
        """Whether the reservation has been given back."""
        return self._state.budget is None

    def release(self) -> None:
        """Give the surface back to the budget. Idempotent."""
        self._finalizer()

    def __enter__(self) -> SurfaceReservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"<SurfaceReservation {self.size_bytes} bytes {state} {self.identity}>"


def _pressure_forwarder(budget: weakref.ref[SurfaceBudget]) -> PressureCallback:
    def on_pressure(event: PressureEvent) -> None:
        target = budget()
        if target is not None:
            target._on_pressure(event)

    return on_pressure


class SurfaceBudget:
    """Count and byte limits on decoded surfaces held by the application, shared by sessions.

    Args:
        max_surfaces: Most reservations held at once; None for no limit.
        max_bytes: Most bytes these surfaces may reserve at once; None for no limit.
        policy: What :meth:`reserve` does when full: wait (bounded) or fail at once.
        wait_timeout_s: How long a waiting reservation waits before it raises (``math.inf``: no bound).
        memory_budget: The accounting the bytes go through; None: a budget of its own, whose hard cap
            for ``backend`` is ``max_bytes``. Pass a shared one to count surfaces, texture pools and
            other users against one cap (its caps apply on top of ``max_bytes``).
        backend: The backend the surfaces' bytes count against (CUDA for NVDEC surfaces).
    """

    def __init__(
        self,
        max_surfaces: int | None = None,
        max_bytes: int | None = None,
        policy: SurfaceBudgetPolicy = SurfaceBudgetPolicy.WAIT,
        wait_timeout_s: float = 10.0,
        *,
        memory_budget: MemoryBudget | None = None,
        backend: BackendKind = BackendKind.CPU,
    ) -> None:
        for name, value in (("max_surfaces", max_surfaces), ("max_bytes", max_bytes)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidInputError(f"{name} must be an int of at least 1, or None, got {value!r}")
        if not isinstance(policy, SurfaceBudgetPolicy):
            try:
                policy = SurfaceBudgetPolicy(policy)
            except ValueError:
                allowed = ", ".join(p.value for p in SurfaceBudgetPolicy)
                raise InvalidInputError(f"policy must be one of {allowed}, got {policy!r}") from None
        wait_timeout_s = _check_seconds("wait_timeout_s", wait_timeout_s)
        backend = member_of(BackendKind, backend, "backend")
        if memory_budget is not None and not isinstance(memory_budget, MemoryBudget):
            raise InvalidInputError(
                f"memory_budget must be a MemoryBudget, got {type(memory_budget).__name__}"
            )
        self.max_surfaces = max_surfaces
        self.max_bytes = max_bytes
        self.policy = policy
        self.wait_timeout_s = float(wait_timeout_s)
        self.backend = backend
        """The backend the surfaces' bytes count against."""
        if memory_budget is None:
            memory_budget = MemoryBudget({backend: BudgetCaps(hard_bytes=max_bytes)})
        self.memory_budget = memory_budget
        """The accounting the surfaces' bytes go through (shared or the budget's own)."""
        # Re-entrant: a reservation collected by the GC while this thread holds the lock gives back in place.
        self._cond = threading.Condition(threading.RLock())
        self._surfaces = 0
        self._bytes = 0
        self._pending_surfaces = 0
        self._pending_bytes = 0
        self._peak_surfaces = 0
        self._peak_bytes = 0
        self._pressure_events = 0
        remove = memory_budget.add_pressure_callback(_pressure_forwarder(weakref.ref(self)))
        weakref.finalize(self, remove).atexit = False

    def _fits(self, size_bytes: int) -> bool:
        surfaces = self._surfaces + self._pending_surfaces
        if self.max_surfaces is not None and surfaces + 1 > self.max_surfaces:
            return False
        held = self._bytes + self._pending_bytes
        return self.max_bytes is None or held + size_bytes <= self.max_bytes

    def _describe(self, size_bytes: int) -> str:
        max_surfaces = self.max_surfaces if self.max_surfaces is not None else "unlimited"
        max_bytes = self.max_bytes if self.max_bytes is not None else "unlimited"
        return (
            f"{self._surfaces}/{max_surfaces} surfaces and {self._bytes}/{max_bytes} bytes held, "
            f"{size_bytes} bytes requested"
        )

    def _memory_describe(self) -> str:
        usage = self.memory_budget.usage(self.backend)
        return (
            f"the {self.backend.value} memory budget has {usage.reserved_bytes} of "
            f"{usage.caps.hard_bytes} bytes reserved ({usage.reservation_count} reservations, all users)"
        )

    def reserve(
        self, size_bytes: int, identity: SurfaceIdentity, timeout: float | None = None
    ) -> SurfaceReservation:
        """Reserve one surface of ``size_bytes``.

        Args:
            size_bytes: Bytes the surface occupies.
            identity: The surface's decoder, generation, size and format.
            timeout: Seconds to wait when full (WAIT policy); None uses the budget's ``wait_timeout_s``;
                ``math.inf`` waits without a bound.

        Raises:
            SurfaceBudgetError: The budget (or its MemoryBudget's hard cap) is full (FAIL policy),
                stayed full for the timeout (WAIT policy), or the request can never fit.
        """
        if _check_int("size_bytes", size_bytes) < 0:
            raise InvalidInputError(f"size_bytes must be non-negative, got {size_bytes}")
        if not isinstance(identity, SurfaceIdentity):
            raise InvalidInputError(f"identity must be a SurfaceIdentity, got {identity!r}")
        hard = self.memory_budget.caps(self.backend).hard_bytes
        for limit, what in ((self.max_bytes, "max_bytes"), (hard, "the MemoryBudget's hard cap")):
            if limit is not None and size_bytes > limit:
                raise SurfaceBudgetError(
                    f"a surface of {size_bytes} bytes can never fit a budget of {limit} bytes; raise {what}"
                )
        wait_s = self.wait_timeout_s if timeout is None else _check_seconds("timeout", timeout)
        deadline = time.monotonic() + wait_s
        label = f"decoded surface (decoder {identity.decoder_id}, generation {identity.generation})"
        while True:
            self._take_slot(size_bytes, wait_s, deadline)
            try:
                memory = self.memory_budget.reserve(size_bytes, self.backend, label=label)
            except BudgetExceededError as exc:
                with self._cond:
                    self._pending_surfaces -= 1
                    self._pending_bytes -= size_bytes
                    self._cond.notify_all()
                    if self.policy is SurfaceBudgetPolicy.FAIL:
                        raise SurfaceBudgetError(
                            f"surface budget full ({self._memory_describe()}); release frames you hold "
                            "or raise the MemoryBudget's hard cap"
                        ) from exc
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise SurfaceBudgetError(
                            f"surface budget stayed full for {wait_s:.3g} s ({self._memory_describe()}); "
                            "release frames you hold, or raise the MemoryBudget's hard cap"
                        ) from exc
                    self._cond.wait(min(left, MEMORY_RETRY_S))
                continue
            break
        with self._cond:
            self._pending_surfaces -= 1
            self._pending_bytes -= size_bytes
            self._surfaces += 1
            self._bytes += size_bytes
            self._peak_surfaces = max(self._peak_surfaces, self._surfaces)
            self._peak_bytes = max(self._peak_bytes, self._bytes)
        return SurfaceReservation(self, memory, identity)

    def _take_slot(self, size_bytes: int, wait_s: float, deadline: float) -> None:
        """Count a reservation in progress against the surface limits (waiting per the policy)."""
        with self._cond:
            if not self._fits(size_bytes):
                if self.policy is SurfaceBudgetPolicy.FAIL:
                    raise SurfaceBudgetError(
                        f"surface budget full ({self._describe(size_bytes)}); release frames you hold "
                        "or raise the budget's limits"
                    )
                while not self._fits(size_bytes):
                    left = _left(deadline)
                    if left is not None and left <= 0:
                        raise SurfaceBudgetError(
                            f"surface budget stayed full for {wait_s:.3g} s ({self._describe(size_bytes)}); "
                            "release frames you hold, or raise max_surfaces / max_bytes"
                        )
                    self._cond.wait(left)
            self._pending_surfaces += 1
            self._pending_bytes += size_bytes

    def _give_back(self, size_bytes: int) -> None:
        with self._cond:
            self._surfaces -= 1
            self._bytes -= size_bytes
            self._cond.notify_all()

    def _on_pressure(self, event: PressureEvent) -> None:
        """The MemoryBudget's pressure events: a reservation waiting for its bytes tries again at once."""
        if event.backend is not self.backend:
            return
        with self._cond:
            self._pressure_events += 1
            self._cond.notify_all()

    @property
    def pressure_events(self) -> int:
        """Pressure events of this budget's backend that its MemoryBudget delivered here."""
        return self._pressure_events

    def usage(self) -> SurfaceUsage:
        """A consistent snapshot of what is held now and at the peak."""
        with self._cond:
            return SurfaceUsage(
                surfaces=self._surfaces,
                size_bytes=self._bytes,
                peak_surfaces=self._peak_surfaces,
                peak_bytes=self._peak_bytes,
                max_surfaces=self.max_surfaces,
                max_bytes=self.max_bytes,
            )

    def _memory_fits(self, size_bytes: int) -> bool:
        usage = self.memory_budget.usage(self.backend)
        hard = usage.caps.hard_bytes
        return hard is None or usage.reserved_bytes + size_bytes <= hard

    def wait_for_room(self, size_bytes: int = 0, timeout: float | None = None) -> bool:
        """Block until a reservation of ``size_bytes`` would fit, or the timeout passes (None: the
        budget's ``wait_timeout_s``; ``math.inf``: no bound). Raises only for a bad ``size_bytes`` or
        ``timeout`` (InvalidInputError).

        Room in the MemoryBudget counts without asking its pools to evict (a reservation would).
        """
        if _check_int("size_bytes", size_bytes) < 0:
            raise InvalidInputError(f"size_bytes must be non-negative, got {size_bytes}")
        wait_s = self.wait_timeout_s if timeout is None else _check_seconds("timeout", timeout)
        deadline = time.monotonic() + wait_s
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: self._fits(size_bytes), _left(deadline)):
                    return False
            if self._memory_fits(size_bytes):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with self._cond:
                self._cond.wait(min(left, MEMORY_RETRY_S))

    def __repr__(self) -> str:
        u = self.usage()
        return (
            f"<SurfaceBudget {u.surfaces}/{u.max_surfaces} surfaces, {u.size_bytes}/{u.max_bytes} bytes, "
            f"policy={self.policy.value}>"
        )
