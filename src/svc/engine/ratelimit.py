"""Per-namespace limits on plugin work: a token bucket (requests per second) and a cap on calls in flight.

One token per dispatched resource change, as the reference does: retries and status polls of that change
are free, so a throttled plugin is not starved further by its own retries. The bucket refills
continuously (``rate`` tokens a second, at most ``rate`` stored), which spreads a burst evenly instead of
releasing it at each second's boundary.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class TokenBucket:
    def __init__(self, rate: float, capacity: float | None = None) -> None:
        self.rate = max(rate, 0.001)
        self.capacity = capacity if capacity is not None else max(rate, 1.0)
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    async def take(self) -> None:
        async with self._lock:  # FIFO: waiters are served in arrival order
            while True:
                self._refill()
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                await asyncio.sleep((1 - self.tokens) / self.rate)


class NamespaceLimits:
    """The limits of one plugin namespace."""

    def __init__(self, requests_per_second: float, max_in_flight: int) -> None:
        self.bucket = TokenBucket(requests_per_second)
        self.slots = asyncio.Semaphore(max(max_in_flight, 1))

    @asynccontextmanager
    async def dispatch(self) -> AsyncIterator[None]:
        """Held for a resource change's whole plugin work; entered after a token is taken."""
        async with self.slots:
            await self.bucket.take()
            yield
