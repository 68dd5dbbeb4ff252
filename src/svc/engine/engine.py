"""The engine: the command service the agent serves, assembled from one part per job, and its lifetime.

Admission (``admission``) plans, checks, stores and starts commands; ``runs`` holds the ones executing
(``executor.CommandRun``); ``queries`` reads them back, ``cancel`` stops them, ``recovery`` resumes
those a previous agent left unfinished. ``start()`` starts the plugins, resumes, then starts the
background jobs (``jobs``: synchronization, discovery, the stack expirer, auto-reconcile, the target
reaper).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from svc.datastore.interface import Datastore
from svc.engine import cancel, queries, sync
from svc.engine.admission import Admission, Provenance
from svc.engine.background import PeriodicJob
from svc.engine.gateway import PluginGateway
from svc.engine.planner import Catalog
from svc.engine.plugin_manager import PluginManager
from svc.engine.reconciler import AutoReconciler
from svc.engine.recovery import recover
from svc.engine.runs import Runs
from svc.engine.sealing import Sealer
from svc.engine.service import (
    ApplyRequest,
    Caller,
    CancelOutcome,
    DestroyRequest,
    JobNotRunning,
    PackageRequest,
    PluginOperations,
    StoredCommand,
    Submission,
)
from svc.engine.stored_secrets import hash_stored_secrets
from svc.engine.writer import BatchWriter
from svc.model.states import TERMINAL_COMMAND_STATES

log = logging.getLogger("svc.engine")

if TYPE_CHECKING:
    from svc.engine.discovery import DiscoveryReport
    from svc.engine.expiry import Sweep
    from svc.engine.reaper import ReapReport


@dataclass
class EngineSettings:
    agent_id: str = ""
    agent_version: str = ""


class Engine:
    """Implements ``svc.engine.service.CommandService``."""

    def __init__(self, datastore: Datastore, gateway: PluginGateway, catalog: Catalog, sealer: Sealer,
                 settings: EngineSettings | None = None) -> None:
        self.store = datastore
        self.gateway = gateway
        self.catalog = catalog
        self.sealer = sealer
        self.settings = settings or EngineSettings()
        self.writer = BatchWriter(datastore)
        self.jobs: dict[str, PeriodicJob] = {}  # background work by name ("synchronization", "discovery", …)
        self.plugins: PluginManager | None = None  # plugin management; the composition root makes it
        self.runs = Runs(datastore, self.writer, gateway)
        self.writer.writes_coming = self.runs.writes_coming
        self.leading = False
        self.admission = Admission(datastore, catalog, sealer, self.runs, self.jobs,
                                   Provenance(self.settings.agent_id, self.settings.agent_version))

    # -- lifetime -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Starts the plugins and leads (an agent that is alone on its datastore)."""
        await self.start_plugins()
        await self.lead()

    async def start_plugins(self) -> None:
        """Starts the plugins: a follower keeps them ready for the moment it leads."""
        await self.gateway.start()

    async def lead(self) -> None:
        """Hashes the secrets an earlier version stored in clear (``stored_secrets``), resumes every unfinished
        command (crash recovery, or a takeover from another agent), then starts the background jobs. Only the agent
        holding the datastore's lease may call it."""
        self.leading = True
        # Before any command runs: what an earlier version stored in clear is hashed before anything reads it.
        await asyncio.to_thread(hash_stored_secrets, self.store, self.catalog)
        incomplete = await asyncio.to_thread(queries.incomplete_commands, self.store)
        for command in sorted(incomplete, key=lambda c: (c.start_ts, c.id)):
            await recover(self.store, self.sealer, self.runs, command)
        self.admission.open()  # after the resumed commands are stored as running: new ones are checked against them
        for job in self.jobs.values():
            job.start()

    async def stop_leading(self) -> None:
        """Lets the submissions being admitted finish, refuses new ones (``NotLeading``), stops the background
        jobs and the running commands where they are, and stores what they wrote: another agent resumes them."""
        if not self.leading:
            return
        self.leading = False
        await self.admission.close()
        for job in self.jobs.values():
            await job.stop()
        await self.runs.stop()
        if not await self.writer.flush(_FLUSH_SECONDS):
            log.warning("stopping with writes the datastore did not take within %gs: the agent that resumes the "
                        "commands asks the plugins what became of them", _FLUSH_SECONDS)

    async def stop(self) -> None:
        """Stops leading (a later start, here or on another agent, resumes the commands), then closes the
        plugins."""
        await self.stop_leading()
        await self.writer.close()
        await self.gateway.close()

    async def wait(self, command_id: str, timeout: float | None = None) -> StoredCommand | None:
        """Blocks until the command's execution ends (tests, benchmarks, ``--wait``)."""
        await self.runs.wait(command_id, timeout)
        return await self.command(command_id)

    async def synchronize(self) -> str | None:
        """Reads every managed resource once and stores out-of-band changes (``sync.synchronize``)."""
        return await sync.synchronize(self.store, self.gateway, self.catalog)

    # -- CommandService -----------------------------------------------------------------------------------

    async def apply(self, request: ApplyRequest, caller: Caller) -> Submission:
        return await self.admission.apply(request, caller)

    async def destroy(self, request: DestroyRequest, caller: Caller) -> Submission:
        return await self.admission.destroy(request, caller)

    async def command(self, command_id: str, *, summary: bool = False,
                      updated_since: datetime | None = None, progress: bool = False) -> StoredCommand | None:
        return await asyncio.to_thread(queries.read_command, self.store, command_id, summary=summary,
                                       updated_since=updated_since, progress=progress)

    async def await_end(self, command_id: str, timeout: float) -> None:
        if self.leading:
            await self.runs.await_end(command_id, timeout)
        else:  # another agent runs it: watch what it stores
            await _stored_end(self.store, command_id, timeout)

    async def commands(self, query: str, caller: Caller, *, scope: Literal["client", "agent"],
                       max_results: int, counts: bool = False) -> list[StoredCommand]:
        return await asyncio.to_thread(queries.list_commands, self.store, query, caller, scope=scope,
                                       max_results=max_results, counts=counts)

    async def cancel(self, query: str, caller: Caller, *, force: bool) -> CancelOutcome | None:
        return await cancel.cancel(self.store, self.runs, query, caller, force=force)

    async def run_discovery(self) -> DiscoveryReport:
        return await self._job("discovery").run_now()

    async def run_synchronization(self) -> sync.SyncReport:
        return await self._job("synchronization").run_now()

    async def run_ttl_check(self) -> Sweep:
        return await self._job("stack-expirer").run_now()

    async def run_reap(self) -> ReapReport:
        return await self._job("target-reaper").run_now()

    async def reconcile_stack(self, stack: str, caller: Caller) -> str | None:
        reconciler = self.jobs.get("auto-reconciler")
        if not isinstance(reconciler, AutoReconciler):
            raise JobNotRunning("auto-reconciler")
        return await reconciler.reconcile(stack, caller)

    def plugin_processes(self) -> dict[str, dict[str, Any]]:
        return self.gateway.processes()

    def plugin_rates(self) -> dict[str, float]:
        return self.gateway.rates()

    async def install_plugins(self, packages: list[PackageRequest], index_url: str | None,
                              find_links: list[str]) -> PluginOperations:
        return await self._plugin_manager().install(packages, index_url, find_links)

    async def update_plugins(self, packages: list[PackageRequest], index_url: str | None,
                             find_links: list[str]) -> PluginOperations:
        return await self._plugin_manager().update(packages, index_url, find_links)

    async def uninstall_plugins(self, names: list[str]) -> PluginOperations:
        return await self._plugin_manager().uninstall(names)

    def _plugin_manager(self) -> PluginManager:
        if self.plugins is None:
            raise JobNotRunning("plugin manager")
        return self.plugins

    def _job(self, name: str) -> PeriodicJob:
        job = self.jobs.get(name)
        if job is None:
            raise JobNotRunning(name)
        return job


_STORED_END_POLL_SECONDS = 0.25
# A stopping leader waits this long for its last writes (a datastore outage must not hold a stop forever).
_FLUSH_SECONDS = 5.0


async def _stored_end(store: Datastore, command_id: str, timeout: float) -> None:
    """Until the stored command is in a final state, or ``timeout`` seconds passed (a follower watching a command
    the leader runs)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        command = await asyncio.to_thread(store.get_command, command_id)
        if command is None or command.state in TERMINAL_COMMAND_STATES:
            return
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return
        await asyncio.sleep(min(_STORED_END_POLL_SECONDS, remaining))
