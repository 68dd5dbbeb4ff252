"""The embedded SQLite backend: one file, WAL (checkpointed in the background), a busy timeout, created on first
start."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

from svc.config.model import SqliteConfig
from svc.datastore.errors import DatastoreConfigError
from svc.datastore.sql_base import JSON_CODEC, WRITE_OPTION
from svc.datastore.sqlite_checkpoints import Checkpointer

SETTING = "agent.datastore.sqlite.filePath"
BUSY_TIMEOUT_MS = 10_000
_MEMORY = (":memory:", "file::memory:")


def database_path(config: SqliteConfig) -> Path | None:
    """The database file (``~`` expanded), or None for an in-memory database."""
    return None if config.file_path in _MEMORY else Path(config.file_path).expanduser()


def sqlite_engine(config: SqliteConfig) -> tuple[sa.Engine, str]:
    """An engine for the configured file (parent directories created), and a description for messages."""
    path = database_path(config)
    if path is None:
        # Each connection to :memory: would be a different database: share one.
        engine = sa.create_engine("sqlite://", poolclass=StaticPool, **JSON_CODEC,
                                  connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000})
        describe = "sqlite :memory:"
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise DatastoreConfigError(f"cannot create the directory of the SQLite database {path}: "
                                       f"{error.strerror}; check {SETTING}", SETTING) from error
        if path.is_dir():
            raise DatastoreConfigError(f"the SQLite database path {path} is a directory; check {SETTING}", SETTING)
        engine = sa.create_engine(f"sqlite:///{path}", pool_size=8, max_overflow=8, pool_timeout=30, **JSON_CODEC,
                                  connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000})
        describe = f"sqlite {path}"
        Checkpointer(path).attach(engine)
    sa.event.listen(engine, "connect", _on_connect)
    sa.event.listen(engine, "begin", _on_begin)
    return engine, describe


def _on_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    # Autocommit at the driver level: transactions are begun explicitly by _on_begin, because the sqlite3
    # module's implicit transactions neither cover reads nor let us choose IMMEDIATE.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        _use_wal(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes in WAL mode
        cursor.execute("PRAGMA wal_autocheckpoint=0")  # the engine's own thread checkpoints (sqlite_checkpoints)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA case_sensitive_like=ON")  # LIKE must agree with '=' on case (as on PostgreSQL)
    finally:
        cursor.close()


def _use_wal(cursor: sqlite3.Cursor) -> None:
    """Switches the file to WAL (readers proceed while one writer writes). While another connection converts a
    new file, SQLite can refuse the switch as "database is locked" without waiting on the busy handler, so
    processes starting together on one file retry it here, within the same busy timeout."""
    give_up = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= give_up:
                raise
            time.sleep(0.01)


def _on_begin(conn: sa.Connection) -> None:
    # IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so a read-then-write
    # transaction can never fail half-way with SQLITE_BUSY when another writer committed in between.
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "BEGIN")
