"""Many resource-update state changes in one transaction (the engine's group commit).

A batch is one read of the current states (rows locked on PostgreSQL; SQLite's write transaction is
exclusive already), the fence applied in memory write by write, then one ``executemany`` UPDATE per
combination of columns. Running one UPDATE per write cost ~0.1 ms of Python each in SQLAlchemy, and
the engine writes two or three per resource change.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from svc.datastore.bulk import BulkStatement
from svc.datastore.records import TERMINAL_UPDATE_STATES
from svc.datastore.sql_base import SqlBase, now
from svc.datastore.tables import resource_updates
from svc.datastore.update_writes import UpdateStateWrite

u = resource_updates
_OPTIONAL = ("version", "data", "start_ts")
_LOOKUP_CHUNK = 400  # ksuids per state lookup (well under every backend's bind-parameter limit)
Key = tuple[str, str, str]


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
_CURRENT = (sa.select(u.c.command_id, u.c.ksuid, u.c.operation, u.c.state)
            .where(u.c.command_id.in_(sa.bindparam("commands", expanding=True)),
                   u.c.ksuid.in_(sa.bindparam("ksuids", expanding=True)))
            .order_by(u.c.command_id, u.c.ksuid, u.c.operation).with_for_update())


class UpdateBatchStore(SqlBase):
    def set_resource_update_states(self, writes: Sequence[UpdateStateWrite]) -> list[bool]:
        """``set_resource_update_state`` for each write, in order, in one transaction (terminal states stay
        final); returns whether each moved."""
        with self.write() as conn:
            return self._set_states(conn, writes)

    def _set_states(self, conn: sa.Connection, writes: Sequence[UpdateStateWrite]) -> list[bool]:
        """``set_resource_update_states`` inside the caller's write transaction."""
        moved: list[bool] = []
        if writes:
            at = now()  # once the write lock is held (SQLite), for ``get_resource_update_summaries(modified_since)``
            states = self._current_states(conn, writes)
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
            for row in rows.values():
                shapes.setdefault(tuple(n for n in _OPTIONAL if f"p_{n}" in row), []).append(row)
            for present, group in shapes.items():
                _statement(present).execute(conn, group)
        return moved

    @staticmethod
    def _current_states(conn: sa.Connection, writes: Sequence[UpdateStateWrite]) -> dict[Key, str]:
        """The stored state of each update the batch writes (locked until commit on PostgreSQL, so that no
        concurrent cancel slips between this read and the UPDATE, whose own fence stays as a backstop)."""
        wanted = {(w.command_id, w.ksuid, w.operation) for w in writes}
        commands = sorted({key[0] for key in wanted})
        ksuids = sorted({key[1] for key in wanted})
        found: dict[Key, str] = {}
        for start in range(0, len(ksuids), _LOOKUP_CHUNK):
            for row in conn.execute(_CURRENT, {"commands": commands, "ksuids": ksuids[start:start + _LOOKUP_CHUNK]}):
                key = (row.command_id, row.ksuid, row.operation)
                if key in wanted:
                    found[key] = row.state
        return found
