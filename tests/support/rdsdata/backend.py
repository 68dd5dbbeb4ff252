"""The PostgreSQL side of the stand-in: connections, open transactions, running one statement.

Each statement outside a transaction runs on a pooled autocommit connection that is reset with
``DISCARD ALL`` afterwards, because on the real service every call is its own session: a ``SET`` or
a TEMP table must not survive into the next call. Each open transaction owns one connection until it
is committed, rolled back, fails, or sits idle past the service's timeout.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.adapt import AdaptersMap

from .errors import Errors

_NUMERIC_OID = psycopg.postgres.types["numeric"].oid
_UPDATE_VERBS = {"INSERT", "UPDATE", "DELETE", "MERGE", "COPY"}


def format_database_error(error: psycopg.Error) -> str:
    """PostgreSQL's error the way the service (through the PostgreSQL JDBC driver) words it."""
    diag = error.diag
    primary = diag.message_primary or str(error).strip()
    parts = [f"{diag.severity_nonlocalized or diag.severity or 'ERROR'}: {primary}"]
    if diag.message_detail:
        parts.append(f"\n  Detail: {diag.message_detail}")
    if diag.message_hint:
        parts.append(f"\n  Hint: {diag.message_hint}")
    if diag.statement_position:
        parts.append(f"\n  Position: {diag.statement_position}")
    text = "".join(parts)
    # The SQLSTATE suffix is what lets a client tell a unique violation from a serialization failure.
    return f"{text}; SQLState: {diag.sqlstate}" if diag.sqlstate else text


@dataclass
class StatementResult:
    columns: list[psycopg.Column] | None  # None: the statement returned no result set
    rows: list[tuple[Any, ...]]
    updated: int
    type_names: list[tuple[str, str | None]]  # per column: (type name, element type name if an array)

    def numeric_columns(self) -> list[bool]:
        return [c.type_code == _NUMERIC_OID or tn[1] == "numeric"
                for c, tn in zip(self.columns or [], self.type_names, strict=True)]


@dataclass
class Transaction:
    id: str
    database: str
    conn: psycopg.Connection[Any]
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)


