"""Background jobs: work the agent repeats on a timer and can be asked to run now.

Synchronization, discovery, the TTL sweep and auto-reconcile each run as one ``PeriodicJob``: the
first run ``first_delay`` after start, then ``interval`` after each run *ends* (a slow run never
overlaps the next). ``run_now`` (the ``/admin/*`` endpoints, discovery after a command) returns the
result of a run that starts after it was called: at once, or when the run in progress ends, because
that run may have read the world before the caller changed it. Callers that arrive during one run share
the next. A failing run is logged and the timer goes on; one that failed because the datastore is unavailable
is not (the datastore logs the outage once, ``svc.datastore.outage``), and the timer backs off while it lasts:
the next run comes after a pause that doubles, from the interval up to ``OUTAGE_PAUSE``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from svc.datastore.errors import DatastoreUnavailable
from svc.datastore.outage import Backoff
from svc.telemetry import traced_job

log = logging.getLogger("svc.engine.background")
OUTAGE_PAUSE = 30.0  # seconds between runs at most while the datastore is unavailable (unless the interval is longer)


class PeriodicJob:
    def __init__(self, name: str, work: Callable[[], Awaitable[Any]], *, interval: float, first_delay: float = 0.0,
                 enabled: bool = True) -> None:
        self.name = name
        self.interval = interval
        self.first_delay = first_delay
        self.enabled = enabled
        self._work = work
        self._timer: asyncio.Task[None] | None = None
        self._current: asyncio.Task[Any] | None = None
        self._next: asyncio.Task[Any] | None = None  # the run that follows the current one, for run_now

    def start(self) -> None:
        """Starts the timer (when enabled); ``run_now`` works either way."""
        if self.enabled and self._timer is None:
            self._timer = asyncio.create_task(self._loop(), name=f"{self.name} timer")

    async def stop(self) -> None:
        tasks = [t for t in (self._timer, self._next, self._current) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._timer = self._next = self._current = None

    async def run_now(self) -> Any:
        """Runs the job and returns what it returned; the run starts after this call (see the module)."""
        current = self._current
        if current is not None and not current.done():
            if self._next is None:
                self._next = asyncio.create_task(self._after(current), name=f"{self.name} next")
            return await asyncio.shield(self._next)
        return await self._run()

    async def _after(self, running: asyncio.Task[Any]) -> Any:
        await asyncio.wait({running})  # its outcome is its own callers'
        self._next = None
        return await self._run()

    async def _run(self) -> Any:
        """Starts a run, or joins the one in progress (the timer: a run that just started is as good as new)."""
        if not self.running:
            self._current = asyncio.create_task(traced_job(self.name, self._work()), name=self.name)
        assert self._current is not None
        return await asyncio.shield(self._current)

    @property
    def running(self) -> bool:
        return self._current is not None and not self._current.done()

    async def _loop(self) -> None:
        delay = self.first_delay
        outage = Backoff(self.interval, max(self.interval, OUTAGE_PAUSE))
        while True:
            await asyncio.sleep(delay)
            delay = self.interval
            try:
                await self._run()
            except asyncio.CancelledError:
                raise
            except DatastoreUnavailable:
                delay = outage.next()
                continue
            except Exception:  # the next run may succeed (a plugin restarted)
                log.exception("%s failed; next run in %.0f s", self.name, self.interval)
            outage.reset()
