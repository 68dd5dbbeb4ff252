"""Rewriting what is stored of one resource type, in place: the walk that hashes secrets stored in clear.

The agent hashes a secret before it stores it, where the type's schema declares one. A value an earlier svc did
not know as a secret (a nested one, before secrets at any depth were hashed) or an earlier schema of the plugin
did not declare is still in clear: in every version of a resource, in the changes of past commands and in
their progress. ``rewrite_stored_documents`` reads one type's rows a page at a time, in primary-key order, and
writes back only the documents that the rewrite changes: one JSON column of a row, never its key, version or
state. Each page is read and written in one write transaction (its rows locked on PostgreSQL), so a command
writing the same rows meanwhile is neither lost nor overwritten.

A rewritten row leaves its old bytes behind until the database reuses their space: ``erase_replaced_rows`` then
rebuilds the SQLite file (``VACUUM``, the write-ahead log truncated) or the PostgreSQL tables (``VACUUM FULL``).
Through the Data API, whose statements run in transactions, that is left to the cluster's own vacuum.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from svc.datastore.paging import KeyValue, after
from svc.datastore.sql_base import SqlBase, json_value
from svc.datastore.tables import resource_changes, resource_updates, resources

if TYPE_CHECKING:
    from svc.datastore.interface import DocumentRewrite

log = logging.getLogger("svc.datastore")

_PAGE = 500
# How long erasing waits for the write-ahead log to be copied into the database file and emptied (see
# ``_empty_the_log``): readers hold their snapshots for a query or a page at a time.
_LOG_DEADLINE = 60.0
_LOG_RETRY = 0.05
_REWRITTEN_TABLES = (resources, resource_changes, resource_updates)


class StoredDocumentsStore(SqlBase):
    def stored_types(self) -> set[str]:
        """Every resource type with a stored version or resource update, current or past."""
        with self.read() as conn:
            kept = conn.execute(sa.select(resources.c.type).distinct()).scalars().all()
            planned = conn.execute(sa.select(resource_updates.c.resource_type).distinct()).scalars().all()
        return {str(name) for name in (*kept, *planned)}

    def rewrite_stored_documents(self, type_: str, rewrite: DocumentRewrite) -> int:
        """Rewrites the documents of ``type_`` (see the module); the number of rows written."""
        r, u, c = resources, resource_updates, resource_changes
        written = self._walk(
            sa.select(r.c.ksuid, r.c.version, r.c.properties, r.c.read_only_properties).where(r.c.type == type_),
            table=r, key=(r.c.ksuid, r.c.version),
            rewritten=lambda row: {"properties": rewrite.properties(row.properties),
                                   "read_only_properties": rewrite.properties(row.read_only_properties)})
        of_type = (c.c.command_id == u.c.command_id) & (c.c.ksuid == u.c.ksuid) & (c.c.operation == u.c.operation)
        written += self._walk(
            sa.select(c.c.command_id, c.c.ksuid, c.c.operation, c.c.change).join(u, of_type)
            .where(u.c.resource_type == type_),
            table=c, key=(c.c.command_id, c.c.ksuid, c.c.operation),
            rewritten=lambda row: {"change": rewrite.change(row.change)})
        written += self._walk(
            sa.select(u.c.command_id, u.c.ksuid, u.c.operation, u.c.data).where(u.c.resource_type == type_),
            table=u, key=(u.c.command_id, u.c.ksuid, u.c.operation),
            rewritten=lambda row: {"data": rewrite.update_data(row.data)})
        return written

    def erase_replaced_rows(self) -> bool:
        """Rebuilds the tables ``rewrite_stored_documents`` writes so that no replaced row's bytes stay in the
        database's files; False where this backend leaves it to the database (see the module)."""
        if self.backend == "sqlite":
            with self.engine.connect() as conn:  # the driver is in autocommit: no transaction is open here
                driver = conn.connection.dbapi_connection
                assert driver is not None
                driver.execute("VACUUM")
                _empty_the_log(driver)
            return True
        if self.backend == "postgres":
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql(f"VACUUM FULL {', '.join(table.name for table in _REWRITTEN_TABLES)}")
            return True
        log.info("the rows rewritten keep their old bytes until the database's vacuum reclaims them; run VACUUM "
                 "FULL on %s to erase them now", ", ".join(table.name for table in _REWRITTEN_TABLES))
        return False

    def _walk(self, statement: sa.Select[Any], *, table: sa.Table, key: Sequence[sa.Column[Any]],
              rewritten: Callable[[sa.Row[Any]], dict[str, Any]]) -> int:
        """Pages through ``statement`` by ``key`` and writes back the columns whose document ``rewritten`` changes."""
        written = 0
        last: tuple[KeyValue, ...] | None = None
        update = sa.update(table).where(*(column == sa.bindparam(f"key_{column.name}") for column in key))
        while True:
            page = statement if last is None else statement.where(after(key, last))
            with self.write() as conn:
                rows = conn.execute(page.order_by(*key).limit(_PAGE).with_for_update(of=table)).all()
                # Rows that change the same columns are written by one statement (one request on the Data API).
                changes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
                for row in rows:
                    changed = {name: json_value(document) for name, document in rewritten(row).items()
                               if document != getattr(row, name)}
                    if changed:
                        changes.setdefault(tuple(sorted(changed)), []).append(
                            {**{f"key_{column.name}": getattr(row, column.name) for column in key},
                             **{f"new_{name}": document for name, document in changed.items()}})
                for names, parameters in changes.items():
                    conn.execute(update.values({name: sa.bindparam(f"new_{name}", type_=table.c[name].type)
                                                for name in names}), parameters)
                    written += len(parameters)
            if len(rows) < _PAGE:
                return written
            last = tuple(getattr(rows[-1], column.name) for column in key)


def _empty_the_log(driver: Any) -> None:
    """Copies the write-ahead log into the rebuilt database file and truncates it, waiting for that to complete.

    Until it completes, the file still holds the pages as they were before the rewrite (and the log the pages the
    rewrite replaced). A truncating checkpoint that finds another checkpoint under way (the engine's own thread
    runs one after writes) or a reader still on an older snapshot past the busy timeout answers "busy" instead of
    failing: it is tried again until it reports the log copied and empty."""
    deadline = time.monotonic() + _LOG_DEADLINE
    while True:
        busy, frames, copied = driver.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy and frames == copied:
            return
        if time.monotonic() > deadline:
            log.warning("the write-ahead log could not be emptied within %gs (a reader kept an older snapshot); the "
                        "rows rewritten keep their old bytes in the database files until its next complete "
                        "checkpoint", _LOG_DEADLINE)
            return
        time.sleep(_LOG_RETRY)
