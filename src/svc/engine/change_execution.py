"""One resource change, executed: the plugin calls of a create, update or delete, and what is stored.

Order of writes closes the crash windows: the attempt (token) is stored before a call (except a first
attempt's, whose token a restarted agent derives again: its InProgress write comes only if the call lasts);
on success the resource state is stored before the update is marked done, so a later command never misses it.

An update reads its resource first. A read that differs from the state it was planned against is a change
outside svc, stored as synchronization stores one (``observed``: drift) and the update Rejected, unless the
command was resumed after a restart and the read shows what the update writes: that is the agent's own first
call, whose start may never have been stored, and the update re-attaches to it by its token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from svc.datastore.interface import Datastore
from svc.datastore.outage import patiently
from svc.datastore.update_writes import UpdateStateWrite
from svc.engine.command_records import UpdateData, utcnow
from svc.engine.gateway import PluginGateway
from svc.engine.observed import SyncCommand, merge, observed_state, record_read
from svc.engine.operations import Attempt, Guard, Step
from svc.engine.planner.changeset import ResourceChange
from svc.engine.planner.diff import generate_patch
from svc.engine.resolve import Producer, ResolveError, Resolver
from svc.engine.writer import BatchWriter
from svc.model import values
from svc.model.native_ids import native_id_in
from svc.model.records import ResourceWrite, StoreOutcome
from svc.model.schema import Schema
from svc.model.schema_cache import fields_of, opaque_fields_of, schema_of
from svc.model.states import UpdateState
from svc.plugins.sdk import ErrorCode, Progress, Status

log = logging.getLogger("svc.engine")
Json = dict[str, Any]
IN_PROGRESS_DELAY = 0.5  # seconds a first call runs before its InProgress state is written


class Fenced(Exception):
    """The update was made terminal by someone else (a cancel): stop working on it."""


@dataclass
class Outcome:
    """How a change ended, and the resource state to store with that end (in the same write batch,
    resource first)."""

    state: str
    message: str = ""
    resource: ResourceWrite | None = None
    delete: bool = False


@dataclass(frozen=True, slots=True)
class _Deferred:
    change: ResourceChange
    data: UpdateData
    started: datetime
    due: float  # on the event loop's clock


def _strip_empty(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _strip_empty(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_strip_empty(v) for v in value]
    return value


def _as_read(prior: Json) -> Json:
    """The stored state as a read would return it, for a write that made no plugin call: a secret, stored only
    as its hash, is None (unknown), so that the merge keeps what the user gave and it is hashed once (its hash
    taken for its value would be hashed again, and the secret would never compare equal)."""
    return values.map_envelopes(prior, lambda envelope: None if envelope.get("$hashed") else values.plain(envelope))


def _changed_out_of_band(change: ResourceChange, schema: Schema, read_back: Json) -> bool:
    """Whether a read differs from the state the change was planned against, as synchronization compares them
    (``observed_state``: what it would store is what is compared)."""
    properties, read_only = observed_state(change.prior or {}, schema, read_back)
    return properties != (change.prior or {}) or read_only != change.prior_read_only


def _written(change: ResourceChange, schema: Schema, resolved: Json, read_back: Json) -> bool:
    """Whether a read shows what this update writes: the update, planned against it, would change nothing."""
    landed, _ = observed_state(resolved, schema, read_back)
    return generate_patch(landed, resolved, schema, exact=change.exact).empty


class Steps:
    """Executes changes of one command; ``save`` persists an update's state and data (fenced)."""

    def __init__(self, command_id: str, store: Datastore, writer: BatchWriter, gateway: PluginGateway, *,
                 recovered: bool = False) -> None:
        self.command_id = command_id
        # Resumed after a restart: an agent before it may have made any unfinished change's first call (with the
        # token derived from the change, its start not always stored: ``_record``).
        self.recovered = recovered
        self.store = store
        self.writer = writer
        self.started: set[str] = set()  # changes whose start is stored (the first save of an attempt)
        self._background: set[asyncio.Task[bool]] = set()
        self._deferred: dict[str, _Deferred] = {}  # key → its unwritten start, oldest first
        self._sweep: asyncio.TimerHandle | None = None  # writes the deferred starts that came due
        self._produced: dict[str, ResourceWrite] = {}  # ksuid → the state this command wrote for it
        self._live: dict[str, Json | None] = {}  # ksuid → what a reference's live read found, for the command
        self._loading: dict[str, asyncio.Future[Producer | None]] = {}  # ksuid → the datastore read under way
        self.gateway = gateway
        self.guard = Guard()  # how a cancel of the command reaches its changes

    async def save(self, change: ResourceChange, state: str, data: UpdateData, *, version: str | None = None,
                   start: datetime | None = None) -> bool:
        """Stores an update's state (and its start time, when given); False when it is already terminal
        (canceled meanwhile)."""
        return await self._queue_state(change, state, data, version=version, start=start)

    def _queue_state(self, change: ResourceChange, state: str, data: UpdateData, *, version: str | None = None,
                     start: datetime | None = None) -> asyncio.Future[bool]:
        return self.writer.set_state(UpdateStateWrite(
            self.command_id, change.ksuid, change.operation, state, version=version, data=data.to_json(),
            start_ts=start))

    def _resolver(self) -> Resolver:
        # One per change, sharing this command's live reads: a resolver kept on this object would refer back to
        # it (its loaders are methods here), a cycle that leaves a finished command's whole state to the garbage
        # collector.
        return Resolver(self._load, self._read_live, self._live)

    def take_start(self, key: str) -> datetime | None:
        """When ``key`` started, if its InProgress write is still deferred (that write is then dropped: the
        change's next write carries the start instead); None once it was written."""
        deferred = self._deferred.pop(key, None)
        return None if deferred is None else deferred.started

    def _defer_start(self, change: ResourceChange, data: UpdateData) -> None:
        """The InProgress write of a first attempt, made only once the call has lasted ``IN_PROGRESS_DELAY``:
        most calls end sooner, and their end writes the start with the result, one update row instead of
        two. Nothing waits for it: its token is derived from the change (see ``_record``).

        One timer serves every deferred start of the command (a timer per change cost more than the rest of
        this bookkeeping), and ``data`` is written as it is when the start comes due: until then it does not
        change, since every later write of the change first takes its start (``take_start``)."""
        loop = asyncio.get_running_loop()
        self._deferred[change.key] = _Deferred(change, data, utcnow(), loop.time() + IN_PROGRESS_DELAY)
        if self._sweep is None:
            self._sweep = loop.call_later(IN_PROGRESS_DELAY, self._write_due_starts)

    def _write_due_starts(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._deferred:
            key, deferred = next(iter(self._deferred.items()))  # the oldest: all wait the same delay
            if deferred.due > now:
                self._sweep = loop.call_at(deferred.due, self._write_due_starts)
                return
            del self._deferred[key]
            self.background(self._queue_state(deferred.change, UpdateState.IN_PROGRESS, deferred.data,
                                              start=deferred.started))
        self._sweep = None

    def background(self, write: Awaitable[bool]) -> None:
        """A write nobody waits for (it still commits before any later write of the same change)."""
        task = asyncio.ensure_future(write)
        self._background.add(task)
        task.add_done_callback(lambda t: (self._background.discard(t), t.cancelled() or t.exception()))

    # -- plumbing -----------------------------------------------------------------------------------------

    def produced(self, ksuid: str, write: ResourceWrite | None) -> None:
        """Remembers the resource state a successful change of this command is writing, as soon as its plugin
        answered, so that its dependents start at once and their references resolve without reading it back
        (a datastore round trip per reference cost more than the rest of a change's bookkeeping). The write is
        queued ahead of any dependent's, so it never commits after theirs."""
        if write is None:
            self._produced.pop(ksuid, None)
        else:
            self._produced[ksuid] = write

    def stored(self, ksuid: str, write: ResourceWrite | None, outcome: StoreOutcome | None) -> None:
        """What ``write``, which ``produced`` remembered, did: kept unless it went elsewhere (adopted under another
        ksuid) or nowhere, and then the datastore answers. Only that write is forgotten: by the time a replace's
        delete is committed, its create may have produced the resource's new state already."""
        if self._produced.get(ksuid) is not write:
            return
        if outcome is None or outcome.version is None or outcome.ksuid != ksuid:
            self._produced.pop(ksuid, None)

    async def _load(self, ksuid: str) -> Producer | None:
        """The stored state a reference to ``ksuid`` resolves against. The changes that refer to one resource
        start together (their dependencies ended together) and share one read of it: ten reads of the same
        row on ten threads at once took ~7 ms each (the GIL, the connection pool), against ~0.7 ms for one."""
        known = self._produced.get(ksuid)
        if known is not None:
            return known
        loading = self._loading.get(ksuid)
        if loading is None:
            loading = self._loading[ksuid] = asyncio.ensure_future(patiently(lambda: self.store.get_resource(ksuid)))
            loading.add_done_callback(lambda done: self._loaded(ksuid, done))
        return await asyncio.shield(loading)  # a canceled change leaves the read to the others that wait for it

    def _loaded(self, ksuid: str, done: asyncio.Future[Producer | None]) -> None:
        """The read is over: the next reference reads again (the row may have changed since)."""
        if self._loading.get(ksuid) is done:
            del self._loading[ksuid]
        if not done.cancelled():
            done.exception()  # retrieved here too, for when every change that waited for it was canceled

    async def _read_live(self, resource: Producer) -> Json | None:
        target = await patiently(lambda: self.store.get_target(resource.target))
        if target is None or resource.native_id is None:
            return None
        result = await self.gateway.plugin(target.namespace).read(resource.type, target.config, resource.native_id,
                                                                  None, not_found_ok=True)
        return result.properties

    async def _record(self, change: ResourceChange, data: UpdateData, attempt: Attempt,
                      progress: Progress | None) -> None:
        data.attempt = attempt.to_json()
        data.current_attempt = attempt.number
        data.max_attempts = self.gateway.plugin(change.namespace).policy.max_attempts
        if progress is not None:
            data.progress = self._hashed_progress(change, progress)
            data.message = progress.message
        first = change.key not in self.started
        self.started.add(change.key)
        if progress is None and attempt.number == 1 and attempt.request_id is None and first:
            # The first call's token is derived from the command, resource and operation, so a restarted
            # agent re-sends the same token (which the plugin answers from its first call) whether or not
            # this write landed: no need to wait for it before calling, nor to make it for a short call.
            self._defer_start(change, data)
            return
        start = self.take_start(change.key) or (utcnow() if first else None)
        if not await self.save(change, UpdateState.IN_PROGRESS, data, start=start):
            raise Fenced()

    @staticmethod
    def _hashed_progress(change: ResourceChange, progress: Progress) -> Json:
        document = progress.to_json()
        if progress.properties is not None:
            document["ResourceProperties"] = values.hash_secrets(progress.properties, opaque_fields_of(change.schema))
        return document

    def resource_write(self, change: ResourceChange, user: Json, returned: Json, native_id: str) -> ResourceWrite:
        fields = fields_of(change.schema)  # both looked up once per schema: every change's result comes here
        writable = {k: v for k, v in returned.items() if not fields or k in fields}
        read_only = {k: v for k, v in returned.items() if fields and k not in fields}
        properties = values.hash_secrets(merge(user, writable), opaque_fields_of(change.schema))
        document = {"Schema": change.schema, "Alias": change.alias, "Group": change.group}
        return ResourceWrite(type=change.type, label=change.label, stack=change.stack, target=change.target,
                             properties=properties, managed=change.managed, native_id=native_id, ksuid=change.ksuid,
                             read_only_properties=read_only, document={k: v for k, v in document.items() if v})

    # -- the operations -----------------------------------------------------------------------------------

    async def run(self, change: ResourceChange, data: UpdateData, *, resume: bool) -> Outcome:
        """The change's outcome; ``Stopped`` when its command was canceled before the change made a call that may
        change the cloud (what it found meanwhile, e.g. that nothing needs to change, is not acted on)."""
        step = Step(self.guard, change.key)
        outcome = await self._operate(change, data, resume, step)
        step.enter()  # from here its end is being written, whatever comes
        return outcome

    async def _operate(self, change: ResourceChange, data: UpdateData, resume: bool, step: Step) -> Outcome:
        try:
            if change.operation == "create":
                return await self.create(change, data, resume, step)
            if change.operation == "update":
                return await self.update(change, data, resume, step)
            return await self.delete(change, data, resume, step)
        except ResolveError as error:
            return Outcome(UpdateState.FAILED, str(error))
        except values.HashedValueError:
            return Outcome(UpdateState.FAILED, "a secret is known only by its hash here; apply the forma again so "
                                               "the secret itself is sent")

    def _attempt(self, change: ResourceChange, data: UpdateData, op: str, resume: bool) -> tuple[Attempt, bool]:
        if resume and data.attempt and data.attempt.get("op") == op:
            return Attempt.from_json(data.attempt), True
        return Attempt(op, f"{self.command_id}-{change.ksuid}-{op}"), False

    async def create(self, change: ResourceChange, data: UpdateData, resume: bool, step: Step) -> Outcome:
        resolved = await self._resolver().resolve(change.desired or {})
        properties = _strip_empty(values.plain(resolved, guarded=True))
        plugin = self.gateway.plugin(change.namespace)
        attempt, resuming = self._attempt(change, data, "create", resume)
        progress = await plugin.create(change.type, change.target_config, change.label, properties, attempt,
                                       lambda a, p: self._record(change, data, a, p), step, resume=resuming)
        if progress.status is not Status.SUCCESS:
            return self._failed(data, progress)
        returned = progress.properties
        identifier = str(change.schema.get("Identifier") or "")
        native_id = progress.native_id or native_id_in(returned, identifier)
        if not native_id:
            message = (f"plugin {plugin.namespace} answered the create of {change.type} {change.label!r} without a "
                       f"native id, and its properties hold none at the identifier {identifier!r}; nothing was "
                       "recorded (the provider may hold a resource svc does not know)")
            data.message = message
            return Outcome(UpdateState.FAILED, message)
        if returned is None:
            found = await plugin.read(change.type, change.target_config, native_id, None, not_found_ok=False)
            returned = found.properties or {}
        elif identifier and not native_id_in(returned, identifier):
            keys = ", ".join(sorted(returned)[:8]) + (", …" if len(returned) > 8 else "")
            plugin.warn_once(change.type, f"plugin {plugin.namespace} answers creates of {change.type} with "
                             f"properties that hold nothing at its identifier {identifier!r} (keys: {keys or 'none'}); "
                             "a plugin should return properties under its schema's names (a provider's output "
                             "keys left untransformed?)")
        return Outcome(UpdateState.SUCCESS, progress.message,
                       resource=self.resource_write(change, resolved, returned, native_id))

    async def update(self, change: ResourceChange, data: UpdateData, resume: bool, step: Step) -> Outcome:
        schema = schema_of(change.schema)
        prior = change.prior or {}
        if change.metadata_only:
            return Outcome(UpdateState.SUCCESS, "renamed" if change.old_label else "brought under management",
                           resource=self.resource_write(change, prior, _as_read(prior), change.native_id or ""))
        plugin = self.gateway.plugin(change.namespace)
        attempt, resuming = self._attempt(change, data, "update", resume)
        resolved: Json | None = None
        if not resuming:
            found = await plugin.read(change.type, change.target_config, change.native_id or "", values.redact(
                prior, opaque_fields_of(change.schema)), not_found_ok=False, step=step)
            if found.error_code is not None:
                return Outcome(UpdateState.FAILED, found.message or str(found.error_code))
            read_back = found.properties or {}
            if _changed_out_of_band(change, schema, read_back):
                if self.recovered:
                    resolved = await self._resolver().resolve(change.desired or {})
                if resolved is not None and _written(change, schema, resolved, read_back):
                    # What an agent before the restart wrote with this very call: the plugin answers from that
                    # call by its token (or, if the call never reached it, gets it now with the same token).
                    resuming = True
                elif await self._record_read(change, schema, read_back):
                    return Outcome(UpdateState.REJECTED, "the resource changed outside svc since it was planned; "
                                                         "what it is now is stored as drift: put the change in the "
                                                         "forma (svc extract) or apply with --force to overwrite it")
        if resolved is None:
            resolved = await self._resolver().resolve(change.desired or {})
        patch = generate_patch(prior, resolved, schema, exact=change.exact)
        if patch.create_only:
            return Outcome(UpdateState.FAILED, "a create-only field would change once references are resolved ("
                                               + ", ".join(op["path"] for op in patch.create_only)
                                               + "); apply again to replace the resource")
        if not patch.ops:
            return Outcome(UpdateState.SUCCESS, "nothing to change once references were resolved",
                           resource=self.resource_write(change, resolved, _as_read(prior), change.native_id or ""))
        desired_plain = _strip_empty(values.plain(resolved, guarded=True))
        prior_plain = values.redact(prior, opaque_fields_of(change.schema))
        progress = await plugin.update(change.type, change.target_config, change.native_id or "", prior_plain,
                                       desired_plain, patch.ops, attempt, lambda a, p: self._record(change, data, a, p),
                                       step, resume=resuming)
        if progress.status is not Status.SUCCESS:
            return self._failed(data, progress)
        returned = progress.properties
        if returned is None:
            returned = (await plugin.read(change.type, change.target_config, change.native_id or "", None,
                                          not_found_ok=False)).properties or {}
        return Outcome(UpdateState.SUCCESS, progress.message, resource=self.resource_write(
            change, resolved, returned, progress.native_id or change.native_id or ""))

    async def _record_read(self, change: ResourceChange, schema: Schema, read_back: Json) -> bool:
        """Stores what the read before an update found, as synchronization stores it; whether the stored state is
        now another than the one the change was planned against (a change outside svc, stored now or by a
        synchronization pass since the plan; a refresh of read-only properties alone is no new state)."""
        command = SyncCommand(self.store)  # one, however often an outage makes the work run again

        def work() -> bool:
            stored = self.store.get_resource(change.ksuid)
            if stored is None:
                return False
            return record_read(command, stored, schema, read_back) is not None or stored.properties != change.prior

        return await patiently(work)

    async def delete(self, change: ResourceChange, data: UpdateData, resume: bool, step: Step) -> Outcome:
        plugin = self.gateway.plugin(change.namespace)
        attempt, resuming = self._attempt(change, data, "delete", resume)
        if not resuming and change.native_id:
            found = await plugin.read(change.type, change.target_config, change.native_id, None, not_found_ok=True,
                                      step=step)
            if found.error_code is ErrorCode.NOT_FOUND:
                return Outcome(UpdateState.SUCCESS, "already gone", delete=True)
            if found.error_code is not None:
                return Outcome(UpdateState.FAILED, found.message or str(found.error_code))
        if change.native_id:
            progress = await plugin.delete(change.type, change.target_config, change.native_id, attempt,
                                           lambda a, p: self._record(change, data, a, p), step, resume=resuming)
            if progress.status is not Status.SUCCESS:
                return self._failed(data, progress)
        return Outcome(UpdateState.SUCCESS, delete=True)

    @staticmethod
    def _failed(data: UpdateData, progress: Progress) -> Outcome:
        code = progress.error_code or ErrorCode.UNFORESEEN_ERROR
        message = f"{code}: {progress.message}" if progress.message else str(code)
        data.message = message
        return Outcome(UpdateState.FAILED, message)
