"""An idempotency journal for plugin authors: what became of each mutating call, by the agent's request token.

A stateless plugin uses it to answer the host's question after a crash ("did the call with this token
happen?") and to answer a repeated token with the first call's result instead of acting twice. An entry is
written ``pending`` before the call acts and ``done`` with the result after, each write atomic; a
``pending`` entry means the call may have half-happened (the plugin decides whether the same token may
finish it or must say so).

The entries are lines appended to one file (``journal.log``), each with a single ``write`` on a descriptor opened
with ``O_APPEND``: once the call returns, the entry survives the plugin's or the agent's crash and is seen by any
process that reads the file (a reader looks for lines it has not read yet at each lookup: one ``fstat`` when there
are none). Like the SQLite file it replaces, the log is not synced to the disk on every write, so a crash of the
machine may lose the last entries; a torn line (a write the crash cut short) is skipped, and every entry starts on
a line of its own, so it never spoils the next one. A call's lookup and two entries cost the LOCAL plugin ~75 µs
as SQLite transactions (about 30 system calls: locks, write-ahead log frames), a third of a file create's CPU on
a tmpfs; as appends, ~23 µs.

Every process holds a shared ``flock`` on the log while it uses it. The one that finds itself alone (an exclusive
lock granted at once, on opening and then hourly) rewrites the log without the entries past ``KEEP_SECONDS`` and
replaces it; the others go on with theirs until they are alone. Entries of the earlier layouts are still read: a
SQLite ``journal.db`` is folded into the log by the first compaction, and files of the file-per-token layout are
looked up (and pruned) while any is left.
"""

from __future__ import annotations

import fcntl
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
LOG = "journal.log"
DATABASE = "journal.db"  # the SQLite layout before the log

# An entry's line: b"\n<key> <time> <entry JSON>\n". The leading newline ends whatever a crash left unfinished.
_Stored = tuple[float, bytes]


def default_directory(namespace: str) -> Path:
    return Path(os.environ.get(STATE_DIR_VARIABLE) or data_dir() / "plugins" / namespace) / "journal"


class Journal:
    """Cheap to make: the log is opened (and compacted) on first use, because the agent's host sets the state
    directory in the plugin's environment before its first call, not before it is loaded. Safe to use from the
    plugin's worker threads at once."""

    def __init__(self, namespace: str, directory: Path | None = None) -> None:
        self._namespace = namespace
        self._given = directory
        self._lock = threading.Lock()
        self._directory: Path | None = None
        self._fd = -1
        self._read_to = 0  # the log's bytes up to here are in ``_entries``
        self._entries: dict[str, _Stored] = {}
        self._attached_at = 0.0
        self._legacy = False  # whether entry files of the file-per-token layout may be there

    @property
    def directory(self) -> Path:
        with self._lock:
            return self._open()

    def _open(self) -> Path:
        """The journal's directory, the log attached (under ``_lock``)."""
        if self._directory is None:
            directory = self._given or default_directory(self._namespace)
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._directory = directory
            self._attach()
        elif time.time() - self._attached_at >= PRUNE_EVERY_SECONDS:
            fcntl.flock(self._fd, fcntl.LOCK_UN)  # let whoever is alone compact it, perhaps this process
            os.close(self._fd)
            self._attach()
        return self._directory

    def _attach(self) -> None:
        """Opens the log under a shared lock, compacting it first when no other process has it open."""
        assert self._directory is not None
        path = self._directory / LOG
        compacted = False
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            # Alone with the log that is still at the path (not one another process has just replaced): compact it.
            if not compacted and _lock_alone(fd) and _is_current(fd, path):
                _compact(self._directory, fd, time.time() - KEEP_SECONDS)
                compacted = True
                os.close(fd)  # the file was replaced: open the new one
                continue
            fcntl.flock(fd, fcntl.LOCK_SH)
            if _is_current(fd, path):
                break
            os.close(fd)  # another process replaced the log while this one waited for the lock
        self._fd, self._read_to, self._attached_at = fd, 0, time.time()
        self._entries = _database_entries(self._directory)  # not folded in yet: another process had the log open
        self._read_new()
        self._legacy = _has_entry_files(self._directory)
        if compacted and self._legacy:
            _prune_files(self._directory, time.time() - KEEP_SECONDS)
            self._legacy = _has_entry_files(self._directory)

    def _read_new(self) -> None:
        """Takes in the whole lines appended since the last read (by any process)."""
        size = os.fstat(self._fd).st_size
        if size <= self._read_to:
            return
        data = os.pread(self._fd, size - self._read_to, self._read_to)
        whole = data.rfind(b"\n") + 1  # a line still being written is read next time
        _parse(data[:whole], self._entries)
        self._read_to += whole

    def get(self, token: str) -> dict[str, Any] | None:
        key = _key(token)
        with self._lock:
            directory = self._open()
            self._read_new()
            stored = self._entries.get(key)
        if stored is not None:
            return jsontext.loads(stored[1])
        return _legacy_entry(directory / f"{key}.json") if self._legacy else None

    def begin(self, token: str, op: str, native_id: str) -> None:
        self._write(token, {"state": "pending", "op": op, "nativeId": native_id, "at": time.time()})

    def finish(self, token: str, op: str, native_id: str, result: dict[str, Any], *, follow: str = "") -> None:
        """``follow``: the provider's own handle on a call it finishes later (what the plugin asks it about)."""
        entry = {"state": "done", "op": op, "nativeId": native_id, "at": time.time(), "result": result}
        if follow:
            entry["follow"] = follow
        self._write(token, entry)

    def _write(self, token: str, entry: dict[str, Any]) -> None:
        key, now, text = _key(token), time.time(), jsontext.dump_bytes(entry)
        line = _line(key, now, text)
        with self._lock:
            self._open()
            written = os.write(self._fd, line)  # O_APPEND: one write lands whole after every other one
            if written != len(line):  # a full disk: the part written is a torn line, skipped by every reader
                raise OSError(f"the journal {LOG} took {written} of {len(line)} bytes")
            self._entries[key] = (now, text)
            end = os.lseek(self._fd, 0, os.SEEK_CUR)  # where this write ended
            if end - len(line) == self._read_to:  # no other process appended in between: nothing to read again
                self._read_to = end

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)  # the lock goes with it
                self._fd = -1
                self._directory = None


