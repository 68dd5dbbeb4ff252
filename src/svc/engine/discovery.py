"""One discovery run: list the cloud for resources svc does not know yet and store them as unmanaged.

For every discoverable target whose plugin is enabled, every type of that plugin whose schema says
``discoverable`` (and, when set, in the plugin's ``resourceTypesToDiscover``) is listed page by page.
Types without a parent are listed first; a child type is then listed once per parent resource of its
parent type on that target (stored before, or found by this run), with ``{listParameter: parent's
value}``, round after round until a round finds no new parent, so nesting of any depth is followed.

A native id not yet in the inventory for its type on that target (managed or not) is read (the same native
id on another target is another resource, so it is discovered too); unless a discovery filter
excludes it, it is stored in ``$unmanaged`` (``managed=False``) under a label from the plugin's label
rules, unique per type there. A child carries ``{"$ref": <parent>, "$value": …}`` at its list parameter,
as the reference does, so dependents order and cascade after their parents. Writes are batched, and the
run is recorded as one ``discovery`` command only when it stored something.

Plugin calls go through the plugin gateway: they take the namespace's rate-limit tokens and in-flight slots
like user commands do (with a bounded number waiting, so a user command never queues behind a whole
discovery), and recoverable failures are retried per the plugin's retry policy. A type the plugin may not list
(access denied, bad credentials) is skipped for the rest of the run with one warning per target.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from svc.config.model import AgentConfig
from svc.datastore.interface import Datastore
from svc.datastore.outage import patiently
from svc.datastore.query import Pattern, Query, TextFilter
from svc.engine.background import PeriodicJob
from svc.engine.command_records import utcnow
from svc.engine.discovery_filters import base_label, excluded, unique_label
from svc.engine.discovery_settings import PluginDiscovery, load_settings
from svc.engine.gateway import PluginAccess, PluginGateway
from svc.engine.planner import Catalog
from svc.engine.planner.changeset import compact_schema
from svc.engine.planner.inventory import UNMANAGED_STACK
from svc.engine.target_health import Observations, ReapSettings
from svc.ids import new_id
from svc.model import values
from svc.model.native_ids import NativeKey, native_key
from svc.model.opaque import OpaqueFields, opaque_fields
from svc.model.records import CommandRecord, ResourceVersion, ResourceWrite, TargetFilter, TargetRecord, every_item
from svc.model.schema import Schema
from svc.model.states import CommandState
from svc.model.wire import DiscoveredResource, DiscoveryReportView
from svc.plugins.runner import PluginCallError
from svc.plugins.sdk import ErrorCode, ReadResult

log = logging.getLogger("svc.engine.discovery")

PAGE_SIZE = 100
WRITE_BATCH = 500
# Reads of one namespace waiting on its limits at once: user commands share those limits (first come, first
# served), so a large discovery must not queue thousands of reads ahead of them.
READ_AHEAD = 128
FIRST_DELAY = 10.0  # seconds after start: the reference's first discovery
_MAX_ROUNDS = 64  # child rounds per target: deeper than any real hierarchy, bounded against cycles
_PAGE = 1000
DENIED: frozenset[ErrorCode] = frozenset({ErrorCode.ACCESS_DENIED, ErrorCode.UNAUTHORIZED_TAGGING_OPERATION,
                                          ErrorCode.INVALID_CREDENTIALS})


@dataclass
class DiscoveryReport:
    """What one run did (the answer of ``POST /admin/discover``)."""

    command_id: str | None = None
    targets: int = 0
    listed: int = 0
    discovered: int = 0
    filtered: int = 0
    denied: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    resources: list[DiscoveredResource] = field(default_factory=list)  # the new ones

    def to_json(self) -> dict[str, Any]:
        return DiscoveryReportView(CommandId=self.command_id, Targets=self.targets, Listed=self.listed,
                                   Discovered=self.discovered, Filtered=self.filtered, Denied=self.denied,
                                   Errors=self.errors, Resources=self.resources).to_json(nulls=True)


def discovery_job(store: Datastore, gateway: PluginGateway, catalog: Catalog, config: AgentConfig,
                  settings: Mapping[str, PluginDiscovery] | None = None,
                  health: ReapSettings | None = None) -> PeriodicJob:
    """The periodic job (``agent.discovery``); reads each plugin's manifest now (unless ``settings``, from
    ``load_settings``, are given), so a bad filter stops the agent at start."""
    settings = load_settings(config) if settings is None else settings
    discovery = config.discovery
    return PeriodicJob("discovery", lambda: discover(store, gateway, catalog, settings, health),
                       enabled=discovery.enabled, interval=discovery.interval.total_seconds(), first_delay=FIRST_DELAY)


async def discover(store: Datastore, gateway: PluginGateway, catalog: Catalog,
                   settings: Mapping[str, PluginDiscovery], health: ReapSettings | None = None) -> DiscoveryReport:
    """One run; what its calls said of each target's reach is recorded (``target_health``)."""
    return await _Run(store, gateway, catalog, settings, health).run()


