"""Drops three indexes no query reads, which every write paid for: ``ix_resources_command`` (each version
stored), ``ix_resource_updates_ksuid`` and ``ix_resource_updates_state`` (each update stored; the state one
again at each state change, an entry removed and one added). At 100,000 resources SQLite's B-tree work for
them was a good part of the engine's group commit. Every read of a command's updates goes by the primary key
(command id first), or by ``ix_resource_updates_modified`` / ``ix_resource_updates_stack``; versions are read
by ksuid, stack, type, label, target or native id, never by the command that wrote them.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision: str | None = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_resources_command", table_name="resources")
    op.drop_index("ix_resource_updates_ksuid", table_name="resource_updates")
    op.drop_index("ix_resource_updates_state", table_name="resource_updates")


def downgrade() -> None:
    op.create_index("ix_resources_command", "resources", ["command_id"])
    op.create_index("ix_resource_updates_ksuid", "resource_updates", ["ksuid"])
    op.create_index("ix_resource_updates_state", "resource_updates", ["state"])
