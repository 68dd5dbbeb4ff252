"""One synchronization pass: read every resource the agent knows and store what changed outside svc.

* A resource whose read differs from its stored state gets a new version, written by a ``sync`` command
  (so the reconcile drift gate sees it): the read is merged into the user's structure (``observed.merge``:
  references and templates keep their envelopes with the value read), write-only fields are not taken
  from the read (a provider never returns them faithfully), secrets are stored hashed, and an unchanged
  secret hashes to what is stored, so it never makes a new version by itself.
* A resource the provider no longer has is tombstoned.
* Every write is conditional on the version the read was based on (``ResourceWrite.if_version``): a
  resource rewritten meanwhile (updated or replaced by a command) keeps the newer state; the next pass
  looks at it again. Stacks with an apply or destroy in flight (a user's, the stack expirer's, the
  auto-reconciler's) are skipped, both when the pass starts and when each batch is written (that command
  owns them).
* Discovered (unmanaged) resources are synchronized too, and the discovery filters apply to them: one that
  a filter now matches (tagged meanwhile, or a filter added) is evicted, forgotten as discovery would never
  have stored it. A filter without conditions never evicts (engine.md §6): it keeps whole types out of
  discovery, not rows a user may already have looked at.

Reads go through the plugin gateway on a fixed pool of workers, each taking one of its plugin's rate-limit
tokens and in-flight slots like any command's change; unchanged resources cost no write at all; changes are
written in batches. A pass that stored no version leaves no command behind. The timer and
``POST /admin/synchronize`` call this through ``engine.jobs["synchronization"]``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from svc.datastore.interface import Datastore
from svc.datastore.outage import patiently
from svc.engine.discovery_filters import MatchFilter, excluded
from svc.engine.discovery_settings import PluginDiscovery
from svc.engine.gateway import PluginGateway
from svc.engine.observed import SyncCommand, observed_write
from svc.engine.planner import Catalog
from svc.engine.target_health import Observations, ReapSettings
from svc.model import values
from svc.model.opaque import opaque_fields
from svc.model.records import ResourceVersion, ResourceWrite, TargetRecord, every_item
from svc.model.schema import Schema
from svc.model.schema_cache import schema_of
from svc.model.wire import ChangedResource, SyncReportView
from svc.plugins.sdk import ErrorCode

Json = dict[str, Any]

log = logging.getLogger("svc.engine.sync")
WORKERS = 64  # reads in flight at most (each also takes one of its plugin's in-flight slots)
BATCH = 500  # writes per flush
_PAGE = 1000  # rows per datastore page
_NO_SCHEMA = Schema(identifier="")


def busy_stacks(store: Datastore) -> set[str]:
    """Stacks of the apply and destroy commands still in progress, whoever started them (a user, the stack
    expirer, the auto-reconciler): such a command owns its stacks. Background reads (sync, discovery) do not."""
    busy: set[str] = set()
    for command in every_item(lambda c: store.list_incomplete_commands(cursor=c, limit=_PAGE)):
        if command.command in ("apply", "destroy"):
            busy |= store.stacks_updated(command.id)
    return busy


@dataclass
class Tally:
    read: int = 0
    versions: int = 0
    deleted: int = 0
    evicted: int = 0  # unmanaged resources a discovery filter now matches
    skipped: int = 0  # not read: busy stack, no plugin serves it, or the read failed
    failures: dict[tuple[str, str], int] = field(default_factory=dict)  # (type, error) → count
    changed: list[ChangedResource] = field(default_factory=list)  # what the pass stored

    def record(self, resource: ResourceVersion, operation: str) -> None:
        self.changed.append(ChangedResource(Stack=resource.stack, Type=resource.type, Label=resource.label,
                                            Operation=operation))


@dataclass
class SyncReport:
    """What one pass stored (the answer of ``POST /admin/synchronize``): its command's id (None: nothing
    changed) and each resource whose stored state it changed (``update``, ``delete``, or ``evict`` for an
    unmanaged one a discovery filter now excludes)."""

    command_id: str | None
    changed: list[ChangedResource]

    def to_json(self) -> Json:
        # CommandId stays in the answer as null when nothing changed (what clients test for).
        return SyncReportView(CommandId=self.command_id, Changed=self.changed).to_json(nulls=True)


class SyncPass:
    """One pass over a snapshot of the resources: ``one`` reads a resource and queues what to store,
    ``flush`` stores what is queued (also every ``BATCH``), ``finish`` closes the pass's command."""

    def __init__(self, store: Datastore, gateway: PluginGateway, catalog: Catalog, targets: dict[str, TargetRecord],
                 busy: set[str], discovery: Mapping[str, PluginDiscovery] | None = None,
                 health: ReapSettings | None = None) -> None:
        self.store = store
        self.health = Observations(health or ReapSettings())
        self.gateway = gateway
        self.catalog = catalog
        self.targets = targets
        self.busy = busy
        # Namespace (upper case) → the filters that evict: those with conditions.
        self.evicting: dict[str, tuple[MatchFilter, ...]] = {
            namespace.upper(): tuple(f for f in settings.filters if f.conditions)
            for namespace, settings in (discovery or {}).items()}
        self.command = SyncCommand(self.store)
        self.tally = Tally()
        self._writes: list[tuple[ResourceWrite, ResourceVersion]] = []
        self._deletes: list[ResourceVersion] = []
        self._evictions: list[ResourceVersion] = []
        self._flushing = asyncio.Lock()

    def _schema(self, resource: ResourceVersion) -> Schema:
        known = self.catalog.types.get(resource.type)
        if known is not None:
            return known
        document = resource.document.get("Schema")
        return schema_of(dict(document)) if document else _NO_SCHEMA

    async def one(self, resource: ResourceVersion) -> None:
        target = self.targets.get(resource.target)
        plugin = self.gateway.find(target.namespace) if target is not None else None
        if resource.stack in self.busy or resource.native_id is None or target is None or plugin is None:
            self.tally.skipped += 1
            return
        schema = self._schema(resource)
        prior = values.redact(dict(resource.properties), opaque_fields(schema))
        try:
            async with plugin.dispatch():
                result = await plugin.read(resource.type, target.config, resource.native_id, prior,
                                           not_found_ok=True)
        except Exception as error:  # noqa: BLE001 - a plugin that died or timed out: the next pass retries
            self._failed(resource, type(error).__name__)
            return
        self.health.saw(target.label, result.error_code)
        gone = result.error_code is ErrorCode.NOT_FOUND
        if not gone and (result.error_code is not None or result.properties is None):
            self._failed(resource, str(result.error_code or "no properties"))
            return
        self.tally.read += 1
        if gone:
            self._deletes.append(resource)
        elif not resource.managed and excluded(self.evicting.get(target.namespace.upper(), ()), resource.type,
                                               result.properties):
            self._evictions.append(resource)
        else:
            write = observed_write(resource, schema, result.properties)
            if write is None:
                return
            self._writes.append((write, resource))
        if len(self._writes) + len(self._deletes) + len(self._evictions) >= BATCH and not self._flushing.locked():
            await self.flush()

    def _failed(self, resource: ResourceVersion, error: str) -> None:
        key = (resource.type, error)
        if key not in self.tally.failures:  # once per type and error per pass, not once per resource
            log.warning("synchronization could not read %s resources (%s), e.g. %s/%s; they keep their stored "
                        "state until a later pass reads them", resource.type, error, resource.stack, resource.label)
        self.tally.failures[key] = self.tally.failures.get(key, 0) + 1
        self.tally.skipped += 1

    async def flush(self) -> None:
        async with self._flushing:
            writes, deletes, evictions = self._writes, self._deletes, self._evictions
            self._writes, self._deletes, self._evictions = [], [], []
            if writes or deletes or evictions:
                # What the reads found is kept through an outage: each write is conditional on the version read.
                await patiently(lambda: self._write(writes, deletes, evictions))

    def _write(self, writes: list[tuple[ResourceWrite, ResourceVersion]], deletes: list[ResourceVersion],
               evictions: list[ResourceVersion]) -> None:
        busy = busy_stacks(self.store)  # a command may have started on these stacks since the reads
        writes = [(w, r) for w, r in writes if r.stack not in busy]
        deletes = [r for r in deletes if r.stack not in busy]
        if not writes and not deletes and not evictions:
            return
        command_id = self.command.command_id()
        for (write, resource), outcome in zip(writes, self.command.store_versions([w for w, _ in writes]),
                                              strict=True):
            if outcome is not None and outcome.changed and outcome.version != write.if_version:
                self.tally.versions += 1
                self.tally.record(resource, "update")
        for resource in deletes:
            if self.store.delete_resource(resource.ksuid, command_id=command_id,
                                          if_version=resource.version).changed:
                self.tally.deleted += 1
                self.tally.record(resource, "delete")
        for resource in evictions:  # conditional too: one adopted by a forma meanwhile is not unmanaged any more
            if self.store.delete_resource(resource.ksuid, command_id=command_id,
                                          if_version=resource.version).changed:
                self.tally.evicted += 1
                self.tally.record(resource, "evict")

    def finish(self) -> str | None:
        # A pass that made only in-place read-only refreshes leaves no command.
        return self.command.finish(recorded=bool(self.tally.versions or self.tally.deleted or self.tally.evicted))


