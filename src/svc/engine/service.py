"""The command service: everything the HTTP API asks of the engine, and what it answers.

The API parses and authenticates requests, calls one of these methods and renders what it returns
(stored records, a changeset, plain results) as wire objects (``svc.api.command_views``); it never
reaches past this protocol. Refusals are ``svc.engine.errors.EngineError``; a lost datastore is
``svc.datastore.DatastoreUnavailable`` (HTTP 503); a background job this agent does not run is
``JobNotRunning``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from svc.engine.planner.changeset import Changeset, ResourceChange
from svc.model.forma import Forma
from svc.model.records import CommandRecord, ResourceUpdateRecord


@dataclass(frozen=True)
class Caller:
    """Who sent the request: the CLI's persistent ``Client-ID`` and the authenticated user; ``source`` is
    ``user`` for requests, or the background job (``stack-expirer``, ``auto-reconciler``) acting itself."""

    client_id: str
    subject: str | None = None
    source: str = "user"


@dataclass(frozen=True)
class ApplyRequest:
    """``expected_plan``: the fingerprint (``planner.fingerprint``) of the plan the caller saw; planning anything
    else now is refused (``PlanChanged``) and changes nothing. ``seal_secrets``: a simulation also answers the forma
    with its secrets sealed (``sealed_formas``), for a saved plan; sealed secrets in ``forma`` are opened, unless
    ``sealed`` says it holds none."""

    forma: Forma
    mode: Literal["reconcile", "patch"]
    simulate: bool = False
    force: bool = False
    expected_plan: Mapping[str, str] | None = None
    seal_secrets: bool = False
    sealed: bool = True  # whether ``forma`` may hold sealed secrets (the API knows from the upload's text)


@dataclass(frozen=True)
class DestroyRequest:
    """Destroy the resources of ``forma``, or the managed resources matching ``query``."""

    forma: Forma | None = None
    query: str | None = None
    simulate: bool = False
    on_dependents: Literal["abort", "cascade"] = "abort"
    expected_plan: Mapping[str, str] | None = None  # as for apply
    seal_secrets: bool = False  # as for apply; the destroy itself reads no property, so sealed ones stay sealed


@dataclass(frozen=True)
class Submission:
    """What an apply or destroy did. ``changeset``: the plan (``has_changes`` false when nothing needs to
    change; ``absorbed``: the stacks whose drift a no-op reconcile takes in as their new baseline);
    ``command_id``: the stored command, "" for a simulation or a no-op that stored nothing (every id a
    client is given can be looked up). ``shown``: the resource changes as they may be shown, secrets hashed
    (``command_records.shown_change``, made once for the plan and the stored command). A simulation also answers
    its ``fingerprint`` (what a later submission of the same plan expects) and, when asked, ``sealed_forma``."""

    command_id: str
    changeset: Changeset
    shown: tuple[ResourceChange, ...] = ()
    fingerprint: Mapping[str, str] | None = None
    sealed_forma: dict[str, Any] | None = None

    @property
    def changes_required(self) -> bool:
        return self.changeset.has_changes


@dataclass(frozen=True)
class StoredCommand:
    """A command as stored, with its resource updates; ``summary``: the updates were read without their
    documents (``Datastore.get_resource_update_summaries``). ``updates`` may be read as they are iterated
    (``queries.StoredUpdates``): iterate them on a worker thread. ``update_counts``: how many of all its updates
    are in each state (read for the summary of a command that has ended)."""

    record: CommandRecord
    updates: Iterable[ResourceUpdateRecord]
    summary: bool = False
    progress: bool = False  # a summary whose updates were read with their progress (``Datastore``'s data)
    update_counts: Mapping[str, int] | None = None


@dataclass(frozen=True)
class CanceledUpdate:
    """One resource update a cancel reached: ``state`` Canceled (it changed nothing, or ``forced``: a forced
    cancel abandoned its plugin call) or InProgress (in a plugin call, left to finish)."""

    command_id: str
    ksuid: str
    resource_type: str
    resource_label: str
    stack: str
    state: Literal["Canceled", "InProgress"]
    forced: bool = False


@dataclass(frozen=True)
class CancelOutcome:
    command_ids: list[str]
    updates: list[CanceledUpdate]
    forced: bool


class JobNotRunning(LookupError):
    """The agent runs no such background job (an engine built without it, as in tests)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"this agent runs no {name} job")
        self.name = name


