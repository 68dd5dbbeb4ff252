"""An index for "which of this command's updates changed since …" (following a command: each poll of a big one
read every update of it).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision: str | None = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_resource_updates_modified", "resource_updates", ["command_id", "modified_ts"])


def downgrade() -> None:
    op.drop_index("ix_resource_updates_modified", table_name="resource_updates")
