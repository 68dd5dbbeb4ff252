"""Many resource-update state changes in one transaction (the engine's group commit).

The fence (a terminal state never changes) is applied in memory write by write, then one ``executemany``
UPDATE per combination of columns writes the row each update ends as; the UPDATE carries the fence too.
Running one UPDATE per write cost ~0.1 ms of Python each in SQLAlchemy, and the engine writes two or three
per resource change.

The fence in memory needs to know which updates are terminal already. Almost never is one (only a cancel
racing the engine, or an update that does not exist), so a batch first assumes none is and lets the
UPDATEs' row counts prove it: a row per update means every one was there and not terminal, which is all
the in-memory fence would have read. Otherwise the transaction is rolled back and run again reading the
stored states first (rows locked on PostgreSQL; SQLite's write transaction is exclusive already), as it is
where the driver cannot count an ``executemany`` (the Data API). The read cost a statement per batch.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from svc.datastore.bulk import BulkStatement
from svc.datastore.sql_base import Retry, SqlBase, now
from svc.datastore.tables import resource_updates
from svc.datastore.update_writes import UpdateStateWrite
from svc.model.states import TERMINAL_UPDATE_STATES

u = resource_updates
_OPTIONAL = ("version", "data", "start_ts")
_LOOKUP_CHUNK = 400  # ksuids per state lookup (well under every backend's bind-parameter limit)
Key = tuple[str, str, str]
_NOT_TERMINAL = "(assumed not terminal)"  # the stored state a batch assumes until its row counts say otherwise


@functools.cache
def _statement(present: tuple[str, ...]) -> BulkStatement:
    """The fenced UPDATE for one combination of optional columns, built once. The terminal states are
    literals, not an expanding IN list, so that ``executemany`` can take it."""
    values: dict[str, Any] = {"state": sa.bindparam("p_state"), "modified_ts": sa.bindparam("p_modified_ts")}
    for name in present:
        values[name] = sa.bindparam(f"p_{name}", type_=u.c[name].type)
    terminal = [sa.literal(str(state)) for state in TERMINAL_UPDATE_STATES]
    return BulkStatement(
        sa.update(u).where(u.c.command_id == sa.bindparam("p_command_id"), u.c.ksuid == sa.bindparam("p_ksuid"),
                           u.c.operation == sa.bindparam("p_operation"), u.c.state.not_in(terminal))
        .values(**values))


# Built once, with expanding lists (see ``sql_resource_batch``).
CURRENT_STATES = (sa.select(u.c.command_id, u.c.ksuid, u.c.operation, u.c.state)
                 .where(u.c.command_id.in_(sa.bindparam("commands", expanding=True)),
                        u.c.ksuid.in_(sa.bindparam("ksuids", expanding=True)))
                 .order_by(u.c.command_id, u.c.ksuid, u.c.operation).with_for_update())


class StatesChanged(Retry):
    """An update a batch assumed not terminal was terminal (or missing): the transaction runs again."""


class UpdateBatchStore(SqlBase):
    def set_resource_update_states(self, writes: Sequence[UpdateStateWrite]) -> list[bool]:
        """``set_resource_update_state`` for each write, in order, in one transaction (terminal states stay
        final); returns whether each moved."""
        fence = StateFence(self.engine.dialect)
        return self.write_retrying(lambda conn: fence.write(conn, writes))


class StateFence:
    """Writes a transaction's state changes, assuming no update is terminal until a row count says otherwise;
    after that (``StatesChanged``, a ``Retry``: the caller's transaction runs again) it reads them first."""

    def __init__(self, dialect: sa.Dialect) -> None:
        self.read_first = not dialect.supports_sane_multi_rowcount

    def write(self, conn: sa.Connection, writes: Sequence[UpdateStateWrite]) -> list[bool]:
        """``set_resource_update_states`` inside the caller's write transaction."""
        if not writes:
            return []
        at = now()  # once the write lock is held (SQLite), for ``get_resource_update_summaries(modified_since)``
        assumed = not self.read_first
        states = ({(w.command_id, w.ksuid, w.operation): _NOT_TERMINAL for w in writes} if assumed
                  else _current_states(conn, writes))
        moved: list[bool] = []
        rows: dict[Key, dict[str, Any]] = {}  # the row each update ends as: its moved writes, in order
        for write in writes:
            key = (write.command_id, write.ksuid, write.operation)
            current = states.get(key)
            if current is None or current in TERMINAL_UPDATE_STATES:
                moved.append(False)
                continue
            moved.append(True)
            states[key] = str(write.state)
            row = rows.setdefault(key, {"p_command_id": key[0], "p_ksuid": key[1], "p_operation": key[2],
                                        "p_modified_ts": at})
            row["p_state"] = str(write.state)
            for name in _OPTIONAL:
                if getattr(write, name) is not None:
                    row[f"p_{name}"] = getattr(write, name)
        shapes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for _, row in sorted(rows.items()):  # rows locked in key order, as the read-first path locks them
            shapes.setdefault(tuple(n for n in _OPTIONAL if f"p_{n}" in row), []).append(row)
        written = sum(_statement(present).execute(conn, group) for present, group in shapes.items())
        if assumed and written != len(rows):
            self.read_first = True
            raise StatesChanged("an update was terminal or missing; writing the batch again, reading states first")
        return moved


def _current_states(conn: sa.Connection, writes: Sequence[UpdateStateWrite]) -> dict[Key, str]:
    """The stored state of each update the batch writes (locked until commit on PostgreSQL, so that no
    concurrent cancel slips between this read and the UPDATE, whose own fence stays as a backstop)."""
    wanted = {(w.command_id, w.ksuid, w.operation) for w in writes}
    commands = sorted({key[0] for key in wanted})
    ksuids = sorted({key[1] for key in wanted})
    found: dict[Key, str] = {}
    for start in range(0, len(ksuids), _LOOKUP_CHUNK):
        for row in conn.execute(CURRENT_STATES, {"commands": commands, "ksuids": ksuids[start:start + _LOOKUP_CHUNK]}):
            key = (row.command_id, row.ksuid, row.operation)
            if key in wanted:
                found[key] = row.state
    return found
