"""An index for "what changed in this stack since …" (the reconcile drift gate).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_resources_stack_valid_from", "resources", ["stack", "valid_from"])


def downgrade() -> None:
    op.drop_index("ix_resources_stack_valid_from", table_name="resources")
