"""Aggregate counts for the agent's stats: a handful of GROUP BY queries, never a walk over the rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from svc.datastore.sql_base import SqlBase
from svc.datastore.tables import HEAD_LIVE, commands, head_is, resources, stacks, targets
from svc.model.records import DatastoreCounts

# Background commands are bookkeeping, not user activity: the reference leaves them out of the counts.
_BACKGROUND_COMMANDS = ("sync", "discovery")


def _grouped(rows: Any) -> dict[str, int]:
    return {str(key): int(count) for key, count in rows}


class StatsStore(SqlBase):
    def counts(self) -> DatastoreCounts:
        """Counts of what is stored, in one read transaction (a consistent snapshot)."""
        r, c, s, t = resources, commands, stacks, targets
        user_commands = c.c.command.not_in(_BACKGROUND_COMMANDS)
        with self.read() as conn:
            by_type = conn.execute(
                sa.select(r.c.type, r.c.managed, sa.func.count())
                .where(head_is(r.c.head, HEAD_LIVE)).group_by(r.c.type, r.c.managed)).all()
            clients = conn.execute(
                sa.select(sa.func.count(sa.distinct(c.c.client_id))).where(c.c.client_id != "")).scalar_one()
            by_command = _grouped(conn.execute(
                sa.select(c.c.command, sa.func.count()).where(user_commands).group_by(c.c.command)))
            by_state = _grouped(conn.execute(
                sa.select(c.c.state, sa.func.count()).where(user_commands).group_by(c.c.state)))
            stack_count = conn.execute(
                sa.select(sa.func.count()).select_from(s).where(head_is(s.c.head, HEAD_LIVE))).scalar_one()
            by_namespace = _grouped(conn.execute(
                sa.select(t.c.namespace, sa.func.count()).where(head_is(t.c.head, HEAD_LIVE),
                                                                t.c.health_state != "reaped")
                .group_by(t.c.namespace)))
            # Reap-pending: unreachable now, and a reap policy applies (not NeverReap).
            by_health = _grouped(conn.execute(
                sa.select(t.c.health_state, sa.func.count()).where(
                    head_is(t.c.head, HEAD_LIVE), sa.func.coalesce(t.c.reap_kind, "after") != "never")
                .group_by(t.c.health_state)))
            reaped = conn.execute(sa.select(sa.func.count()).select_from(t).where(
                head_is(t.c.head, HEAD_LIVE), t.c.health_state == "reaped")).scalar_one()
        managed: dict[str, int] = {}
        unmanaged: dict[str, int] = {}
        for type_, is_managed, count in by_type:
            bucket = managed if is_managed else unmanaged
            bucket[type_] = bucket.get(type_, 0) + int(count)
        return DatastoreCounts(
            clients=int(clients), commands=by_command, command_states=by_state, stacks=int(stack_count),
            managed_by_type=managed, unmanaged_by_type=unmanaged, targets_by_namespace=by_namespace,
            reap_pending_targets=by_health.get("unreachable", 0), reaped_targets=int(reaped),
        )


def namespace_of(resource_type: str) -> str:
    """``AWS::S3::Bucket`` → ``AWS``: resource types are ``NAMESPACE::SERVICE::RESOURCE``."""
    return resource_type.split("::", 1)[0]


def by_namespace(counts: Mapping[str, int]) -> dict[str, int]:
    """Per-type counts summed per namespace."""
    out: dict[str, int] = {}
    for resource_type, count in counts.items():
        namespace = namespace_of(resource_type)
        out[namespace] = out.get(namespace, 0) + count
    return out
