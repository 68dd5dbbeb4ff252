"""The commands this agent is executing: one ``executor.CommandRun`` task each.

Admission and recovery launch runs here; ``wait``/``await_end`` (``--wait``, tests) and ``cancel`` find
them by command id; ``finish`` stores a command's end; ``stop`` leaves every run where it is (the next
start resumes it). Changes a forced cancel abandoned during their plugin call go on as ``detached`` tasks
until the call completes.
"""

from __future__ import annotations

import asyncio

from svc.collector import settle, since_admission
from svc.datastore.interface import Datastore
from svc.datastore.outage import patiently
from svc.engine.change_execution import Steps
from svc.engine.command_records import utcnow
from svc.engine.executor import CommandRun, Node
from svc.engine.gateway import PluginGateway
from svc.engine.graph import Graph
from svc.engine.writer import BatchWriter
from svc.model.records import CommandRecord
from svc.model.states import TERMINAL_COMMAND_STATES, CommandState
from svc.telemetry import traced_command

# How long the agent must have run no command before the collector walks what it holds (``_settle_when_idle``).
SETTLE_AFTER_IDLE = 1.0


class Runs:
    def __init__(self, store: Datastore, writer: BatchWriter, gateway: PluginGateway) -> None:
        self.store = store
        self.writer = writer
        self.gateway = gateway
        self.detached: set[asyncio.Task[None]] = set()
        self._runs: dict[str, CommandRun] = {}
        self._tasks: dict[str, asyncio.Task[str]] = {}
        self._settling: asyncio.TimerHandle | None = None  # settle() when the agent is idle (_settle_when_idle)
        self._deleted_targets: dict[str, list[str]] = {}  # per run: the targets its command deletes once empty
        self._ended_at = 0.0  # loop time of the last run's end

    def launch(self, command_id: str, graph: Graph, nodes: dict[str, Node], command: CommandRecord | None = None,
               *, recovered: bool = False) -> CommandRun:
        """Starts executing the command as one task; ``command``: its stored record, None when resuming one
        whose record says it never started."""
        steps = Steps(command_id, self.store, self.writer, self.gateway, recovered=recovered)
        run = CommandRun(command_id, graph, nodes, self.store, steps, self.gateway, self.finish, self.writer,
                         in_progress_stored=command is not None and command.state == CommandState.IN_PROGRESS,
                         detached=self.detached)
        self._runs[command_id] = run
        if command is not None:
            self._deleted_targets[command_id] = _deleted_targets(command)
        task = asyncio.create_task(traced_command(run.run(), command_id, command), name=f"command {command_id}")
        self._tasks[command_id] = task

        def forget(_: asyncio.Task[str]) -> None:
            self._runs.pop(command_id, None)
            self._deleted_targets.pop(command_id, None)
            self._tasks.pop(command_id, None)
            run.dispatched.set()  # a task canceled before it ran never set it
            self._settle_when_idle()  # its frozen objects are garbage now

        task.add_done_callback(forget)
        return run

    def _settle_when_idle(self) -> None:
        """Called as a run ends: ``svc.collector.settle`` once no command has run and no submission been admitted
        here for ``SETTLE_AFTER_IDLE`` seconds, off the path of a command's last answer and of the next submission."""
        loop = asyncio.get_running_loop()
        self._ended_at = loop.time()
        if self._settling is not None:
            return

        def when_idle() -> None:
            quiet = 0.0 if self._runs else min(loop.time() - self._ended_at, since_admission())
            if quiet < SETTLE_AFTER_IDLE:
                self._settling = loop.call_later(SETTLE_AFTER_IDLE - quiet, when_idle)
            else:
                self._settling = None
                settle()

        self._settling = loop.call_later(SETTLE_AFTER_IDLE, when_idle)

    def run(self, command_id: str) -> CommandRun | None:
        return self._runs.get(command_id)

    def task(self, command_id: str) -> asyncio.Task[str] | None:
        return self._tasks.get(command_id)

    def writes_coming(self) -> int:
        """How many running changes have yet to queue their ends for writing (``BatchWriter.writes_coming``)."""
        return sum(len(run.unended) for run in self._runs.values())

    def commands_using(self, namespace: str) -> list[str]:
        """The commands running here that change a resource of plugin ``namespace`` (any spelling)."""
        wanted = namespace.upper()
        return sorted(command_id for command_id, run in self._runs.items()
                      if any((node.change.namespace or node.change.type.split("::", 1)[0]).upper() == wanted
                             for node in run.nodes.values()))

    async def wait(self, command_id: str, timeout: float | None = None) -> None:
        """Until the command's run ends; ``TimeoutError`` after ``timeout`` seconds."""
        task = self._tasks.get(command_id)
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), timeout)

    async def await_end(self, command_id: str, timeout: float) -> None:
        """Until the command's run ends or ``timeout`` seconds passed, whichever comes first."""
        task = self._tasks.get(command_id)
        if task is not None and timeout > 0:
            await asyncio.wait({task}, timeout=timeout)

    async def finish(self, command_id: str, state: str, delete_stacks: set[str]) -> None:
        """Ends a command: targets and stacks its deletes emptied go, then the command's final state, in one
        transaction. ``delete_stacks`` are the stacks of its delete changes (known in memory: reading the updates
        back decoded every change's document again); its deleted targets are known from its record when it ran
        here, else read."""
        store = self.store
        targets = self._deleted_targets.get(command_id)

        def work() -> None:
            deleted = targets
            if deleted is None:
                command = store.get_command(command_id)
                deleted = _deleted_targets(command) if command is not None else []
            store.end_command(command_id, state if state in TERMINAL_COMMAND_STATES else None, end_ts=utcnow(),
                              emptied_targets=deleted, emptied_stacks=sorted(delete_stacks))

        await patiently(work)  # one transaction: after an outage it runs again whole

    async def stop(self) -> None:
        """Cancels every run where it is (a later start resumes it) and every detached change."""
        tasks = [*self._tasks.values(), *self.detached]
        for task in tasks:
            task.cancel()
        if self._settling is not None:
            self._settling.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _deleted_targets(command: CommandRecord) -> list[str]:
    """The targets ``command`` deletes (once no resource is left on them)."""
    return [target["label"] for target in command.data.get("targets", []) if target["operation"] == "delete"]
