"""An HTTP stand-in for the AWS RDS Data API (``rds-data``), backed by a real PostgreSQL.

It answers the REST-JSON requests botocore sends (``POST /Execute``, ``/BatchExecute``,
``/BeginTransaction``, ``/CommitTransaction``, ``/RollbackTransaction``) with the response and error
shapes of botocore's ``rds-data`` model, and enforces the service's size limits, so that code which
works here also stays inside the limits of the real service.

Sizes are measured strictly: a request counts its request line, headers and body (AWS documents
that its request limit includes the headers and the JSON notation); a response counts its JSON body.
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg

from .backend import Backend, StatementResult, format_database_error
from .errors import DataApiError, Errors, ErrorStyle, NotReadyKind
from .sqlparams import parse_named
from .values import build_adapters, cell_size, column_metadata, field_to_param, formatted_records, value_to_field

MIB = 1_048_576
DEFAULT_RESOURCE_ARN = "arn:aws:rds:us-east-1:123456789012:cluster:svc-standin"
DEFAULT_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:svc-standin-AbCdEf"

_OPERATIONS: dict[str, str] = {
    "/Execute": "ExecuteStatement",
    "/BatchExecute": "BatchExecuteStatement",
    "/BeginTransaction": "BeginTransaction",
    "/CommitTransaction": "CommitTransaction",
    "/RollbackTransaction": "RollbackTransaction",
}


@dataclass
class CallRecord:
    operation: str
    request_bytes: int
    response_bytes: int
    error: str | None  # error code, None on success
    sql: str | None  # first 500 characters


@dataclass
class Stats:
    """What the stand-in has seen since start (or the last ``reset_stats``)."""

    requests: Counter[str] = field(default_factory=Counter)  # per operation name
    errors: Counter[str] = field(default_factory=Counter)  # per error code
    statements: int = 0  # SQL executions (a batch counts once per parameter set)
    largest_request_bytes: int = 0  # including rejected requests
    largest_response_bytes: int = 0  # including responses rejected as too large (their would-be size)
    rejected_requests: int = 0  # over the request size limit
    rejected_responses: int = 0  # over the response (or row) size limit
    recent: deque[CallRecord] = field(default_factory=lambda: deque(maxlen=1000))

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())


class _TooLargeResponse(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class RdsDataStandIn:
    """A local RDS Data API endpoint over a real PostgreSQL.

    ``postgres_url`` is a libpq URL of the server (its database part is the default for requests that
    name no ``database``); each request's ``database`` selects the database on that server.
    """

    def __init__(
        self,
        postgres_url: str,
        *,
        max_bytes: int = MIB,
        max_request_bytes: int | None = None,
        max_response_bytes: int | None = None,
        max_row_bytes: int | None = 64 * 1024,
        error_style: ErrorStyle = ErrorStyle.CURRENT,
        valid_secret_arns: Sequence[str] | None = None,
        transaction_timeout: float = 180.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.postgres_url = postgres_url
        self.max_request_bytes = max_request_bytes if max_request_bytes is not None else max_bytes
        self.max_response_bytes = max_response_bytes if max_response_bytes is not None else max_bytes
        self.max_row_bytes = max_row_bytes
        self.errors = Errors(error_style)
        self.valid_secret_arns = set(valid_secret_arns) if valid_secret_arns is not None else None
        self.host, self.port = host, port
        self.resource_arn, self.secret_arn = DEFAULT_RESOURCE_ARN, DEFAULT_SECRET_ARN
        self.backend = Backend(postgres_url, self.errors, build_adapters(), transaction_timeout=transaction_timeout)
        self.stats = Stats()
        self._lock = threading.Lock()
        self._injected: deque[DataApiError] = deque()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> str:
        """Starts serving in a background thread and returns the endpoint URL for boto3."""
        if self._server is not None:
            return self.endpoint_url
        self._server = _Server((self.host, self.port), self)
        self.port = self._server.server_address[1]
        # A short poll interval keeps stop() quick (shutdown waits for the serve loop's next poll).
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="rdsdata-standin", daemon=True)
        self._thread.start()
        return self.endpoint_url

    def stop(self) -> None:
        """Stops serving, cuts open client connections and closes every PostgreSQL connection."""
        if self._server is not None:
            self._server.shutdown()
            self._server.close_client_connections()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self.backend.close()

    def __enter__(self) -> RdsDataStandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client_kwargs(self) -> dict[str, str]:
        """Keyword arguments for ``boto3.client("rds-data", **kwargs)`` aimed at this stand-in."""
        return {"endpoint_url": self.endpoint_url, "region_name": "us-east-1",
                "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}

    # -- fault injection and counters --------------------------------------------------------------

    def not_ready_for(self, n_calls: int, kind: NotReadyKind = NotReadyKind.RESUMING) -> None:
        """The next ``n_calls`` requests (any operation) fail as if the database were not ready."""
        with self._lock:
            self._injected.extend(self.errors.not_ready(kind, self.resource_arn) for _ in range(n_calls))

    def fail_next(self, n_calls: int, code: str, message: str) -> None:
        """The next ``n_calls`` requests fail with any error code of the model (e.g. StatementTimeoutException)."""
        with self._lock:
            self._injected.extend(DataApiError(code, message) for _ in range(n_calls))

    def reset_stats(self) -> Stats:
        """Starts counting afresh and returns what was counted so far."""
        with self._lock:
            old, self.stats = self.stats, Stats()
        return old

    @property
    def open_transactions(self) -> int:
        return self.backend.open_transactions()

    # -- request handling --------------------------------------------------------------------------

    def handle(self, path: str, request_bytes: int, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """One HTTP request → (status, extra headers, body). Runs on the server's handler threads."""
        operation = _OPERATIONS.get(path.split("?", 1)[0], "Unknown")
        sql: str | None = None
        payload = b""
        try:
            if operation == "Unknown":
                raise DataApiError("UnknownOperationException", f"Unknown operation {path}")
            if request_bytes > self.max_request_bytes:
                with self._lock:
                    self.stats.rejected_requests += 1
                raise self.errors.request_too_large(request_bytes, self.max_request_bytes)
            with self._lock:
                injected = self._injected.popleft() if self._injected else None
            if injected is not None:
                raise injected
            try:
                request = json.loads(body or b"{}")
            except ValueError as error:
                raise DataApiError("SerializationException", f"Could not parse request body: {error}") from error
            if not isinstance(request, dict):
                raise DataApiError("SerializationException", "Request body must be a JSON object")
            sql = request.get("sql") if isinstance(request.get("sql"), str) else None
            self._check_common(request)
            payload = self._dispatch(operation, request)
            status, headers = 200, {}
        except DataApiError as error:
            status, headers = error.status, {"x-amzn-ErrorType": error.code}
            payload = json.dumps(error.body()).encode()
        except Exception as error:  # a stand-in bug: answer like the service's 500, never drop the connection
            status, headers = 500, {"x-amzn-ErrorType": "InternalServerErrorException"}
            payload = json.dumps({"message": f"stand-in failure: {error!r}"}).encode()
        with self._lock:
            stats = self.stats
            stats.requests[operation] += 1
            stats.largest_request_bytes = max(stats.largest_request_bytes, request_bytes)
            if status == 200:
                stats.largest_response_bytes = max(stats.largest_response_bytes, len(payload))
            else:
                stats.errors[headers["x-amzn-ErrorType"]] += 1
            stats.recent.append(CallRecord(operation, request_bytes, len(payload),
                                           headers.get("x-amzn-ErrorType"), sql[:500] if sql else None))
        return status, headers, payload

    def _check_common(self, request: dict[str, Any]) -> None:
        for name in ("resourceArn", "secretArn"):
            if not isinstance(request.get(name), str) or not request[name]:
                raise self.errors.bad_request(f"{name} is required")
        if self.valid_secret_arns is not None and request["secretArn"] not in self.valid_secret_arns:
            raise self.errors.bad_secret(request["secretArn"])

    def _dispatch(self, operation: str, request: dict[str, Any]) -> bytes:
        handlers: dict[str, Callable[[dict[str, Any]], bytes]] = {
            "ExecuteStatement": self._execute_statement,
            "BatchExecuteStatement": self._batch_execute,
            "BeginTransaction": self._begin,
            "CommitTransaction": lambda r: self._end(r, commit=True),
            "RollbackTransaction": lambda r: self._end(r, commit=False),
        }
        return handlers[operation](request)

    # -- operations --------------------------------------------------------------------------------

    def _begin(self, request: dict[str, Any]) -> bytes:
        return self._respond({"transactionId": self.backend.begin(request.get("database") or None)},
                             "BeginTransaction")

    def _end(self, request: dict[str, Any], *, commit: bool) -> bytes:
        transaction_id = request.get("transactionId")
        if not isinstance(transaction_id, str) or not transaction_id:
            raise self.errors.bad_request("transactionId is required")
        self.backend.end(transaction_id, commit=commit)
        status = "Transaction Committed" if commit else "Rollback Complete"
        return self._respond({"transactionStatus": status},
                             "CommitTransaction" if commit else "RollbackTransaction")

    def _execute_statement(self, request: dict[str, Any]) -> bytes:
        sql = self._sql(request)
        parsed = parse_named(sql)
        values = self._bind(parsed.names, request.get("parameters") or [])
        transaction_id = request.get("transactionId")
        if transaction_id:
            # Any failure inside, including a response over the limit, ends the transaction.
            with self.backend.transaction(transaction_id) as tx:
                result = self._run(tx.conn, tx.database, parsed.sql, values)
                return self._respond(self._statement_body(result, request), "ExecuteStatement")
        database = request.get("database") or self.backend.default_database
        with self.backend.autocommit_connection(database) as conn:
            result = self._run(conn, database, parsed.sql, values)
        return self._respond(self._statement_body(result, request), "ExecuteStatement")

    def _batch_execute(self, request: dict[str, Any]) -> bytes:
        sql = self._sql(request)
        parsed = parse_named(sql)
        sets = [self._bind(parsed.names, parameter_set) for parameter_set in request.get("parameterSets") or []]

        def run_all(conn: psycopg.Connection[Any], database: str) -> bytes:
            results = []
            for values in sets:
                result = self._run(conn, database, parsed.sql, values)
                self._check_rows(result, "BatchExecuteStatement")
                # PostgreSQL has no generated keys; a RETURNING clause's first row stands in for them.
                first = result.rows[0] if result.columns and result.rows else ()
                results.append({"generatedFields": [value_to_field(v) for v in first]})
            return self._respond({"updateResults": results}, "BatchExecuteStatement")

        transaction_id = request.get("transactionId")
        if transaction_id:
            with self.backend.transaction(transaction_id) as tx:
                return run_all(tx.conn, tx.database)
        database = request.get("database") or self.backend.default_database
        with self.backend.autocommit_connection(database) as conn:
            try:
                with conn.transaction():  # a batch outside a transaction is still all-or-nothing
                    return run_all(conn, database)
            except psycopg.Error as error:  # the COMMIT itself failed (e.g. deferred constraint)
                raise self.errors.database(format_database_error(error)) from error

    # -- helpers -----------------------------------------------------------------------------------

    def _sql(self, request: dict[str, Any]) -> str:
        sql = request.get("sql")
        if not isinstance(sql, str) or not sql.strip():
            raise self.errors.bad_request("SQL statement is required")
        if len(sql) > 65536:  # the model's SqlStatement max length
            raise self.errors.bad_request("Number of characters in SQL statement is longer than 65536")
        return sql

    def _bind(self, names: Sequence[str], parameters: Any) -> list[Any]:
        if not isinstance(parameters, list):
            raise self.errors.bad_request("parameters must be a list")
        by_name: dict[str, Any] = {}
        for parameter in parameters:
            if not isinstance(parameter, dict) or not isinstance(parameter.get("name"), str):
                raise self.errors.bad_request("Each parameter needs a name")
            name = parameter["name"]
            by_name[name] = field_to_param(name, parameter.get("value") or {}, parameter.get("typeHint"))
        missing = [name for name in names if name not in by_name]
        if missing:
            raise self.errors.database(f"No value specified for parameter: {missing[0]}")
        return [by_name[name] for name in names]

    def _run(self, conn: psycopg.Connection[Any], database: str, sql: str, values: list[Any]) -> StatementResult:
        with self._lock:
            self.stats.statements += 1
        return self.backend.execute(conn, database, sql, values)

    def _check_rows(self, result: StatementResult, operation: str) -> None:
        """Row and whole-result limits, checked on data sizes before building any JSON."""
        total = 0
        for row in result.rows:
            size = sum(cell_size(cell) for cell in row)
            if self.max_row_bytes is not None and size > self.max_row_bytes:
                with self._lock:
                    self.stats.rejected_responses += 1
                raise self.errors.row_too_large(operation, size, self.max_row_bytes)
            total += size
            if total > self.max_response_bytes:  # data alone is over: the JSON can only be bigger
                self._reject_response(total, operation)

    def _statement_body(self, result: StatementResult, request: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"numberOfRecordsUpdated": result.updated}
        if result.columns is None:
            body["generatedFields"] = []
            return body
        self._check_rows(result, "ExecuteStatement")
        options = request.get("resultSetOptions") or {}
        decimal_as_number = options.get("decimalReturnType") == "DOUBLE_OR_LONG"
        long_as_string = options.get("longReturnType") == "STRING"
        numeric = result.numeric_columns()
        if request.get("formatRecordsAs") == "JSON":
            body["formattedRecords"] = formatted_records(
                [c.name for c in result.columns], result.rows, numeric,
                decimal_as_number=decimal_as_number, long_as_string=long_as_string)
            return body
        body["records"] = [
            [value_to_field(cell, decimal_as_number=decimal_as_number, long_as_string=long_as_string,
                            is_numeric=is_num) for cell, is_num in zip(row, numeric, strict=True)]
            for row in result.rows
        ]
        if request.get("includeResultMetadata"):
            body["columnMetadata"] = [column_metadata(column, *type_name)
                                      for column, type_name in zip(result.columns, result.type_names, strict=True)]
        return body

    def _respond(self, body: dict[str, Any], operation: str) -> bytes:
        payload = json.dumps(body, separators=(",", ":")).encode()
        if len(payload) > self.max_response_bytes:
            self._reject_response(len(payload), operation)
        return payload

    def _reject_response(self, size: int, operation: str) -> None:
        with self._lock:
            self.stats.rejected_responses += 1
            self.stats.largest_response_bytes = max(self.stats.largest_response_bytes, size)
        raise self.errors.response_too_large(operation)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's connection pool expects
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without TCP_NODELAY the body waits for the client's
        # delayed ACK (~40 ms per call), which would make every Data API call look slow.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, add=False)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        header_bytes = len(self.raw_requestline) + sum(len(k) + len(v) + 4 for k, v in self.headers.items()) + 2
        status, headers, payload = self.server.standin.handle(self.path, header_bytes + length, body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # test output stays readable; the stats keep what matters


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # keep-alive handler threads would otherwise make stop() wait for clients

    def __init__(self, address: tuple[str, int], standin: RdsDataStandIn) -> None:
        super().__init__(address, _Handler)
        self.standin = standin
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def track(self, connection: socket.socket, *, add: bool) -> None:
        with self._connections_lock:
            (self._connections.add if add else self._connections.discard)(connection)

    def close_client_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
