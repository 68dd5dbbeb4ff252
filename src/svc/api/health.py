"""A cheap, cached answer to "can the agent reach its datastore?" for ``/api/v1/health``.

Load balancers poll health every few seconds; one trivial query per ``ttl`` seconds is enough, and
concurrent polls share the same check instead of queueing on the pool.
"""

from __future__ import annotations

import asyncio
import logging
import time

from svc.datastore import Datastore, DatastoreError

log = logging.getLogger("svc.api.health")


class DatastoreHealth:
    def __init__(self, datastore: Datastore, ttl: float = 2.0, timeout: float = 5.0) -> None:
        self._datastore = datastore
        self._ttl = ttl
        self._timeout = timeout
        self._problem: str | None = None
        self._checked_at = float("-inf")
        self._lock = asyncio.Lock()

    async def problem(self) -> str | None:
        """``None`` when the datastore answers, else a one-line reason (no secrets)."""
        async with self._lock:
            if time.monotonic() - self._checked_at >= self._ttl:
                self._problem = await self._check()
                self._checked_at = time.monotonic()
            return self._problem

    async def _check(self) -> str | None:
        try:
            await asyncio.wait_for(asyncio.to_thread(self._datastore.ping), self._timeout)
        except DatastoreError as error:
            problem = str(error)
        except TimeoutError:
            problem = f"the datastore did not answer within {self._timeout:g}s"
        else:
            if self._problem is not None:
                log.info("the datastore is reachable again")
            return None
        if self._problem is None:
            log.warning("the datastore is unreachable: %s", problem)
        return problem
