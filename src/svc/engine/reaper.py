"""The target reaper (engine.md §5.2): a target unreachable for longer than its ``ReapAfter.maxUnreachable`` is
reaped, with its resources.

Each tick runs every unreachable target's clock on to now (``advance_target_accrual``), then reaps those past
their threshold (``ReapSettings.threshold``: the target's ReapAfter, else the agent's default, never below the
floor; NeverReap: never), at most ``MAX_REAPS_PER_TICK`` a tick. The reap is one datastore transaction with every
guard (``reap_target``); a target a command is busy with waits for a later tick. Stacks the reap emptied are
deleted, as after a destroy. Reaped resources are invisible: synchronization, discovery and auto-reconcile never
see them again, and an apply that puts resources on the target without declaring it is refused (409
``TargetReaped``). Declaring the target again recovers it and its resources (``Datastore.put_target``).

The timer and ``POST /admin/reap`` run ``tick`` through ``engine.jobs["target-reaper"]``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from svc.datastore.interface import Datastore
from svc.datastore.outage import patiently
from svc.engine.background import PeriodicJob
from svc.engine.planner.inventory import UNMANAGED_STACK
from svc.engine.target_health import ReapSettings
from svc.model.records import TargetReap, TargetRecord, every_item

log = logging.getLogger("svc.engine.reaper")
MAX_REAPS_PER_TICK = 50
_PAGE = 1000


@dataclass
class ReapReport:
    """What one tick did: the targets reaped, and those unreachable that a policy will reap (not yet due)."""

    reaped: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"ReapedTargets": self.reaped, "ReapPendingTargets": self.pending}


class TargetReaper(PeriodicJob):
    def __init__(self, store: Datastore, settings: ReapSettings, *, enabled: bool = True) -> None:
        super().__init__("target-reaper", self.tick, interval=settings.interval, first_delay=settings.interval,
                         enabled=enabled)
        self.store = store
        self.settings = settings

    async def tick(self) -> ReapReport:
        return await patiently(self._tick)

    def _tick(self) -> ReapReport:
        report = ReapReport()
        now = self.settings.clock()
        unreachable = [t for t in every_item(lambda c: self.store.list_targets(cursor=c, limit=_PAGE))
                       if t.health_state == "unreachable"]
        for target in unreachable:
            threshold = self.settings.threshold(target.reap_kind, target.reap_after_seconds)
            if threshold is None:
                continue
            self.store.advance_target_accrual(target.label, target.incarnation_id, now, self.settings.max_gap)
            current = self.store.get_target(target.label)
            if current is None or current.incarnation_id != target.incarnation_id:
                continue
            if current.unreachable_seconds < threshold or len(report.reaped) >= MAX_REAPS_PER_TICK:
                report.pending.append(target.label)
                continue
            reap = self.store.reap_target(target.label, target.incarnation_id, threshold=threshold, at=now)
            if reap is None:  # a guard held it back (a command is busy with it, it came back): a later tick
                report.pending.append(target.label)
                continue
            self._reaped(current, reap)
            report.reaped.append(target.label)
        return report

    def _reaped(self, target: TargetRecord, reap: TargetReap) -> None:
        log.warning("target %r (%s) reaped: unreachable for %.0f s (last error %s); %d resource(s) set aside, "
                    "declare the target again to recover them", target.label, target.namespace,
                    reap.unreachable_seconds, target.last_error_code or "unknown", reap.resource_count)
        for stack in reap.stacks:
            if stack != UNMANAGED_STACK and self.store.count_resources(stack=stack, up_to=1) == 0:
                self.store.delete_stack(stack)

