"""What every SQL-backed part of the datastore shares: connections, transactions, error translation."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from svc import jsontext
from svc.datastore.errors import ConflictError, DatastoreError, DatastoreUnavailable
from svc.datastore.outage import Availability
from svc.datastore.write_fence import WriteFence

T = TypeVar("T")
log = logging.getLogger("svc.datastore")

# Execution option read by the SQLite "begin" hook: write transactions take the write lock up front.
WRITE_OPTION = "svc_write"
_WRITE_ATTEMPTS = 12

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SQLITE_TRANSIENT = ("database is locked", "database is busy", "unable to open", "disk i/o error")


# One round trip for all keys; ORDER BY makes the acquisition order explicit.
_LOCK = sa.text("SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM "
                "(SELECT unnest(CAST(:keys AS text[])) AS k ORDER BY 1) AS keys")

_REPEATABLE_READ = {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
IN_LIST = 500  # values per IN list of a lookup by keys (SQLite's bound parameters are limited)


@dataclass(frozen=True)
class _Held:
    """A transaction a thread holds open for the datastore operations it makes meanwhile."""

    conn: sa.Connection
    writing: bool


class Retry(Exception):
    """Raised inside a write transaction when a concurrent writer won a compare-and-swap; the whole
    transaction is rolled back and run again against the new state."""


def now() -> datetime:
    return datetime.now(UTC)


def successor(version: str) -> str:
    """The smallest base62 string of the same length greater than ``version``: keeps a resource's
    versions strictly increasing in byte order when two writes land in the same KSUID second."""
    chars = list(version)
    for index in range(len(chars) - 1, -1, -1):
        position = _BASE62.find(chars[index])
        if position < 0:
            raise ValueError(f"version {version!r} is not base62")
        if position < len(_BASE62) - 1:
            chars[index] = _BASE62[position + 1]
            return "".join(chars)
        chars[index] = "0"
    raise ValueError(f"version {version!r} has no successor")


# The engines' JSON columns go through the fast codec (the SQLAlchemy default is ``json.dumps``/``loads``).
JSON_CODEC: dict[str, Any] = {"json_serializer": jsontext.dumps, "json_deserializer": jsontext.loads}


def in_chunks(keys: Iterable[Any], size: int = IN_LIST) -> Iterator[list[Any]]:
    """``keys`` in order, in lists of at most ``size``: one IN list of a lookup by keys each."""
    ordered = sorted(keys)
    for start in range(0, len(ordered), size):
        yield ordered[start:start + size]


def json_value(value: Any) -> Any:
    """``value`` as the plain JSON it will be stored as (tuples become lists…), so that equality with what
    the database returns is meaningful; non-JSON values fail here, before any write."""
    return jsontext.loads(jsontext.dump_bytes(value))


# The INSERT construct that supports ``on_conflict_do_update``, by dialect name (the Data API's is PostgreSQL's).
UPSERTABLE_INSERTS: dict[str, Callable[[sa.Table], Any]] = {"postgresql": pg_insert, "sqlite": sqlite_insert}


def upsertable_insert(dialect: sa.Dialect, table: sa.Table) -> Any:
    """An INSERT that supports ``on_conflict_do_update`` on ``dialect`` (its own construct)."""
    return UPSERTABLE_INSERTS[dialect.name](table)


def _first_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class SqlBase:
    """Holds the engine; subclasses add the record-specific operations."""

    def __init__(self, engine: sa.Engine, backend: str, describe: str) -> None:
        self.engine = engine
        self.backend = backend
        self.describe = describe
        self.availability = Availability(describe)  # logs an outage's start and end (``outage``)
        # Set by ``fence_writes`` (``sql_lease``): every write transaction first checks the leader lease's epoch.
        self.write_fence: WriteFence | None = None
        self._holding = threading.local()  # ``current``: the transaction this thread holds open, if any

    # -- error translation -------------------------------------------------------------------------------

    def translate(self, error: Exception) -> DatastoreError:
        if isinstance(error, DatastoreError):
            return error
        if isinstance(error, sa.exc.TimeoutError):
            return DatastoreUnavailable(f"datastore unavailable ({self.describe}): no free connection in time")
        if isinstance(error, sa.exc.IntegrityError):
            return ConflictError(f"conflicting write ({self.describe}): {_first_line(error)}")
        if isinstance(error, sa.exc.DBAPIError):
            line = _first_line(error)
            transient = error.connection_invalidated or (
                isinstance(error, (sa.exc.OperationalError, sa.exc.InterfaceError))
                and (self.backend != "sqlite" or any(s in line.lower() for s in _SQLITE_TRANSIENT)))
            if transient:
                return DatastoreUnavailable(f"datastore unavailable ({self.describe}): {line}")
            return DatastoreError(f"datastore error ({self.describe}): {line}")
        return DatastoreError(f"datastore error ({self.describe}): {_first_line(error)}")

    def _failed(self, error: Exception, began: float) -> DatastoreError:
        """``error`` translated, and an outage noted when it is one (for an operation begun at ``began``)."""
        translated = self.translate(error)
        if isinstance(translated, DatastoreUnavailable):
            self.availability.failed(translated, began)
        return translated

    # -- transactions ------------------------------------------------------------------------------------

    @contextmanager
    def read(self, *, repeatable: bool = False) -> Iterator[sa.Connection]:
        """A read transaction, or the one this thread holds open (``snapshot``, ``atomically``). Each statement reads
        one state of the datastore; ``snapshot`` makes several read one (``repeatable``: on PostgreSQL a
        repeatable-read, read-only transaction, begun so by the driver's BEGIN)."""
        began = time.monotonic()
        try:
            held = self._held()
            if held is not None:
                yield held.conn
            else:
                with self.engine.connect() as conn:
                    if repeatable and self.backend == "postgres":
                        conn.execution_options(**_REPEATABLE_READ)  # reset as the pool takes it back
                    with conn.begin():
                        yield conn
        except (sa.exc.SQLAlchemyError, OSError) as error:
            raise self._failed(error, began) from error
        self.availability.answered(began)

    @contextmanager
    def write(self, *, fenced: bool = True) -> Iterator[sa.Connection]:
        """A write transaction; on SQLite it holds the database write lock from its first statement. Once
        ``fence_writes`` was called, it first checks in the same transaction that this process still leads
        (``LeadershipLost`` otherwise); ``fenced=False`` is for the lease's own writes only. Within ``atomically``,
        the transaction it holds open."""
        began = time.monotonic()
        try:
            held = self._held(writing=True)
            if held is not None:
                yield held.conn
            else:
                with self._transaction(self.write_fence if fenced else None) as conn:
                    yield conn
        except (sa.exc.SQLAlchemyError, OSError) as error:
            raise self._failed(error, began) from error
        self.availability.answered(began)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read this thread makes within the block shares one read transaction, and one BEGIN and COMMIT
        where a server is a round trip away instead of a pair per read. Its reads see one state of the datastore
        (SQLite's WAL snapshot; on PostgreSQL a repeatable-read transaction), except through the Data API, where
        each statement sees what was committed before it. No write may be made on this thread within it
        (``atomically`` is for reading and writing together)."""
        if self._held() is not None:
            yield  # within a snapshot or an atomic block already: its transaction serves
            return
        with self.read(repeatable=True) as conn:  # a read-only one never fails to serialize
            self._holding.current = _Held(conn, writing=False)
            try:
                yield
            finally:
                self._holding.current = None

    def atomically(self, work: Callable[[], T]) -> T:
        """Runs ``work`` with every read and write this thread makes in it inside one write transaction: all of it
        commits, or none (an error in it rolls everything back). A compare-and-swap that loses in it runs the whole
        of ``work`` again, as ``write_retrying`` runs its own work; ``work`` must hold no state across attempts."""
        held = self._held(writing=True)
        if held is not None:
            return work()

        def whole(conn: sa.Connection) -> T:
            self._holding.current = _Held(conn, writing=True)
            try:
                return work()
            finally:
                self._holding.current = None

        return self.write_retrying(whole)

    def _held(self, *, writing: bool = False) -> _Held | None:
        """The transaction this thread holds open (``snapshot``, ``atomically``); a write within a snapshot is a
        bug (its reads would not see the write, nor could it be rolled back with them)."""
        held: _Held | None = getattr(self._holding, "current", None)
        if held is not None and writing and not held.writing:
            raise RuntimeError("a datastore write within a read snapshot")
        return held

    @contextmanager
    def _transaction(self, fence: WriteFence | None) -> Iterator[sa.Connection]:
        """A write transaction, its errors untranslated; first, when ``fence`` is given, the check that this process
        still leads (in the transaction, so that the check and the writes commit together or not at all)."""
        if fence is not None:
            fence.refuse_if_lost()
        with self.engine.connect() as base:
            conn = base.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                if fence is not None:
                    fence.check(conn)
                yield conn

    def write_retrying(self, work: Callable[[sa.Connection], T]) -> T:
        """Runs ``work`` in a write transaction, again from scratch when a concurrent writer got there first
        (``Retry`` or a unique-index violation); gives up with ``ConflictError`` after a few attempts. Fenced as
        ``write`` is: ``LeadershipLost`` ends it at once (it is no conflict, a retry cannot help)."""
        held = self._held(writing=True)
        if held is not None:
            return work(held.conn)  # a conflict rolls back and reruns the whole atomic block (``atomically``)
        last: Exception | None = None
        began = time.monotonic()
        for attempt in range(_WRITE_ATTEMPTS):
            if attempt:
                # Jittered backoff so that colliding writers stop colliding.
                time.sleep(random.uniform(0, 0.001 * 2 ** min(attempt, 8)))
            try:
                with self._transaction(self.write_fence) as conn:
                    result = work(conn)
                self.availability.answered(began)
                return result
            except Retry as error:
                last = error
            except sa.exc.IntegrityError as error:
                last = error
            except sa.exc.OperationalError as error:
                # PostgreSQL's deadlock detector or serialization checks picked this transaction: rerun it.
                if getattr(getattr(error, "orig", None), "sqlstate", None) not in ("40P01", "40001"):
                    raise self._failed(error, began) from error
                last = error
            except (sa.exc.SQLAlchemyError, OSError) as error:
                raise self._failed(error, began) from error
        raise ConflictError(f"write kept conflicting with concurrent writers ({self.describe}): {last}")

    def lock_all(self, conn: sa.Connection, keys: Sequence[str]) -> None:
        """Serialises write transactions on ``keys`` until commit, taking them in sorted order (so two
        transactions never wait on each other in a cycle). Only PostgreSQL needs it: SQLite's write
        transactions are serial already. Compare-and-swap writes stay correct without it; the locks just
        spare concurrent writers of one record a storm of retries."""
        if conn.dialect.name == "postgresql" and keys:
            conn.execute(_LOCK, {"keys": sorted(keys)})

    def insert(self, table: sa.Table) -> Any:
        """An INSERT that supports ``on_conflict_do_update`` on this dialect."""
        return upsertable_insert(self.engine.dialect, table)

    # -- health ----------------------------------------------------------------------------------------

    def ping(self) -> None:
        """Raises ``DatastoreUnavailable`` unless the database answers a trivial query."""
        began = time.monotonic()
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1").scalar_one()
        except (sa.exc.SQLAlchemyError, OSError) as error:
            translated = self.translate(error)
            if not isinstance(translated, DatastoreUnavailable):
                translated = DatastoreUnavailable(str(translated))
            self.availability.failed(translated, began)
            raise translated from error
        self.availability.answered(began)

    def close(self) -> None:
        self.engine.dispose()
