"""Each resource update's change is stored once, in ``resource_changes``; its row in ``resource_updates`` keeps
the small progress a state transition writes.

Until now the change document (and the sealed plain-text desired state) sat in ``resource_updates.data`` beside
the progress, and every transition wrote it again. The upgrade moves both out of every stored update, so that
an agent upgraded with commands in its datastore still shows and resumes them.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision: str | None = "0003"
branch_labels = None
depends_on = None

KEY = sa.String(64).with_variant(sa.String(64, collation="C"), "postgresql")
JSON = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
_CHUNK = 500  # updates moved per statement pair: bounded memory whatever the datastore holds

_updates = sa.table("resource_updates", sa.column("command_id", KEY), sa.column("ksuid", KEY),
                    sa.column("operation", sa.String(16)), sa.column("data", JSON))
_changes = sa.table("resource_changes", sa.column("command_id", KEY), sa.column("ksuid", KEY),
                    sa.column("operation", sa.String(16)), sa.column("change", JSON),
                    sa.column("desired_sealed", sa.Text))


def upgrade() -> None:
    op.create_table(
        "resource_changes",
        sa.Column("command_id", KEY, sa.ForeignKey("commands.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("ksuid", KEY, primary_key=True),
        sa.Column("operation", sa.String(16), primary_key=True),
        sa.Column("change", JSON, nullable=False),
        sa.Column("desired_sealed", sa.Text, nullable=True),
    )
    _move_changes(op.get_bind())


def _move_changes(conn: sa.Connection) -> None:
    """Every stored update's change into ``resource_changes``, its data left with the progress only."""
    u = _updates.c
    key = (u.command_id, u.ksuid, u.operation)
    rewrite = (sa.update(_updates)
               .where(u.command_id == sa.bindparam("k_command_id"), u.ksuid == sa.bindparam("k_ksuid"),
                      u.operation == sa.bindparam("k_operation"))
               .values(data=sa.bindparam("k_data", type_=JSON)))
    last: tuple[Any, ...] | None = None
    while True:
        statement = sa.select(*key, u.data).order_by(*key).limit(_CHUNK)
        if last is not None:
            statement = statement.where(sa.tuple_(*key) > sa.tuple_(*last))
        rows = conn.execute(statement).all()
        if not rows:
            return
        last = tuple(rows[-1][:3])
        changes: list[dict[str, Any]] = []
        progress: list[dict[str, Any]] = []
        for row in rows:
            data = dict(row.data or {})
            if "change" not in data and "desired_sealed" not in data:
                continue  # nothing to move (an update stored by something else than the engine)
            changes.append({"command_id": row.command_id, "ksuid": row.ksuid, "operation": row.operation,
                            "change": data.pop("change", None) or {},
                            "desired_sealed": data.pop("desired_sealed", None)})
            progress.append({"k_command_id": row.command_id, "k_ksuid": row.ksuid, "k_operation": row.operation,
                             "k_data": data})
        if changes:
            conn.execute(sa.insert(_changes), changes)
            conn.execute(rewrite, progress)


def downgrade() -> None:
    """The changes back into their updates' data, as revision 0003 stores them."""
    conn = op.get_bind()
    c = _changes.c
    u = _updates.c
    restore = (sa.update(_updates)
               .where(u.command_id == sa.bindparam("k_command_id"), u.ksuid == sa.bindparam("k_ksuid"),
                      u.operation == sa.bindparam("k_operation"))
               .values(data=sa.bindparam("k_data", type_=JSON)))
    joined = _updates.join(_changes, sa.and_(c.command_id == _updates.c.command_id, c.ksuid == _updates.c.ksuid,
                                             c.operation == _updates.c.operation))
    rows = conn.execute(sa.select(c.command_id, c.ksuid, c.operation, c.change, c.desired_sealed, _updates.c.data)
                        .select_from(joined)).all()
    restored = []
    for row in rows:
        data = {"change": row.change, **dict(row.data or {})}
        if row.desired_sealed:
            data["desired_sealed"] = row.desired_sealed
        restored.append({"k_command_id": row.command_id, "k_ksuid": row.ksuid, "k_operation": row.operation,
                         "k_data": data})
    if restored:
        conn.execute(restore, restored)
    op.drop_table("resource_changes")
