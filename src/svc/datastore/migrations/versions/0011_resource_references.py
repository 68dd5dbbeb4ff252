"""An index of references: each resource version's references by the resource they refer to.

A plan finds the live resources that refer to what it changes (a destroy's cascade, an update's dependants). It
read the properties of every live resource for them, as text: a destroy of 10 resources beside 100,000 others took
0.2 to 0.3 s of that. ``resource_references`` makes it a lookup by key. The upgrade indexes the references of every
current version (live, or on a reaped target, which may live again) and marks them so; a version written without
its references (by an agent of an earlier release during a rolling deployment, after this upgrade) keeps
``references_indexed`` false, and the search reads its properties as before (``ix_resources_unindexed``).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from svc.datastore.sql_resource_batch import references_of

revision = "0011"
down_revision: str | None = "0010"
branch_labels = None
depends_on = None

KEY = sa.String(64).with_variant(sa.String(64, collation="C"), "postgresql")
JSON = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
_CHUNK = 1000  # versions indexed per statement pair: bounded memory whatever the datastore holds
_CURRENT = "head IN (1, 3)"  # live, or on a reaped target (``tables.HEAD_LIVE``, ``HEAD_REAPED``)

_resources = sa.table("resources", sa.column("ksuid", KEY), sa.column("version", KEY),
                      sa.column("head", sa.SmallInteger), sa.column("properties", JSON),
                      sa.column("references_indexed", sa.Boolean))
_references = sa.table("resource_references", sa.column("producer", KEY), sa.column("ksuid", KEY),
                       sa.column("version", KEY))


def upgrade() -> None:
    op.add_column("resources", sa.Column("references_indexed", sa.Boolean, nullable=False, server_default=sa.false()))
    op.create_table(
        "resource_references",
        sa.Column("producer", KEY, primary_key=True),
        sa.Column("ksuid", KEY, primary_key=True),
        sa.Column("version", KEY, primary_key=True),
    )
    _index_current_versions(op.get_bind())
    clause = sa.text("head = 1 AND references_indexed = false")
    op.create_index("ix_resources_unindexed", "resources", ["references_indexed"], sqlite_where=clause,
                    postgresql_where=clause)


def _index_current_versions(conn: sa.Connection) -> None:
    """The references of every current version, a chunk at a time in key order, each chunk's versions marked."""
    res = _resources.c
    mark = (sa.update(_resources).where(res.ksuid == sa.bindparam("k_ksuid"), res.version == sa.bindparam("k_version"))
            .values(references_indexed=True))
    last: tuple[Any, ...] | None = None
    while True:
        statement = (sa.select(res.ksuid, res.version, res.properties).where(sa.text(_CURRENT))
                     .order_by(res.ksuid, res.version).limit(_CHUNK))
        if last is not None:
            statement = statement.where(sa.tuple_(res.ksuid, res.version) > sa.tuple_(*last))
        rows = conn.execute(statement).all()
        if not rows:
            return
        last = (rows[-1].ksuid, rows[-1].version)
        references = [reference for row in rows for reference in references_of(row._mapping)]
        if references:
            conn.execute(sa.insert(_references), references)
        conn.execute(mark, [{"k_ksuid": row.ksuid, "k_version": row.version} for row in rows])


def downgrade() -> None:
    op.drop_index("ix_resources_unindexed", table_name="resources")
    op.drop_table("resource_references")
    op.drop_column("resources", "references_indexed")
