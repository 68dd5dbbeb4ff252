"""The FAKE cloud's state: one SQLite file per target, shared by the plugin and by tests.

The plugin changes it through the operations; tests read and change it out of band through
``FakeCloud`` (or ``python -m svc_plugin_fake``), including the fault-injection knobs:

* ``latency``     ``{"create": 0.02, "*": 0.01}`` seconds each call of that operation takes: it acts when it
                  arrives and answers once that long has passed (within a fraction of a millisecond: the
                  plugin process's event loop keeps time, ``svc.plugins.timers``);
* ``throttle``    ``{"remaining": N, "ops": [...]}`` the next N matching calls fail with Throttling;
* ``fail``        ``{"code": "AccessDenied", "ops": [...], "labels": [...], "types": [...], "remaining": N}``
                  matching calls fail with ``code`` (``remaining`` -1 or absent: forever);
* ``hang``        ``{"ops": [...]}`` matching calls block before acting until the knob is cleared (or well past
                  the deadline);
* ``in_progress`` ``{"polls": N, "ops": [...]}`` mutating calls answer InProgress; Status answers InProgress
                  N times before the operation completes.
* ``anonymous``   ``{"types": [...], "labels": [...]}`` matching creates succeed with an answer that carries neither
                  a native id nor properties (a plugin that loses track of what it made).
* ``raw_keys``    ``{"types": [...], "labels": [...]}`` matching creates answer their properties under lowerCamelCase
                  keys, not the schema's names (a plugin that forgot to transform its provider's output keys).

Every write is one ``BEGIN IMMEDIATE`` transaction, so concurrent writers (the plugin, a test poking the
file) never see half an operation, and a process killed mid-call leaves either all of it or nothing.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from svc import jsontext

_SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
  native_id TEXT PRIMARY KEY, type TEXT NOT NULL, properties TEXT NOT NULL, created_at REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS operations (
  request_id TEXT PRIMARY KEY, op TEXT NOT NULL, type TEXT NOT NULL, native_id TEXT NOT NULL,
  polls_left INTEGER NOT NULL, result TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS knobs (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
  id INTEGER PRIMARY KEY, op TEXT NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL, token TEXT, at REAL NOT NULL);
"""

KNOBS = ("latency", "throttle", "fail", "hang", "in_progress", "anonymous", "raw_keys")
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _writer_lock(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(path.resolve()), threading.Lock())


