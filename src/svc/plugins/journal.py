"""An idempotency journal for plugin authors: what became of each mutating call, by the agent's request token.

A stateless plugin uses it to answer the host's question after a crash ("did the call with this token
happen?") and to answer a repeated token with the first call's result instead of acting twice. An entry is
written ``pending`` before the call acts and ``done`` with the result after, each write atomic; a
``pending`` entry means the call may have half-happened (the plugin decides whether the same token may
finish it or must say so).

The entries live in one SQLite file (``journal.db``, WAL, ``synchronous=NORMAL``): a write appends to the
write-ahead log and is seen by any process that opens the file, and survives the plugin's or the agent's crash;
like the file per token it replaces, it is not synced to the disk on every write, so a crash of the machine may
lose the last entries (never leave a torn one). A file per token made two inodes per call and freed one; on ext4
every freed inode is one the allocator scans past for minutes ("recently deleted"), and those scans were more
than half of the LOCAL plugin's CPU per file create (``bench/local_files.py``). Entries written as files by an
earlier version are still read (and pruned) while any is left; a directory without them costs no lookup.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from svc import jsontext
from svc.paths import data_dir

STATE_DIR_VARIABLE = "SVC_PLUGIN_STATE_DIR"  # set by the agent's plugin host
KEEP_SECONDS = 7 * 24 * 3600  # far longer than any command can stay unfinished and be resumed
PRUNE_EVERY_SECONDS = 3600.0  # a plugin process may live for months: old entries go while it runs too
DATABASE = "journal.db"

_SCHEMA = "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, at REAL NOT NULL, entry TEXT NOT NULL)"


def default_directory(namespace: str) -> Path:
    return Path(os.environ.get(STATE_DIR_VARIABLE) or data_dir() / "plugins" / namespace) / "journal"


class Journal:
    """Cheap to make: the database is opened (and old entries pruned) on first use, because the agent's host sets
    the state directory in the plugin's environment before its first call, not before it is loaded. Safe to use
    from the plugin's worker threads at once."""

    def __init__(self, namespace: str, directory: Path | None = None) -> None:
        self._namespace = namespace
        self._given = directory
        self._lock = threading.Lock()
        self._directory: Path | None = None
        self._connection: sqlite3.Connection | None = None
        self._pruned_at = 0.0
        self._legacy = False  # whether entry files of the earlier layout may be there

    @property
    def directory(self) -> Path:
        self._open()
        assert self._directory is not None
        return self._directory

    def _open(self) -> sqlite3.Connection:
        with self._lock:
            if self._connection is None:
                directory = self._given or default_directory(self._namespace)
                directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                # One connection for every thread, each statement under the lock: a write takes microseconds.
                connection = sqlite3.connect(directory / DATABASE, timeout=30, isolation_level=None,
                                             check_same_thread=False)
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
                connection.execute(_SCHEMA)
                self._directory, self._connection = directory, connection
                self._legacy = _has_entry_files(directory)
            return self._connection

    def get(self, token: str) -> dict[str, Any] | None:
        connection = self._open()
        key = _key(token)
        with self._lock:
            row = connection.execute("SELECT entry FROM entries WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return jsontext.loads(row[0])
        return _legacy_entry(self.directory / f"{key}.json") if self._legacy else None

    def begin(self, token: str, op: str, native_id: str) -> None:
        self._write(token, {"state": "pending", "op": op, "nativeId": native_id, "at": time.time()})

    def finish(self, token: str, op: str, native_id: str, result: dict[str, Any], *, follow: str = "") -> None:
        """``follow``: the provider's own handle on a call it finishes later (what the plugin asks it about)."""
        entry = {"state": "done", "op": op, "nativeId": native_id, "at": time.time(), "result": result}
        if follow:
            entry["follow"] = follow
        self._write(token, entry)

    def _write(self, token: str, entry: dict[str, Any]) -> None:
        connection = self._open()
        now = time.time()
        row = (_key(token), now, jsontext.dumps(entry))
        with self._lock:
            # Autocommit: each statement is its own transaction, so an entry is written whole or not at all.
            connection.execute("INSERT OR REPLACE INTO entries (key, at, entry) VALUES (?, ?, ?)", row)
            if now - self._pruned_at >= PRUNE_EVERY_SECONDS:
                self._pruned_at = now
                connection.execute("DELETE FROM entries WHERE at < ?", (now - KEEP_SECONDS,))
                assert self._directory is not None
                if self._legacy:
                    _prune_files(self._directory, now - KEEP_SECONDS)
                    self._legacy = _has_entry_files(self._directory)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:40]


def _has_entry_files(directory: Path) -> bool:
    """Whether the earlier layout left entry files (or temporary files) in ``directory``."""
    return any(name.endswith((".json", ".tmp")) for name in os.listdir(directory))


def _legacy_entry(path: Path) -> dict[str, Any] | None:
    """An entry an earlier version wrote as a file of its own (one JSON object), if there is one."""
    try:
        return jsontext.loads(path.read_bytes())
    except (FileNotFoundError, ValueError):  # those writes were atomic: a damaged file means "unknown"
        return None


def _prune_files(directory: Path, horizon: float) -> None:
    """Old entry files of an earlier version, and temporary files a crash left."""
    for entry in directory.iterdir():
        if entry.suffix not in (".json", ".tmp"):
            continue
        try:
            if entry.stat().st_mtime < horizon:
                entry.unlink()
        except OSError:  # another process pruned it first
            continue
