"""SQLite serves one agent: ``claim_single_agent`` makes a second agent on the same database file fail at once.

Several agents share a datastore only through the leader lease and fenced writes, which need a server's row
locks; two agents on one SQLite file would both run commands and plugins against the same records. So an agent
on SQLite holds an exclusive ``flock`` on ``<database file>.agent.lock`` (which holds its PID, for the message)
for as long as it runs. The kernel drops the lock when the process ends, however it ends (SIGKILL included), so a
crashed agent never leaves a stale claim behind. The lock file itself stays: removing it would let a starting
agent lock a file that another one has just replaced.

``open_datastore`` does not claim: tests, benches and tools open the file alongside a running agent, which SQLite
handles (WAL, busy timeout). Only ``svc agent start`` claims, before it opens the datastore.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from svc.config.model import DatastoreConfig
from svc.datastore.errors import DatastoreConfigError, DatastoreError
from svc.datastore.sqlite import SETTING, database_path


def lock_path(database: Path) -> Path:
    """The agent lock file of the SQLite database ``database``."""
    return database.with_name(database.name + ".agent.lock")


def claim_single_agent(config: DatastoreConfig) -> contextlib.AbstractContextManager[None]:
    """A context manager that holds the SQLite database's agent lock while it is entered; entering raises
    ``DatastoreError`` (one line, naming the PID) when another process holds it. Claims nothing for the server
    backends (they elect a leader) nor for an in-memory database (no other process can open it)."""
    if config.datastore_type != "sqlite":
        return contextlib.nullcontext()
    path = database_path(config.sqlite)
    return contextlib.nullcontext() if path is None else _claim(path)


@contextlib.contextmanager
def _claim(database: Path) -> Iterator[None]:
    path = lock_path(database)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Not inherited by plugin processes (O_CLOEXEC): a child outliving the agent must not keep the claim.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise DatastoreConfigError(f"cannot create the agent lock file {path} of the SQLite datastore: "
                                   f"{error.strerror}; check {SETTING}", SETTING) from error
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DatastoreError(
                f"the SQLite datastore {database} is in use by another agent ({_holder(fd)}); SQLite serves one "
                "agent: to run several agents on one datastore, use PostgreSQL or the Aurora Data API") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    """"PID n" as the holder wrote it; it may not have written it yet (it locks first, then writes)."""
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f"PID {text}" if text.isdigit() else "PID unknown"
