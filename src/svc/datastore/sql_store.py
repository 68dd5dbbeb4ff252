"""The SQLAlchemy-backed datastore: one implementation for every SQL backend, composed of its parts."""

from __future__ import annotations

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
