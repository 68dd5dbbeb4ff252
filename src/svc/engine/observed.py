"""What a read found changed outside svc, stored as such: one mechanism for every reader.

A synchronization pass and an update that reads its resource before writing it (and finds it changed since
it was planned) both store the read the same way: merged into the stored state (``observed_state``) and
written as a new version under a ``sync`` command of its own (``SyncCommand``). That command is what makes
the version drift (``drift.modified``, ``drift.out_of_band``): the drift endpoint lists it and the next
reconcile of its stack is refused until the forma says the same or ``--force`` overrides it. Written under
the reading command instead, a reconcile's own rejected update would be that reconcile's baseline, and the
next reconcile would silently overwrite the hand edit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from svc.datastore.errors import DatastoreUnavailable
from svc.datastore.interface import Datastore
from svc.engine.command_records import utcnow
from svc.ids import new_id
from svc.model import values
from svc.model.opaque import OpaqueFields, opaque_fields
from svc.model.records import CommandRecord, ResourceVersion, ResourceWrite, StoreOutcome
from svc.model.schema import Schema
from svc.model.states import CommandState

log = logging.getLogger("svc.engine.sync")
Json = dict[str, Any]
_Shape = tuple[frozenset[str], frozenset[str], OpaqueFields]
# Each schema's (fields, top-level write-only fields, opaque fields), by identity: every update's read before
# its write comes here, and schemas are shared objects (``schemas.schema_of``, the catalog's). Each entry keeps
# its schema alive, so that its id cannot be reused while the entry exists.
_SHAPES: dict[int, tuple[Schema, _Shape]] = {}
_SHAPES_KEPT = 256


def merge(user: Any, plugin: Any) -> Any:
    """The provider's value in the user's structure (engine.md §3.8): envelopes kept with fresh values,
    user-only keys kept (write-only fields survive a read-back).

    A template keeps its parts; when the provider's value is not what they assemble to (changed out of
    band), the template also holds that value as ``$value``, which is then its value (``values.assemble``)
    until a write makes the two agree again. So an out-of-band edit of a templated or referenced field
    changes the stored state (a new version) like any other field."""
    if values.is_embed(user):
        if plugin is None or plugin == "":
            return user
        template = {k: v for k, v in user.items() if k != "$value"}
        return template if values.assemble(template) == plugin else {**template, "$value": plugin}
    if values.is_ref(user) or values.is_value(user) or values.is_res(user):
        if plugin is None or plugin == "":
            return user
        refreshed = {k: v for k, v in user.items() if k != "$hashed"}
        if "$of" in user and (values.digest(plugin) if user.get("$hashed") else plugin) != user.get("$value"):
            # Changed outside svc: no longer the value taken from the secret ``$of`` names.
            refreshed.pop("$of")
        refreshed["$value"] = plugin
        return refreshed
    if isinstance(user, dict) and isinstance(plugin, dict):
        out = dict(plugin)
        for key, value in user.items():
            out[key] = merge(value, plugin[key]) if key in plugin else value
        return out
    if isinstance(user, list) and isinstance(plugin, list) and len(user) == len(plugin):
        return [merge(u, p) for u, p in zip(user, plugin, strict=True)]
    return user if plugin is None else plugin


def observed_state(stored: Json, schema: Schema, read_back: Json) -> tuple[Json, Json]:
    """(properties, read-only properties) to store for a resource whose stored properties are ``stored``
    after a read returned ``read_back``: the read merged into the user's structure (``merge``), write-only
    fields not taken from it (a provider never returns them faithfully), secrets hashed (an unchanged secret
    hashes to what is stored, so it is no change)."""
    fields, write_only, opaque = _shape(schema)
    writable = {k: v for k, v in read_back.items() if (not fields or k in fields) and k not in write_only}
    read_only = {k: v for k, v in read_back.items() if fields and k not in fields and k not in write_only}
    properties = values.hash_secrets(merge(dict(stored), writable), opaque)
    return properties, read_only


def _shape(schema: Schema) -> _Shape:
    known = _SHAPES.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    shape = (frozenset(schema.fields),
             frozenset(key for key, hint in schema.hints.items() if hint.write_only and "." not in key),
             opaque_fields(schema))
    if len(_SHAPES) >= _SHAPES_KEPT:
        _SHAPES.clear()
    _SHAPES[id(schema)] = (schema, shape)
    return shape


def observed_write(resource: ResourceVersion, schema: Schema, read_back: Json) -> ResourceWrite | None:
    """The version to store for ``resource`` after a read returned ``read_back``, None when the read is what is
    stored. Conditional on the version the read was compared with: a resource rewritten meanwhile keeps the
    newer state."""
    properties, read_only = observed_state(resource.properties, schema, read_back)
    if properties == resource.properties and read_only == resource.read_only_properties:
        return None
    return ResourceWrite(
        type=resource.type, label=resource.label, stack=resource.stack, target=resource.target,
        properties=properties, managed=resource.managed, native_id=resource.native_id, ksuid=resource.ksuid,
        read_only_properties=read_only, document=dict(resource.document), if_version=resource.version)


class SyncCommand:
    """The ``sync`` command reads' versions and tombstones are recorded under, stored on first use."""

    def __init__(self, store: Datastore) -> None:
        self.store = store
        self.id: str | None = None

    def command_id(self) -> str:
        if self.id is None:
            command_id = new_id()
            self.store.put_command(CommandRecord(
                id=command_id, command="sync", state=CommandState.IN_PROGRESS, start_ts=utcnow(),
                source="synchronizer", client_id="synchronizer"))
            self.id = command_id  # once stored: a write that failed (an outage) stores it when run again
        return self.id

    def store_versions(self, writes: Sequence[ResourceWrite]) -> list[StoreOutcome | None]:
        """Each write's outcome, None for one that could not be stored (e.g. a native id now owned by another):
        it fails alone."""
        command_id = self.command_id()
        try:
            return list(self.store.store_resources(writes, command_id=command_id))
        except DatastoreUnavailable:
            raise  # the caller waits for the datastore
        except Exception:  # noqa: BLE001 - store them one by one: only the bad one fails
            outcomes: list[StoreOutcome | None] = []
            for write in writes:
                try:
                    outcomes.append(self.store.store_resource(write, command_id=command_id))
                except DatastoreUnavailable:
                    raise
                except Exception as error:  # noqa: BLE001
                    log.warning("synchronization could not store %s/%s: %s", write.stack, write.label, error)
                    outcomes.append(None)
            return outcomes

    def finish(self, *, recorded: bool) -> str | None:
        """Ends the command; one that recorded nothing (only in-place refreshes) is not kept."""
        if self.id is None:
            return None
        if not recorded:
            self.store.delete_command(self.id)
            return None
        self.store.set_command_state(self.id, CommandState.SUCCESS, end_ts=utcnow())
        return self.id


def record_read(command: SyncCommand, resource: ResourceVersion, schema: Schema, read_back: Json) -> str | None:
    """Stores what one read of ``resource`` found under ``command``, as a synchronization pass would; the command's
    id, None when the read is what is stored (or the resource changed meanwhile). Safe to run again after an
    outage: the write is conditional on the version read."""
    write = observed_write(resource, schema, read_back)
    if write is None:
        return None
    [outcome] = command.store_versions([write])
    return command.finish(recorded=outcome is not None and outcome.changed and outcome.version != write.if_version)