class Backend:
    def __init__(self, postgres_url: str, errors: Errors, adapters: AdaptersMap, *,
                 transaction_timeout: float, idle_pool_size: int = 8) -> None:
        self.postgres_url = postgres_url
        self.default_database = psycopg.conninfo.conninfo_to_dict(postgres_url).get("dbname") or "postgres"
        self.errors = errors
        self.adapters = adapters
        self.transaction_timeout = transaction_timeout
        self.idle_pool_size = idle_pool_size
        self._lock = threading.Lock()
        self._idle: dict[str, list[psycopg.Connection[Any]]] = {}
        self._transactions: dict[str, Transaction] = {}
        self._type_cache: dict[tuple[str, int], tuple[str, str | None]] = {}

    # -- connections -----------------------------------------------------------------------------

    def connect(self, database: str | None, *, autocommit: bool) -> psycopg.Connection[Any]:
        dbname = database or self.default_database
        try:
            return psycopg.connect(
                self.postgres_url, dbname=dbname, autocommit=autocommit, context=self.adapters,
                cursor_factory=psycopg.RawCursor,  # $1-style placeholders: '%' in SQL needs no escaping
                prepare_threshold=None,  # DISCARD ALL drops prepared statements behind psycopg's back
                options="-c TimeZone=UTC", connect_timeout=5,
            )
        except psycopg.OperationalError as error:
            text = str(error)
            if "does not exist" in text or "authentication" in text or "password" in text:
                fatal = text[text.find("FATAL:"):].strip() if "FATAL:" in text else text.strip()
                raise self.errors.database(" ".join(fatal.split())) from error
            raise self.errors.unreachable() from error

    @contextmanager
    def autocommit_connection(self, database: str | None) -> Iterator[psycopg.Connection[Any]]:
        dbname = database or self.default_database
        with self._lock:
            pool = self._idle.setdefault(dbname, [])
            conn = pool.pop() if pool else None
        if conn is None or conn.closed:
            conn = self.connect(dbname, autocommit=True)
        try:
            yield conn
        finally:
            self._give_back(dbname, conn)

    def _give_back(self, dbname: str, conn: psycopg.Connection[Any]) -> None:
        try:
            if conn.closed or conn.broken:
                # The server went away (restart, terminated backends): its idle siblings are dead too.
                conn.close()
                with self._lock:
                    stale = self._idle.pop(dbname, [])
                for other in stale:
                    other.close()
                return
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            conn.execute("DISCARD ALL")  # a new "session" for the next call, as on the real service
        except psycopg.Error:
            conn.close()
            return
        with self._lock:
            pool = self._idle.setdefault(dbname, [])
            if len(pool) < self.idle_pool_size:
                pool.append(conn)
                return
        conn.close()

    # -- transactions ----------------------------------------------------------------------------

    def begin(self, database: str | None) -> str:
        # psycopg opens the PostgreSQL transaction (BEGIN) with the first statement on the connection.
        conn = self.connect(database, autocommit=False)
        # Real ids are long opaque base64 strings; 48 random bytes gives the same look.
        transaction_id = base64.b64encode(os.urandom(48)).decode()
        with self._lock:
            self._transactions[transaction_id] = Transaction(transaction_id, database or self.default_database,
                                                             conn, time.monotonic())
        return transaction_id

    @contextmanager
    def transaction(self, transaction_id: str) -> Iterator[Transaction]:
        """Holds an open transaction for one call; any error inside ends it (as the service does)."""
        self.expire_idle()
        with self._lock:
            tx = self._transactions.get(transaction_id)
        if tx is None:
            raise self.errors.transaction_not_found(transaction_id)
        with tx.lock:
            with self._lock:
                if self._transactions.get(transaction_id) is not tx:  # ended while we waited
                    raise self.errors.transaction_not_found(transaction_id)
            try:
                yield tx
            except BaseException:
                self.end(transaction_id, commit=False)
                raise
            tx.last_used = time.monotonic()

    def end(self, transaction_id: str, *, commit: bool) -> None:
        self.expire_idle()
        with self._lock:
            tx = self._transactions.pop(transaction_id, None)
        if tx is None:
            raise self.errors.transaction_not_found(transaction_id)
        try:
            if commit:
                tx.conn.commit()
            else:
                tx.conn.rollback()
        except psycopg.OperationalError as error:
            raise self.errors.unreachable() from error
        except psycopg.Error as error:
            raise self.errors.database(format_database_error(error)) from error
        finally:
            tx.conn.close()

    def expire_idle(self) -> None:
        """Rolls back transactions unused for longer than the timeout (the service: 3 minutes)."""
        now = time.monotonic()
        with self._lock:
            stale = [tx for tx in self._transactions.values()
                     if now - tx.last_used > self.transaction_timeout and not tx.lock.locked()]
            for tx in stale:
                del self._transactions[tx.id]
        for tx in stale:
            tx.conn.close()  # closing without COMMIT rolls back

    def open_transactions(self) -> int:
        with self._lock:
            return len(self._transactions)

    # -- statements ------------------------------------------------------------------------------

    def execute(self, conn: psycopg.Connection[Any], database: str, sql: str,
                params: Sequence[Any]) -> StatementResult:
        try:
            with conn.cursor() as cur:
                cur.execute(sql, params, prepare=False)
                if cur.description is None:
                    columns, rows = None, []
                else:
                    columns, rows = list(cur.description), cur.fetchall()
                verb = (cur.statusmessage or "").split(" ", 1)[0].upper()
                updated = max(cur.rowcount, 0) if verb in _UPDATE_VERBS else 0
        except psycopg.OperationalError as error:
            if conn.broken or conn.closed:
                raise self.errors.unreachable() from error
            raise self.errors.database(format_database_error(error)) from error
        except psycopg.Error as error:
            raise self.errors.database(format_database_error(error)) from error
        type_names = [self._type_name(conn, database, c.type_code) for c in columns or []]
        return StatementResult(columns, rows, updated, type_names)

    def _type_name(self, conn: psycopg.Connection[Any], database: str, oid: int) -> tuple[str, str | None]:
        info = psycopg.postgres.types.get(oid)
        if info is not None:  # the registry answers for array oids too, with the element's info
            return (f"_{info.name}", info.name) if info.array_oid == oid else (info.name, None)
        key = (database, oid)
        if key not in self._type_cache:
            row = conn.execute(
                "SELECT t.typname, e.typname FROM pg_type t LEFT JOIN pg_type e ON e.oid = t.typelem "
                "AND t.typcategory = 'A' WHERE t.oid = $1", [oid]).fetchone()
            self._type_cache[key] = (row[0], row[1]) if row else ("unknown", None)
        return self._type_cache[key]

    def close(self) -> None:
        with self._lock:
            transactions, self._transactions = list(self._transactions.values()), {}
            idle, self._idle = [c for pool in self._idle.values() for c in pool], {}
        for conn in [tx.conn for tx in transactions] + idle:
            conn.close()