async def synchronize(store: Datastore, gateway: PluginGateway, catalog: Catalog,
                      discovery: Mapping[str, PluginDiscovery] | None = None,
                      health: ReapSettings | None = None) -> str | None:
    """One pass (``sync_report``); the sync command's id, or None when nothing was written."""
    return (await sync_report(store, gateway, catalog, discovery, health)).command_id


async def sync_report(store: Datastore, gateway: PluginGateway, catalog: Catalog,
                      discovery: Mapping[str, PluginDiscovery] | None = None,
                      health: ReapSettings | None = None) -> SyncReport:
    """One pass: what it stored, under its command (None when nothing was written). ``discovery``: each
    plugin's discovery settings by namespace, whose filters evict unmanaged resources (none: nothing is
    evicted). What the reads said of each target's reach is recorded (``target_health``) with ``health``'s
    gap."""
    started = time.monotonic()

    def load() -> tuple[list[ResourceVersion], dict[str, TargetRecord], set[str]]:
        resources = every_item(lambda c: store.list_resources(cursor=c, limit=_PAGE))
        targets = {t.label: t for t in every_item(lambda c: store.list_targets(cursor=c, limit=_PAGE))}
        return resources, targets, busy_stacks(store)

    resources, targets, busy = await asyncio.to_thread(load)
    run = SyncPass(store, gateway, catalog, targets, busy, discovery, health)
    pending: Iterator[ResourceVersion] = iter(resources)

    async def worker() -> None:
        for resource in pending:  # one shared iterator: each resource is read once
            await run.one(resource)

    await asyncio.gather(*(worker() for _ in range(min(WORKERS, len(resources)))))
    await run.flush()
    await run.health.record(store)
    command_id = await patiently(run.finish)
    tally = run.tally
    log.info("synchronization: %d resources read in %.1f s; %d new versions, %d deleted, %d evicted, %d skipped",
             tally.read, time.monotonic() - started, tally.versions, tally.deleted, tally.evicted, tally.skipped)
    return SyncReport(command_id, tally.changed if command_id is not None else [])