def _key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:40]


def _line(key: str, at: float, text: bytes) -> bytes:
    """An entry's line, as ``_parse`` reads it back."""
    return b"\n%s %r %s\n" % (key.encode(), at, text)


def _parse(data: bytes, entries: dict[str, _Stored]) -> None:
    for line in data.split(b"\n"):
        parts = line.split(b" ", 2)
        if len(parts) != 3:
            continue  # an empty line, or one a crash cut short
        key, at, text = parts
        try:
            stored = (float(at), text)
            jsontext.loads(text)  # a line cut short ends before its JSON does
        except ValueError:
            continue
        entries[key.decode()] = stored


def _lock_alone(fd: int) -> bool:
    """Whether this descriptor got the log's exclusive lock at once (no other process holds it open)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _is_current(fd: int, path: Path) -> bool:
    """Whether ``fd`` is the file at ``path`` now (a compaction replaces it by another)."""
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _compact(directory: Path, fd: int, horizon: float) -> None:
    """Replaces the log (locked exclusively by ``fd``) by its entries since ``horizon``, those of a SQLite journal
    of the earlier layout included; synced before the rename, so that a crash leaves the old log or the new one."""
    entries = _database_entries(directory)
    size = os.fstat(fd).st_size
    _parse(os.pread(fd, size, 0) if size else b"", entries)
    kept = b"".join(_line(key, at, text) for key, (at, text) in entries.items() if at >= horizon)
    temporary = directory / f"{LOG}.compacting"
    new = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(kept)
        while view:
            view = view[os.write(new, view):]
        os.fsync(new)
    finally:
        os.close(new)
    os.replace(temporary, directory / LOG)
    for name in (DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm"):  # folded in: the log holds them now
        try:
            (directory / name).unlink()
        except FileNotFoundError:
            pass


def _database_entries(directory: Path) -> dict[str, _Stored]:
    """The entries of a SQLite journal the earlier layout left, if there is one."""
    path = directory / DATABASE
    if not path.exists():
        return {}
    connection = sqlite3.connect(path, timeout=30)
    try:
        rows = connection.execute("SELECT key, at, entry FROM entries").fetchall()
    except sqlite3.DatabaseError:  # no table: nothing was journaled there
        return {}
    finally:
        connection.close()
    return {key: (at, entry.encode()) for key, at, entry in rows}


def _has_entry_files(directory: Path) -> bool:
    """Whether the file-per-token layout left entry files (or temporary files) in ``directory``."""
    return any(name.endswith((".json", ".tmp")) for name in os.listdir(directory))


def _legacy_entry(path: Path) -> dict[str, Any] | None:
    """An entry the file-per-token layout wrote as a file of its own (one JSON object), if there is one."""
    try:
        return jsontext.loads(path.read_bytes())
    except (FileNotFoundError, ValueError):  # those writes were atomic: a damaged file means "unknown"
        return None


def _prune_files(directory: Path, horizon: float) -> None:
    """Old entry files of the file-per-token layout, and temporary files a crash left."""
    for entry in directory.iterdir():
        if entry.suffix not in (".json", ".tmp"):
            continue
        try:
            if entry.stat().st_mtime < horizon:
                entry.unlink()
        except OSError:  # another process pruned it first
            continue
