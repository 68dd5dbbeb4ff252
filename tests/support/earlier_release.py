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
    """Stores each write, in one transaction, as the current version of its resource (``write.ksuid``, else a new
    one), the current one demoted; answers their ksuids."""
    ksuids = []
    res = _RESOURCES.c
    with store.engine.begin() as conn:
        for write in writes:
            ksuid = write.ksuid or new_id()
            demoted = conn.execute(sa.update(_RESOURCES).where(res.ksuid == ksuid, res.head == 1).values(head=0))
            conn.execute(sa.insert(_RESOURCES), {
                "ksuid": ksuid, "version": new_id(), "head": 1, "operation": "update" if demoted.rowcount else "create",
                "type": write.type, "label": write.label, "stack": write.stack, "target": write.target,
                "native_id": write.native_id, "managed": write.managed, "properties": dict(write.properties),
                "read_only_properties": dict(write.read_only_properties), "document": dict(write.document),
                "command_id": None, "valid_from": datetime.now(UTC)})
            ksuids.append(ksuid)
    return ksuids