@dataclass
class _Scan:
    """One target and its plugin."""

    target: TargetRecord
    plugin: PluginAccess
    settings: PluginDiscovery
    types: dict[str, Schema]
    ahead: asyncio.Semaphore  # reads of this namespace queued on its limits, at most
    documents: dict[str, dict[str, Any]] = field(init=False)  # type → stored document (its schema)
    secrets: dict[str, OpaqueFields] = field(init=False)  # type → opaque fields

    def __post_init__(self) -> None:
        # Once per type, not per resource: thousands of resources share these.
        self.documents = {name: {"Schema": compact_schema(schema)} for name, schema in self.types.items()}
        self.secrets = {name: opaque_fields(schema) for name, schema in self.types.items()}


class _Run:
    def __init__(self, store: Datastore, gateway: PluginGateway, catalog: Catalog,
                 settings: Mapping[str, PluginDiscovery], health: ReapSettings | None = None) -> None:
        self.store = store
        self.health = Observations(health or ReapSettings())
        self.gateway = gateway
        self.catalog = catalog
        self.settings = settings
        self.report = DiscoveryReport()
        # (target, type, native id): in the inventory, or seen by this run. The same native id on another target
        # is another resource, still to be discovered.
        self.known: set[NativeKey] = set()
        self.labels: dict[str, set[str]] = {}  # type → labels taken in $unmanaged
        self.pending: list[ResourceWrite] = []
        self.skipped: set[tuple[str, str]] = set()  # (type, target) whose listing failed for good this run
        self.warned: set[tuple[str, str, str]] = set()
        self._writing = asyncio.Lock()
        self._ahead: dict[str, asyncio.Semaphore] = {}

    async def run(self) -> DiscoveryReport:
        targets = await asyncio.to_thread(self._load)
        scans = [scan for target in targets if (scan := self._scan(target)) is not None]
        self.report.targets = len(scans)
        try:
            await asyncio.gather(*(self._target(scan) for scan in scans))
            await self._flush()
            await self.health.record(self.store)
        except BaseException as error:
            if (command_id := self.report.command_id) is not None:
                def end() -> bool:
                    return self.store.set_command_state(command_id, CommandState.FAILED, end_ts=utcnow())

                # Once the datastore can take it; the agent stopping tries once (a restart fails what is left).
                await (asyncio.to_thread(end) if isinstance(error, asyncio.CancelledError) else patiently(end))
            raise
        if (command_id := self.report.command_id) is not None:
            if self.report.discovered:
                await patiently(lambda: self.store.set_command_state(command_id, CommandState.SUCCESS,
                                                                     end_ts=utcnow()))
            else:  # every write found its resource stored meanwhile: nothing to record
                await patiently(lambda: self.store.delete_command(command_id))
                self.report.command_id = None
        if self.report.discovered or self.report.denied or self.report.errors:
            log.info("discovery: %d new resource(s) stored as unmanaged, %d filtered out, %d id(s) listed on "
                     "%d target(s)", self.report.discovered, self.report.filtered, self.report.listed,
                     self.report.targets)
        return self.report

    # -- setup --------------------------------------------------------------------------------------------

    def _load(self) -> list[TargetRecord]:
        targets = every_item(lambda c: self.store.list_targets(TargetFilter(discoverable=True), cursor=c, limit=_PAGE))
        for summary in every_item(lambda c: self.store.list_resource_summaries(cursor=c, limit=_PAGE)):
            if summary.native_id is not None:
                self.known.add(native_key(summary.target, summary.type, summary.native_id))
            if summary.stack == UNMANAGED_STACK:
                self.labels.setdefault(summary.type, set()).add(summary.label)
        return [t for t in targets if t.health_state != "reaped"]

    def _scan(self, target: TargetRecord) -> _Scan | None:
        namespace = target.namespace.upper()
        plugin = self.gateway.find(namespace)
        if plugin is None:
            return None
        settings = self.settings.get(namespace) or PluginDiscovery(target.namespace)
        types = {name: schema for name, schema in self.catalog.types.items()
                 if name.split("::", 1)[0].upper() == namespace and schema.discoverable and settings.wants(name)}
        ahead = self._ahead.setdefault(namespace, asyncio.Semaphore(READ_AHEAD))
        return _Scan(target, plugin, settings, types, ahead)

    # -- one target ---------------------------------------------------------------------------------------

    async def _target(self, scan: _Scan) -> None:
        children = {name: schema for name, schema in scan.types.items() if schema.parent and schema.parent_mappings}
        roots = [name for name in scan.types if name not in children]
        await asyncio.gather(*(self._list_type(scan, name, {}, None) for name in roots))
        await self._flush()
        used: set[tuple[str, str]] = set()  # (child type, parent ksuid) already listed
        for _ in range(_MAX_ROUNDS):
            work = []
            for name, schema in children.items():
                if (name, scan.target.label) in self.skipped:
                    continue
                parents = await asyncio.to_thread(self._parents, schema.parent, scan.target.label)
                for parent in parents:
                    if (name, parent.ksuid) in used:
                        continue
                    used.add((name, parent.ksuid))
                    filters = _list_filters(schema, parent)
                    if filters is not None:
                        work.append(self._list_type(scan, name, filters, parent))
            if not work:
                return
            await asyncio.gather(*work)
            await self._flush()

    def _parents(self, resource_type: str, target: str) -> list[ResourceVersion]:
        query = Query("resources", (TextFilter("type", (Pattern.literal(resource_type),)),
                                    TextFilter("target", (Pattern.literal(target),))))
        return [r for r in every_item(lambda c: self.store.list_resources(query, cursor=c, limit=_PAGE))
                if r.type == resource_type]

    async def _list_type(self, scan: _Scan, resource_type: str, filters: dict[str, str],
                         parent: ResourceVersion | None) -> None:
        """Lists one type (under one parent), reading each page's new ids while the next page is listed."""
        tasks: list[asyncio.Task[None]] = []
        previous: asyncio.Task[None] | None = None
        try:
            async for native_ids in self._pages(scan, resource_type, filters):
                self.report.listed += len(native_ids)
                keys = {n: native_key(scan.target.label, resource_type, n) for n in native_ids}
                fresh = [n for n, key in keys.items() if key not in self.known]
                self.known.update(keys[n] for n in fresh)
                if fresh:
                    previous = asyncio.create_task(self._page(scan, resource_type, fresh, parent, previous))
                    tasks.append(previous)
        except PluginCallError as error:
            self.health.saw(scan.target.label, error.code)
            self._list_failed(scan, resource_type, error)
        except BaseException:  # cancelled (the agent stops) or broken: the pages' reads go too
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        await asyncio.gather(*tasks)

    async def _pages(self, scan: _Scan, resource_type: str, filters: dict[str, str]) -> AsyncIterator[list[str]]:
        token: str | None = None
        seen: set[str] = set()
        while (resource_type, scan.target.label) not in self.skipped:
            page = await scan.plugin.list(resource_type, scan.target.config, PAGE_SIZE, token, filters)
            self.health.saw(scan.target.label, None)
            yield page.native_ids
            token = page.next_page_token
            if not token or token in seen:  # a plugin repeating a token would page forever
                return
            seen.add(token)

    async def _page(self, scan: _Scan, resource_type: str, native_ids: list[str], parent: ResourceVersion | None,
                    previous: asyncio.Task[None] | None) -> None:
        results = await asyncio.gather(*(self._read(scan, resource_type, n) for n in native_ids))
        if previous is not None:
            await previous  # labels are handed out in listing order, so a run's labels are reproducible
        for native_id, result in zip(native_ids, results, strict=True):
            self._take(scan, resource_type, native_id, result, parent)
        if len(self.pending) >= WRITE_BATCH:
            await self._flush()

    async def _read(self, scan: _Scan, resource_type: str, native_id: str) -> ReadResult:
        async with scan.ahead, scan.plugin.dispatch():
            result = await scan.plugin.read(resource_type, scan.target.config, native_id, None, not_found_ok=True)
        self.health.saw(scan.target.label, result.error_code)
        return result

    # -- one resource -------------------------------------------------------------------------------------

    def _take(self, scan: _Scan, resource_type: str, native_id: str, result: ReadResult,
              parent: ResourceVersion | None) -> None:
        if result.error_code is ErrorCode.NOT_FOUND:
            return  # gone between the listing and the read
        if result.properties is None:
            self._warn(scan, resource_type, "read", f"{result.error_code}: {result.message}")
            return
        read_back = dict(result.properties)
        if excluded(scan.settings.filters, resource_type, read_back):
            self.report.filtered += 1
            return
        schema = scan.types[resource_type]
        fields = set(schema.fields)
        properties = {k: v for k, v in read_back.items() if not fields or k in fields}
        read_only = {k: v for k, v in read_back.items() if fields and k not in fields}
        if parent is not None:
            for mapping in schema.parent_mappings:
                value = _parent_value(parent, mapping.parent_property)
                current = read_back.get(mapping.child_property)
                if value is not None and (current is None or current == value):
                    properties[mapping.child_property] = {
                        "$ref": values.resource_uri(parent.ksuid, mapping.parent_property), "$value": value}
                    read_only.pop(mapping.child_property, None)
        label = unique_label(base_label(scan.settings.labels, resource_type, read_back, native_id),
                             self.labels.setdefault(resource_type, set()))
        self.pending.append(ResourceWrite(
            type=resource_type, label=label, stack=UNMANAGED_STACK, target=scan.target.label,
            properties=values.hash_secrets(properties, scan.secrets[resource_type]), managed=False,
            native_id=native_id, ksuid=new_id(), read_only_properties=read_only,
            document=scan.documents[resource_type]))

    async def _flush(self) -> None:
        async with self._writing:
            batch, self.pending = self.pending, []
            if not batch:
                return
            # What the plugins listed is kept through an outage (``patiently``); a retried write stores the same
            # ksuids, so it changes nothing twice.
            if self.report.command_id is None:
                command_id = new_id()
                await patiently(lambda: self.store.put_command(CommandRecord(
                    id=command_id, command="discovery", state=CommandState.IN_PROGRESS, start_ts=utcnow(),
                    source="discovery", client_id="discovery")))
                self.report.command_id = command_id
            stored_under = self.report.command_id
            outcomes = await patiently(lambda: self.store.store_resources(batch, command_id=stored_under))
            found = [write for write, outcome in zip(batch, outcomes, strict=True) if outcome.changed]
            self.report.discovered += len(found)
            self.report.resources += [DiscoveredResource(Stack=write.stack, Type=write.type, Label=write.label,
                                                         Target=write.target, NativeID=write.native_id)
                                      for write in found]

    # -- failures -----------------------------------------------------------------------------------------

    def _list_failed(self, scan: _Scan, resource_type: str, error: PluginCallError) -> None:
        key = (resource_type, scan.target.label)
        self.skipped.add(key)
        what = f"{resource_type} on target {scan.target.label!r}"
        if key + ("list",) in self.warned:
            return
        self.warned.add(key + ("list",))
        if error.code in DENIED:
            self.report.denied.append(what)
            log.warning("discovery: %s listing %s; skipping it this run (%s)", error.code, what, error.message)
        else:
            self.report.errors.append(f"{what}: {error.code}: {error.message}")
            log.warning("discovery: listing %s failed (%s: %s); skipping it this run", what, error.code,
                        error.message)

    def _warn(self, scan: _Scan, resource_type: str, operation: str, message: str) -> None:
        key = (resource_type, scan.target.label, operation)
        if key in self.warned:
            return
        self.warned.add(key)
        what = f"{resource_type} on target {scan.target.label!r}"
        self.report.errors.append(f"{what}: {operation}: {message}")
        log.warning("discovery: %s of %s failed (%s); leaving those resources for the next run", operation, what,
                    message)


def _parent_value(parent: ResourceVersion, name: str) -> Any:
    for document in (parent.read_only_properties, parent.properties):
        if name in document:
            value = values.plain(document[name])
            if value is not None:
                return value
    return None


def _list_filters(schema: Schema, parent: ResourceVersion) -> dict[str, str] | None:
    """The List parameters that select ``parent``'s children; None when the parent lacks a value."""
    filters: dict[str, str] = {}
    for mapping in schema.parent_mappings:
        value = _parent_value(parent, mapping.parent_property)
        if value is None or isinstance(value, (dict, list)):
            return None
        filters[mapping.child_property] = value if isinstance(value, str) else str(value)
    return filters
