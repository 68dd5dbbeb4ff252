"""Auto-reconcile (engine.md §5.6): every interval, a stack with an auto-reconcile policy is put back
to what its last reconcile made of it, undoing drift.

The baseline is the stack as its last reconcile left it: the drift since then (``drift``: what
synchronization stored of changes made outside svc, patches, adoptions) is taken back to each
resource's version of then. It is applied as a forced reconcile, so the planner compares it with
the stored state exactly as for a user's ``--force``: what drifted is updated back, what appeared
since is deleted, what vanished is created again. No change means no drift, and no command.

One job ticks every second and runs the stacks that are due (first due at the later of the stack's
last reconcile and the policy's last change, plus its interval; then an interval after each run);
a stack a command is busy with waits, and its interval restarts once it is free.
``POST /stacks/:stack/reconcile`` runs one stack now (``reconcile``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from svc.datastore.interface import Datastore
from svc.datastore.query import COMMAND_FIELDS, RESOURCE_FIELDS, parse_query
from svc.engine.background import PeriodicJob
from svc.engine.command_records import change_of, stored_change
from svc.engine.drift import drift
from svc.engine.errors import ConflictingCommands, EngineError, ReconcilePolicyRequired
from svc.engine.policy_store import (
    PAGE,
    Effective,
    active_command,
    effective_policies,
    literal,
    policies_in_force,
)
from svc.engine.sealing import Sealer, SealError
from svc.engine.service import ApplyRequest, Caller
from svc.model import values
from svc.model.forma import Forma
from svc.model.records import ResourceVersion, each_item, every_item

if TYPE_CHECKING:
    from svc.engine.engine import Engine

log = logging.getLogger("svc.engine.reconciler")
SOURCE = "auto-reconciler"
CALLER = Caller(client_id=SOURCE, source=SOURCE)
TICK = 1.0
Json = dict[str, Any]


def _now() -> datetime:
    return datetime.now(UTC)


class AutoReconciler(PeriodicJob):
    """``engine.jobs["auto-reconciler"]``: each run reconciles the stacks that are due and returns the
    ids of the commands it started."""

    def __init__(self, engine: Engine, *, tick: float = TICK, enabled: bool = True) -> None:
        super().__init__(SOURCE, self.run_due, interval=tick, first_delay=tick, enabled=enabled)
        self.engine = engine
        self._intervals: dict[str, timedelta] = {}  # stack label → its policy's interval
        self._last: dict[str, datetime] = {}  # stack label → when it was last reconciled (or found busy)
        # The newest command (id, start) when the schedule was read: policies change by commands, and so do anchors.
        self._newest: tuple[str, datetime | None] | None = None
        self._changes: dict[str, datetime] = {}  # stack label → when its policy last changed, as last read
        self._lock = asyncio.Lock()  # one reconcile at a time: the timer's and the API's
        self._guard = threading.Lock()  # the schedule is read on worker threads and changed on the loop

    async def run_due(self) -> list[str]:
        started: list[str] = []
        for stack in await asyncio.to_thread(self._due):
            try:
                command_id = await self.reconcile(stack, CALLER)
            except ConflictingCommands:
                continue  # busy meanwhile: its interval restarted
            except ReconcilePolicyRequired:
                self._forget(stack)
                continue
            except EngineError as error:  # a plugin gone, a target deleted: try again next interval
                log.warning("auto-reconcile of stack %s refused: %s", stack, error.message)
                continue
            if command_id is not None:
                log.info("stack %s drifted: auto-reconcile command %s reverts it", stack, command_id)
                started.append(command_id)
        return started

    async def reconcile(self, stack: str, caller: Caller) -> str | None:
        """Re-applies ``stack``'s baseline now; the command's id, or None when nothing drifted.

        Raises ``ReconcilePolicyRequired`` for a stack without an auto-reconcile policy and
        ``ConflictingCommands`` while a command is busy with it.
        """
        async with self._lock:
            policy, busy = await asyncio.to_thread(self._state, stack)
            with self._guard:
                if stack in self._intervals:
                    self._last[stack] = _now()
            if policy is None:
                raise ReconcilePolicyRequired(f"stack {stack!r} has no auto-reconcile policy; declare one "
                                              "(svc.AutoReconcilePolicy) in its forma first", {"StackLabel": stack})
            if busy is not None:
                stored = await self.engine.command(busy)
                raise ConflictingCommands(f"command {busy} is still changing stack {stack!r}; wait for it or "
                                          "cancel it", [stored] if stored else [])
            forma = await asyncio.to_thread(baseline, self.engine.store, self.engine.sealer, stack)
            if forma is None:
                return None
            submission = await self.engine.apply(ApplyRequest(forma, "reconcile", force=True), caller)
            return submission.command_id if submission.changes_required else None

    def _state(self, stack: str) -> tuple[Effective | None, str | None]:
        store = self.engine.store
        record = store.get_stack(stack)
        policy = effective_policies(store, record).get("auto-reconcile") if record is not None else None
        busy = active_command(store, stack) if policy is not None else None
        return policy, busy.id if busy is not None else None

    def _forget(self, stack: str) -> None:
        with self._guard:
            self._intervals.pop(stack, None)
            self._last.pop(stack, None)
            self._changes.pop(stack, None)

    def _due(self) -> list[str]:
        store = self.engine.store
        listed = store.list_commands(sources=None, limit=1).items
        newest = (listed[0].id, listed[0].start_ts) if listed else ("", None)
        if self._newest is None or newest[0] != self._newest[0]:
            self._read_schedule(store, None if self._newest is None else self._reconciled_since(store, *self._newest))
            self._newest = newest
        now = _now()
        with self._guard:
            candidates = [stack for stack, interval in self._intervals.items() if now >= self._last[stack] + interval]
        due = []
        for stack in candidates:
            if active_command(store, stack) is not None:
                with self._guard:
                    self._last[stack] = now  # the next run is an interval after the stack is free
                continue
            due.append(stack)
        return due

    def _read_schedule(self, store: Datastore, reconciled: dict[str, datetime] | None) -> None:
        """The stacks with an auto-reconcile policy, each with its interval and when it was last reconciled.
        ``reconciled``: when each stack reconciled since the schedule was last read was (None: look every one
        up). Only the stacks newly holding a policy, or whose policy changed, and reconciled otherwise have
        their last reconcile looked up: once per stack after every command, that took ~0.3 s of the agent's CPU
        a command beside 2,000 such stacks."""
        intervals: dict[str, timedelta] = {}
        anchors: dict[str, datetime] = {}
        changes: dict[str, datetime] = {}
        held = policies_in_force(store, "auto-reconcile")
        for stack in store.stacks_with_ids(held):  # not every stack: 22 ms a command beside 3,000
            policy = held[stack.id]
            intervals[stack.label] = max(policy.interval, timedelta(seconds=1))
            changed = changes[stack.label] = policy.record.updated_at
            if reconciled is not None and stack.label in reconciled:
                anchors[stack.label] = max(changed, reconciled[stack.label])
            elif reconciled is None or self._changes.get(stack.label) != changed or stack.label not in self._last:
                last = store.last_reconcile(stack.label)
                anchors[stack.label] = max(changed, (last.end_ts or last.start_ts) if last is not None else changed)
        with self._guard:
            self._intervals, self._changes = intervals, changes
            # A user's reconcile since the last run counts as one: the interval restarts from it.
            self._last = {stack: max(anchors[stack], self._last.get(stack, anchors[stack])) if stack in anchors
                          else self._last[stack] for stack in intervals}

    @staticmethod
    def _reconciled_since(store: Datastore, newest: str, started: datetime | None) -> dict[str, datetime]:
        """The stacks covered by the reconcile applies stored since the command ``newest`` (started at ``started``)
        was the newest, each with when the newest of them ended (or started, if it runs yet): the commands newest
        first, back to that one (or to its start, had it been deleted since)."""
        stacks: dict[str, datetime] = {}
        for command in each_item(lambda c: store.list_commands(sources=None, cursor=c, limit=PAGE)):
            if command.id == newest or (started is not None and command.start_ts < started):
                break
            if command.command == "apply" and command.mode == "reconcile":
                for stack in store.stacks_covered(command.id):
                    stacks.setdefault(stack, command.end_ts or command.start_ts)
        return stacks


def baseline(store: Datastore, sealer: Sealer, stack: str) -> Forma | None:
    """``stack`` as its last reconcile left it, as a forma; None when nothing changed in it since.

    Resources untouched since are declared as they are stored (no change); a changed one as its version
    of then (its secrets in plain text from the change that set them); one created since is left out,
    so the reconcile deletes it; one deleted since is declared again.
    """
    drifted = {item.current.ksuid: item for item in drift(store, stack)}
    if not drifted:
        return None
    declared: dict[str, ResourceVersion] = {}
    query = parse_query(f"stack:{literal(stack)}", RESOURCE_FIELDS)
    live = every_item(lambda c: store.list_resources(query, cursor=c, limit=PAGE))
    for resource in live:
        if resource.managed and resource.ksuid not in drifted:
            declared[resource.ksuid] = resource
    for ksuid, item in drifted.items():
        if item.baseline is not None and item.baseline.managed:
            declared[ksuid] = item.baseline
    # Every resource's secrets, not only the drifted ones': reverting a producer may update its consumers.
    wanted = _with_secrets(store, sealer, stack, declared)
    resources = []
    for ksuid, version in declared.items():
        current = drifted[ksuid].current if ksuid in drifted else version
        label = current.label if not current.deleted else version.label  # a patch's rename stays
        resources.append({"Label": label, "Type": version.type, "Stack": stack, "Target": version.target,
                          "Schema": version.document.get("Schema") or {"Identifier": ""},
                          "Properties": wanted.get(ksuid, dict(version.properties)),
                          "Group": version.document.get("Group")})
    return Forma.model_validate({"Resources": resources})


def _with_secrets(store: Datastore, sealer: Sealer, stack: str, versions: dict[str, ResourceVersion]
                  ) -> dict[str, Json]:
    """The properties of ``versions`` that hold stored secret hashes, with the secrets in plain text, taken
    from the newest change of the resource (sealed in its update) whose secrets hash to the same values."""
    missing = {k: dict(v.properties) for k, v in versions.items() if values.contains_hash(dict(v.properties))}
    found: dict[str, Json] = {}
    if not missing:
        return found
    query = parse_query(f"stack:{literal(stack)}", COMMAND_FIELDS)
    for command in every_item(lambda c: store.list_commands(query, sources=None, cursor=c, limit=PAGE)):
        for record in every_item(lambda c, i=command.id: store.get_resource_updates(i, cursor=c, limit=PAGE)):
            if record.ksuid not in missing or record.ksuid in found or not record.desired_sealed:
                continue
            try:
                change = change_of(record, sealer)
            except SealError as error:  # the agent's key changed: the secret stays a hash, the update says so
                log.warning("auto-reconcile of %s/%s: %s", stack, record.resource_label, error)
                continue
            plain = change.desired or {}
            # The stored change's desired state is the plain one hashed when the command was stored.
            restored = _restore(missing[record.ksuid], plain, stored_change(record).desired or {})
            if not values.contains_hash(restored):
                found[record.ksuid] = restored
        if len(found) == len(missing):
            break
    return found


def _restore(stored: Any, plain: Any, hashed: Any) -> Any:
    """``stored`` with each secret hash replaced by the plain value at the same place in ``plain`` whose hash
    (at the same place in ``hashed``) it is."""
    if isinstance(stored, dict) and stored.get("$hashed"):
        return plain if hashed == stored else stored
    if isinstance(stored, dict):
        plain_d = plain if isinstance(plain, dict) else {}
        hashed_d = hashed if isinstance(hashed, dict) else {}
        return {k: _restore(v, plain_d.get(k), hashed_d.get(k)) for k, v in stored.items()}
    if isinstance(stored, list):
        plain_l = plain if isinstance(plain, list) else []
        hashed_l = hashed if isinstance(hashed, list) else []
        return [_restore(v, plain_l[i] if i < len(plain_l) else None, hashed_l[i] if i < len(hashed_l) else None)
                for i, v in enumerate(stored)]
    return stored
