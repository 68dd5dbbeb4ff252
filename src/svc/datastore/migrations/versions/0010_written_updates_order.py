"""The index of a command's updates by the time their state was written (0008) carries their key as well, so that
a poll reads them a page at a time in its order: each page after the first had scanned every update of the command
(at 100,000 updates, most of the agent's CPU spent answering a follower), and the first one sorted them.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision: str | None = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_resource_updates_modified", table_name="resource_updates")
    op.create_index("ix_resource_updates_modified", "resource_updates",
                    ["command_id", "modified_ts", "ksuid", "operation"])


def downgrade() -> None:
    op.drop_index("ix_resource_updates_modified", table_name="resource_updates")
    op.create_index("ix_resource_updates_modified", "resource_updates", ["command_id", "modified_ts"])
