"""Reads a SELECT's result through the Data API without ever asking for more than the service allows.

The service rejects a response over 1 MiB and a result row over 64 KB, and a PostgreSQL driver cannot
know a result's size before it runs the query. So every SELECT is wrapped in SQL that measures each row
on the server and returns only what fits:

1. The statement's columns (names, types) come from a ``LIMIT 0`` run, cached per SQL text.
2. The wrapper numbers the rows, estimates each cell's size in the answer (records are asked for as one
   JSON text, ``formatRecordsAs=JSON``, so a cell is escaped twice: ``to_json(to_json(text))`` measures
   that, plus room for ``\\uXXXX`` escapes of non-ASCII characters and the column key), keeps a running
   total and returns rows while the total stays under the budget. A row whose data is
   over the per-row limit comes back with its large cells set to NULL and listed in ``_svc_om``.
3. The loop asks again from the last row it got until it has them all. The last row is asked for again
   and compared by its fingerprint (md5 of the row), so a result that changed between two requests
   (statements outside one snapshot) is noticed and read again from the start instead of skipping or
   repeating rows.
4. Each large cell is read as UTF-8 byte slices (``bytea`` slices of 30,000 bytes, many per request) and
   put back together.

A single statement's result of a few hundred small rows still takes one request; the wrapper costs the
server a window function over rows the statement produced anyway.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from svc.datastore.dataapi_errors import OperationalError
from svc.datastore.dataapi_transport import Limits
from svc.datastore.dataapi_values import Parameter, body_bytes, from_json, from_text, to_parameter

# Runs one ExecuteStatement in the caller's transaction and returns its answer: with result metadata and
# typed records, or (``as_json``) with the records as one JSON text, which botocore parses ten times faster
# than thousands of typed Field structures.
Run = Callable[[str, list[Parameter], bool], dict[str, Any]]
Record = dict[str, Any]

SLICE_BYTES = 30_000  # one slice row: 30 kB of data, 40 kB as base64 JSON
SLICES_PER_REQUEST = 20
LARGE_CELL_BYTES = 1024  # in a row over the row limit, cells above this are read in slices
_READ_ATTEMPTS = 3
_CACHE_SIZE = 512

# typeName → (data bytes, JSON bytes in the answer) for fixed-size types; every other type is measured.
_FIXED: dict[str, tuple[int, int]] = {
    "bool": (1, 26),
    **{name: (8, 45) for name in ("int2", "int4", "int8", "oid", "float4", "float8", "serial", "bigserial")},
    **{name: (40, 64) for name in ("timestamp", "timestamptz", "date", "time", "timetz", "uuid")},
}
# Our own columns in each answer row: _svc_n, _svc_left (longs), _svc_f (md5 text); _svc_om is measured.
_EXTRA_DATA, _EXTRA_JSON = 8 + 8 + 32, 45 + 45 + 58
_ROW_WRAPPER = 4  # "[", "]" and the ", " between rows
_NULL_JSON = 19  # {"isNull": true} and its separator
_FIELD_WRAPPER = 24  # {"stringValue": …} around a measured text, and its separator


@dataclass(frozen=True)
class Column:
    name: str
    type_name: str
    metadata: dict[str, Any]

    @property
    def fixed(self) -> tuple[int, int] | None:
        return _FIXED.get(self.type_name)


_SIDE_EFFECTS = re.compile(r"\b(pg_advisory\w*|nextval|setval|set_config|pg_sleep\w*|pg_terminate_backend|"
                           r"pg_cancel_backend|lo_\w+|txid_current|pg_notify)\s*\(", re.IGNORECASE)
_DML = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE)\b", re.IGNORECASE)
_LEADING = re.compile(r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*\(?\s*(\w+)", re.DOTALL)
_FROM = re.compile(r"\bFROM\b", re.IGNORECASE)


def verb(sql: str) -> str:
    match = _LEADING.match(sql)
    return match.group(1).upper() if match else ""


def is_plain_read(sql: str) -> bool:
    """A statement that only reads: safe to run outside a transaction and to run again."""
    word = verb(sql)
    if word in ("SHOW", "VALUES"):
        return True
    if word not in ("SELECT", "WITH") or _SIDE_EFFECTS.search(sql):
        return False
    return word == "SELECT" or not _DML.search(sql)


def is_budgeted(sql: str) -> bool:
    """Reads whose size is unknown: plain reads from a table (``SELECT 1`` and ``SHOW`` are tiny)."""
    return is_plain_read(sql) and verb(sql) in ("SELECT", "WITH") and _FROM.search(sql) is not None


def columns_of(response: dict[str, Any]) -> list[Column]:
    return [Column(str(meta.get("label") or meta.get("name") or f"column{i}"), str(meta.get("typeName", "")), meta)
            for i, meta in enumerate(response.get("columnMetadata") or [])]


class BudgetedReader:
    """Runs SELECTs through ``run`` in requests whose answers stay under ``limits``."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._columns: OrderedDict[str, list[Column]] = OrderedDict()
        self._lock = threading.Lock()  # one reader serves every pooled connection

    def columns(self, run: Run, sql: str, parameters: list[Parameter]) -> list[Column]:
        with self._lock:
            cached = self._columns.get(sql)
            if cached is not None:
                self._columns.move_to_end(sql)
                return cached
        found = columns_of(run(f"SELECT * FROM ({sql}) AS _svc_q LIMIT 0", parameters, False))
        with self._lock:
            self._columns[sql] = found
            if len(self._columns) > _CACHE_SIZE:
                self._columns.popitem(last=False)
        return found

    def read(self, run: Run, sql: str, parameters: list[Parameter]) -> tuple[list[Column], list[tuple[Any, ...]]]:
        sql = sql.strip().rstrip(";")
        columns = self.columns(run, sql, parameters)
        plan = _Plan(sql, columns, self.limits)
        for _ in range(_READ_ATTEMPTS):
            rows = self._read_once(run, plan, parameters)
            if rows is not None:
                return columns, rows
        raise OperationalError("the result kept changing while it was read in parts; try again")

    def _read_once(self, run: Run, plan: _Plan, parameters: list[Parameter]) -> list[tuple[Any, ...]] | None:
        """All rows, or None when the result changed between two requests."""
        rows: list[tuple[Any, ...]] = []
        last: tuple[int, str] | None = None  # (row number, fingerprint) of the last row taken
        while True:
            after = last[0] - 1 if last is not None else 0
            records = _records(run(plan.page_sql, parameters + plan.page_parameters(after), True))
            first = records[0] if records else None
            if last is not None:
                # The first row must be the one we ended with: the same row number and the same content.
                if not records or plan.row_number(records[0]) != last[0] or plan.fingerprint(records[0]) != last[1]:
                    return None
                records = records[1:]
                if not records and plan.remaining(first) > 1:
                    raise OperationalError("a result row does not fit in a Data API answer")
            for record in records:
                values = plan.values(record)
                for index, size in plan.omitted(record):
                    cell = self._read_cell(run, plan, parameters, record, index, size)
                    if cell is None:
                        return None
                    values[index] = cell
                rows.append(tuple(values))
            if not records:
                return rows
            remaining = plan.remaining(first) - (1 if last is not None else 0)
            last = (plan.row_number(records[-1]), plan.fingerprint(records[-1]))
            if len(records) >= remaining:
                return rows

    def _read_cell(self, run: Run, plan: _Plan, parameters: list[Parameter], record: Record, index: int,
                   size: int) -> Any:
        """One large cell, in byte slices; None when its row changed meanwhile."""
        pieces: list[bytes] = []
        offset = 0
        while offset < size:
            last = min(size - 1, offset + SLICE_BYTES * SLICES_PER_REQUEST - 1)
            extra = [to_parameter("_svc_row", plan.row_number(record)),
                     to_parameter("_svc_fp", plan.fingerprint(record)),
                     to_parameter("_svc_from", offset), to_parameter("_svc_to", last),
                     to_parameter("_svc_len", SLICE_BYTES)]
            records = _records(run(plan.slice_sql(index), parameters + extra, True))
            if not records:
                return None
            pieces.extend(base64.b64decode(piece["_svc_piece"]) for piece in records)
            offset = last + 1
        data = b"".join(pieces)
        if len(data) != size:
            return None
        column = plan.columns[index]
        return data if column.type_name == "bytea" else from_text(data.decode("utf-8"), column.type_name)


