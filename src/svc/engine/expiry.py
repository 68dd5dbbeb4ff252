"""The stack expirer (engine.md §5.5): destroys the stacks whose TTL policy has run out.

Every ``agent.stackExpirer.interval`` (and on ``POST /admin/check-ttl``) it looks at each stack with a
TTL policy whose deadline has passed and that no command is busy with:

* an empty stack is deleted at once (its inline policies with it);
* with ``onDependents = "abort"``, a stack whose resources other stacks still refer to is left alone
  (tried again next pass, so it goes once they let go);
* otherwise its managed resources are destroyed by an ordinary destroy command (source
  ``stack-expirer``; ``cascade`` also deletes the dependents in other stacks) that runs on the DAG
  executor like any other, and the stack goes with its last resource.

A destroy that fails leaves the stack expired: the next pass tries again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from svc.engine.background import PeriodicJob
from svc.engine.errors import EngineError
from svc.engine.planner import UNMANAGED_STACK
from svc.engine.policy_store import Effective, active_command, literal, policies_in_force
from svc.engine.service import Caller, DestroyRequest
from svc.model.records import ResourceScope, StackRecord

if TYPE_CHECKING:
    from svc.engine.engine import Engine

log = logging.getLogger("svc.engine.expiry")
SOURCE = "stack-expirer"
CALLER = Caller(client_id=SOURCE, source=SOURCE)


@dataclass
class Sweep:
    """What one pass did: the stacks it deleted or started destroying, and those destroy commands."""

    expired_stacks: list[str] = field(default_factory=list)
    command_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, list[str]]:
        return {"expired_stacks": self.expired_stacks, "command_ids": self.command_ids}


class StackExpirer(PeriodicJob):
    """``engine.jobs["stack-expirer"]``; ``run_now()`` returns the pass's ``Sweep``."""

    def __init__(self, engine: Engine, *, interval: float, enabled: bool = True) -> None:
        super().__init__(SOURCE, self.sweep, interval=interval, first_delay=interval, enabled=enabled)
        self.engine = engine

    async def sweep(self) -> Sweep:
        sweep = Sweep()
        for stack, ttl in await asyncio.to_thread(self._expired):
            await self._expire(stack, ttl, sweep)
        return sweep

    def _expired(self) -> list[tuple[StackRecord, Effective]]:
        store, now = self.engine.store, datetime.now(UTC)
        found = []
        held = policies_in_force(store, "ttl")
        for stack in store.stacks_with_ids(held):
            ttl = held[stack.id] if stack.label != UNMANAGED_STACK else None
            if ttl is None or ttl.deadline(stack) > now:
                continue
            if active_command(store, stack.label) is not None:
                continue  # that command owns the stack now; the next pass sees how it ended
            found.append((stack, ttl))
        return found

    async def _expire(self, stack: StackRecord, ttl: Effective, sweep: Sweep) -> None:
        store = self.engine.store
        if await asyncio.to_thread(store.count_resources, stack=stack.label, up_to=1) == 0:
            if await asyncio.to_thread(store.delete_stack, stack.label):
                log.info("stack %s expired (TTL policy %s) and was empty: deleted", stack.label, ttl.record.label)
                sweep.expired_stacks.append(stack.label)
            return
        if ttl.on_dependents == "abort":
            holders = await asyncio.to_thread(self._dependents, stack.label)
            if holders:
                log.info("stack %s expired, but %s still refer to its resources (onDependents = abort): kept",
                         stack.label, ", ".join(holders))
                return
        request = DestroyRequest(query=f"stack:{literal(stack.label)}",
                                 on_dependents="cascade" if ttl.on_dependents == "cascade" else "abort")
        try:
            submission = await self.engine.destroy(request, CALLER)
        except EngineError as error:
            log.warning("stack %s expired, but its destroy was refused: %s", stack.label, error.message)
            return
        sweep.expired_stacks.append(stack.label)
        if submission.changes_required:
            log.info("stack %s expired (TTL policy %s): destroying it with command %s", stack.label,
                     ttl.record.label, submission.command_id)
            sweep.command_ids.append(submission.command_id)

    def _dependents(self, stack: str) -> list[str]:
        """``stack/type/label`` of the managed resources of other stacks that refer to one of ``stack``: the stack's
        resources, then their referrers, read by key (a stack kept for its dependents is checked again each pass,
        and reading the whole inventory for it took seconds and hundreds of MB beside 100,000 resources)."""
        store = self.engine.store
        own = {r.ksuid for r in store.live_resources_in(ResourceScope(stacks={stack})) if r.managed}
        referrers = store.live_resources_in(ResourceScope(referring_to=own)) if own else []
        return sorted({f"{dependent.stack}/{dependent.type}/{dependent.label}"
                       for dependent in referrers if dependent.managed and dependent.stack != stack})
