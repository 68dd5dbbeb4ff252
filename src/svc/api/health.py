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
        self._hung = False  # the last check timed out
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
        """An unreachable datastore is logged by the datastore itself, once per outage
        (``svc.datastore.outage``); only a ping that hangs is this check's own to tell, once too."""
        try:
            await asyncio.wait_for(asyncio.to_thread(self._datastore.ping), self._timeout)
        except DatastoreError as error:
            return str(error)
        except TimeoutError:
            if not self._hung:
                log.warning("the datastore did not answer a health check within %gs", self._timeout)
            self._hung = True
            return f"the datastore did not answer within {self._timeout:g}s"
        if self._hung:
            log.info("the datastore answers health checks again")
        self._hung = False
        return None
