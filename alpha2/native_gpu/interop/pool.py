"""The pool every interop pairing keeps its texture sets / ring slots in (:class:`SlotPool`).

Items are keyed by stream (decoder, generation, format, sizes), reused instead of made per frame,
bounded per stream, drained when a decoder's generation ends, and -- given a
:class:`~alpha2.gpu.budget.MemoryBudget` -- counted against it and trimmed under its pressure.
Re-exported by :mod:`alpha2.native_gpu.interop.leases`.
"""

from __future__ import annotations

import collections
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from alpha2.gpu.budget import BudgetReservation, EvictableRegistration, MemoryBudget
from alpha2.gpu.errors import GpuTimeoutError, InvalidInputError
from alpha2.gpu.identity import BackendKind

__all__ = ["DEFAULT_MAX_IDLE_KEYS", "DEFAULT_SLOTS_PER_KEY", "SlotPool"]

T = TypeVar("T")

DEFAULT_SLOTS_PER_KEY = 4
"""Texture sets / ring slots per stream (decoder generation and size) before imports wait for a release."""
DEFAULT_MAX_IDLE_KEYS = 8
"""Streams whose idle sets are kept; the least recently used beyond this are destroyed."""


def _evict_forwarder(pool: weakref.ref[SlotPool[Any]]) -> Callable[[int], int]:
    # The budget holds this, not the pool: a pool nobody closes can still be collected.
    def evict(bytes_wanted: int) -> int:
        target = pool()
        return 0 if target is None else target.trim_idle(bytes_wanted)

    return evict


