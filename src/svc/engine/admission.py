"""Admission: an apply or destroy planned, checked, stored and started.

Admission runs under one lock so two commands can never both pass the conflict check; planning (with the
plan's graph and its changes as shown) and storing (with the update records) run off the event loop, which keeps
answering meanwhile. A command is stored InProgress with its updates, then launched (``runs``); the answer waits
until its first plugin calls went out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from svc.datastore.errors import DatastoreUnavailable
from svc.datastore.interface import Datastore
from svc.datastore.query import DESTROY_FIELDS, parse_query
from svc.engine.background import PeriodicJob
from svc.engine.command_records import UpdateData, UpdateRecords, command_record, shown_change
from svc.engine.errors import ConflictingCommands, InvalidForma, NotLeading, PlanChanged, TargetReaped
from svc.engine.executor import Node
from svc.engine.graph import Graph, build_graph
from svc.engine.inventory_reads import plan_from_store
from svc.engine.planner import Catalog, Changeset, PlanRequest
from svc.engine.planner.changeset import ResourceChange
from svc.engine.planner.fingerprint import fingerprint, moved
from svc.engine.policy_store import persist_policies
from svc.engine.queries import PAGE, incomplete_commands, updates_of
from svc.engine.runs import Runs
from svc.engine.sealed_formas import seal_forma, unseal_forma
from svc.engine.sealing import Sealer
from svc.engine.service import ApplyRequest, Caller, DestroyRequest, StoredCommand, Submission
from svc.ids import new_id
from svc.model.forma import Forma
from svc.model.records import CommandRecord, TargetWrite, every_item
from svc.model.states import CommandState

log = logging.getLogger("svc.engine")


@dataclass(frozen=True)
class Provenance:
    """What every stored command records of the agent that admitted it."""

    agent_id: str = ""
    agent_version: str = ""


class Admission:
    def __init__(self, store: Datastore, catalog: Catalog, sealer: Sealer, runs: Runs,
                 jobs: Mapping[str, PeriodicJob], provenance: Provenance) -> None:
        self.store = store
        self.catalog = catalog
        self.sealer = sealer
        self.runs = runs
        self.jobs = jobs  # read when a command ends, for discovery after it: filled after construction
        self.provenance = provenance
        self._lock = asyncio.Lock()
        self._open = False  # only while this agent leads

    def open(self) -> None:
        self._open = True

    async def close(self) -> None:
        """Waits for the submission being admitted, then refuses the next ones (``NotLeading``)."""
        async with self._lock:
            self._open = False

    async def apply(self, request: ApplyRequest, caller: Caller) -> Submission:
        forma = request.forma
        if request.sealed:  # a saved plan's forma
            forma = await asyncio.to_thread(unseal_forma, forma, self.sealer)
        # Drift is looked up for --force too: it is not refused then, but a reconcile that takes it in moves the
        # stacks' baseline even when it changes nothing (``_store_baseline``).
        drift_stacks = {r.stack for r in forma.resources} if request.mode == "reconcile" else set()
        plan_request = PlanRequest("apply", request.mode, forma, force=request.force)
        submission = await self._submit(plan_request, drift_stacks, caller, request.simulate,
                                        (forma.description.text or "", forma.description.confirm),
                                        request.expected_plan)
        if request.simulate and request.seal_secrets:
            submission = await self._with_sealed_forma(submission, forma)
        return submission

    async def destroy(self, request: DestroyRequest, caller: Caller) -> Submission:
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
        submission = await self._submit(plan_request, set(), caller, request.simulate, description,
                                        request.expected_plan)
        if request.simulate and request.seal_secrets and request.forma is not None:
            submission = await self._with_sealed_forma(submission, request.forma)
        return submission

    async def _with_sealed_forma(self, submission: Submission, forma: Forma) -> Submission:
        """A simulation's answer with the forma to save with its plan, each secret sealed."""
        sealed = await asyncio.to_thread(seal_forma, forma, self.sealer, self.catalog)
        return replace(submission, sealed_forma=sealed)

    async def _submit(self, request: PlanRequest, drift_stacks: set[str], caller: Caller, simulate: bool,
                      description: tuple[str, bool], expected: Mapping[str, str] | None) -> Submission:
        # An id is answered only for a command that is stored, so that every id a client is given can be looked
        # up: a simulation, or a submission that needs no change and moves no baseline, answers "".
        command_id = "" if simulate else new_id()
        async with self._lock:
            if not self._open:
                raise NotLeading("this agent is handing over to another one and takes no more submissions; "
                                 "retry in a moment")
            if request.command == "apply" and request.forma is not None and not simulate:
                await self._refuse_reaped_targets(request.forma)
            changeset, graph, shown = await self._plan(request, drift_stacks)
            if not changeset.has_changes:
                planned = await self._check_plan(changeset, (), expected, simulate)
                stored = changeset.absorbed and not simulate
                if stored:
                    await asyncio.to_thread(self._store_baseline, command_id, changeset, request.force, caller,
                                            description)
                return Submission(command_id if stored else "", changeset, fingerprint=planned)
            planned = await self._check_plan(changeset, shown, expected, simulate)
            if simulate:
                return Submission(command_id, changeset, shown, fingerprint=planned)
            # Stored as InProgress: it starts as soon as it is stored, and a separate write of that state would
            # stand between storing the command and its first plugin call.
            command = self._record(command_id, changeset, request.force, caller, description,
                                   state=CommandState.IN_PROGRESS)
            nodes = await asyncio.to_thread(self._store_command, command, changeset, shown)
            run = self.runs.launch(command_id, graph, nodes, command)
            if any(target.starts_discovery for target in changeset.targets):
                self._discover_after(command_id)
        # The first plugin calls go out before the caller builds and sends its answer (the plan of a big
        # command takes milliseconds to serialise), not after.
        await run.dispatched.wait()
        return Submission(command_id, changeset, shown)

    @staticmethod
    async def _check_plan(changeset: Changeset, shown: Sequence[ResourceChange], expected: Mapping[str, str] | None,
                          simulate: bool) -> Mapping[str, str] | None:
        """The plan's fingerprint, for a simulation (what a later submission of it expects) or a submission that
        expects one; a submission planning other than what it expects is refused here, under the admission lock,
        so nothing can move between this check and storing the command."""
        if expected is None and not simulate:
            return None
        planned = await asyncio.to_thread(fingerprint, changeset, shown)
        if expected is not None and dict(expected) != planned:
            differences = moved(expected, planned)
            listing = ", ".join(entry["Change"] for entry in differences[:10])
            more = f" and {len(differences) - 10} more" if len(differences) > 10 else ""
            raise PlanChanged(f"the inventory changed since the plan was made, so these changes differ now: {listing}"
                              f"{more}; nothing was changed: make the plan again", {"Moved": differences})
        return planned

    def _record(self, command_id: str, changeset: Changeset, force: bool, caller: Caller,
                description: tuple[str, bool], **state: str) -> CommandRecord:
        return command_record(command_id, changeset, client_id=caller.client_id, subject=caller.subject,
                              force=force, description=description, agent_id=self.provenance.agent_id,
                              agent_version=self.provenance.agent_version, source=caller.source, **state)

    async def _plan(self, request: PlanRequest, reconcile_stacks: set[str]
                    ) -> tuple[Changeset, Graph, tuple[ResourceChange, ...]]:
        return await asyncio.to_thread(self._planned, request, reconcile_stacks)

    def _planned(self, request: PlanRequest, reconcile_stacks: set[str]
                 ) -> tuple[Changeset, Graph, tuple[ResourceChange, ...]]:
        """The plan, its graph and its changes as shown (secrets hashed, once), on a worker thread: the graph and the
        hashing of 100,000 changes took ~1 s of the event loop, which meanwhile left every other command's plugin
        answers and every status poll waiting."""
        changeset = plan_from_store(self.store, request, self.catalog, reconcile_stacks, new_id)
        return changeset, build_graph(changeset.resources), tuple(shown_change(c) for c in changeset.resources)

    def _store_baseline(self, command_id: str, changeset: Changeset, force: bool, caller: Caller,
                        description: tuple[str, bool]) -> None:
        """A reconcile whose forma already says what drifted (e.g. after ``svc extract``) changes nothing, yet
        it is its stacks' new baseline: without a record the drift would still be listed, refuse the next
        reconcile that changes those resources, and be reverted by auto-reconcile. It is stored as a finished
        command without updates, covering its stacks."""
        command = self._record(command_id, changeset, force, caller, description)
        self.store.put_command(replace(command, state=CommandState.SUCCESS, end_ts=command.start_ts),
                               stacks=changeset.reconciled)

    def _store_command(self, command: CommandRecord, changeset: Changeset, shown: Sequence[ResourceChange]
                       ) -> dict[str, Node]:
        """The command with its updates (its changes as ``shown``), stacks, targets and policies, in one
        transaction, unless another command still changes its stacks (``ConflictingCommands``): all of it is stored,
        or none (an agent stopped meanwhile leaves no stack or target of a command it never stored), and nothing is
        stored between the check and it. Answers the command's nodes to execute. On a worker thread, with the
        records and the nodes made there: for 100,000 changes they took the event loop ~0.3 s."""
        records = UpdateRecords(command.id, changeset.resources, shown, self.sealer)

        def work() -> None:
            self._refuse_conflicts(changeset.stack_labels)
            # Stacks and targets first (outside the DAG, as the reference does): resources name them.
            for stack in changeset.stacks:
                if stack.operation == "create":
                    self.store.create_stack(stack.label, stack.description, command_id=command.id)
                else:
                    self.store.update_stack(stack.label, stack.description, command_id=command.id)
            for target in changeset.targets:
                if target.operation != "delete":
                    self.store.put_target(TargetWrite(target.label, target.namespace, target.config,
                                                      target.config_schema, target.discoverable, target.reap_kind,
                                                      target.reap_after_seconds))
            persist_policies(self.store, changeset.policies, command.id)  # after the stacks they belong to
            self.store.put_command(command, records, stacks=changeset.reconciled)

        self.store.atomically(work)
        return {change.key: Node(change, UpdateData()) for change in changeset.resources}

    async def _refuse_reaped_targets(self, forma: Forma) -> None:
        """Resources on a reaped target that the forma does not declare again: refused (409 TargetReaped)."""
        used = {r.target for r in forma.resources} - {t.label for t in forma.targets}
        reaped = sorted(await asyncio.to_thread(self.store.reaped_targets, used)) if used else []
        if reaped:
            raise TargetReaped(f"target(s) {', '.join(reaped)} were reaped after being unreachable too long; "
                               "declare them in the forma again to recover them and their resources",
                               {"TargetLabels": reaped})

    def _refuse_conflicts(self, stacks: set[str]) -> None:
        """``ConflictingCommands`` when an apply or destroy not ended has an update in ``stacks`` not ended (its
        updates are read whole only then, for the answer)."""
        found = []
        for command in incomplete_commands(self.store):
            if command.command not in ("apply", "destroy"):  # background reads change nothing
                continue
            if self.store.stacks_changing(command.id, stacks):
                found.append(StoredCommand(command, tuple(updates_of(self.store, command.id))))
        if found:
            ids = ", ".join(each.record.id for each in found)
            raise ConflictingCommands(f"command(s) {ids} still change these stacks; wait for them or cancel them",
                                      commands=found)

    def _discover_after(self, command_id: str) -> None:
        """A target made discoverable (created so, or updated to be) is listed when the command storing it
        ends, not at the next interval (engine.md §6 triggers); after, so its own creates are not discovered."""
        job, command = self.jobs.get("discovery"), self.runs.task(command_id)
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
            self.runs.detached.add(task)
            task.add_done_callback(self.runs.detached.discard)

        command.add_done_callback(start)
