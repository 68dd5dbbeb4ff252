"""The one table definition every backend shares (SQLAlchemy Core metadata).

Versioned tables (resources, stacks, policies, targets) keep every version as a row and mark the current one
in ``head`` so that "current state" reads are an index range scan instead of a max-version subquery:

* ``HEAD_OLD`` (0) — a superseded version, kept as history;
* ``HEAD_LIVE`` (1) — the current version of a live record;
* ``HEAD_TOMBSTONE`` (2) — the current version is a delete tombstone;
* ``HEAD_REAPED`` (3) — resources only: the current version of a resource whose target was reaped (invisible to
  live reads, live again when the target is declared again).

Partial indexes compare ``head`` with literals, and queries must use literals too (``head_is``), because
SQLite only uses a partial index when the query's WHERE clause literally implies the index's.

Text keys use the "C" collation on PostgreSQL so that ordering and keyset comparisons are byte order (as in
SQLite) and never depend on the database's locale.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

HEAD_OLD = 0
HEAD_LIVE = 1
HEAD_TOMBSTONE = 2
HEAD_REAPED = 3

Key = sa.String(64).with_variant(sa.String(64, collation="C"), "postgresql")
Label = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
Json = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


class UtcDateTime(sa.types.TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC: identical on both backends and never in a server's local time."""

    impl = sa.DateTime(timezone=False)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the datastore; pass an aware (UTC) datetime")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):  # the Data API returns timestamps as text
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=UTC)


def head_is(column: sa.ColumnElement[int], value: int) -> sa.ColumnElement[bool]:
    return column == sa.literal_column(str(value))


def _partial(text: str) -> dict[str, Any]:
    clause = sa.text(text)
    return {"sqlite_where": clause, "postgresql_where": clause}


metadata = sa.MetaData()

