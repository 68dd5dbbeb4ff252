"""A PEP 249 (DB-API 2.0) driver over the AWS RDS Data API, for SQLAlchemy's PostgreSQL dialect.

``paramstyle`` is ``named`` because that is the Data API's own (``:name``). A connection holds no socket,
only the id of the Data API transaction it has open:

* DB-API transactions map to BeginTransaction / CommitTransaction / RollbackTransaction, begun lazily by
  the first statement. A connection marked ``read_only`` (the datastore's read transactions) runs plain
  reads without a transaction, sparing two round trips per read; its first write begins one.
* ``execute`` of a read goes through ``BudgetedReader`` (answers under the 1 MiB / 64 KB caps);
  ``executemany`` becomes BatchExecuteStatement calls split so that each request stays under 1 MiB.
* A request that cannot be split (one statement, or one row of a batch, over the cap) fails before
  anything is sent, with an error that names the record by its identifying parameters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import date, datetime, time
from typing import Any

from svc.datastore.dataapi_errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    RequestTooLargeError,
    TransactionLostError,
    Warning,
)
from svc.datastore.dataapi_fetch import BudgetedReader, Column, columns_of, is_budgeted, is_plain_read
from svc.datastore.dataapi_transport import Transport
from svc.datastore.dataapi_values import Parameter, body_bytes, from_field, to_parameters

apilevel = "2.0"
threadsafety = 1  # connections must not be shared between threads (SQLAlchemy's pool never does)
paramstyle = "named"

# Parameters that identify a record in our tables: named in "too large" errors (never the large values).
_IDENTIFYING = ("type", "label", "stack", "ksuid", "native_id", "id", "command_id", "resource_type",
                "resource_label", "kind", "scope")
MAX_BATCH_SETS = 1000


def connect(transport: Transport, reader: BudgetedReader | None = None) -> Connection:
    return Connection(transport, reader or BudgetedReader(transport.limits))


class Connection:
    def __init__(self, transport: Transport, reader: BudgetedReader) -> None:
        self.transport = transport
        self.reader = reader
        self.transaction_id: str | None = None
        self.autocommit = False
        self.read_only = False
        self.closed = False

    def cursor(self) -> Cursor:
        if self.closed:
            raise InterfaceError("the connection is closed")
        return Cursor(self)

    def begin_if_needed(self, sql: str) -> None:
        if self.transaction_id is not None or self.autocommit:
            return
        if self.read_only and is_plain_read(sql):
            return
        self.transaction_id = str(self.transport.call("begin_transaction")["transactionId"])

    def commit(self) -> None:
        transaction_id, self.transaction_id = self.transaction_id, None
        if transaction_id is not None:
            self.transport.call("commit_transaction", transactionId=transaction_id)

    def rollback(self) -> None:
        transaction_id, self.transaction_id = self.transaction_id, None
        if transaction_id is None:
            return
        try:
            self.transport.call("rollback_transaction", transactionId=transaction_id)
        except TransactionLostError:
            pass  # the service ended it already (a failed statement ends its transaction): nothing to undo

    def close(self) -> None:
        if not self.closed:
            try:
                self.rollback()
            finally:
                self.closed = True

    def statement_request(self, sql: str) -> dict[str, Any]:
        request: dict[str, Any] = {"sql": sql}
        if self.transaction_id is not None:
            request["transactionId"] = self.transaction_id
        return request


Description = tuple[str, str, None, None, int | None, int | None, bool | None]


class Cursor:
    arraysize = 100

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.description: list[Description] | None = None
        self.rowcount = -1
        self.lastrowid = None
        self._rows: Iterator[tuple[Any, ...]] = iter(())

    # -- execution -------------------------------------------------------------------------------------

    def execute(self, operation: str, parameters: Mapping[str, Any] | None = None) -> Cursor:
        if parameters is not None and not isinstance(parameters, Mapping):
            raise ProgrammingError("this driver takes named parameters (a mapping)")
        connection = self.connection
        values = to_parameters(parameters)
        self._check_size(connection.statement_request(operation) | {"parameters": values}, operation, parameters)
        connection.begin_if_needed(operation)
        if is_budgeted(operation):
            columns, rows = connection.reader.read(self._run, operation, values)
            self._set_result(columns, rows, len(rows))
            return self
        answer = self._run(operation, values)
        if "columnMetadata" in answer or answer.get("records"):
            columns = columns_of(answer)
            rows = [tuple(from_field(field, column.type_name) for field, column in zip(record, columns, strict=True))
                    for record in answer.get("records") or []]
            self._set_result(columns, rows, len(rows))
        else:
            self._set_result(None, [], int(answer.get("numberOfRecordsUpdated", -1)))
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Mapping[str, Any]]) -> Cursor:
        connection = self.connection
        sets = [(to_parameters(parameters), parameters) for parameters in seq_of_parameters]
        if not sets:
            return self
        connection.begin_if_needed("INSERT")  # a batch always writes: it runs in a transaction
        base = body_bytes(connection.transport.base() | connection.statement_request(operation)
                          | {"parameterSets": []})
        budget = connection.transport.limits.request_budget
        chunk: list[list[Parameter]] = []
        size = base
        for values, raw in sets:
            cost = body_bytes(values) + 2  # ", " between sets
            if base + cost > budget:
                self._check_size(connection.statement_request(operation) | {"parameterSets": [values]}, operation, raw)
            if chunk and (size + cost > budget or len(chunk) >= MAX_BATCH_SETS):
                self._batch(operation, chunk)
                chunk, size = [], base
            chunk.append(values)
            size += cost
        self._batch(operation, chunk)
        self._set_result(None, [], -1)  # the Data API does not report per-set counts
        return self

    def _batch(self, operation: str, parameter_sets: list[list[Parameter]]) -> None:
        request = self.connection.statement_request(operation) | {"parameterSets": parameter_sets}
        self.connection.transport.call("batch_execute_statement", **request)

    def _run(self, sql: str, parameters: list[Parameter], as_json: bool = False) -> dict[str, Any]:
        request = self.connection.statement_request(sql) | {"parameters": parameters}
        request |= {"formatRecordsAs": "JSON"} if as_json else {"includeResultMetadata": True}
        return self.connection.transport.call("execute_statement", **request)

    def _check_size(self, request: dict[str, Any], sql: str, raw: Mapping[str, Any] | None) -> None:
        transport = self.connection.transport
        size = body_bytes(transport.base() | request)
        if size <= transport.limits.request_budget:
            return
        largest = max((raw or {}).items(), key=lambda item: len(str(item[1])), default=None)
        who = ", ".join(f"{name}={str(raw[name])[:120]!r}" for name in _IDENTIFYING
                        if raw and isinstance(raw.get(name), str))
        words = " ".join(sql.split()[:3])
        raise RequestTooLargeError(
            f"the record ({who or 'unnamed'}) is too large for the Data API: {words} would send {size:,} bytes, "
            f"over the {transport.limits.max_request_bytes:,}-byte request limit"
            + (f" (largest value: {largest[0]}, {len(str(largest[1])):,} characters)" if largest else ""))

    def _set_result(self, columns: list[Column] | None, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self.description = None if columns is None else [
            (c.name, c.type_name, None, None, c.metadata.get("precision"), c.metadata.get("scale"), None)
            for c in columns]
        self.rowcount = rowcount
        self._rows = iter(rows)

    # -- results ---------------------------------------------------------------------------------------

    def fetchone(self) -> tuple[Any, ...] | None:
        return next(self._rows, None)

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        count = size or self.arraysize
        out: list[tuple[Any, ...]] = []
        for row in self._rows:
            out.append(row)
            if len(out) >= count:
                break
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._rows)

    def close(self) -> None:
        self._rows = iter(())

    def setinputsizes(self, sizes: Any) -> None:
        pass

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return self._rows


# PEP 249 type objects and constructors.
STRING, BINARY, NUMBER, DATETIME, ROWID = "STRING", "BINARY", "NUMBER", "DATETIME", "ROWID"
Date, Time, Timestamp, Binary = date, time, datetime, bytes

__all__ = [
    "BINARY", "DATETIME", "NUMBER", "ROWID", "STRING", "Binary", "Connection", "Cursor", "DataError", "DatabaseError",
    "Date", "Error", "IntegrityError", "InterfaceError", "InternalError", "NotSupportedError", "OperationalError",
    "ProgrammingError", "Time", "Timestamp", "Warning", "apilevel", "connect", "paramstyle", "threadsafety",
]
