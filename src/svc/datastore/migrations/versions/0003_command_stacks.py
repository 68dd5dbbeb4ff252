"""The stacks a command covers beyond its resource updates' (a reconcile that changes nothing but takes in
drift is still its stacks' new baseline).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels = None
depends_on = None

KEY = sa.String(64).with_variant(sa.String(64, collation="C"), "postgresql")
LABEL = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "command_stacks",
        sa.Column("command_id", KEY, sa.ForeignKey("commands.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("stack_label", LABEL, primary_key=True),
    )
    op.create_index("ix_command_stacks_stack", "command_stacks", ["stack_label", "command_id"])


def downgrade() -> None:
    op.drop_table("command_stacks")