resources = sa.Table(
    "resources", metadata,
    sa.Column("ksuid", Key, primary_key=True),
    sa.Column("version", Key, primary_key=True),
    sa.Column("head", sa.SmallInteger, nullable=False),
    sa.Column("operation", sa.String(16), nullable=False),
    sa.Column("type", Label, nullable=False),
    sa.Column("label", Label, nullable=False),
    sa.Column("stack", Label, nullable=False),
    sa.Column("target", Label, nullable=False),
    sa.Column("native_id", Label, nullable=True),
    sa.Column("managed", sa.Boolean, nullable=False),
    sa.Column("properties", Json, nullable=False),
    sa.Column("read_only_properties", Json, nullable=False),
    sa.Column("document", Json, nullable=False),
    sa.Column("command_id", Key, nullable=True),
    sa.Column("valid_from", UtcDateTime, nullable=False),
    # Whether this version's references are in ``resource_references`` (migration 0011). False by default, so that
    # a version written by an agent of an earlier release (a rolling deployment) says it is not, and the search
    # for its referrers reads its properties instead.
    sa.Column("references_indexed", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Index("uq_resources_head", "ksuid", unique=True, **_partial("head > 0")),
    # Identity: the same native id on another target is another resource (migration 0006 added the target).
    sa.Index("uq_resources_native_id", "target", "type", "native_id", unique=True,
             **_partial("head = 1 AND native_id IS NOT NULL")),
    sa.Index("uq_resources_managed_label", "stack", "type", "label", unique=True,
             **_partial("head = 1 AND managed")),
    sa.Index("ix_resources_live_order", "type", "label", "ksuid", **_partial("head = 1")),
    sa.Index("ix_resources_live_stack", "stack", "type", "label", "ksuid", **_partial("head = 1")),
    sa.Index("ix_resources_live_target", "target", **_partial("head = 1")),
    sa.Index("ix_resources_stack_valid_from", "stack", "valid_from"),
    # The live versions whose references are not indexed: none once every agent writing is of this release. Keyed by
    # the flag itself, so that SQLite searches it rather than scan another partial index of the live rows.
    sa.Index("ix_resources_unindexed", "references_indexed", **_partial("head = 1 AND references_indexed = false")),
    # No index on command_id: no query reads versions by the command that wrote them (migration 0009 dropped it).
)

# Each resource version's references, by the resource they refer to: a plan finds the live resources that refer to
# what it changes by this key instead of reading every live resource's properties. Written with the version, in
# its transaction; a version's references never change (its properties do not), so rows are only ever added.
resource_references = sa.Table(
    "resource_references", metadata,
    sa.Column("producer", Key, primary_key=True),
    sa.Column("ksuid", Key, primary_key=True),
    sa.Column("version", Key, primary_key=True),
)

stacks = sa.Table(
    "stacks", metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("version", Key, primary_key=True),
    sa.Column("head", sa.SmallInteger, nullable=False),
    sa.Column("operation", sa.String(16), nullable=False),
    sa.Column("label", Label, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("command_id", Key, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("valid_from", UtcDateTime, nullable=False),
    sa.Index("uq_stacks_head", "id", unique=True, **_partial("head > 0")),
    sa.Index("uq_stacks_live_label", "label", unique=True, **_partial("head = 1")),
)

targets = sa.Table(
    "targets", metadata,
    sa.Column("label", Label, primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("head", sa.SmallInteger, nullable=False),
    sa.Column("namespace", Label, nullable=False),
    sa.Column("config", Json, nullable=False),
    sa.Column("config_schema", Json, nullable=False),
    sa.Column("discoverable", sa.Boolean, nullable=False),
    sa.Column("incarnation_id", Key, nullable=False),
    sa.Column("health_state", sa.String(16), nullable=False),
    sa.Column("observed_at", UtcDateTime, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("valid_from", UtcDateTime, nullable=False),
    # Reaping (migration 0005): the policy, and the health written in place on the current version.
    sa.Column("reap_kind", sa.String(8), nullable=True),  # after | never | NULL: the agent's default
    sa.Column("reap_after_seconds", sa.Integer, nullable=True),
    sa.Column("last_seen_at", UtcDateTime, nullable=True),
    sa.Column("last_sample_at", UtcDateTime, nullable=True),
    sa.Column("first_unreachable_at", UtcDateTime, nullable=True),
    sa.Column("unreachable_seconds", sa.Float, nullable=False, server_default="0"),
    sa.Column("last_error_code", sa.String(64), nullable=True),
    sa.Index("uq_targets_live_label", "label", unique=True, **_partial("head = 1")),
    sa.Index("ix_targets_live_namespace", "namespace", "label", **_partial("head = 1")),
    sa.Index("ix_targets_live_health", "health_state", "label", **_partial("head = 1")),
)

# One row per reaped target incarnation, never updated: who was reaped, when, after how long, with how much.
target_reap_audit = sa.Table(
    "target_reap_audit", metadata,
    sa.Column("incarnation_id", Key, primary_key=True),
    sa.Column("label", Label, nullable=False),
    sa.Column("namespace", Label, nullable=False),
    sa.Column("reaped_at", UtcDateTime, nullable=False),
    sa.Column("unreachable_seconds", sa.Float, nullable=False),
    sa.Column("resource_count", sa.Integer, nullable=False),
    sa.Column("last_error_code", sa.String(64), nullable=True),
    sa.Index("ix_target_reap_audit_label", "label", "reaped_at"),
)

policies = sa.Table(
    "policies", metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("version", Key, primary_key=True),
    sa.Column("head", sa.SmallInteger, nullable=False),
    sa.Column("operation", sa.String(16), nullable=False),
    sa.Column("label", Label, nullable=False),
    sa.Column("policy_type", sa.String(32), nullable=False),
    # '' for standalone policies: NULLs would not collide in the unique index below.
    sa.Column("stack_id", Key, nullable=False),
    sa.Column("data", Json, nullable=False),
    sa.Column("command_id", Key, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("valid_from", UtcDateTime, nullable=False),
    sa.Index("uq_policies_head", "id", unique=True, **_partial("head > 0")),
    sa.Index("uq_policies_live_label", "stack_id", "label", unique=True, **_partial("head = 1")),
)

stack_policies = sa.Table(
    "stack_policies", metadata,
    sa.Column("stack_id", Key, primary_key=True),
    sa.Column("policy_id", Key, primary_key=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Index("ix_stack_policies_policy", "policy_id"),
)

commands = sa.Table(
    "commands", metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("command", sa.String(32), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("mode", sa.String(16), nullable=True),
    sa.Column("source", sa.String(32), nullable=False),
    sa.Column("client_id", Label, nullable=False),
    sa.Column("agent_id", Key, nullable=False),
    sa.Column("agent_version", sa.String(64), nullable=False),
    sa.Column("subject", sa.Text, nullable=True),
    sa.Column("subject_name", sa.Text, nullable=True),
    sa.Column("description_text", sa.Text, nullable=False),
    sa.Column("description_confirm", sa.Boolean, nullable=False),
    sa.Column("force", sa.Boolean, nullable=False),
    sa.Column("simulate", sa.Boolean, nullable=False),
    sa.Column("start_ts", UtcDateTime, nullable=False),
    sa.Column("end_ts", UtcDateTime, nullable=True),
    sa.Column("modified_ts", UtcDateTime, nullable=False),
    sa.Column("data", Json, nullable=False),
    sa.Index("ix_commands_order", "start_ts", "id"),
    sa.Index("ix_commands_state", "state"),
    sa.Index("ix_commands_client", "client_id", "start_ts"),
)

resource_updates = sa.Table(
    "resource_updates", metadata,
    sa.Column("command_id", Key, sa.ForeignKey("commands.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("ksuid", Key, primary_key=True),
    sa.Column("operation", sa.String(16), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("resource_type", Label, nullable=False),
    sa.Column("resource_label", Label, nullable=False),
    sa.Column("stack_label", Label, nullable=False),
    sa.Column("start_ts", UtcDateTime, nullable=True),
    sa.Column("modified_ts", UtcDateTime, nullable=True),
    sa.Column("version", Key, nullable=True),
    sa.Column("group_id", Key, nullable=True),
    sa.Column("is_cascade", sa.Boolean, nullable=False),
    sa.Column("cascade_source", sa.Text, nullable=True),
    sa.Column("data", Json, nullable=False),
    # Reads go by command (the primary key); nothing reads updates by ksuid or by state alone (migration 0009).
    sa.Index("ix_resource_updates_stack", "stack_label", "command_id"),
    # A command followed by polls asks for the updates whose state was written since the last one (migration 0008),
    # a page at a time in this index's order (migration 0010).
    sa.Index("ix_resource_updates_modified", "command_id", "modified_ts", "ksuid", "operation"),
)

# A resource update's change as planned, keyed as its update: the change document (desired state with secrets
# hashed, prior state, patch, schema, dependencies…) and the plain-text desired state sealed when it holds
# secrets. Written once, with the command; a state transition writes only the update's row above, whose ``data``
# is the small progress (attempt, message…), instead of rewriting the whole change each time.
resource_changes = sa.Table(
    "resource_changes", metadata,
    sa.Column("command_id", Key, sa.ForeignKey("commands.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("ksuid", Key, primary_key=True),
    sa.Column("operation", sa.String(16), primary_key=True),
    sa.Column("change", Json, nullable=False),
    sa.Column("desired_sealed", sa.Text, nullable=True),
)

# The stacks a command covers beyond those of its resource updates: a reconcile apply is the new baseline of every
# stack its forma names, also where it changes nothing (``stack:`` queries match either table).
command_stacks = sa.Table(
    "command_stacks", metadata,
    sa.Column("command_id", Key, sa.ForeignKey("commands.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("stack_label", Label, primary_key=True),
    sa.Index("ix_command_stacks_stack", "stack_label", "command_id"),
)

background_runs = sa.Table(
    "background_runs", metadata,
    sa.Column("kind", sa.String(32), primary_key=True),
    sa.Column("scope", Label, primary_key=True),
    sa.Column("run_id", Key, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("started_at", UtcDateTime, nullable=False),
    sa.Column("finished_at", UtcDateTime, nullable=True),
    sa.Column("last_success_at", UtcDateTime, nullable=True),
    sa.Column("details", Json, nullable=False),
)

# Who leads among the agents sharing one datastore (``sql_lease``): one row per lease name (the agent's is
# "agent"), written only through compare-and-swap statements. ``epoch`` never decreases: each taking of the lease
# adds one, so an epoch names one leadership and fenced writes compare it. The times are the DATABASE's clock
# (``clock_timestamp()`` / SQLite's ``'now'``), never an agent's, so agents with skewed clocks agree on expiry;
# they are written and compared in SQL only (SQLite stores them as text, compared through ``julianday``).
LeaseTime = sa.DateTime(timezone=True)

leader_lease = sa.Table(
    "leader_lease", metadata,
    sa.Column("name", Label, primary_key=True),
    sa.Column("holder", sa.Text, nullable=True),  # the holder's agent id; NULL once released
    sa.Column("holder_url", sa.Text, nullable=False),  # where the holder serves its API ("" when released)
    sa.Column("epoch", sa.BigInteger, nullable=False),
    sa.Column("expires_at", LeaseTime, nullable=False),
    sa.Column("acquired_at", LeaseTime, nullable=False),
    sa.Column("renewed_at", LeaseTime, nullable=False),
)