class SlotPool(Generic[T]):
    """Reusable items (texture sets, ring slots) keyed by ``(decoder_id, generation, ...)``. Thread-safe.

    ``take`` hands out an idle item of the key (reused) or makes one with ``create(key)``; when
    ``per_key`` items of the key are all out it waits, up to ``timeout_s``, for one to come back, then
    raises GpuTimeoutError. ``give_back`` returns one. When a key of a newer generation of a decoder
    arrives, the idle items of that decoder's older generations are destroyed, and out-standing ones
    are destroyed as they come back (``SurfaceIdentity`` keeps a texture of one generation from being
    reused for another); a frame of an older generation still held (kept across a seek) gets an item of
    its own, destroyed as it comes back. Items of stopped streams are evicted beyond ``max_idle_keys``.
    ``destroy`` is called outside the lock, exactly once per item.

    Memory pressure: given a ``memory_budget``, every item's bytes (``item_bytes(key)``) are reserved
    against it for as long as the item lives, and the pool is registered as one of the budget's
    evictable pools: when usage crosses the soft cap (a pressure event) or a reservation would pass the
    hard cap, the budget asks the pool to :meth:`trim_idle`, which destroys idle items, least recently
    used first, until enough bytes are returned. Items held by leases are never trimmed.
    """

    def __init__(
        self,
        create: Callable[[tuple[Hashable, ...]], T],
        destroy: Callable[[T], None],
        *,
        per_key: int = DEFAULT_SLOTS_PER_KEY,
        max_idle_keys: int = DEFAULT_MAX_IDLE_KEYS,
        what: str = "texture sets",
        memory_budget: MemoryBudget | None = None,
        backend: BackendKind = BackendKind.WGPU,
        item_bytes: Callable[[tuple[Hashable, ...]], int] | None = None,
    ) -> None:
        if per_key < 1 or max_idle_keys < 1:
            raise InvalidInputError(f"per_key and max_idle_keys must be >= 1, got {per_key}, {max_idle_keys}")
        if memory_budget is not None and item_bytes is None:
            raise InvalidInputError(
                "a SlotPool with a memory_budget needs item_bytes(key) to reserve its items"
            )
        self._create = create
        self._destroy_fn = destroy
        self.per_key = per_key
        self.max_idle_keys = max_idle_keys
        self.what = what
        self._cond = threading.Condition(threading.Lock())
        # Least recently used first.
        self._idle: collections.OrderedDict[tuple[Hashable, ...], list[T]] = collections.OrderedDict()
        self._out: dict[tuple[Hashable, ...], int] = {}
        # Of those out, the ones taken ahead (take_idle) and not yet claimed: they do not count
        # against per_key, so frames copied ahead never make an import wait.
        self._ahead: dict[tuple[Hashable, ...], int] = {}
        self._latest_generation: dict[Hashable, int] = {}
        self.allocations = 0
        self.reuses = 0
        self.drained = 0
        self.trimmed = 0
        """Idle items destroyed because the memory budget asked for room."""
        self._closed = False
        self._budget = memory_budget
        self._backend = backend
        self._item_bytes = item_bytes
        # id(item) -> its bytes in the budget, for the items alive now.
        self._reservations: dict[int, BudgetReservation] = {}
        self._registration: EvictableRegistration | None = None
        if memory_budget is not None:
            self._registration = memory_budget.register_evictable(
                _evict_forwarder(weakref.ref(self)), backend
            )
            weakref.finalize(self, self._registration.unregister).atexit = False

    def _stale(self, key: tuple[Hashable, ...]) -> bool:
        generation = key[1]
        assert isinstance(generation, int)
        return self._closed or generation < self._latest_generation.get(key[0], generation)

    def take(self, key: tuple[Hashable, ...], timeout_s: float) -> tuple[T, bool]:
        """An item for ``key`` and whether it was reused.

        Raises:
            GpuTimeoutError: ``per_key`` items stayed out for ``timeout_s``.
            InvalidInputError: the pool is closed.

        A key of a generation older than one already seen (a frame kept across a seek, used after newer
        ones) gets an item made for it, destroyed when it is given back.
        """
        decoder_id, generation = key[0], key[1]
        assert isinstance(generation, int)
        doomed: list[T] = []
        item: T | None = None
        with self._cond:
            if self._closed:
                raise InvalidInputError(f"the pool of {self.what} is closed")
            latest = self._latest_generation.get(decoder_id)
            if latest is not None and generation < latest:
                # A frame kept from before a seek (or an earlier batch), used after newer ones: an item
                # of its own, made now and destroyed as it comes back (its generation is stale), never
                # waiting for the user's other old frames to be let go.
                self._out[key] = self._out.get(key, 0) + 1
                stale = True
            else:
                stale = False
            if not stale and (latest is None or generation > latest):
                self._latest_generation[decoder_id] = generation
                for old in [k for k in self._idle if k[0] == decoder_id and k[1] != generation]:
                    doomed += self._idle.pop(old)
        self._destroy(doomed)
        if stale:
            return self._make(key), False
        with self._cond:
            deadline = time.monotonic() + timeout_s
            while True:
                if self._closed:
                    raise InvalidInputError(f"the pool of {self.what} is closed")
                idle = self._idle.get(key)
                if idle:
                    item = idle.pop()
                    if not idle:
                        del self._idle[key]
                    self.reuses += 1
                    break
                if self._out.get(key, 0) - self._ahead.get(key, 0) < self.per_key:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GpuTimeoutError(
                        f"all {self.per_key} {self.what} of this stream are held by unreleased leases "
                        f"(waited {timeout_s:.3g} s); release leases once the work sampling them is "
                        "submitted, or raise slots"
                    )
                self._cond.wait(left)
            self._out[key] = self._out.get(key, 0) + 1
        if item is not None:
            return item, True
        return self._make(key), False

    def _make(self, key: tuple[Hashable, ...]) -> T:
        """Make an item whose place in ``_out`` is taken, its bytes reserved in the budget; on failure
        the place is given back."""
        reservation: BudgetReservation | None = None
        try:
            if self._budget is not None:
                assert self._item_bytes is not None
                # Outside the lock: the budget may ask this very pool to trim its idle items first.
                reservation = self._budget.reserve(
                    self._item_bytes(key), self._backend, label=f"{self.what} of decoder {key[0]}"
                )
            item = self._create(key)
        except BaseException:
            if reservation is not None:
                reservation.release()
            self._returned(key)
            raise
        with self._cond:
            self.allocations += 1
            if reservation is not None:
                self._reservations[id(item)] = reservation
        return item

    def take_idle(self, key: tuple[Hashable, ...]) -> T | None:
        """An idle item of ``key`` taken ahead: without waiting, making or retiring anything; None when
        there is none.

        For threads that must not create items (a decoder's thread, which may not call the GPU API
        that makes them): the key's generation is not recorded, so a thread ahead of the consumer
        never makes the consumer's older frames stale. Until :meth:`claim_ahead`, the item does not
        count against ``per_key``: a :meth:`take` never waits for items taken ahead (they belong to
        later frames than the one it is for), so the key may have up to ``per_key`` items plus those
        taken ahead. Give it back with ``give_back(..., ahead=True)`` when it is not claimed.
        """
        with self._cond:
            if self._closed or self._stale(key):
                return None
            idle = self._idle.get(key)
            if not idle:
                return None
            item = idle.pop()
            if not idle:
                del self._idle[key]
            self.reuses += 1
            self._out[key] = self._out.get(key, 0) + 1
            self._ahead[key] = self._ahead.get(key, 0) + 1
            return item

    def grow(self, key: tuple[Hashable, ...], limit: int) -> bool:
        """Make one more idle item of ``key`` while it has fewer than ``limit`` alive; whether the key
        has one more now (not when a full memory budget made room for it by trimming one of the key's
        own idle items).

        For a key whose items a thread taking them ahead (:meth:`take_idle`) found all out: call it on
        the thread that may make items. Raises what making one raises (the budget's refusal too).
        """
        with self._cond:
            if self._closed or self._stale(key):
                return False
            alive = self._alive(key)
            if alive >= limit:
                return False
            self._out[key] = self._out.get(key, 0) + 1  # its place, while it is made outside the lock
        self.give_back(key, self._make(key))
        with self._cond:
            return self._alive(key) > alive

    def _alive(self, key: tuple[Hashable, ...]) -> int:
        return len(self._idle.get(key, ())) + self._out.get(key, 0)

    def claim_ahead(self, key: tuple[Hashable, ...]) -> None:
        """An item taken ahead is now held like one from :meth:`take` (its frame was imported)."""
        with self._cond:
            self._unahead(key)

    def _unahead(self, key: tuple[Hashable, ...]) -> None:
        self._ahead[key] -= 1
        if self._ahead[key] == 0:
            del self._ahead[key]

    def _returned(self, key: tuple[Hashable, ...]) -> None:
        with self._cond:
            self._out[key] -= 1
            if self._out[key] == 0:
                del self._out[key]
            self._cond.notify_all()

    def give_back(
        self, key: tuple[Hashable, ...], item: T, *, broken: bool = False, ahead: bool = False
    ) -> None:
        """Return an item taken with :meth:`take` (or taken ahead and not claimed: ``ahead``); ``broken``
        (or a stale generation) destroys it."""
        doomed: list[T] = []
        with self._cond:
            if ahead:
                self._unahead(key)
            self._out[key] -= 1
            if self._out[key] == 0:
                del self._out[key]
            if broken or self._stale(key):
                doomed.append(item)
            else:
                self._idle.setdefault(key, []).append(item)
                self._idle.move_to_end(key)
                while len(self._idle) > self.max_idle_keys:
                    _, evicted = self._idle.popitem(last=False)
                    doomed += evicted
            self._cond.notify_all()
        self._destroy(doomed)

    def _destroy(self, items: list[T]) -> int:
        """Destroy items (outside the lock) and return their bytes to the budget; the bytes returned."""
        if not items:
            return 0
        with self._cond:
            self.drained += len(items)
            reservations = [self._reservations.pop(id(item), None) for item in items]
        freed = 0
        for item, reservation in zip(items, reservations):
            try:
                self._destroy_fn(item)
            finally:
                if reservation is not None:
                    freed += reservation.size_bytes
                    reservation.release()
        return freed

    def trim_idle(self, bytes_wanted: int | None = None) -> int:
        """Destroy idle items, least recently used first, until ``bytes_wanted`` are returned (None: all).

        Called by the memory budget under pressure (the pool is one of its evictable pools); items held
        by leases are never touched.

        Returns:
            The bytes the destroyed items returned to the memory budget (0 without one).
        """
        doomed: list[T] = []
        with self._cond:
            planned = 0
            while self._idle and (bytes_wanted is None or planned < bytes_wanted):
                key = next(iter(self._idle))
                items = self._idle[key]
                item = items.pop(0)
                if not items:
                    del self._idle[key]
                doomed.append(item)
                reservation = self._reservations.get(id(item))
                planned += reservation.size_bytes if reservation is not None else 0
            self.trimmed += len(doomed)
        return self._destroy(doomed)

    def idle_items(self) -> list[T]:
        """The idle items (a snapshot)."""
        with self._cond:
            return [item for items in self._idle.values() for item in items]

    def counts(self) -> tuple[int, int]:
        """(items alive, idle items)."""
        with self._cond:
            idle = sum(len(v) for v in self._idle.values())
            return idle + sum(self._out.values()), idle

    def close(self) -> None:
        """Destroy the idle items; out-standing ones are destroyed as they come back. Idempotent."""
        if self._registration is not None:
            self._registration.unregister()
        with self._cond:
            self._closed = True
            doomed = [item for items in self._idle.values() for item in items]
            self._idle.clear()
            self._cond.notify_all()
        self._destroy(doomed)
