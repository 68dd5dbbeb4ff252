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
from collections import deque
from types import TracebackType

_GATHER = 0.005  # seconds: how often at most waiting takers are released, together


class TokenBucket:
    """``rate`` tokens a second, at most ``capacity`` stored (default: a second's worth). A taker that finds none
    waits its turn (first come, first served); waiting takers are released together, as many as the tokens the
    refill has made, at most every ``_GATHER`` seconds: at 1,000 a second, five every 5 ms rather than one every
    millisecond, so that their calls reach the plugin in one write to its pipe, which wakes it once (the agent's
    event loop spent a fifth of its time in those writes, one per call)."""

    def __init__(self, rate: float, capacity: float | None = None) -> None:
        self.rate = max(rate, 0.001)
        self.capacity = capacity if capacity is not None else max(rate, 1.0)
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self._waiting: deque[asyncio.Future[None]] = deque()  # takers waiting, in arrival order
        self._release: asyncio.TimerHandle | None = None

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    async def take(self) -> None:
        if not self._waiting:  # nobody queued: a newcomer may not pass those who are
            self._refill()
            if self.tokens >= 1:
                self.tokens -= 1
                return
        taker = asyncio.get_running_loop().create_future()
        self._waiting.append(taker)
        self._schedule()
        await taker  # canceled while waiting: skipped when its turn comes, its token left in the bucket

    def _schedule(self) -> None:
        """Releases waiting takers once the tokens for a group of them have been made."""
        if self._release is not None or not self._waiting:
            return
        wanted = min(len(self._waiting), max(1.0, self.rate * _GATHER), self.capacity)
        delay = max(wanted - self.tokens, 0.0) / self.rate + 1e-6  # a hair more: no token short by a rounding
        self._release = asyncio.get_running_loop().call_later(delay, self._release_waiting)

    def _release_waiting(self) -> None:
        self._release = None
        self._refill()
        while self._waiting and self.tokens >= 1:
            taker = self._waiting.popleft()
            if not taker.done():  # not canceled
                self.tokens -= 1
                taker.set_result(None)
        self._schedule()


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
