"""A resource's identity is (target, type, native id): the unique index on live native ids gains the target.

The same native id on another target is another resource (another root directory, AWS account or region). Keyed
on (type, native id) alone, the index made two targets' resources collide, and the write path matched a new
resource to another target's one. Adding a column only loosens the constraint, so existing rows always satisfy it.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels = None
depends_on = None

_LIVE_WITH_NATIVE_ID = sa.text("head = 1 AND native_id IS NOT NULL")


def upgrade() -> None:
    op.drop_index("uq_resources_native_id", table_name="resources")
    op.create_index("uq_resources_native_id", "resources", ["target", "type", "native_id"], unique=True,
                    sqlite_where=_LIVE_WITH_NATIVE_ID, postgresql_where=_LIVE_WITH_NATIVE_ID)


def downgrade() -> None:
    # Fails if two targets now hold one native id of a type: the old identity cannot represent that.
    op.drop_index("uq_resources_native_id", table_name="resources")
    op.create_index("uq_resources_native_id", "resources", ["type", "native_id"], unique=True,
                    sqlite_where=_LIVE_WITH_NATIVE_ID, postgresql_where=_LIVE_WITH_NATIVE_ID)
