"""Write fencing: a write transaction commits only while this process still holds the leader lease's epoch.

Once ``fence_writes(epoch)`` was called on a datastore, every write transaction first runs, inside the same
transaction, ``SELECT epoch … FROM leader_lease WHERE name = 'agent' FOR SHARE``. The share lock is what makes the
fence hold against a paused process: a takeover's ``UPDATE leader_lease`` waits until every write transaction
holding it has ended, and a write that begins after the takeover committed reads the new epoch and rolls back.
So an ex-leader stopped by SIGSTOP (or a long GC pause, or a network partition) never writes after losing the
lease. SQLite needs no lock for that: its write transactions are serial (``BEGIN IMMEDIATE``).

A paused process could keep that share lock forever inside an open transaction, and with it block every
takeover; the same statement therefore sets ``idle_in_transaction_session_timeout`` for the transaction
(``set_config(…, true)`` is ``SET LOCAL``), so that the server ends such a session and the takeover proceeds.
Both happen in one statement, hence one round trip, on psycopg and through the Data API alike (neither takes two
statements in one call with parameters, and ``set_config`` also keeps the Data API driver from wrapping the
``FOR SHARE`` read in its paging SQL).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import sqlalchemy as sa

from svc.datastore.errors import LeadershipLost

AGENT_LEASE = "agent"  # the lease the agents share (``leader_lease.name``); the only one fenced writes check

# How long a fenced write transaction may sit idle (between statements) before PostgreSQL ends its session: the
# longest a paused ex-leader can delay a takeover. Long enough for the Python work between a transaction's
# statements on a loaded machine (milliseconds normally), short next to a lease of ~10 s. Read at each check, so
# tests can shorten it.
IDLE_IN_TRANSACTION_TIMEOUT_MS = 5_000

_POSTGRES_CHECK = ("SELECT epoch, holder IS NULL, set_config('idle_in_transaction_session_timeout', '{ms}', true) "
                   f"FROM leader_lease WHERE name = '{AGENT_LEASE}' FOR SHARE")
_SQLITE_CHECK = f"SELECT epoch, holder IS NULL FROM leader_lease WHERE name = '{AGENT_LEASE}'"

LostCallback = Callable[[int | None], None]


class WriteFence:
    """The epoch this process writes under (None: it does not lead, nothing may be written), and what to call
    the first time a check finds the lease lost. Thread-safe: write transactions run on many threads."""

    def __init__(self, epoch: int | None, on_lost: LostCallback | None = None) -> None:
        self.epoch = epoch
        self.on_lost = on_lost
        self._lock = threading.Lock()
        # Epochs only grow, so a lease once lost stays lost: later writes are refused without a round trip.
        # (message, epoch found): each refusal raises a fresh error, as threads must not share one traceback.
        self._lost: tuple[str, int | None] | None = None if epoch is not None else (
            "this agent does not lead: only the leader writes to the datastore; try again shortly", None)

    def refuse_if_lost(self) -> None:
        """Raises ``LeadershipLost`` at once, without touching the database, when writing is known to be refused."""
        if (lost := self._lost) is not None:
            raise LeadershipLost(lost[0], epoch=lost[1])

    def check(self, conn: sa.Connection) -> None:
        """Inside ``conn``'s write transaction: raises ``LeadershipLost`` unless the lease is held at our epoch."""
        self.refuse_if_lost()
        if conn.dialect.name == "postgresql":
            sql = _POSTGRES_CHECK.format(ms=int(IDLE_IN_TRANSACTION_TIMEOUT_MS))
        else:
            sql = _SQLITE_CHECK
        row = conn.exec_driver_sql(sql).first()
        found, released = (int(row[0]), bool(row[1])) if row is not None else (None, True)
        if found == self.epoch and not released:
            return
        self._lose(found)

    def _lose(self, found: int | None) -> None:
        if found is None:
            reason = "no agent has taken the leader lease"
        elif found == self.epoch:
            reason = f"this agent released the leader lease (epoch {found})"
        else:
            reason = f"another agent took the leader lease (epoch {found}; this agent's was {self.epoch})"
        message = f"this agent no longer leads: {reason}; try again shortly"
        with self._lock:
            first = self._lost is None
            if first:
                self._lost = (message, found)
        if first and self.on_lost is not None:
            self.on_lost(found)
        raise LeadershipLost(message, epoch=found)
