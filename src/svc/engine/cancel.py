"""Canceling commands: a running command through its run, one no run of this agent executes by what is stored.

A run knows which of its changes are in a plugin call and which are not; the datastore cannot (a call's
start is written only once it has lasted a while). Unforced, changes in a call go on to their end; forced,
they are abandoned and the command ends at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from svc.datastore.interface import Datastore
from svc.datastore.query import COMMAND_FIELDS, parse_query
from svc.engine.command_records import overall_state, utcnow
from svc.engine.planner.changeset import ResourceChange
from svc.engine.queries import updates_of
from svc.engine.runs import Runs
from svc.engine.service import Caller, CanceledUpdate, CancelOutcome
from svc.model.records import CommandRecord
from svc.model.states import TERMINAL_COMMAND_STATES


async def cancel(store: Datastore, runs: Runs, query: str, caller: Caller, *, force: bool) -> CancelOutcome | None:
    """Cancels the query's matching commands (user commands unless it names ids), else the caller's latest;
    None when none of them was unfinished."""
    def targets() -> list[CommandRecord]:
        if query.strip():
            parsed = parse_query(query, COMMAND_FIELDS)
            sources = None if "command:" in query.lower() else ("user",)
            return list(store.list_commands(parsed, client_id=caller.client_id, sources=sources, limit=100).items)
        return list(store.list_commands(parse_query("client:me", COMMAND_FIELDS), client_id=caller.client_id,
                                        limit=1).items)

    commands = [c for c in await asyncio.to_thread(targets) if c.state not in TERMINAL_COMMAND_STATES]
    if not commands:
        return None
    canceled: list[str] = []
    reached: list[CanceledUpdate] = []
    for command in commands:
        run = runs.run(command.id)
        if run is not None:
            report = await run.cancel(force=force)
            if not (report.canceled or report.running or report.abandoned):
                continue  # every change of it had ended (it is storing its own end): nothing was canceled
            reached += _from_run(command.id, report.canceled, report.running, report.abandoned)
        else:
            reached += await asyncio.to_thread(_cancel_stored, store, command.id, force)
        if force or run is None:
            updates = await asyncio.to_thread(updates_of, store, command.id)
            final = overall_state([u.state for u in updates])
            if final in TERMINAL_COMMAND_STATES:
                await asyncio.to_thread(store.set_command_state, command.id, final, end_ts=utcnow())
        canceled.append(command.id)
    if not canceled:
        return None
    return CancelOutcome(canceled, reached, force)


def _from_run(command_id: str, canceled: Iterable[ResourceChange], running: Iterable[ResourceChange],
              abandoned: Iterable[ResourceChange]) -> list[CanceledUpdate]:
    """``canceled`` changed nothing, ``running`` are left to finish (InProgress), ``abandoned``: a forced cancel
    ended them during a plugin call."""
    def reached(change: ResourceChange, state: str, forced: bool = False) -> CanceledUpdate:
        return CanceledUpdate(command_id, change.ksuid, change.type, change.label, change.stack,
                              state, forced)  # type: ignore[arg-type]

    return [*(reached(c, "Canceled") for c in canceled), *(reached(c, "InProgress") for c in running),
            *(reached(c, "Canceled", True) for c in abandoned)]


def _cancel_stored(store: Datastore, command_id: str, force: bool) -> list[CanceledUpdate]:
    """Cancels the updates of a command no run of this agent executes, by their stored states."""
    outcome = store.cancel_resource_updates(command_id, force=force)
    forced = set(outcome.canceled_in_progress)
    updates = {(u.ksuid, u.operation): u for u in updates_of(store, command_id)}
    return [CanceledUpdate(command_id, ksuid, record.resource_type, record.resource_label, record.stack_label,
                           "Canceled", (ksuid, operation) in forced)
            for ksuid, operation in (*outcome.canceled_not_started, *outcome.canceled_in_progress)
            if (record := updates.get((ksuid, operation))) is not None]
