"""The leader lease: which of the agents sharing one datastore leads, and the epoch fenced writes compare.

One row per lease name, created by the first agent that takes it (``sql_lease``). The times are the database's
clock: timestamp with time zone on PostgreSQL, text on SQLite (compared through ``julianday``).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision: str | None = "0006"
branch_labels = None
depends_on = None

LABEL = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
_AT = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "leader_lease",
        sa.Column("name", LABEL, primary_key=True),
        sa.Column("holder", sa.Text, nullable=True),
        sa.Column("holder_url", sa.Text, nullable=False),
        sa.Column("epoch", sa.BigInteger, nullable=False),
        sa.Column("expires_at", _AT, nullable=False),
        sa.Column("acquired_at", _AT, nullable=False),
        sa.Column("renewed_at", _AT, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("leader_lease")
