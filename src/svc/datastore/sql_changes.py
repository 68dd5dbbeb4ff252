"""Resource versions written in a stack after a point in time: the reconcile drift gate's input."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from svc.datastore.sql_base import SqlBase
from svc.datastore.sql_resources import version_of_row
from svc.datastore.tables import resources
from svc.model.records import ResourceVersion

r = resources


class ChangesStore(SqlBase):
    def list_resource_changes(self, stack: str, since: datetime, *,
                              exclude_command: str | None = None) -> list[ResourceVersion]:
        """Every version (tombstones included) written in ``stack`` after ``since``, oldest first, except
        those written by ``exclude_command``. Bounded by the stack's history since then."""
        statement = sa.select(r).where(r.c.stack == stack, r.c.valid_from > since)
        if exclude_command is not None:
            statement = statement.where(sa.or_(r.c.command_id.is_(None), r.c.command_id != exclude_command))
        with self.read() as conn:
            rows = conn.execute(statement.order_by(r.c.valid_from, r.c.ksuid)).all()
        return [version_of_row(row) for row in rows]