class JobReport(Protocol):
    """What a background job's run did, as the ``/admin`` endpoints answer it."""

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class PackageRequest:
    """One ``{name, version?}`` of a request: a distribution name, and the version wanted (None: the newest)."""

    name: str
    version: str | None = None

    def requirement(self) -> str:
        return f"{self.name}=={self.version}" if self.version else self.name


@dataclass(frozen=True)
class PluginOperation:
    name: str
    action: str  # install | remove | update | noop
    version: str | None = None
    namespaces: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"name": self.name, "type": "resource", "action": self.action}
        if self.version:
            shown["version"] = self.version
        if self.namespaces:
            shown["namespaces"] = list(self.namespaces)
        return shown


@dataclass
class PluginOperations:
    """The reference's ``InstallPluginsResponse``: no restart is ever required here."""

    operations: list[PluginOperation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"operations": [operation.to_json() for operation in self.operations],
                                 "requiresRestart": False}
        if self.warnings:
            shown["warnings"] = self.warnings
        return shown


class CommandService(Protocol):
    async def apply(self, request: ApplyRequest, caller: Caller) -> Submission:
        """Plans (and unless simulating, stores and starts) an apply."""

    async def destroy(self, request: DestroyRequest, caller: Caller) -> Submission: ...

    async def command(self, command_id: str, *, summary: bool = False,
                      updated_since: datetime | None = None, progress: bool = False) -> StoredCommand | None:
        """``summary``: the updates without their documents; with ``updated_since``, only the updates whose
        state was written since then; with ``progress``, each with its progress (attempts, message, duration)."""

    async def await_end(self, command_id: str, timeout: float) -> None:
        """Returns once the command's execution in this agent has ended, or after ``timeout`` seconds."""

    async def commands(self, query: str, caller: Caller, *, scope: Literal["client", "agent"],
                       max_results: int, counts: bool = False) -> list[StoredCommand]:
        """Newest first; only user commands (not sync/discovery). Empty query + client scope = the
        caller's latest command. ``counts``: no updates read, each command's counted by state instead."""

    async def cancel(self, query: str, caller: Caller, *, force: bool) -> CancelOutcome | None:
        """``None`` when nothing was in progress to cancel."""

    async def run_discovery(self) -> JobReport:
        """Runs discovery now (after the run in progress, if any); ``JobNotRunning`` without the job."""

    async def run_synchronization(self) -> JobReport:
        """Runs synchronization now: the sync command's id (None when nothing changed) and what it changed."""

    async def run_ttl_check(self) -> JobReport:
        """Runs the stack expirer's sweep now."""

    async def run_reap(self) -> JobReport:
        """Runs a target-reaper tick now: the targets it reaped and those pending."""

    async def reconcile_stack(self, stack: str, caller: Caller) -> str | None:
        """Auto-reconciles ``stack`` now: the command's id, None when nothing drifted."""

    def plugin_processes(self) -> dict[str, dict[str, Any]]:
        """The plugins this agent runs, by upper-case namespace: each one's process (state, pid, …)."""

    def plugin_rates(self) -> dict[str, float]:
        """The rate limit each plugin's calls are held to (requests per second), by upper-case namespace."""

    async def install_plugins(self, packages: list[PackageRequest], index_url: str | None,
                              find_links: list[str]) -> PluginOperations:
        """pip-installs each plugin distribution from the package source (``index_url``/``find_links``, else the
        one svc came from) and starts its plugins (``plugin_manager``)."""

    async def update_plugins(self, packages: list[PackageRequest], index_url: str | None,
                             find_links: list[str]) -> PluginOperations:
        """Updates the named plugin distributions (none: all) and restarts their plugins on the new code."""

    async def uninstall_plugins(self, names: list[str]) -> PluginOperations:
        """Stops the named plugins and pip-uninstalls their distributions."""
