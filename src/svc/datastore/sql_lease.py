"""The leader lease: which of the agents sharing one datastore leads, decided by the database alone.

Every operation is one compare-and-swap statement, so two agents racing never both win, and every time is the
database's clock, so agents with skewed clocks agree on expiry. PostgreSQL's ``clock_timestamp()`` rather than
``now()``: ``now()`` is the transaction's start, and a takeover that waited for the row lock would otherwise
write an expiry already shortened by the wait. SQLite's ``'now'`` is the time of the statement.

The lease's own writes are never fenced (taking the lease is how a process comes to write) and never wait long
for the row: each sets ``lock_timeout`` (PostgreSQL). The row is share-locked by the leader's in-flight fenced
writes (``write_fence``), so a takeover waits for them, up to that timeout; an acquire that times out answers
None (try again), a renewal or release raises ``DatastoreUnavailable``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from svc.datastore.errors import DatastoreUnavailable
from svc.datastore.sql_base import SqlBase
from svc.datastore.write_fence import AGENT_LEASE, LostCallback, WriteFence
from svc.model.records import LeaseRecord

log = logging.getLogger("svc.datastore")

# How long a lease write waits for the row lock (PostgreSQL) before giving up: the fenced write transactions that
# hold it last milliseconds, so waiting longer only means one of them is stuck (the idle timeout ends it).
LOCK_TIMEOUT_MS = 1_000
_LOCK_NOT_AVAILABLE = "55P03"  # SQLSTATE of a lock_timeout


class _Clock:
    """The database clock in one dialect's SQL: now, now plus ``:seconds``, and seconds left until a time."""

    def __init__(self, now: str, later: str, expired: str, remaining: str) -> None:
        self.now, self.later, self.expired, self.remaining = now, later, expired, remaining


_POSTGRES = _Clock(
    now="clock_timestamp()",
    later="clock_timestamp() + CAST(:seconds AS double precision) * interval '1 second'",
    expired="expires_at <= clock_timestamp()",
    remaining="CAST(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) AS double precision)")
# SQLite keeps times as text; julianday() makes them numbers (days) with sub-millisecond precision.
_SQLITE = _Clock(
    now="strftime('%Y-%m-%d %H:%M:%f', 'now')",
    later="strftime('%Y-%m-%d %H:%M:%f', julianday('now') + CAST(:seconds AS REAL) / 86400.0)",
    expired="julianday(expires_at) <= julianday('now')",
    remaining="(julianday(expires_at) - julianday('now')) * 86400.0")


def _clock(conn: sa.Connection) -> _Clock:
    return _POSTGRES if conn.dialect.name == "postgresql" else _SQLITE


class _LeaseBusy(DatastoreUnavailable):
    """The lease row stayed locked past ``LOCK_TIMEOUT_MS`` (a takeover or in-flight writes): try again."""


