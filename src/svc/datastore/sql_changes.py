"""Resource versions written in a stack after a point in time: the reconcile drift gate's input."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from svc.datastore.sql_base import SqlBase
from svc.datastore.sql_resources import version_of_row
from svc.datastore.tables import resources
from svc.model.records import ResourceVersion

r = resources


# Read by every reconcile's drift gate: built once, as their values are bound.
_SINCE = (r.c.stack == sa.bindparam("stack"), r.c.valid_from > sa.bindparam("since"))
_OLDEST_FIRST = (r.c.valid_from, r.c.ksuid)
_CHANGES_SINCE = sa.select(r).where(*_SINCE).order_by(*_OLDEST_FIRST)
_CHANGES_SINCE_BY_OTHERS = sa.select(r).where(
    *_SINCE, sa.or_(r.c.command_id.is_(None), r.c.command_id != sa.bindparam("command_id"))).order_by(*_OLDEST_FIRST)


class ChangesStore(SqlBase):
    def list_resource_changes(self, stack: str, since: datetime, *,
                              exclude_command: str | None = None) -> list[ResourceVersion]:
        """Every version (tombstones included) written in ``stack`` after ``since``, oldest first, except
        those written by ``exclude_command``. Bounded by the stack's history since then."""
        statement, values = _CHANGES_SINCE, {"stack": stack, "since": since}
        if exclude_command is not None:
            statement, values["command_id"] = _CHANGES_SINCE_BY_OTHERS, exclude_command
        with self.read() as conn:
            rows = conn.execute(statement, values).all()
        return [version_of_row(row) for row in rows]
