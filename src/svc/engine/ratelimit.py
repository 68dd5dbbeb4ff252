"""Per-namespace limits on plugin work: a token bucket (requests per second) and a cap on calls in flight.

One token per dispatched resource change, as the reference does: retries and status polls of that change
are free, so a throttled plugin is not starved further by its own retries. The bucket refills
continuously (``rate`` tokens a second, at most ``rate`` stored), which spreads a burst evenly instead of
releasing it at each second's boundary.

Every resource change passes through here, thousands a second at full speed, so the common case (a slot
and a token free, nobody queued) takes neither a lock nor a generator-based context manager.
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType


class TokenBucket:
    def __init__(self, rate: float, capacity: float | None = None) -> None:
        self.rate = max(rate, 0.001)
        self.capacity = capacity if capacity is not None else max(rate, 1.0)
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()
        self._queued = 0  # takers waiting (in the lock or for a refill): a newcomer may not pass them

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def _take_now(self) -> bool:
        self._refill()
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    async def take(self) -> None:
        if not self._queued and self._take_now():
            return
        self._queued += 1
        try:
            async with self._lock:  # FIFO: waiters are served in arrival order
                while not self._take_now():
                    await asyncio.sleep((1 - self.tokens) / self.rate)
        finally:
            self._queued -= 1


class NamespaceLimits:
    """The limits of one plugin namespace."""

    def __init__(self, requests_per_second: float, max_in_flight: int) -> None:
        self.bucket = TokenBucket(requests_per_second)
        self.slots = asyncio.Semaphore(max(max_in_flight, 1))

    def dispatch(self) -> NamespaceLimits:
        """``async with limits.dispatch():`` holds a slot for a resource change's whole plugin work, entered
        once a token is taken."""
        return self

    async def __aenter__(self) -> None:
        await self.slots.acquire()
        try:
            await self.bucket.take()
        except BaseException:
            self.slots.release()
            raise

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.slots.release()
