"""The engine: the command service the API calls (plan, store, execute, report, cancel, recover).

Admission (plan + checks + store) runs under one lock so two commands can never both pass the
conflict check; planning and SQL run off the event loop. Each stored command then runs as one asyncio
task (``executor.CommandRun``). ``start()`` resumes every command a previous agent left unfinished.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from svc.datastore.errors import DatastoreUnavailable
from svc.datastore.interface import Datastore
from svc.datastore.outage import patiently
from svc.datastore.query import COMMAND_FIELDS, DESTROY_FIELDS, parse_query
from svc.engine import drift
from svc.engine.background import PeriodicJob
from svc.engine.errors import ConflictingCommands, InvalidForma
from svc.engine.executor import CommandRun, Node
from svc.engine.graph import build_graph
from svc.engine.ledger import (
    UpdateData,
    change_of,
    command_record,
    overall_state,
    update_data,
    update_record,
    utcnow,
)
from svc.engine.operations import RetryPolicy
from svc.engine.planner import Catalog, Changeset, Inventory, Modification, PlanRequest, ResourceChange, plan
from svc.engine.policies import persist_policies, stored_policies
from svc.engine.ratelimit import NamespaceLimits
from svc.engine.sealing import Sealer, SealError
from svc.engine.service import ApplyRequest, Caller, DestroyRequest
from svc.engine.steps import Steps
from svc.engine.views import cancel_states, command_view, plan_view, summary_view, update_uri
from svc.engine.writer import BatchWriter
from svc.ids import new_id
from svc.model import wire
from svc.model.records import CommandRecord, ResourceUpdateRecord, TargetWrite, every_item
from svc.model.states import TERMINAL_COMMAND_STATES, TERMINAL_UPDATE_STATES, CommandState, UpdateState
from svc.plugins.runner import PluginRunner
from svc.telemetry import traced_command

log = logging.getLogger("svc.engine")
PAGE = 1000


@dataclass(frozen=True)
class PluginLimits:
    requests_per_second: float = 10.0
    max_in_flight: int = 32
    retry: RetryPolicy | None = None


@dataclass
class EngineSettings:
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    plugins: Mapping[str, PluginLimits] = field(default_factory=dict)
    agent_id: str = ""
    agent_version: str = ""



class Engine:
    """Implements ``svc.engine.service.CommandService``."""

    def __init__(self, datastore: Datastore, runners: Mapping[str, PluginRunner], catalog: Catalog,
                 sealer: Sealer, settings: EngineSettings | None = None) -> None:
        self.store = datastore
        self.runners = dict(runners)
        self.catalog = catalog
        self.sealer = sealer
        self.settings = settings or EngineSettings()
        self._admission = asyncio.Lock()
        self._runs: dict[str, CommandRun] = {}
        self._tasks: dict[str, asyncio.Task[str]] = {}
        self._limits: dict[str, NamespaceLimits] = {}
        self._policies: dict[str, RetryPolicy] = {}
        self._started = False
        self.writer = BatchWriter(datastore)
        self._detached: set[asyncio.Task[None]] = set()
        self.jobs: dict[str, PeriodicJob] = {}  # background work by name ("synchronization", "discovery", …)

    # -- lifecycle ----------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Starts the plugins, then resumes every unfinished command (crash recovery)."""
        for runner in self.runners.values():
            await runner.start()  # a plugin process that cannot start stops the agent with its reason
        self._started = True
        incomplete = await asyncio.to_thread(lambda: every_item(lambda c: self.store.list_incomplete_commands(
            cursor=c, limit=PAGE)))
        for command in sorted(incomplete, key=lambda c: (c.start_ts, c.id)):
            await self._recover(command)
        for job in self.jobs.values():
            job.start()

    async def stop(self) -> None:
        """Stops background jobs and running commands where they are (a later start resumes them), then
        closes the plugins."""
        for job in self.jobs.values():
            await job.stop()
        tasks = [*self._tasks.values(), *self._detached]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.writer.close()
        for runner in self.runners.values():
            await runner.close()

    async def wait(self, command_id: str, timeout: float | None = None) -> wire.CommandView | None:
        """Blocks until the command's execution ends (tests, benchmarks, ``--wait``)."""
        task = self._tasks.get(command_id)
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        return await self.command(command_id)

    async def await_end(self, command_id: str, timeout: float) -> None:
        task = self._tasks.get(command_id)
        if task is not None and timeout > 0:
            await asyncio.wait({task}, timeout=timeout)

    async def synchronize(self) -> str | None:
        """Reads every managed resource once and stores out-of-band changes (``sync.synchronize``)."""
        from svc.engine.sync import synchronize

        return await synchronize(self)

    # -- plumbing -----------------------------------------------------------------------------------------

    def policy(self, namespace: str) -> RetryPolicy:
        key = namespace.upper()  # asked several times per resource change: looked up once per namespace
        policy = self._policies.get(key)
        if policy is None:
            limits = self._plugin(namespace)
            policy = limits.retry if limits is not None and limits.retry is not None else self.settings.retry
            self._policies[key] = policy
        return policy

    def _plugin(self, namespace: str) -> PluginLimits | None:
        for name, limits in self.settings.plugins.items():
            if name.upper() == namespace.upper():
                return limits
        return None

    def limits(self, namespace: str) -> NamespaceLimits:
        key = namespace.upper()
        if key not in self._limits:
            plugin = self._plugin(namespace) or PluginLimits()
            self._limits[key] = NamespaceLimits(plugin.requests_per_second, plugin.max_in_flight)
        return self._limits[key]

    def _inventory(self, reconcile_stacks: set[str]) -> Inventory:
        resources = every_item(lambda c: self.store.list_resources(cursor=c, limit=PAGE))
        targets = every_item(lambda c: self.store.list_targets(cursor=c, limit=PAGE))
        stacks = every_item(lambda c: self.store.list_stacks(cursor=c, limit=PAGE))
        inventory = Inventory(resources, {t.label: t for t in targets}, {s.label: s for s in stacks})
        for stack in reconcile_stacks:
            inventory.modifications[stack] = self._modifications(stack)
        return inventory

    def _modifications(self, stack: str) -> list[Modification]:
        """Versions written in ``stack`` since its last reconcile by anything but that reconcile."""
        changed = drift.modified(self.store, stack)
        outside = drift.out_of_band(self.store, changed)
        return [Modification(stack, v.type, v.label, "delete" if v.deleted else "update", v.ksuid, v.ksuid in outside)
                for v in changed]

    async def _plan(self, request: PlanRequest, reconcile_stacks: set[str]) -> Changeset:
        def work() -> Changeset:
            inventory = self._inventory(reconcile_stacks)
            inventory.policies = stored_policies(self.store, request.forma)
            return plan(request, inventory, self.catalog, new_id)

        return await asyncio.to_thread(work)

    # -- CommandService -----------------------------------------------------------------------------------

    async def apply(self, request: ApplyRequest, caller: Caller) -> wire.SubmitCommandResponse:
        forma = request.forma
        # Drift is looked up for --force too: it is not refused then, but a reconcile that takes it in moves the
        # stacks' baseline even when it changes nothing (``_store_baseline``).
        drift_stacks = {r.stack for r in forma.resources} if request.mode == "reconcile" else set()
        plan_request = PlanRequest("apply", request.mode, forma, force=request.force)
        return await self._submit(plan_request, drift_stacks, caller, request.simulate,
                                  (forma.description.text or "", forma.description.confirm))

    async def destroy(self, request: DestroyRequest, caller: Caller) -> wire.SubmitCommandResponse:
        if request.query:
            query = parse_query(request.query, DESTROY_FIELDS)
            matches = await asyncio.to_thread(lambda: every_item(lambda c: self.store.list_resources(
                query, cursor=c, limit=PAGE)))
            plan_request = PlanRequest("destroy", "patch", None, on_dependents=request.on_dependents,
                                       destroy_matches=tuple(r for r in matches if r.managed))
            description = ("", False)
        elif request.forma is not None:
            plan_request = PlanRequest("destroy", "patch", request.forma, on_dependents=request.on_dependents)
            description = (request.forma.description.text or "", request.forma.description.confirm)
        else:
            raise InvalidForma("destroy needs a forma or a query", {})
        return await self._submit(plan_request, set(), caller, request.simulate, description)

    async def _submit(self, request: PlanRequest, drift_stacks: set[str], caller: Caller, simulate: bool,
                      description: tuple[str, bool]) -> wire.SubmitCommandResponse:
        # An id is answered only for a command that is stored, so that every id a client is given can be looked
        # up: a simulation, or a submission that needs no change and moves no baseline, answers "".
        command_id = "" if simulate else new_id()
        async with self._admission:
            changeset = await self._plan(request, drift_stacks)
            if not changeset.has_changes:
                stored = changeset.absorbed and not simulate
                if stored:
                    await asyncio.to_thread(self._store_baseline, command_id, changeset, request.force, caller,
                                            description)
                simulation = wire.SimulationView(ChangesRequired=False, BaselineStacks=changeset.absorbed or None)
                return wire.SubmitCommandResponse(CommandId=command_id if stored else "", Simulation=simulation)
            graph = build_graph(changeset.resources)
            view = plan_view(command_id, changeset, client_id=caller.client_id)
            simulation = wire.SimulationView(ChangesRequired=True, Command=view,
                                             Warnings=changeset.warnings or None)
            if simulate:
                return wire.SubmitCommandResponse(CommandId=command_id, Simulation=simulation)
            await self._refuse_conflicts(changeset)
            data = [update_data(change, self.sealer) for change in changeset.resources]
            records = [update_record(command_id, change, each)
                       for change, each in zip(changeset.resources, data, strict=True)]
            # Stored as InProgress: it starts as soon as it is stored, and a separate write of that state would
            # stand between storing the command and its first plugin call.
            command = command_record(command_id, changeset, client_id=caller.client_id, subject=caller.subject,
                                     force=request.force, description=description, agent_id=self.settings.agent_id,
                                     agent_version=self.settings.agent_version, source=caller.source,
                                     state=CommandState.IN_PROGRESS)
            await asyncio.to_thread(self._store_command, command, records, changeset)
            nodes = {change.key: Node(change, each) for change, each in zip(changeset.resources, data, strict=True)}
            run = self._launch(command_id, graph, nodes, command)
            if any(target.starts_discovery for target in changeset.targets):
                self._discover_after(command_id)
        # The first plugin calls go out before the caller builds and sends its answer (the plan of a big
        # command takes milliseconds to serialise), not after.
        await run.dispatched.wait()
        return wire.SubmitCommandResponse(CommandId=command_id, Simulation=simulation)

    def _store_baseline(self, command_id: str, changeset: Changeset, force: bool, caller: Caller,
                        description: tuple[str, bool]) -> None:
        """A reconcile whose forma already says what drifted (e.g. after ``svc extract``) changes nothing, yet
        it is its stacks' new baseline: without a record the drift would still be listed, refuse the next
        reconcile that changes those resources, and be reverted by auto-reconcile. It is stored as a finished
        command without updates, covering its stacks."""
        command = command_record(command_id, changeset, client_id=caller.client_id, subject=caller.subject,
                                 force=force, description=description, agent_id=self.settings.agent_id,
                                 agent_version=self.settings.agent_version, source=caller.source)
        self.store.put_command(replace(command, state=CommandState.SUCCESS, end_ts=command.start_ts),
                               stacks=changeset.reconciled)

    def _discover_after(self, command_id: str) -> None:
        """A target made discoverable (created so, or updated to be) is listed when the command storing it
        ends, not at the next interval (engine.md §6 triggers); after, so its own creates are not discovered."""
        job, command = self.jobs.get("discovery"), self._tasks.get(command_id)
        if job is None or not job.enabled or command is None:
            return

        async def discover() -> None:
            try:
                await job.run_now()
            except DatastoreUnavailable:
                pass  # the datastore logs the outage; the periodic run tries again
            except Exception:  # noqa: BLE001 - the periodic run tries again
                log.exception("discovery after command %s failed", command_id)

        def start(done: asyncio.Task[str]) -> None:
            if done.cancelled():  # the agent is stopping
                return
            task = asyncio.create_task(discover(), name=f"discovery after {command_id}")
            self._detached.add(task)
            task.add_done_callback(self._detached.discard)

        command.add_done_callback(start)

    def _store_command(self, command: CommandRecord, records: list[ResourceUpdateRecord],
                       changeset: Changeset) -> None:
        # Stacks and targets first (outside the DAG, as the reference does): resources name them.
        for stack in changeset.stacks:
            if stack.operation == "create":
                self.store.create_stack(stack.label, stack.description, command_id=command.id)
            else:
                self.store.update_stack(stack.label, stack.description, command_id=command.id)
        for target in changeset.targets:
            if target.operation != "delete":
                self.store.put_target(TargetWrite(target.label, target.namespace, target.config,
                                                  target.config_schema, target.discoverable))
        persist_policies(self.store, changeset.policies, command.id)  # after the stacks they belong to
        self.store.put_command(command, records, stacks=changeset.reconciled)

    async def _refuse_conflicts(self, changeset: Changeset) -> None:
        stacks = changeset.stack_labels

        def conflicting() -> list[wire.CommandView]:
            found = []
            for command in every_item(lambda c: self.store.list_incomplete_commands(cursor=c, limit=PAGE)):
                if command.command not in ("apply", "destroy"):  # background reads change nothing
                    continue
                updates = every_item(lambda c, i=command.id: self.store.get_resource_updates(i, cursor=c, limit=PAGE))
                live = [u for u in updates if u.state not in (UpdateState.SUCCESS, UpdateState.FAILED,
                                                              UpdateState.REJECTED)]
                if any(u.stack_label in stacks for u in live):
                    found.append(command_view(command, updates))
            return found

        found = await asyncio.to_thread(conflicting)
        if found:
            ids = ", ".join(view.CommandId for view in found)
            raise ConflictingCommands(f"command(s) {ids} still change these stacks; wait for them or cancel them",
                                      {"ConflictingCommands": [view.to_json() for view in found]})

    def _launch(self, command_id: str, graph, nodes: dict[str, Node],  # type: ignore[no-untyped-def]
                command: CommandRecord | None = None, *, recovered: bool = False) -> CommandRun:
        steps = Steps(command_id, self.store, self.writer, self.runners, self.policy, recovered=recovered)
        run = CommandRun(command_id, graph, nodes, self.store, steps, self.limits, self._finish, self.writer,
                         in_progress_stored=command is not None and command.state == CommandState.IN_PROGRESS,
                         detached=self._detached)
        self._runs[command_id] = run
        task = asyncio.create_task(traced_command(run.run(), command_id, command), name=f"command {command_id}")
        self._tasks[command_id] = task

        def forget(_: asyncio.Task[str]) -> None:
            self._runs.pop(command_id, None)
            self._tasks.pop(command_id, None)
            run.dispatched.set()  # a task canceled before it ran never set it

        task.add_done_callback(forget)
        return run

    async def _finish(self, command_id: str, state: str, delete_stacks: set[str]) -> None:
        """Ends a command: targets and stacks its deletes emptied go, then the command's final state.
        ``delete_stacks`` are the stacks of its delete changes (known in memory: reading the updates back
        decoded every change's document again)."""
        def work() -> None:
            command = self.store.get_command(command_id)
            if command is not None:
                for target in command.data.get("targets", []):
                    if target["operation"] == "delete" and not self.store.count_resources(target=target["label"]):
                        self.store.delete_target(target["label"])
            for stack in delete_stacks:
                if self.store.count_resources(stack=stack) == 0:
                    self.store.delete_stack(stack, command_id=command_id)
            if state in TERMINAL_COMMAND_STATES:
                self.store.set_command_state(command_id, state, end_ts=utcnow())

        await patiently(work)  # each step checks what is stored: after an outage, it runs again from the start

    async def command(self, command_id: str, *, summary: bool = False,
                      updated_since: datetime | None = None) -> wire.CommandView | None:
        """The command's view; ``summary``: its updates reduced to what following it needs (``summary_view``),
        with ``updated_since`` only those whose state was written since then."""
        def work() -> wire.CommandView | None:
            command = self.store.get_command(command_id)
            if command is None:
                return None
            if summary:
                return summary_view(command, every_item(lambda c: self.store.get_resource_update_summaries(
                    command_id, modified_since=updated_since, cursor=c, limit=PAGE)))
            return command_view(command, every_item(lambda c: self.store.get_resource_updates(command_id, cursor=c,
                                                                                         limit=PAGE)))

        return await asyncio.to_thread(work)

    async def commands(self, query: str, caller: Caller, *, scope: Literal["client", "agent"],
                       max_results: int) -> list[wire.CommandView]:
        def work() -> list[wire.CommandView]:
            if query.strip():
                found = self.store.list_commands(parse_query(query, COMMAND_FIELDS), client_id=caller.client_id,
                                                 limit=max_results).items
            elif scope == "client":
                found = self.store.list_commands(parse_query("client:me", COMMAND_FIELDS), client_id=caller.client_id,
                                                 limit=1).items
            else:
                found = self.store.list_commands(limit=max_results).items
            return [command_view(c, every_item(lambda cur, i=c.id: self.store.get_resource_updates(i, cursor=cur,
                                                                                              limit=PAGE)))
                    for c in found]

        return await asyncio.to_thread(work)

    async def cancel(self, query: str, caller: Caller, *, force: bool) -> wire.CancelCommandResponse | None:
        def targets() -> list[CommandRecord]:
            if query.strip():
                parsed = parse_query(query, COMMAND_FIELDS)
                sources = None if "command:" in query.lower() else ("user",)
                return list(self.store.list_commands(parsed, client_id=caller.client_id, sources=sources,
                                                     limit=100).items)
            return list(self.store.list_commands(parse_query("client:me", COMMAND_FIELDS),
                                                 client_id=caller.client_id, limit=1).items)

        commands = [c for c in await asyncio.to_thread(targets) if c.state not in TERMINAL_COMMAND_STATES]
        if not commands:
            return None
        canceled: list[str] = []
        states: dict[str, wire.CanceledUpdateState] = {}
        for command in commands:
            run = self._runs.get(command.id)
            if run is not None:
                # The run knows what is in a plugin call and what is not; the datastore cannot (a call's start is
                # written only once it has lasted a while).
                report = await run.cancel(force=force)
                if not (report.canceled or report.running or report.abandoned):
                    continue  # every change of it had ended (it is storing its own end): nothing was canceled
                states.update(cancel_states(command.id, report.canceled, report.running, report.abandoned))
            else:
                states.update(await asyncio.to_thread(self._cancel_stored, command.id, force))
            if force or run is None:
                updates = await asyncio.to_thread(lambda i=command.id: every_item(
                    lambda c: self.store.get_resource_updates(i, cursor=c, limit=PAGE)))
                final = overall_state([u.state for u in updates])
                if final in TERMINAL_COMMAND_STATES:
                    await asyncio.to_thread(self.store.set_command_state, command.id, final, end_ts=utcnow())
            canceled.append(command.id)
        if not canceled:
            return None
        return wire.CancelCommandResponse(CommandIds=canceled, ResourceUpdateStates=states or None,
                                          Forced=force or None)

    def _cancel_stored(self, command_id: str, force: bool) -> dict[str, wire.CanceledUpdateState]:
        """Cancels the updates of a command no run of this agent executes, by their stored states."""
        outcome = self.store.cancel_resource_updates(command_id, force=force)
        forced = set(outcome.canceled_in_progress)
        updates = {(u.ksuid, u.operation): u for u in every_item(
            lambda c: self.store.get_resource_updates(command_id, cursor=c, limit=PAGE))}
        return {update_uri(ksuid): wire.CanceledUpdateState(
                    State="Canceled", ForceCanceled=(ksuid, operation) in forced or None, CommandId=command_id,
                    ResourceType=record.resource_type, ResourceLabel=record.resource_label,
                    StackName=record.stack_label)
                for ksuid, operation in (*outcome.canceled_not_started, *outcome.canceled_in_progress)
                if (record := updates.get((ksuid, operation))) is not None}

    # -- recovery -----------------------------------------------------------------------------------------

    async def _recover(self, command: CommandRecord) -> None:
        if command.command not in ("apply", "destroy"):  # background reads are never resumed (rerun instead)
            await asyncio.to_thread(self.store.set_command_state, command.id, CommandState.FAILED, end_ts=utcnow())
            return
        updates = await asyncio.to_thread(lambda: every_item(lambda c: self.store.get_resource_updates(
            command.id, cursor=c, limit=PAGE)))
        nodes: dict[str, Node] = {}
        for record in updates:
            data = UpdateData.from_json(dict(record.data))
            try:
                change = change_of(record, self.sealer)
            except SealError as error:
                data.message = f"{error}; apply the forma again"
                await asyncio.to_thread(self.store.set_resource_update_state, command.id, record.ksuid,
                                        record.operation, UpdateState.FAILED, data=data.to_json())
                change = change_of_unsealed(record)
                nodes[change.key] = Node(change, data, UpdateState.FAILED)
                continue
            state = record.state
            resume = state == UpdateState.IN_PROGRESS
            if state not in TERMINAL_UPDATE_STATES:
                state = UpdateState.NOT_STARTED
            nodes[change.key] = Node(change, data, state, resume)
        if all(node.state in TERMINAL_UPDATE_STATES for node in nodes.values()):
            await self._finish(command.id, overall_state([node.state for node in nodes.values()]),
                               {node.change.stack for node in nodes.values() if node.change.operation == "delete"})
            return
        log.info("resuming command %s (%d of %d changes unfinished)", command.id,
                 sum(node.state not in TERMINAL_UPDATE_STATES for node in nodes.values()), len(nodes))
        self._launch(command.id, build_graph(node.change for node in nodes.values()), nodes, command, recovered=True)


def change_of_unsealed(record: ResourceUpdateRecord) -> ResourceChange:
    return ResourceChange.from_json(dict(UpdateData.from_json(dict(record.data)).change))
