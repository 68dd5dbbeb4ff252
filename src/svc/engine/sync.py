"""One synchronization pass: read every managed resource and store what changed outside svc.

Changed resources get a new version (written by a ``sync`` command, so the reconcile drift gate sees
them); resources gone from the cloud are tombstoned. Stacks with a user command in flight are skipped
(that command owns them). A pass that changed nothing leaves no command behind. The periodic loop that
calls this belongs to the agent.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from svc.datastore.records import CommandRecord, CommandState, ResourceVersion, ResourceWrite
from svc.engine import values
from svc.engine.ledger import utcnow
from svc.engine.operations import read
from svc.engine.planner.diff import opaque_fields
from svc.engine.steps import merge
from svc.ids import new_id
from svc.plugins.runner import Call
from svc.plugins.sdk import ErrorCode
from svc.schema.model import Schema

if TYPE_CHECKING:
    from svc.engine.engine import Engine

CONCURRENCY = 16


async def synchronize(engine: Engine) -> str | None:
    """Returns the sync command's id, or None when nothing changed."""
    from svc.engine.engine import PAGE, _all

    store = engine.store

    def load() -> tuple[list[ResourceVersion], set[str]]:
        resources = [r for r in _all(lambda c: store.list_resources(cursor=c, limit=PAGE)) if r.managed]
        busy: set[str] = set()
        for command in _all(lambda c: store.list_incomplete_commands(cursor=c, limit=PAGE)):
            if command.source == "user":
                busy |= {u.stack_label for u in _all(lambda c, i=command.id: store.get_resource_updates(
                    i, cursor=c, limit=PAGE))}
        return resources, busy

    resources, busy = await asyncio.to_thread(load)
    command_id = new_id()
    await asyncio.to_thread(store.put_command, CommandRecord(
        id=command_id, command="sync", state=CommandState.IN_PROGRESS, start_ts=utcnow(), source="synchronizer",
        client_id="synchronizer"))
    gate = asyncio.Semaphore(CONCURRENCY)
    changed = 0

    async def one(resource: ResourceVersion) -> None:
        nonlocal changed
        if resource.stack in busy or resource.native_id is None:
            return
        async with gate:
            target = await asyncio.to_thread(store.get_target, resource.target)
            if target is None or target.namespace.upper() not in {n.upper() for n in engine.runners}:
                return
            policy = engine.policy(target.namespace)
            runner = next(r for n, r in engine.runners.items() if n.upper() == target.namespace.upper())
            result = await read(runner, Call(resource.type, dict(target.config), policy.call_timeout),
                                resource.native_id, None, policy, not_found_ok=True)
            if result.error_code is ErrorCode.NOT_FOUND:
                outcome = await asyncio.to_thread(store.delete_resource, resource.ksuid, command_id=command_id)
            elif result.properties is not None:
                schema = Schema.model_validate(resource.document.get("Schema") or {"Identifier": ""})
                fields = set(schema.fields)
                writable = {k: v for k, v in result.properties.items() if not fields or k in fields}
                read_only = {k: v for k, v in result.properties.items() if fields and k not in fields}
                properties = values.hash_secrets(merge(dict(resource.properties), writable), opaque_fields(schema))
                outcome = await asyncio.to_thread(store.store_resource, ResourceWrite(
                    type=resource.type, label=resource.label, stack=resource.stack, target=resource.target,
                    properties=properties, managed=True, native_id=resource.native_id, ksuid=resource.ksuid,
                    read_only_properties=read_only, document=dict(resource.document)), command_id=command_id)
            else:
                return
            if outcome.changed:
                changed += 1

    await asyncio.gather(*(one(r) for r in resources))
    if not changed:
        await asyncio.to_thread(store.delete_command, command_id)
        return None
    await asyncio.to_thread(store.set_command_state, command_id, CommandState.SUCCESS, end_ts=utcnow())
    return command_id
