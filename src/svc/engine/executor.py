"""Running a command's DAG: independent changes in parallel, dependents after their dependencies.

A change starts once every change it waits for succeeded; a failed (or rejected, or canceled) change
fails everything downstream without running it. Each start takes a token of its plugin namespace's
rate limit and a slot of its in-flight cap, held for the change's whole plugin work (``gateway``, where
``change_execution`` makes its calls); everything it learns is written in the order it learned it (``writer``,
``Steps.save``).

A change's dependents start as soon as its plugin answered, while its end is still being committed: its
write is queued first, and the writer commits in queue order, so the datastore never holds a dependent's
end without its dependency's. Waiting for the commit put one commit (and the batch ahead of it) on the
critical path of every level of the DAG. A crash in between loses nothing: neither end is stored, so the
restarted command re-drives both with the request tokens they were first sent with, and the plugin answers
each from its first call (as for any call under way at a crash).

A datastore outage stalls the command's writes, not the command: the writer holds them until the datastore is
back, the command's own state writes wait for it (``svc.datastore.outage.patiently``), and no change fails
because of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from svc.datastore.errors import ConflictError
from svc.datastore.interface import Datastore
from svc.datastore.outage import patiently
from svc.datastore.update_writes import UpdateStateWrite
from svc.engine.change_execution import Fenced, Steps
from svc.engine.command_records import UpdateData, overall_state, utcnow
from svc.engine.gateway import PluginGateway
from svc.engine.graph import Graph
from svc.engine.operations import Stopped
from svc.engine.planner.changeset import ResourceChange
from svc.engine.writer import BatchWriter, WriterClosed
from svc.model.states import TERMINAL_UPDATE_STATES, CommandState, UpdateState
from svc.telemetry import traced_operation

log = logging.getLogger("svc.engine")
STOPPED = "canceled before it changed anything"
ABANDONED = "abandoned by a forced cancel during its plugin call; what the call made is recorded if it completes"
# Changes started at the command's start between two turns of the event loop: each start's first step runs in the
# next turn, and the 10,000 roots of a 100,000-resource forma started at once held the loop ~0.7 s, answering nothing.
_STARTS_PER_TURN = 1_000


@dataclass
class Node:
    change: ResourceChange
    data: UpdateData
    state: str = UpdateState.NOT_STARTED
    resume: bool = False  # it was in progress when the agent stopped


@dataclass(frozen=True)
class CancelReport:
    """What a cancel did to one command's changes: ``canceled`` end Canceled having changed nothing; ``running``
    were in a plugin call and go on to their end; ``abandoned`` were in one when a forced cancel ended them."""

    canceled: list[ResourceChange]
    running: list[ResourceChange]
    abandoned: list[ResourceChange]


@dataclass
class CommandRun:
    """One command's execution (one asyncio task)."""

    command_id: str
    graph: Graph
    nodes: dict[str, Node]
    store: Datastore
    steps: Steps
    gateway: PluginGateway
    on_finish: Callable[[str, str, set[str]], Awaitable[None]]
    writer: BatchWriter
    in_progress_stored: bool = False  # the command's InProgress state is stored already
    canceling: bool = False
    running: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    detached: set[asyncio.Task[None]] = field(default_factory=set)  # abandoned by a force cancel
    # Set once the first changes are started: their tasks were created before it, so whoever awaits it
    # resumes only after each of them ran up to its first plugin call (or its wait for a slot).
    dispatched: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    # The key of each change that ended, and "" when a force cancel wakes the loop.
    _wake: asyncio.Queue[str] = field(default_factory=asyncio.Queue, init=False)
    _waiting: dict[str, set[str]] = field(default_factory=dict, init=False)  # key → what it still waits for
    _queued: set[str] = field(default_factory=set, init=False)  # started, waiting for a slot of its namespace
    # Started, its end not queued for writing yet: the writer waits a little for those ends (``writes_coming``).
    unended: set[str] = field(default_factory=set, init=False)

    async def run(self) -> str:
        try:
            await self._begin()
        finally:
            self.dispatched.set()
        while self.running:
            key = await self._wake.get()
            if key not in self.running:
                continue  # a wake-up, or an abandoned change that ended
            self.running.pop(key)
            if self.nodes[key].state != UpdateState.SUCCESS:
                await self._fail_downstream(key)
        state = overall_state([node.state for node in self.nodes.values()])
        await self.on_finish(self.command_id, state, {node.change.stack for node in self.nodes.values()
                                                      if node.change.operation == "delete"})
        return state

    async def _begin(self) -> None:
        """Starts every change that waits for nothing; notes what each change still waits for."""
        if not self.in_progress_stored:
            await patiently(lambda: self.store.set_command_state(self.command_id, CommandState.IN_PROGRESS))
        self._waiting = {key: {dep for dep in self.graph.waits_for[key]
                               if self.nodes[dep].state != UpdateState.SUCCESS} for key in self.nodes}
        for key, node in self.nodes.items():
            if node.state in TERMINAL_UPDATE_STATES and node.state != UpdateState.SUCCESS:
                await self._fail_downstream(key)
        started = 0
        for key in sorted(self.nodes):
            # A change already running was started by its producer's end (``_start_dependents``) while this yielded.
            if key in self.running or self.nodes[key].state in TERMINAL_UPDATE_STATES or self._waiting[key]:
                continue
            self._start(key)
            started += 1
            if started % _STARTS_PER_TURN == 0:
                await asyncio.sleep(0)

    def _start_dependents(self, key: str) -> None:
        """Starts each dependent of ``key`` (which succeeded, its end queued for writing) that now waits for
        nothing. Called by the change's own task as soon as its plugin answered, not by ``run`` when it hears of
        it: under load every hop through the event loop's queue costs milliseconds on the critical path."""
        for dependent in sorted(self.graph.dependents[key]):
            waiting = self._waiting[dependent]
            waiting.discard(key)
            if not waiting and self.nodes[dependent].state == UpdateState.NOT_STARTED and not self.canceling:
                self._start(dependent)

    def _start(self, key: str) -> None:
        self.unended.add(key)
        self.running[key] = asyncio.create_task(self._execute(key), name=f"{self.command_id}:{key}")

    async def _execute(self, key: str) -> None:
        node = self.nodes[key]
        change = node.change
        try:
            self._queued.add(key)
            async with self.gateway.plugin(change.namespace).dispatch():
                self._queued.discard(key)
                if self.canceling:
                    raise Stopped()
                if node.resume:
                    self.steps.started.add(key)
                outcome = await traced_operation(self.steps.run(change, node.data, resume=node.resume), change)
            node.data.message = outcome.message or node.data.message
            node.data.finished_at = utcnow().isoformat()
            started = self.steps.take_start(key) or (utcnow() if key not in self.steps.started else None)
            self.unended.discard(key)
            ending = self.writer.finish(
                outcome.resource, change.ksuid if outcome.delete else None,
                UpdateStateWrite(self.command_id, change.ksuid, change.operation, outcome.state,
                                 data=node.data.to_json(), start_ts=started))
            if outcome.state == UpdateState.SUCCESS:
                self.steps.produced(change.ksuid, outcome.resource)
                self._start_dependents(key)
            finished = await ending
            node.state = outcome.state if finished.moved else UpdateState.CANCELED
            if node.state == UpdateState.SUCCESS:
                self.steps.stored(change.ksuid, outcome.resource, finished.stored)
        except Fenced:
            node.state = UpdateState.CANCELED
        except Stopped:
            node.state = UpdateState.CANCELED
            await self._store_canceled(key, STOPPED)
        except asyncio.CancelledError:
            node.state = UpdateState.CANCELED
            raise
        except WriterClosed:
            node.state = UpdateState.CANCELED  # the agent is stopping: the stored state resumes it later
        except ConflictError as error:
            # Its result belongs to another resource (a native id another stack manages on this target): the
            # user's to sort out, not a bug, so the message is the datastore's own.
            log.warning("resource change %s of command %s not stored: %s", key, self.command_id, error)
            await self._store_failure(key, str(error))
        except Exception as error:  # noqa: BLE001 - a bug in one change must not stop the others
            log.exception("resource change %s of command %s failed unexpectedly", key, self.command_id)
            await self._store_failure(key, f"internal error: {type(error).__name__}: {error}")
        finally:
            self._queued.discard(key)
            self.unended.discard(key)
            self.steps.guard.underway.discard(key)
            self._wake.put_nowait(key)

    async def _store_failure(self, key: str, message: str) -> None:
        self.unended.discard(key)
        node = self.nodes[key]
        node.data.message = message
        node.state = UpdateState.FAILED
        try:
            await self.steps.save(node.change, UpdateState.FAILED, node.data, start=self.steps.take_start(key))
        except Exception:  # noqa: BLE001
            log.exception("cannot store the failure of %s", key)

    async def _fail_downstream(self, key: str) -> None:
        source = self.nodes[key].change
        for dependent in sorted(self.graph.downstream(key)):
            node = self.nodes[dependent]
            if node.state != UpdateState.NOT_STARTED or dependent in self.running:
                continue
            node.state = UpdateState.FAILED
            node.data.message = f"DependencyFailure: {source.handle} ({source.operation}) did not succeed"
            if not await self.steps.save(node.change, UpdateState.FAILED, node.data):
                node.state = UpdateState.CANCELED

    async def cancel(self, *, force: bool) -> CancelReport:
        """Stops the command: no change starts any more, and every change that is not in a plugin call ends
        Canceled (one waiting for its turn, for a retry, or reading) without another call; ``force`` also
        abandons the changes in a call. The report is taken at once (nothing runs in between); the Canceled
        states are stored before this returns.

        An abandoned change is not interrupted: the command ends without it (its update is Canceled in the
        datastore and stays so), but if its plugin call still completes, the resource it made is recorded in
        the inventory, so the cloud never holds something svc does not know about.
        """
        self.canceling = True
        guard = self.steps.guard
        guard.stop.set()  # wakes every change waiting for a retry
        not_started: list[str] = []
        stopping: list[str] = []  # started, but in no plugin call: each stops at its next step
        running: list[str] = []
        for key, node in self.nodes.items():
            if key in self.running:
                (running if key in guard.underway else stopping).append(key)
            elif node.state == UpdateState.NOT_STARTED:
                node.state = UpdateState.CANCELED
                not_started.append(key)
        queued = [key for key in stopping if key in self._queued]
        for key in queued:  # its turn may be long in coming (the calls holding the slots run on): it ends now
            self.running[key].cancel()
        abandoned: list[str] = []
        if force:
            abandoned, running = running, []
            for key in list(self.running):
                task = self.running.pop(key)
                self.detached.add(task)
                task.add_done_callback(self.detached.discard)
                self.nodes[key].state = UpdateState.CANCELED
            self._wake.put_nowait("")
        await asyncio.gather(*(self._store_canceled(key, None) for key in not_started + queued),
                             *(self._store_canceled(key, STOPPED) for key in stopping if key not in queued),
                             *(self._store_canceled(key, ABANDONED) for key in abandoned))

        def changes(keys: list[str]) -> list[ResourceChange]:
            return [self.nodes[key].change for key in sorted(keys)]

        return CancelReport(changes(not_started + stopping), changes(running), changes(abandoned))

    def _store_canceled(self, key: str, message: str | None) -> Awaitable[bool]:
        """Stores a change as Canceled unless it ended already; ``message`` says why (none: it never started,
        and its data is not written again)."""
        self.unended.discard(key)
        node = self.nodes[key]
        data = None
        if message is not None:
            node.data.message = message
            data = node.data.to_json()
        return self.writer.set_state(UpdateStateWrite(self.command_id, node.change.ksuid, node.change.operation,
                                                      UpdateState.CANCELED, data=data,
                                                      start_ts=self.steps.take_start(key)))