class _Plan:
    """The wrapper SQL for one statement and the reading of its answers."""

    def __init__(self, sql: str, columns: list[Column], limits: Limits) -> None:
        self.sql, self.columns, self.limits = sql, columns, limits
        count = len(columns)
        self.aliases = ", ".join(f"_c{i}" for i in range(count))
        measured = [i for i, column in enumerate(columns) if column.fixed is None]
        fixed_data = sum(column.fixed[0] for column in columns if column.fixed is not None) + _EXTRA_DATA
        fixed_json = (sum(column.fixed[1] for column in columns if column.fixed is not None) + _EXTRA_JSON
                      + _ROW_WRAPPER + _FIELD_WRAPPER + 8 * count)  # the last term: _svc_om's text
        size_columns = "".join(f", {_data_size(columns[i], i)} AS _svc_d{i}, {_json_size(columns[i], i)} AS _svc_j{i}"
                               for i in measured)
        numbered = (f"SELECT _svc_q.*, row_number() OVER () AS _svc_n, md5(CAST(_svc_q AS text)) AS _svc_f"
                    f"{size_columns} FROM ({sql}) AS _svc_q({self.aliases})")
        row_data = " + ".join([f"_svc_d{i}" for i in measured] + [str(fixed_data)])
        flags = "".join(f", (_svc_rd > :_svc_rowcap AND _svc_d{i} > :_svc_cellcap) AS _svc_o{i}" for i in measured)
        row_json = " + ".join([f"CASE WHEN _svc_o{i} THEN {_NULL_JSON} ELSE _svc_j{i} END" for i in measured]
                              + [str(fixed_json)])
        outputs = ", ".join(f"CASE WHEN _svc_o{i} THEN NULL ELSE _c{i} END AS _c{i}" if i in measured else f"_c{i}"
                            for i in range(count))
        omitted = ", ".join(f"CASE WHEN _svc_o{i} THEN '{i}:' || _svc_d{i} END" for i in measured) or "''"
        self.page_sql = (
            f"SELECT {outputs}, _svc_n, _svc_left, _svc_f, concat_ws(',', {omitted}) AS _svc_om FROM ("
            f"SELECT _svc_c.*, sum({row_json}) OVER (ORDER BY _svc_n ROWS UNBOUNDED PRECEDING) AS _svc_run, "
            f"count(*) OVER () AS _svc_left FROM ("
            f"SELECT _svc_b.*{flags} FROM ("
            f"SELECT _svc_a.*, {row_data} AS _svc_rd FROM ({numbered}) AS _svc_a WHERE _svc_n > :_svc_after"
            f") AS _svc_b) AS _svc_c) AS _svc_w WHERE _svc_run <= :_svc_budget ORDER BY _svc_n LIMIT :_svc_rows")
        self._numbered_plain = (f"SELECT _svc_q.*, row_number() OVER () AS _svc_n, md5(CAST(_svc_q AS text)) AS _svc_f "
                                f"FROM ({sql}) AS _svc_q({self.aliases})")
        # The answer's column metadata is about as large as the statement's, plus our four columns.
        metadata = body_bytes([column.metadata for column in columns]) + 4 * 400
        self.budget = limits.max_response_bytes - metadata - 4096
        self.row_cap = limits.max_row_bytes - 2048

    def page_parameters(self, after: int) -> list[Parameter]:
        return [to_parameter("_svc_after", after), to_parameter("_svc_budget", self.budget),
                to_parameter("_svc_rowcap", self.row_cap), to_parameter("_svc_cellcap", LARGE_CELL_BYTES),
                to_parameter("_svc_rows", self.limits.max_records)]

    def slice_sql(self, index: int) -> str:
        column = self.columns[index]
        data = f"_svc_a._c{index}" if column.type_name == "bytea" else \
            f"convert_to(CAST(_svc_a._c{index} AS text), 'UTF8')"
        piece = f"substring({data} FROM CAST(_svc_s.o + 1 AS integer) FOR CAST(:_svc_len AS integer))"
        offsets = "generate_series(CAST(:_svc_from AS bigint), CAST(:_svc_to AS bigint), CAST(:_svc_len AS bigint))"
        return (f"SELECT {piece} AS _svc_piece FROM ({self._numbered_plain}) AS _svc_a "
                f"CROSS JOIN {offsets} AS _svc_s(o) "
                f"WHERE _svc_a._svc_n = :_svc_row AND _svc_a._svc_f = :_svc_fp ORDER BY _svc_s.o")

    # -- reading answers -------------------------------------------------------------------------------

    def values(self, record: Record) -> list[Any]:
        return [from_json(record[f"_c{i}"], column.type_name) for i, column in enumerate(self.columns)]

    def row_number(self, record: Record) -> int:
        return int(record["_svc_n"])

    def remaining(self, record: Record | None) -> int:
        return int(record["_svc_left"]) if record is not None else 0

    def fingerprint(self, record: Record) -> str:
        return str(record["_svc_f"])

    def omitted(self, record: Record) -> list[tuple[int, int]]:
        text = record["_svc_om"] or ""
        out: list[tuple[int, int]] = []
        for item in filter(None, text.split(",")):
            index, _, size = item.partition(":")
            out.append((int(index), int(size)))
        return out


