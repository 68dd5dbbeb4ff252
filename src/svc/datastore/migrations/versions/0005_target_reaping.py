"""Target reaping (engine.md §5.2): each target's reachability over time, its reap policy, and an immutable audit
row per reaped incarnation.

The health columns are written in place on a target's current version (an observation is not a new version);
``unreachable_seconds`` is the continuous unreachable time accrued so far. ``reap_kind`` is ``after`` (reap once
``reap_after_seconds`` are accrued), ``never``, or NULL (the agent's default). A reaped resource's current row keeps
its version and gets ``head`` 3 (``HEAD_REAPED``): invisible to live reads, brought back when its target is declared
again.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels = None
depends_on = None

KEY = sa.String(64).with_variant(sa.String(64, collation="C"), "postgresql")
LABEL = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
_AT = sa.DateTime(timezone=False)


def upgrade() -> None:
    with op.batch_alter_table("targets") as batch:
        batch.add_column(sa.Column("reap_kind", sa.String(8), nullable=True))
        batch.add_column(sa.Column("reap_after_seconds", sa.Integer, nullable=True))
        batch.add_column(sa.Column("last_seen_at", _AT, nullable=True))
        batch.add_column(sa.Column("last_sample_at", _AT, nullable=True))
        batch.add_column(sa.Column("first_unreachable_at", _AT, nullable=True))
        batch.add_column(sa.Column("unreachable_seconds", sa.Float, nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_error_code", sa.String(64), nullable=True))
    op.create_index("ix_targets_live_health", "targets", ["health_state", "label"],
                    sqlite_where=sa.text("head = 1"), postgresql_where=sa.text("head = 1"))
    op.create_table(
        "target_reap_audit",
        sa.Column("incarnation_id", KEY, primary_key=True),
        sa.Column("label", LABEL, nullable=False),
        sa.Column("namespace", LABEL, nullable=False),
        sa.Column("reaped_at", _AT, nullable=False),
        sa.Column("unreachable_seconds", sa.Float, nullable=False),
        sa.Column("resource_count", sa.Integer, nullable=False),
        sa.Column("last_error_code", sa.String(64), nullable=True),
    )
    op.create_index("ix_target_reap_audit_label", "target_reap_audit", ["label", "reaped_at"])


def downgrade() -> None:
    op.drop_table("target_reap_audit")
    op.drop_index("ix_targets_live_health", "targets")
    with op.batch_alter_table("targets") as batch:
        for column in ("last_error_code", "unreachable_seconds", "first_unreachable_at", "last_sample_at",
                       "last_seen_at", "reap_after_seconds", "reap_kind"):
            batch.drop_column(column)
