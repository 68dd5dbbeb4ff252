"""Target health from the plugin calls the agent makes anyway (synchronization's reads, discovery's listings and
reads): a call that got an answer from the cloud means its target is reachable, one that failed with
NetworkFailure or ServiceTimeout (after its retries) that it is not; any other failure says nothing about reach.

A pass collects what it saw per target (``Observations``) and records one observation per target at its end:
reachable if any call got through, else unreachable if any failed for lack of reach. The reaper
(``svc.engine.reaper``) turns the unreachable time accrued into reaps.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from svc.datastore.errors import DatastoreError
from svc.datastore.interface import Datastore
from svc.plugins.sdk import ErrorCode

log = logging.getLogger("svc.engine.health")
UNREACHABLE_CODES = frozenset({ErrorCode.NETWORK_FAILURE, ErrorCode.SERVICE_TIMEOUT})
DEFAULT_REAP_AFTER = 24 * 3600.0  # seconds unreachable before a target with no ReapAfter of its own is reaped


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ReapSettings:
    """``interval``: seconds between reaper ticks; ``max_gap``: samples of an unreachable target further apart than
    this stop its clock (nobody looked, so nobody knows); ``floor``: no target is reaped sooner, whatever its
    ReapAfter says (two gaps: a target is never reaped on one missed look); ``default_after``: the threshold of a
    target that declares none."""

    interval: float = 60.0
    max_gap: float = 1800.0
    floor: float = 3600.0
    default_after: float = DEFAULT_REAP_AFTER
    clock: Callable[[], datetime] = field(default=utcnow, compare=False)

    @classmethod
    def derived(cls, *, sync_interval: float, reaper_interval: float,
                default_after: float = DEFAULT_REAP_AFTER) -> ReapSettings:
        """The reference's rules: the gap is six sync intervals or two reaper ticks, whichever is longer; the
        floor two gaps."""
        max_gap = max(6 * sync_interval, 2 * reaper_interval)
        return cls(interval=reaper_interval, max_gap=max_gap, floor=2 * max_gap, default_after=default_after)

    def threshold(self, reap_kind: str | None, reap_after_seconds: int | None) -> float | None:
        """Seconds unreachable after which a target is reaped; None for NeverReap."""
        if reap_kind == "never":
            return None
        after = float(reap_after_seconds) if reap_kind == "after" and reap_after_seconds else self.default_after
        return max(after, self.floor)


@dataclass
class _Seen:
    reached: bool = False
    unreachable_code: str | None = None


class Observations:
    """What one pass's plugin calls said of each target's reach (``saw``), recorded once at its end."""

    def __init__(self, settings: ReapSettings) -> None:
        self.settings = settings
        self._seen: dict[str, _Seen] = {}

    def saw(self, target: str, error_code: ErrorCode | str | None) -> None:
        """A call on ``target`` ended: ``error_code`` None (or NotFound, an answer too) means it got through."""
        seen = self._seen.setdefault(target, _Seen())
        if error_code is None or error_code == ErrorCode.NOT_FOUND:
            seen.reached = True
        elif error_code in UNREACHABLE_CODES:
            seen.unreachable_code = str(error_code)

    async def record(self, store: Datastore) -> None:
        """One observation per target seen; a datastore failure loses only these observations (the next pass
        makes new ones)."""
        if not self._seen:
            return
        seen, self._seen = self._seen, {}
        at = self.settings.clock()

        def write() -> None:
            for label, what in seen.items():
                if what.reached or what.unreachable_code is not None:
                    store.observe_target(label, reachable=what.reached, at=at, max_gap=self.settings.max_gap,
                                         error_code=None if what.reached else what.unreachable_code)

        try:
            await asyncio.to_thread(write)
        except DatastoreError as error:
            log.warning("target health observations not recorded: %s", error)