def _records(answer: dict[str, Any]) -> list[Record]:
    return json.loads(answer.get("formattedRecords") or "[]")


def _text(i: int) -> str:
    return f"CAST(_c{i} AS text)"


def _data_size(column: Column, i: int) -> str:
    """Bytes of the cell's data (what the per-row limit counts)."""
    if column.type_name == "bytea":
        return f"coalesce(octet_length(_c{i}), 0)"
    return f"coalesce(octet_length({_text(i)}), 0)"


def _json_size(column: Column, i: int) -> str:
    """An upper bound of the cell's bytes in the JSON answer, its Field wrapper included."""
    if column.type_name == "bytea":
        return f"coalesce(4 * ((octet_length(_c{i}) + 2) / 3), 0) + {_FIELD_WRAPPER}"
    text = _text(i)
    # Records come as JSON text inside the JSON answer, so every cell is escaped twice: to_json(to_json(…))
    # measures exactly that for quotes, backslashes and control characters; a non-ASCII character may
    # become \\uXXXX and then \\\\uXXXX (up to 7 bytes per byte of its UTF-8 form beyond the first).
    escaped = (f"octet_length(CAST(to_json(CAST(to_json({text}) AS text)) AS text)) "
               f"+ 6 * (octet_length({text}) - char_length({text}))")
    if column.type_name.startswith("_"):  # arrays: every element gets quotes and a separator
        return f"coalesce(3 * ({escaped}), 0) + 64"
    return f"coalesce({escaped}, 0) + {_FIELD_WRAPPER}"
