"""Crash recovery: the commands a previous agent left unfinished, resumed when this one starts.

An update that was in a plugin call resumes that call (its request token is stored, so the plugin answers
from its first call); one that never started starts; a background read (sync, discovery) is failed, not
resumed: the next run reads again. A change whose secrets this agent's key cannot open fails, naming why.
"""

from __future__ import annotations

import asyncio
import logging

from svc.datastore.interface import Datastore
from svc.engine.command_records import UpdateData, change_of, overall_state, stored_change, utcnow
from svc.engine.executor import Node
from svc.engine.graph import build_graph
from svc.engine.queries import updates_of
from svc.engine.runs import Runs
from svc.engine.sealing import Sealer, SealError
from svc.model.records import CommandRecord
from svc.model.states import TERMINAL_UPDATE_STATES, CommandState, UpdateState

log = logging.getLogger("svc.engine")


async def recover(store: Datastore, sealer: Sealer, runs: Runs, command: CommandRecord) -> None:
    if command.command not in ("apply", "destroy"):  # background reads are never resumed (rerun instead)
        await asyncio.to_thread(store.set_command_state, command.id, CommandState.FAILED, end_ts=utcnow())
        return
    updates = await asyncio.to_thread(updates_of, store, command.id)
    nodes: dict[str, Node] = {}
    for record in updates:
        data = UpdateData.from_json(dict(record.data))
        try:
            change = change_of(record, sealer)
        except SealError as error:
            data.message = f"{error}; apply the forma again"
            await asyncio.to_thread(store.set_resource_update_state, command.id, record.ksuid,
                                    record.operation, UpdateState.FAILED, data=data.to_json())
            change = stored_change(record)  # what is stored, without the secrets it cannot open
            nodes[change.key] = Node(change, data, UpdateState.FAILED)
            continue
        state = record.state
        resume = state == UpdateState.IN_PROGRESS
        if state not in TERMINAL_UPDATE_STATES:
            state = UpdateState.NOT_STARTED
        nodes[change.key] = Node(change, data, state, resume)
    if all(node.state in TERMINAL_UPDATE_STATES for node in nodes.values()):
        await runs.finish(command.id, overall_state([node.state for node in nodes.values()]),
                          {node.change.stack for node in nodes.values() if node.change.operation == "delete"})
        return
    log.info("resuming command %s (%d of %d changes unfinished)", command.id,
             sum(node.state not in TERMINAL_UPDATE_STATES for node in nodes.values()), len(nodes))
    runs.launch(command.id, build_graph(node.change for node in nodes.values()), nodes, command, recovered=True)