def _execute(conn: sa.Connection, sql: str, params: dict[str, Any]) -> sa.CursorResult[Any]:
    """Runs one lease statement; a lock timeout becomes ``_LeaseBusy``, raised as no SQLAlchemy error so that the
    transaction is rolled back without being counted as a datastore outage (the database answered)."""
    try:
        return conn.execute(sa.text(sql), params)
    except sa.exc.DBAPIError as error:
        if getattr(error.orig, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
            raise _LeaseBusy("the leader lease is locked by a takeover or by in-flight writes; try again") from None
        raise


class LeaseStore(SqlBase):
    @contextmanager
    def _lease_write(self) -> Iterator[sa.Connection]:
        with self.write(fenced=False) as conn:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{int(LOCK_TIMEOUT_MS)}ms'")
            yield conn

    def read_lease(self, name: str = AGENT_LEASE) -> LeaseRecord | None:
        """The lease as stored now, its remaining time by the database clock; None if nobody ever took it."""
        with self.read() as conn:
            row = conn.execute(sa.text(f"SELECT holder, holder_url, epoch, {_clock(conn).remaining} AS remaining "
                                       "FROM leader_lease WHERE name = :name"), {"name": name}).first()
        if row is None:
            return None
        return LeaseRecord(holder=row.holder, holder_url=row.holder_url, epoch=int(row.epoch),
                           remaining=float(row.remaining))

    def acquire_lease(self, holder: str, holder_url: str, duration: float, name: str = AGENT_LEASE) -> int | None:
        """Takes the lease if it is released or expired (by the database clock), or was never taken: the next
        epoch, ``holder``, ``holder_url``, an expiry ``duration`` seconds from now. Returns the new epoch; None
        while another holder's lease runs, or when the row stayed locked past ``LOCK_TIMEOUT_MS``."""
        params = {"name": name, "holder": holder, "url": holder_url, "seconds": float(duration)}
        try:
            with self._lease_write() as conn:
                clock = _clock(conn)
                # A plain UPDATE first: while the lease runs its WHERE is false on the row as read, so a follower's
                # attempt takes no row lock and never queues the leader's fenced writes behind it.
                taken = _execute(conn, f"""
                    UPDATE leader_lease SET holder = :holder, holder_url = :url, epoch = epoch + 1,
                        expires_at = {clock.later}, acquired_at = {clock.now}, renewed_at = {clock.now}
                    WHERE name = :name AND (holder IS NULL OR {clock.expired})
                    RETURNING epoch""", params).first()
                if taken is None:
                    # The first taking creates the row; DO NOTHING when it exists (held, or created meanwhile).
                    taken = _execute(conn, f"""
                        INSERT INTO leader_lease (name, holder, holder_url, epoch, expires_at, acquired_at, renewed_at)
                        VALUES (:name, :holder, :url, 1, {clock.later}, {clock.now}, {clock.now})
                        ON CONFLICT (name) DO NOTHING
                        RETURNING epoch""", params).first()
        except _LeaseBusy:
            self._end_stale_writers(name)
            return None
        return int(taken[0]) if taken is not None else None

    def _end_stale_writers(self, name: str) -> None:
        """An expired lease whose row stays share-locked: write transactions of a holder that stopped in the middle
        (SIGSTOP, a frozen VM) hold it. One idle between statements ends by itself (``write_fence``'s idle timeout);
        one stopped inside a statement's exchange (psycopg pipelines a batch's rows) looks active to the server,
        which waits for it forever. The database ends such sessions, as it would a dead client's: their writes roll
        back, and the stopped holder, resumed, finds the lease taken. Only while the lease is expired (by the
        database clock, in this very statement), so a live leader's writes are never touched."""
        with self.read() as conn:
            if conn.dialect.name != "postgresql":
                return
            ended = conn.execute(sa.text("""
                SELECT count(pg_terminate_backend(locks.pid)) FROM pg_locks AS locks, leader_lease AS lease
                WHERE lease.name = :name AND (lease.holder IS NULL OR lease.expires_at <= clock_timestamp())
                  AND locks.relation = CAST('leader_lease' AS regclass) AND locks.mode = 'RowShareLock'
                  AND locks.granted AND locks.pid <> pg_backend_pid()"""), {"name": name}).scalar_one()
        if ended:
            log.warning("ended %d database session(s) of the expired leader that still held the lease row", ended)

    def renew_lease(self, holder: str, epoch: int, duration: float, name: str = AGENT_LEASE) -> bool:
        """Extends the lease to ``duration`` seconds from now if ``holder`` still holds it at ``epoch``, even if it
        expired meanwhile (an unchanged epoch proves nobody took over, e.g. during a datastore outage). False when
        it was taken or released since. ``DatastoreUnavailable`` when the row stayed locked too long."""
        with self._lease_write() as conn:
            renewed = _execute(conn, f"""
                UPDATE leader_lease SET expires_at = {_clock(conn).later}, renewed_at = {_clock(conn).now}
                WHERE name = :name AND holder = :holder AND epoch = :epoch""",
                {"name": name, "holder": holder, "epoch": epoch, "seconds": float(duration)})
            return renewed.rowcount == 1

    def release_lease(self, holder: str, epoch: int, name: str = AGENT_LEASE) -> bool:
        """Hands the lease over at once (no holder, expired now, epoch kept) if ``holder`` holds it at ``epoch``;
        False otherwise. ``DatastoreUnavailable`` when the row stayed locked too long."""
        with self._lease_write() as conn:
            released = _execute(conn, f"""
                UPDATE leader_lease SET holder = NULL, holder_url = '', expires_at = {_clock(conn).now}
                WHERE name = :name AND holder = :holder AND epoch = :epoch""",
                {"name": name, "holder": holder, "epoch": epoch})
            return released.rowcount == 1

    def fence_writes(self, epoch: int | None, on_lost: LostCallback | None = None) -> None:
        """From now on every write transaction of this datastore object first checks, inside the transaction and
        under a share lock on the lease row, that the ``agent`` lease is held at ``epoch`` (``write_fence``);
        ``LeadershipLost`` otherwise, after ``on_lost(found epoch)`` the first time. ``epoch=None``: this process
        does not lead, every write raises ``LeadershipLost`` at once. Never called: writes are not fenced.
        ``on_lost`` runs on the writing thread, inside the refused transaction: it must return at once (set an
        event, schedule the exit)."""
        self.write_fence = WriteFence(epoch, on_lost)
