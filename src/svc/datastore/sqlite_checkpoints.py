"""Write-ahead-log checkpoints off the writers' path, for the SQLite backend.

By default SQLite checkpoints inside a commit: the commit that takes the log past 1,000 pages copies them
into the database file and syncs it before it returns (~12 ms on the benchmark machine). The agent writes
about that much for a 400-resource command, so one transaction in each command waited for a checkpoint,
whichever it was: storing the command before its first plugin call, or its last group commit before its end.

Here the agent's connections never checkpoint (``wal_autocheckpoint=0``). A thread of the engine's own runs
a passive checkpoint (it neither waits for writers and readers nor blocks them) after write transactions
committed, at most every ``INTERVAL``, on a connection of its own; it stops when the engine is disposed.
Between commands it catches up and the log starts over; only under writes that go on for seconds does the
log pass ``LOG_LIMIT``, and a checkpoint then holds the writers back while it empties it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import sqlalchemy as sa

from svc.datastore.sql_base import WRITE_OPTION

log = logging.getLogger("svc.datastore")
INTERVAL = 0.5  # seconds between checkpoints while writes go on: the log holds about that much writing
LOG_LIMIT = 4096  # pages (16 MiB) the log may hold before a checkpoint waits for the writers to catch up
_WAIT = 0.2  # seconds such a checkpoint waits for the write lock and for readers


class Checkpointer:
    """Checkpoints the database at ``path`` in the background once ``attach``ed to its engine."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written = threading.Event()
        self._stopping = threading.Event()  # the running thread's; replaced when it is stopped
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def attach(self, engine: sa.Engine) -> None:
        sa.event.listen(engine, "commit", self._committed)
        sa.event.listen(engine, "engine_disposed", lambda _engine: self.stop())

    def stop(self) -> None:
        """Ends the thread after the checkpoint under way, if any (the last connection to close checkpoints
        whatever is left). A later write, should the engine be used again, starts another."""
        with self._lock:
            thread, self._thread = self._thread, None
            stopping, self._stopping = self._stopping, threading.Event()
        stopping.set()
        self._written.set()
        if thread is not None:
            thread.join()

    def _committed(self, conn: sa.Connection) -> None:
        if not conn.get_execution_options().get(WRITE_OPTION):
            return  # a read transaction adds nothing to the log
        self._written.set()
        if self._thread is None:
            with self._lock:  # the first write starts the thread: a read-only engine never needs one
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, args=(self._stopping,),
                                                    name="svc-sqlite-checkpoints", daemon=True)
                    self._thread.start()

    def _run(self, stopping: threading.Event) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._written.wait()
                if stopping.is_set():
                    return
                self._written.clear()
                conn = conn or self._connect()
                if conn is not None:
                    self._checkpoint(conn)
                if stopping.wait(INTERVAL):
                    return
        finally:
            if conn is not None:
                conn.close()

    def _connect(self) -> sqlite3.Connection | None:
        try:
            # A short wait: a checkpoint that empties the log holds the write lock while it waits for readers to
            # move on, and the writers queue behind it; if they do not move on soon, the next pass tries again.
            conn = sqlite3.connect(self.path, timeout=_WAIT, isolation_level=None)
            conn.execute("PRAGMA synchronous=NORMAL")  # as the writers': the database file is synced after copying
            return conn
        except sqlite3.Error as error:  # e.g. out of file descriptors: the log keeps growing until a later pass
            log.warning("cannot open %s to checkpoint it: %s; trying again after the next write", self.path, error)
            return None

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if frames > LOG_LIMIT:
                # Writes went on all along (a big command): a passive checkpoint never caught up with them, and
                # the log, which starts over only once wholly copied, kept growing. This one makes the writers
                # wait while it copies the rest and empties the file.
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as error:  # e.g. the disk is full: the log keeps the data, the next pass retries
            log.warning("checkpoint of %s failed: %s", self.path, error)
