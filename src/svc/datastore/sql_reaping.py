"""Target health and reaping (engine.md §5.2, datastore-tests.md §1.6): observations, accrual, the reap itself.

Health is written in place on a target's current version, each write a compare-and-swap on what it read (the
version, the incarnation, the last sample), so two writers never both apply and a stale one changes nothing
(``False``, not an error). Unreachable time accrues between consecutive samples (observations and reaper ticks)
that are at most ``max_gap`` seconds apart: when nothing looked at a target for longer, its clock stopped.

The reap is one transaction: the target's compare-and-swap to ``reaped`` (its incarnation, still unreachable,
reapable, past its threshold), then a check that no apply or destroy in progress changes a resource on it, then
its resources' current rows marked reaped (``HEAD_REAPED``: invisible to every live read, refused to every late
write), then the immutable audit row. Any guard that fails rolls all of it back.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from svc.datastore.sql_base import SqlBase
from svc.datastore.sql_resources import version_of_row
from svc.datastore.tables import (
    HEAD_LIVE,
    HEAD_REAPED,
    HEAD_TOMBSTONE,
    commands,
    head_is,
    resource_changes,
    resources,
    target_reap_audit,
    targets,
)
from svc.model.records import ReapAudit, ResourceVersion, TargetReap

t, r, audit = targets, resources, target_reap_audit

# Carried from one version of a target to the next (a new config does not make a target reachable).
HEALTH_COLUMNS = ("incarnation_id", "health_state", "observed_at", "last_seen_at", "last_sample_at",
                  "first_unreachable_at", "unreachable_seconds", "last_error_code")
_ACTIVE_STATES = ("NotStarted", "Pending", "InProgress", "Canceling")


class _Busy(Exception):
    """A command in progress changes a resource on the target: the reap is rolled back."""


def _accrued(row: Any, at: datetime, max_gap: float) -> float:
    """Unreachable seconds accrued up to ``at``: the gap since the last sample counts when the target was
    unreachable then and the gap is short enough that nothing was missed."""
    before = float(row.unreachable_seconds or 0) if row.health_state == "unreachable" else 0.0
    if row.health_state != "unreachable" or row.last_sample_at is None:
        return before
    gap = (at - row.last_sample_at).total_seconds()
    return before + gap if 0 < gap <= max_gap else before


def _guarded(row: Any) -> list[sa.ColumnElement[bool]]:
    """The row as read: still the current version of the same incarnation, last sampled when it was."""
    sample = t.c.last_sample_at.is_(None) if row.last_sample_at is None else t.c.last_sample_at == row.last_sample_at
    return [t.c.label == row.label, t.c.version == row.version, head_is(t.c.head, HEAD_LIVE),
            t.c.incarnation_id == row.incarnation_id, t.c.health_state == row.health_state, sample]


def revive_resources(conn: sa.Connection, label: str) -> int:
    """The reaped resources of ``label`` live again (its recovery, in the caller's transaction), except one
    whose native id or managed label another live resource took meanwhile (that one stays reaped)."""
    other = r.alias("other")
    # Two lookups, each one a live-row index can answer (an OR of both scanned the table for every row).
    native_taken = sa.exists().where(head_is(other.c.head, HEAD_LIVE), other.c.target == r.c.target,
                                     other.c.type == r.c.type, other.c.native_id == r.c.native_id)
    label_taken = sa.exists().where(head_is(other.c.head, HEAD_LIVE), other.c.stack == r.c.stack,
                                    other.c.type == r.c.type, other.c.label == r.c.label, other.c.managed)
    taken = sa.or_(native_taken, sa.and_(r.c.managed, label_taken))
    revived = conn.execute(sa.update(r).where(r.c.target == label, head_is(r.c.head, HEAD_REAPED), ~taken)
                           .values(head=HEAD_LIVE, operation="update"))
    return int(revived.rowcount)


def forget_reaped_resources(conn: sa.Connection, label: str) -> int:
    """The reaped resources of ``label`` become delete tombstones (the target is deleted, in the caller's
    transaction): a destroy of a reaped target ends them, history kept."""
    forgotten = conn.execute(sa.update(r).where(r.c.target == label, head_is(r.c.head, HEAD_REAPED))
                             .values(head=HEAD_TOMBSTONE, operation="delete"))
    return int(forgotten.rowcount)


class ReapingStore(SqlBase):
    def observe_target(self, label: str, *, reachable: bool, at: datetime, max_gap: float,
                       error_code: str | None = None) -> bool:
        """Records that a plugin call on ``label`` at ``at`` reached its cloud (``reachable``) or failed to
        (NetworkFailure, ServiceTimeout). Out-of-order (not newer than the last observation), reaped or raced:
        not applied."""
        with self.write() as conn:
            row = conn.execute(sa.select(t).where(t.c.label == label, head_is(t.c.head, HEAD_LIVE))).first()
            if row is None or row.health_state == "reaped" or (row.observed_at is not None and row.observed_at >= at):
                return False
            if reachable:
                values: dict[str, Any] = {"health_state": "reachable", "last_seen_at": at, "first_unreachable_at": None,
                                          "unreachable_seconds": 0.0, "last_error_code": None}
            else:
                values = {"health_state": "unreachable", "unreachable_seconds": _accrued(row, at, max_gap),
                          "first_unreachable_at": (row.first_unreachable_at if row.health_state == "unreachable"
                                                   else None) or at,
                          "last_error_code": error_code}
            last_sample = max(at, row.last_sample_at) if row.last_sample_at is not None else at
            done = conn.execute(sa.update(t).where(*_guarded(row))
                                .values(observed_at=at, last_sample_at=last_sample, **values))
            return done.rowcount == 1

    def advance_target_accrual(self, label: str, incarnation_id: str, at: datetime, max_gap: float) -> bool:
        """A reaper tick: the unreachable target's clock runs on to ``at`` (if it was sampled within ``max_gap``
        seconds); not applied when it is no longer that unreachable incarnation."""
        with self.write() as conn:
            row = conn.execute(sa.select(t).where(t.c.label == label, head_is(t.c.head, HEAD_LIVE))).first()
            if row is None or row.incarnation_id != incarnation_id or row.health_state != "unreachable":
                return False
            if row.last_sample_at is not None and at <= row.last_sample_at:
                return False
            accrued = _accrued(row, at, max_gap)
            if accrued == float(row.unreachable_seconds or 0):
                return False  # the clock stopped: no sample for too long
            done = conn.execute(sa.update(t).where(*_guarded(row))
                                .values(unreachable_seconds=accrued, last_sample_at=at))
            return done.rowcount == 1

    def reap_target(self, label: str, incarnation_id: str, *, threshold: float, at: datetime) -> TargetReap | None:
        """Reaps the target if every guard holds (see the module); None when one does not (nothing changed)."""

        def work(conn: sa.Connection) -> TargetReap | None:
            row = conn.execute(sa.select(t).where(t.c.label == label, head_is(t.c.head, HEAD_LIVE))).first()
            if row is None:
                return None
            swapped = conn.execute(sa.update(t).where(
                t.c.label == label, t.c.version == row.version, head_is(t.c.head, HEAD_LIVE),
                t.c.incarnation_id == incarnation_id, t.c.health_state == "unreachable",
                sa.func.coalesce(t.c.reap_kind, "after") != "never", t.c.unreachable_seconds >= threshold,
            ).values(health_state="reaped", observed_at=at))
            if swapped.rowcount != 1:
                return None
            busy = conn.execute(
                sa.select(sa.literal(1)).select_from(resource_changes.join(
                    commands, commands.c.id == resource_changes.c.command_id))
                .where(commands.c.state.in_(_ACTIVE_STATES), commands.c.command.in_(("apply", "destroy")),
                       resource_changes.c.change["target"].as_string() == label).limit(1)).first()
            if busy is not None:
                raise _Busy(label)
            on_target = (r.c.target == label, head_is(r.c.head, HEAD_LIVE))
            stacks = sorted(conn.execute(sa.select(r.c.stack).where(*on_target).distinct()).scalars())
            count = conn.execute(sa.update(r).where(*on_target).values(head=HEAD_REAPED, operation="reaped")).rowcount
            reaped = TargetReap(label=label, incarnation_id=incarnation_id, reaped_at=at,
                                unreachable_seconds=float(row.unreachable_seconds), resource_count=int(count),
                                stacks=tuple(stacks))
            conn.execute(sa.insert(audit).values(
                incarnation_id=incarnation_id, label=label, namespace=row.namespace, reaped_at=at,
                unreachable_seconds=reaped.unreachable_seconds, resource_count=reaped.resource_count,
                last_error_code=row.last_error_code))
            return reaped

        try:
            return self.write_retrying(work)
        except _Busy:
            return None

    def reaped_targets(self, labels: Iterable[str]) -> set[str]:
        """Which of ``labels`` are reaped targets."""
        wanted = sorted(set(labels))
        if not wanted:
            return set()
        with self.read() as conn:
            return set(conn.execute(sa.select(t.c.label).where(
                t.c.label.in_(wanted), head_is(t.c.head, HEAD_LIVE), t.c.health_state == "reaped")).scalars())

    def list_reaped_resources(self, target: str) -> list[ResourceVersion]:
        """The resources reaped with ``target``, as they were (what declaring it again brings back)."""
        with self.read() as conn:
            rows = conn.execute(sa.select(r).where(r.c.target == target, head_is(r.c.head, HEAD_REAPED))
                                .order_by(r.c.type, r.c.label, r.c.ksuid)).all()
        return [version_of_row(row) for row in rows]

    def reap_audit(self, label: str | None = None) -> list[ReapAudit]:
        """The audit rows (of one target label), oldest first."""
        statement = sa.select(audit).order_by(audit.c.reaped_at, audit.c.incarnation_id)
        if label is not None:
            statement = statement.where(audit.c.label == label)
        with self.read() as conn:
            return [ReapAudit(incarnation_id=m.incarnation_id, label=m.label, namespace=m.namespace,
                              reaped_at=m.reaped_at, unreachable_seconds=float(m.unreachable_seconds),
                              resource_count=int(m.resource_count), last_error_code=m.last_error_code)
                    for m in conn.execute(statement)]
