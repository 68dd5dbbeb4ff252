"""A datastore outage: noticed and logged in one place, waited out by whoever needs the datastore.

An outage is any ``DatastoreUnavailable`` (the server stopped or restarting, the network gone, no connection in
time). The datastore itself tells the log: one warning when an operation first fails that way, one line when an
operation that began after that failure succeeds (an operation under way before the outage proves nothing).
Everything in between (hundreds of writes waiting, background jobs ticking, health checks) adds nothing to the
log, so an outage of any length is two lines.

Work that must not be lost while the datastore is away (a command's results and states, a synchronization's
findings) waits for it with ``patiently`` / ``Backoff``; background jobs that can simply run again later back
off with the same schedule.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from svc.datastore.errors import DatastoreUnavailable

T = TypeVar("T")
log = logging.getLogger("svc.datastore")

FIRST_DELAY = 0.1  # seconds before the first retry: a connection blip is over by then
MAX_DELAY = 2.0  # between retries of work that waits: once the datastore is back, work resumes within this


class Availability:
    """Whether one datastore answers, as its operations find it; logs the outage's start and end once each.
    Thread-safe: operations run on many threads."""

    def __init__(self, describe: str) -> None:
        self.describe = describe
        self._lock = threading.Lock()
        self._down_since: float | None = None  # monotonic time of the outage's first failure
        self._up_since = float("-inf")  # monotonic time of the last recovery
        self._failures = 0

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, error: DatastoreUnavailable, began: float) -> None:
        """An operation that began at ``began`` (``time.monotonic()``) failed with ``error``."""
        with self._lock:
            if self._down_since is None:
                if began < self._up_since:
                    return  # it began before the recovery that a later operation already saw
                self._down_since = time.monotonic()
                self._failures = 0
                log.warning("datastore outage began: %s; what needs the datastore waits for it", error)
            self._failures += 1

    def answered(self, began: float) -> None:
        """An operation that began at ``began`` succeeded."""
        if self._down_since is None:  # the common case, without the lock
            return
        with self._lock:
            if self._down_since is None or began < self._down_since:
                return
            lasted = time.monotonic() - self._down_since
            log.info("datastore outage ended: %s answers again after %.1f s (%d operation(s) failed meanwhile)",
                     self.describe, lasted, self._failures)
            self._down_since = None
            self._up_since = time.monotonic()


class Backoff:
    """Growing pauses between attempts while the datastore is unavailable: ``first``, doubled each time, at most
    ``most``; ``reset`` once an attempt succeeded."""

    def __init__(self, first: float = FIRST_DELAY, most: float = MAX_DELAY) -> None:
        self.first = first
        self.most = most
        self._next = first

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.most)
        return delay

    def reset(self) -> None:
        self._next = self.first


async def patiently(work: Callable[[], T]) -> T:
    """Runs the blocking ``work`` on a thread, again after a pause for as long as it fails with
    ``DatastoreUnavailable``. ``work`` must be safe to run again (it failed as a whole: one transaction, or
    steps that each check what is stored). Canceling the caller stops the waiting."""
    backoff = Backoff()
    while True:
        try:
            return await asyncio.to_thread(work)
        except DatastoreUnavailable:
            await asyncio.sleep(backoff.next())
