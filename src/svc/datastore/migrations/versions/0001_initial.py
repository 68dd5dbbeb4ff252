"""Initial schema: resources, stacks, targets, policies, commands, resource updates, background runs.

A migration is a frozen snapshot: it spells out its own columns instead of importing ``tables.py``, so
editing the current table definition can never change what an old migration does.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision: str | None = None
branch_labels = None
depends_on = None

KEY = sa.String(64).with_variant(sa.String(64, collation="C"), "postgresql")
LABEL = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
JSON = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
TS = sa.DateTime(timezone=False)


def _where(text: str) -> dict[str, object]:
    return {"sqlite_where": sa.text(text), "postgresql_where": sa.text(text)}


def upgrade() -> None:
    op.create_table(
        "resources",
        sa.Column("ksuid", KEY, primary_key=True),
        sa.Column("version", KEY, primary_key=True),
        sa.Column("head", sa.SmallInteger, nullable=False),
        sa.Column("operation", sa.String(16), nullable=False),
        sa.Column("type", LABEL, nullable=False),
        sa.Column("label", LABEL, nullable=False),
        sa.Column("stack", LABEL, nullable=False),
        sa.Column("target", LABEL, nullable=False),
        sa.Column("native_id", LABEL, nullable=True),
        sa.Column("managed", sa.Boolean, nullable=False),
        sa.Column("properties", JSON, nullable=False),
        sa.Column("read_only_properties", JSON, nullable=False),
        sa.Column("document", JSON, nullable=False),
        sa.Column("command_id", KEY, nullable=True),
        sa.Column("valid_from", TS, nullable=False),
    )
    op.create_index("uq_resources_head", "resources", ["ksuid"], unique=True, **_where("head > 0"))
    op.create_index("uq_resources_native_id", "resources", ["type", "native_id"], unique=True,
                    **_where("head = 1 AND native_id IS NOT NULL"))
    op.create_index("uq_resources_managed_label", "resources", ["stack", "type", "label"], unique=True,
                    **_where("head = 1 AND managed"))
    op.create_index("ix_resources_live_order", "resources", ["type", "label", "ksuid"], **_where("head = 1"))
    op.create_index("ix_resources_live_stack", "resources", ["stack", "type", "label", "ksuid"],
                    **_where("head = 1"))
    op.create_index("ix_resources_live_target", "resources", ["target"], **_where("head = 1"))
    op.create_index("ix_resources_command", "resources", ["command_id"])

    op.create_table(
        "stacks",
        sa.Column("id", KEY, primary_key=True),
        sa.Column("version", KEY, primary_key=True),
        sa.Column("head", sa.SmallInteger, nullable=False),
        sa.Column("operation", sa.String(16), nullable=False),
        sa.Column("label", LABEL, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("command_id", KEY, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("valid_from", TS, nullable=False),
    )
    op.create_index("uq_stacks_head", "stacks", ["id"], unique=True, **_where("head > 0"))
    op.create_index("uq_stacks_live_label", "stacks", ["label"], unique=True, **_where("head = 1"))

    op.create_table(
        "targets",
        sa.Column("label", LABEL, primary_key=True),
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("head", sa.SmallInteger, nullable=False),
        sa.Column("namespace", LABEL, nullable=False),
        sa.Column("config", JSON, nullable=False),
        sa.Column("config_schema", JSON, nullable=False),
        sa.Column("discoverable", sa.Boolean, nullable=False),
        sa.Column("incarnation_id", KEY, nullable=False),
        sa.Column("health_state", sa.String(16), nullable=False),
        sa.Column("observed_at", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("valid_from", TS, nullable=False),
    )
    op.create_index("uq_targets_live_label", "targets", ["label"], unique=True, **_where("head = 1"))
    op.create_index("ix_targets_live_namespace", "targets", ["namespace", "label"], **_where("head = 1"))

    op.create_table(
        "policies",
        sa.Column("id", KEY, primary_key=True),
        sa.Column("version", KEY, primary_key=True),
        sa.Column("head", sa.SmallInteger, nullable=False),
        sa.Column("operation", sa.String(16), nullable=False),
        sa.Column("label", LABEL, nullable=False),
        sa.Column("policy_type", sa.String(32), nullable=False),
        sa.Column("stack_id", KEY, nullable=False),
        sa.Column("data", JSON, nullable=False),
        sa.Column("command_id", KEY, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("valid_from", TS, nullable=False),
    )
    op.create_index("uq_policies_head", "policies", ["id"], unique=True, **_where("head > 0"))
    op.create_index("uq_policies_live_label", "policies", ["stack_id", "label"], unique=True,
                    **_where("head = 1"))

    op.create_table(
        "stack_policies",
        sa.Column("stack_id", KEY, primary_key=True),
        sa.Column("policy_id", KEY, primary_key=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_stack_policies_policy", "stack_policies", ["policy_id"])

    op.create_table(
        "commands",
        sa.Column("id", KEY, primary_key=True),
        sa.Column("command", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("mode", sa.String(16), nullable=True),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("client_id", LABEL, nullable=False),
        sa.Column("agent_id", KEY, nullable=False),
        sa.Column("agent_version", sa.String(64), nullable=False),
        sa.Column("subject", sa.Text, nullable=True),
        sa.Column("subject_name", sa.Text, nullable=True),
        sa.Column("description_text", sa.Text, nullable=False),
        sa.Column("description_confirm", sa.Boolean, nullable=False),
        sa.Column("force", sa.Boolean, nullable=False),
        sa.Column("simulate", sa.Boolean, nullable=False),
        sa.Column("start_ts", TS, nullable=False),
        sa.Column("end_ts", TS, nullable=True),
        sa.Column("modified_ts", TS, nullable=False),
        sa.Column("data", JSON, nullable=False),
    )
    op.create_index("ix_commands_order", "commands", ["start_ts", "id"])
    op.create_index("ix_commands_state", "commands", ["state"])
    op.create_index("ix_commands_client", "commands", ["client_id", "start_ts"])

    op.create_table(
        "resource_updates",
        sa.Column("command_id", KEY, sa.ForeignKey("commands.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("ksuid", KEY, primary_key=True),
        sa.Column("operation", sa.String(16), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("resource_type", LABEL, nullable=False),
        sa.Column("resource_label", LABEL, nullable=False),
        sa.Column("stack_label", LABEL, nullable=False),
        sa.Column("start_ts", TS, nullable=True),
        sa.Column("modified_ts", TS, nullable=True),
        sa.Column("version", KEY, nullable=True),
        sa.Column("group_id", KEY, nullable=True),
        sa.Column("is_cascade", sa.Boolean, nullable=False),
        sa.Column("cascade_source", sa.Text, nullable=True),
        sa.Column("data", JSON, nullable=False),
    )
    op.create_index("ix_resource_updates_ksuid", "resource_updates", ["ksuid"])
    op.create_index("ix_resource_updates_state", "resource_updates", ["state"])
    op.create_index("ix_resource_updates_stack", "resource_updates", ["stack_label", "command_id"])

    op.create_table(
        "background_runs",
        sa.Column("kind", sa.String(32), primary_key=True),
        sa.Column("scope", LABEL, primary_key=True),
        sa.Column("run_id", KEY, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("started_at", TS, nullable=False),
        sa.Column("finished_at", TS, nullable=True),
        sa.Column("last_success_at", TS, nullable=True),
        sa.Column("details", JSON, nullable=False),
    )


def downgrade() -> None:
    for table in ("background_runs", "resource_updates", "commands", "stack_policies", "policies", "targets",
                  "stacks", "resources"):
        op.drop_table(table)
