"""Bookkeeping of background runs (discovery, synchronization): overlap protection and last-run times."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from svc.datastore.sql_base import SqlBase, json_value, now
from svc.datastore.tables import background_runs
from svc.ids import new_id
from svc.model.records import RunRecord, RunState

b = background_runs


def _run(row: sa.Row[Any]) -> RunRecord:
    m = row._mapping
    return RunRecord(kind=m["kind"], scope=m["scope"], state=m["state"], started_at=m["started_at"],
                     finished_at=m["finished_at"], last_success_at=m["last_success_at"], details=m["details"])


class RunStore(SqlBase):
    def begin_run(self, kind: str, scope: str, *, stale_after: timedelta) -> str | None:
        """Claims the (kind, scope) run and returns its run id, or None while another claim is running and
        younger than ``stale_after`` (a crashed run's claim expires). One conditional write, so two agents
        or loops never both win."""
        run_id, at = new_id(), now()
        with self.write() as conn:
            statement = self.insert(b).values(kind=kind, scope=scope, run_id=run_id, state=str(RunState.RUNNING),
                                              started_at=at, finished_at=None, last_success_at=None, details={})
            statement = statement.on_conflict_do_update(
                index_elements=[b.c.kind, b.c.scope],
                set_={"run_id": run_id, "state": str(RunState.RUNNING), "started_at": at, "finished_at": None},
                where=sa.or_(b.c.state != str(RunState.RUNNING), b.c.started_at < at - stale_after))
            return run_id if conn.execute(statement.returning(b.c.run_id)).first() is not None else None

    def finish_run(self, kind: str, scope: str, run_id: str, *, succeeded: bool,
                   details: dict[str, Any] | None = None) -> bool:
        """Ends the run ``run_id``; False if its claim was taken over meanwhile (it went stale)."""
        at = now()
        values: dict[str, Any] = {"state": str(RunState.SUCCEEDED if succeeded else RunState.FAILED),
                                  "finished_at": at, "details": json_value(details or {})}
        if succeeded:
            values["last_success_at"] = at
        with self.write() as conn:
            done = conn.execute(sa.update(b).where(b.c.kind == kind, b.c.scope == scope, b.c.run_id == run_id,
                                                   b.c.state == str(RunState.RUNNING)).values(**values))
            return done.rowcount == 1

    def get_run(self, kind: str, scope: str) -> RunRecord | None:
        with self.read() as conn:
            row = conn.execute(sa.select(b).where(b.c.kind == kind, b.c.scope == scope)).first()
        return _run(row) if row is not None else None
