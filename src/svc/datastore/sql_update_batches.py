"""Many resource-update state changes in one transaction (the engine's group commit)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from svc.datastore.records import TERMINAL_UPDATE_STATES
from svc.datastore.sql_base import SqlBase, json_value, now
from svc.datastore.tables import resource_updates
from svc.datastore.update_writes import UpdateStateWrite

u = resource_updates
_OPTIONAL = ("version", "data", "start_ts")


@functools.cache
def _statement(present: tuple[str, ...]) -> sa.Update:
    """The fenced UPDATE for one combination of optional columns, built once: building statements costs
    more CPU than running them, and a batch runs hundreds."""
    values: dict[str, Any] = {"state": sa.bindparam("p_state"), "modified_ts": sa.bindparam("p_modified_ts")}
    for name in present:
        values[name] = sa.bindparam(f"p_{name}", type_=u.c[name].type)
    return (sa.update(u).where(u.c.command_id == sa.bindparam("p_command_id"), u.c.ksuid == sa.bindparam("p_ksuid"),
                               u.c.operation == sa.bindparam("p_operation"),
                               u.c.state.not_in(list(TERMINAL_UPDATE_STATES)))
            .values(**values))


class UpdateBatchStore(SqlBase):
    def set_resource_update_states(self, writes: Sequence[UpdateStateWrite]) -> list[bool]:
        """``set_resource_update_state`` for each write, in order, in one transaction (terminal states stay
        final); returns whether each moved."""
        at = now()
        moved: list[bool] = []
        with self.write() as conn:
            for write in writes:
                params: dict[str, Any] = {"p_state": str(write.state), "p_modified_ts": at,
                                          "p_command_id": write.command_id, "p_ksuid": write.ksuid,
                                          "p_operation": write.operation}
                present = tuple(name for name in _OPTIONAL if getattr(write, name) is not None)
                for name in present:
                    value = getattr(write, name)
                    params[f"p_{name}"] = json_value(value) if name == "data" else value
                done = conn.execute(_statement(present), params)
                moved.append(done.rowcount == 1)
        return moved
