"""Resource versions written as an agent of an earlier release writes them: the columns of ``resources`` up to
revision 0010, nothing in the tables and columns added since (during a rolling deployment the earlier agent
goes on writing after the new one has migrated the schema)."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from svc.datastore.sql_store import SqlDatastore
from svc.datastore.tables import Json, Key, Label, UtcDateTime
from svc.ids import new_id
from svc.model.records import ResourceWrite

_RESOURCES = sa.table(
    "resources", sa.column("ksuid", Key), sa.column("version", Key), sa.column("head", sa.SmallInteger),
    sa.column("operation", sa.String), sa.column("type", Label), sa.column("label", Label), sa.column("stack", Label),
    sa.column("target", Label), sa.column("native_id", Label), sa.column("managed", sa.Boolean),
    sa.column("properties", Json), sa.column("read_only_properties", Json), sa.column("document", Json),
    sa.column("command_id", Key), sa.column("valid_from", UtcDateTime))


def store_as_earlier_release(store: SqlDatastore, *writes: ResourceWrite) -> list[str]:
    """Stores each write, in one transaction, as the current version of its resource (``write.ksuid``, its current
    version demoted, else a new one: those in one statement); answers their ksuids."""
    ksuids, created = [], []
    res = _RESOURCES.c
    with store.engine.begin() as conn:
        for write in writes:
            row = _row(write, write.ksuid or new_id())
            if write.ksuid:
                demoted = conn.execute(sa.update(_RESOURCES).where(res.ksuid == write.ksuid, res.head == 1)
                                       .values(head=0))
                conn.execute(sa.insert(_RESOURCES), {**row, "operation": "update" if demoted.rowcount else "create"})
            else:
                created.append(row)
            ksuids.append(row["ksuid"])
        if created:
            conn.execute(sa.insert(_RESOURCES), created)
    return ksuids


def _row(write: ResourceWrite, ksuid: str) -> dict[str, object]:
    return {"ksuid": ksuid, "version": new_id(), "head": 1, "operation": "create", "type": write.type,
            "label": write.label, "stack": write.stack, "target": write.target, "native_id": write.native_id,
            "managed": write.managed, "properties": dict(write.properties),
            "read_only_properties": dict(write.read_only_properties), "document": dict(write.document),
            "command_id": None, "valid_from": datetime.now(UTC)}