class FakeCloud:
    """Typed access to one FAKE cloud file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _writer_lock(self.path)
        self._local = threading.local()
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        # One connection per thread and file: opening one per call costs more than the call under load.
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=True)
            # A process killed mid-call loses nothing the OS was handed; only a machine crash could, and a test
            # cloud need not survive one. Without fsyncs a create costs half as much (the WAL checkpoints'
            # fsyncs were the plugin's largest cost in the latency benchmark).
            conn.execute("PRAGMA synchronous=OFF")
            self._local.conn = conn
        return conn

    def transaction(self) -> _Transaction:
        """``with cloud.transaction() as conn:`` one write transaction, committed unless the body raises."""
        return _Transaction(self._connect(), self._lock)

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        yield self._connect()

    # -- resources -----------------------------------------------------------------------------------------

    def resources(self, resource_type: str | None = None) -> dict[str, dict[str, Any]]:
        """Every resource: native id → ``{"type", "properties"}``."""
        with self.reading() as conn:
            rows = conn.execute("SELECT native_id, type, properties FROM resources" +
                                (" WHERE type = ?" if resource_type else ""),
                                (resource_type,) if resource_type else ()).fetchall()
        return {row[0]: {"type": row[1], "properties": jsontext.loads(row[2])} for row in rows}

    def native_ids(self, resource_type: str, *, offset: int = 0, limit: int = -1) -> list[str]:
        """The native ids of a type in order, one slice of them (no properties decoded: listing is cheap)."""
        with self.reading() as conn:
            rows = conn.execute("SELECT native_id FROM resources WHERE type = ? ORDER BY native_id LIMIT ? OFFSET ?",
                                (resource_type, limit, offset)).fetchall()
        return [row[0] for row in rows]

    def get(self, native_id: str) -> dict[str, Any] | None:
        with self.reading() as conn:
            row = conn.execute("SELECT type, properties FROM resources WHERE native_id = ?", (native_id,)).fetchone()
        return None if row is None else {"type": row[0], "properties": jsontext.loads(row[1])}

    def put(self, resource_type: str, native_id: str, properties: dict[str, Any]) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT INTO resources VALUES (?, ?, ?, ?) ON CONFLICT(native_id) DO UPDATE SET "
                         "properties = excluded.properties", (native_id, resource_type, jsontext.dumps(properties),
                                                              time.time()))

    def set_property(self, native_id: str, key: str, value: Any) -> None:
        """An out-of-band edit: sets (or with ``value`` None removes) one top-level property."""
        with self.transaction() as conn:
            row = conn.execute("SELECT properties FROM resources WHERE native_id = ?", (native_id,)).fetchone()
            if row is None:
                raise KeyError(native_id)
            properties = jsontext.loads(row[0])
            if value is None:
                properties.pop(key, None)
            else:
                properties[key] = value
            conn.execute("UPDATE resources SET properties = ? WHERE native_id = ?",
                         (jsontext.dumps(properties), native_id))

    def remove(self, native_id: str) -> bool:
        with self.transaction() as conn:
            return conn.execute("DELETE FROM resources WHERE native_id = ?", (native_id,)).rowcount == 1

    # -- knobs ---------------------------------------------------------------------------------------------

    def set_knob(self, name: str, value: dict[str, Any]) -> None:
        if name not in KNOBS:
            raise ValueError(f"unknown knob {name!r}; one of {', '.join(KNOBS)}")
        with self.transaction() as conn:
            self.store_knob(conn, name, value)

    def store_knob(self, conn: sqlite3.Connection, name: str, value: dict[str, Any]) -> None:
        """Sets a knob inside a transaction of this cloud's (the plugin's countdowns)."""
        conn.execute("INSERT INTO knobs VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                     (name, jsontext.dumps(value)))
        self._local.knobs = None

    def clear_knobs(self, *names: str) -> None:
        with self.transaction() as conn:
            if names:
                conn.executemany("DELETE FROM knobs WHERE name = ?", [(n,) for n in names])
            else:
                conn.execute("DELETE FROM knobs")
            self._local.knobs = None

    def knobs(self) -> dict[str, dict[str, Any]]:
        """The knobs as set now. The plugin asks on every call, so they are read again only when another
        connection changed the file (SQLite's data_version) or this one changed a knob."""
        conn = self._connect()
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        cached = getattr(self._local, "knobs", None)
        if cached is None or cached[0] != version:
            rows = conn.execute("SELECT name, value FROM knobs")
            cached = self._local.knobs = (version, {name: jsontext.loads(value) for name, value in rows})
        return cached[1]

    # -- the call log --------------------------------------------------------------------------------------

    def calls(self, op: str | None = None) -> list[dict[str, Any]]:
        """Every operation the plugin received (after knobs let it through), oldest first."""
        with self.reading() as conn:
            rows = conn.execute("SELECT op, type, subject, token, at FROM calls" +
                                (" WHERE op = ?" if op else "") + " ORDER BY id", (op,) if op else ()).fetchall()
        return [{"op": r[0], "type": r[1], "subject": r[2], "token": r[3], "at": r[4]} for r in rows]


class _Transaction:
    """A class rather than a generator: the plugin opens one per call."""

    __slots__ = ("conn", "lock")

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn, self.lock = conn, lock

    def __enter__(self) -> sqlite3.Connection:
        self.lock.acquire()  # writers of this process queue here instead of in SQLite's sleeping busy handler
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self.lock.release()


def new_native_id(prefix: str) -> str:
    return f"{prefix}-{os.urandom(8).hex()}"
