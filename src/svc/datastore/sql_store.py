"""The SQLAlchemy-backed datastore: one implementation for every SQL backend, composed of its parts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa

from svc.datastore.sql_catalog import CatalogStore
from svc.datastore.sql_change_batches import ChangeBatchStore
from svc.datastore.sql_changes import ChangesStore
from svc.datastore.sql_commands import CommandStore
from svc.datastore.sql_lease import LeaseStore
from svc.datastore.sql_reaping import ReapingStore
from svc.datastore.sql_resources import ResourceStore
from svc.datastore.sql_runs import RunStore
from svc.datastore.sql_stats import StatsStore
from svc.datastore.sql_stored_documents import StoredDocumentsStore
from svc.datastore.sql_update_batches import UpdateBatchStore


class SqlDatastore(ChangeBatchStore, ResourceStore, CatalogStore, ReapingStore, CommandStore, RunStore, StatsStore,
                   ChangesStore, UpdateBatchStore, LeaseStore, StoredDocumentsStore):
    """Implements ``Datastore`` over a SQLAlchemy engine (SQLite, PostgreSQL, or any driver that speaks
    PostgreSQL's dialect, such as a Data API DB-API adapter)."""

    def end_command(self, command_id: str, state: str | None, *, end_ts: datetime,
                    emptied_targets: Sequence[str] = (), emptied_stacks: Sequence[str] = ()) -> bool:
        """A command's end as one transaction: each of ``emptied_targets`` that holds no resource now is deleted
        (``delete_target``), then each of ``emptied_stacks`` likewise (``delete_stack``, recorded as the command's),
        then the command moves to ``state`` unless it is terminal already (None: it keeps its state). Returns
        whether the state moved. One transaction: an end retried after an outage runs again whole."""

        def work(conn: sa.Connection) -> bool:
            for label in emptied_targets:
                if not self._count_resources_in(conn, target=label, up_to=1):
                    self._delete_target_in(conn, label)
            for label in emptied_stacks:
                if not self._count_resources_in(conn, stack=label, up_to=1):
                    self._delete_stack_in(conn, label, command_id)
            return state is not None and self._set_command_state_in(conn, command_id, state, end_ts=end_ts)

        return self.write_retrying(work)
