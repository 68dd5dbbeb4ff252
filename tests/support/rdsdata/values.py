"""Value conversion between the Data API's typed JSON and PostgreSQL (through psycopg 3).

Parameters: each ``Field`` becomes a psycopg value with the PostgreSQL type the service's JDBC layer
would send: ``stringValue`` as varchar (so PostgreSQL does not guess: a string into a jsonb or
timestamp column needs a ``typeHint`` or a cast, exactly as on the real service), ``longValue`` as
int8, ``doubleValue`` as float8, ``blobValue`` as bytea. A ``typeHint`` types the string as
jsonb/uuid/timestamp/date/time/numeric instead.

Results: every column is read in PostgreSQL's text form except the types the service returns as
JSON numbers, booleans, bytes or arrays; so jsonb, numeric, dates, uuids come back as ``stringValue``.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.adapt import AdaptersMap, Dumper
from psycopg.types.numeric import Int8
from psycopg.types.string import StrDumperVarchar, TextLoader

from .errors import DataApiError

Field = dict[str, Any]

# typeHint → PostgreSQL type of the (string) parameter.
TYPE_HINTS: dict[str, str] = {
    "JSON": "jsonb",
    "UUID": "uuid",
    "TIMESTAMP": "timestamp",
    "DATE": "date",
    "TIME": "time",
    "DECIMAL": "numeric",
}

# Types psycopg should keep loading as Python values: they map onto long/double/boolean/blob fields.
_NATIVE_TYPES = {"int2", "int4", "int8", "oid", "float4", "float8", "bool", "bytea"}
_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid


class _Hinted(str):
    """A string parameter carrying its typeHint's PostgreSQL type name."""

    pg_type: str = ""


def _hinted_class(pg_type: str) -> tuple[type[_Hinted], type[Dumper]]:
    oid = psycopg.postgres.types[pg_type].oid
    cls = type(f"Hinted_{pg_type}", (_Hinted,), {"pg_type": pg_type})

    class HintedDumper(Dumper):
        # Sent in text format with the hinted type's oid: PostgreSQL parses it as that type.
        def dump(self, obj: str) -> bytes:  # type: ignore[override]
            return obj.encode()

    HintedDumper.oid = oid
    return cls, HintedDumper


# Built once: every stand-in's adapters must know the very classes field_to_param creates.
_HINTED_DUMPERS: dict[str, tuple[type[_Hinted], type[Dumper]]] = {
    hint: _hinted_class(pg_type) for hint, pg_type in TYPE_HINTS.items()
}
_HINTED: dict[str, type[_Hinted]] = {hint: cls for hint, (cls, _) in _HINTED_DUMPERS.items()}


class _UtcTimestamptzLoader(TextLoader):
    """timestamptz in the service's ``YYYY-MM-DD HH:MM:SS[.ffffff]`` form (sessions run in UTC)."""

    def load(self, data: Any) -> str:  # type: ignore[override]
        text = super().load(data)
        return text[:-3] if text.endswith("+00") else text


def build_adapters() -> AdaptersMap:
    """The psycopg adaptation context every stand-in connection uses."""
    adapters = AdaptersMap(psycopg.adapters)
    adapters.register_dumper(str, StrDumperVarchar)
    for cls, dumper in _HINTED_DUMPERS.values():
        adapters.register_dumper(cls, dumper)
    for info in psycopg.postgres.types:
        if info.name in _NATIVE_TYPES or info.oid == _TIMESTAMPTZ_OID:
            continue
        # Only base types: arrays keep their array loader, which then uses this text loader per element.
        adapters.register_loader(info.oid, TextLoader)
    adapters.register_loader(_TIMESTAMPTZ_OID, _UtcTimestamptzLoader)
    return adapters


def field_to_param(name: str, field: Field, type_hint: str | None) -> Any:
    """A request ``Field`` (with optional typeHint) as a psycopg parameter value."""
    if not isinstance(field, dict) or len(field) != 1:
        raise DataApiError("BadRequestException", f"Parameter {name} must have exactly one value member")
    (kind, value), = field.items()
    if kind == "isNull":
        return None
    if kind == "stringValue":
        if type_hint:
            if type_hint not in _HINTED:
                raise DataApiError("BadRequestException", f"Invalid type hint {type_hint} for parameter {name}")
            return _HINTED[type_hint](value)
        return str(value)
    if kind == "longValue":
        return Int8(int(value))
    if kind == "doubleValue":
        return float(value)
    if kind == "booleanValue":
        return bool(value)
    if kind == "blobValue":
        return base64.b64decode(value)
    if kind == "arrayValue":
        raise DataApiError("BadRequestException", "Array parameters are not supported.")
    raise DataApiError("BadRequestException", f"Unknown value type {kind} for parameter {name}")


def _array_value(items: Sequence[Any]) -> dict[str, list[Any]]:
    """A PostgreSQL array as an ``ArrayValue`` union: the member is chosen by the element type."""
    present = [item for item in items if item is not None]
    if any(isinstance(item, list) for item in present):
        return {"arrayValues": [_array_value(item) if item is not None else None for item in items]}
    if present and all(isinstance(item, bool) for item in present):
        return {"booleanValues": list(items)}
    if present and all(isinstance(item, int) and not isinstance(item, bool) for item in present):
        return {"longValues": list(items)}
    if present and all(isinstance(item, float) for item in present):
        return {"doubleValues": list(items)}
    return {"stringValues": [None if item is None else _as_text(item) for item in items]}


def _as_text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    return str(value)


def value_to_field(value: Any, *, decimal_as_number: bool = False, long_as_string: bool = False,
                   is_numeric: bool = False) -> Field:
    """One result cell as a response ``Field``."""
    if value is None:
        return {"isNull": True}
    if isinstance(value, bool):
        return {"booleanValue": value}
    if isinstance(value, int):
        return {"stringValue": str(value)} if long_as_string else {"longValue": value}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {"stringValue": str(value)}  # JSON has no NaN/Infinity
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"blobValue": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, list):
        return {"arrayValue": _array_value(value)}
    if is_numeric and decimal_as_number and isinstance(value, str):
        # decimalReturnType DOUBLE_OR_LONG: long when the scale is 0, double otherwise.
        if "." not in value and value.lstrip("-").isdigit():
            return {"longValue": int(value)}
        return {"doubleValue": float(value)}
    return {"stringValue": str(value)}


def json_cell(value: Any, *, decimal_as_number: bool, long_as_string: bool, is_numeric: bool) -> Any:
    """One result cell for ``formatRecordsAs=JSON``: plain JSON scalars and arrays."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, list):
        return [json_cell(v, decimal_as_number=decimal_as_number, long_as_string=long_as_string,
                          is_numeric=is_numeric) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and long_as_string:
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if is_numeric and decimal_as_number and isinstance(value, str):
        field = value_to_field(value, decimal_as_number=True, is_numeric=True)
        return next(iter(field.values()))
    return value


def cell_size(value: Any) -> int:
    """Bytes a cell takes as data (what the per-row limit is about), not as JSON."""
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(bytes(value))
    if isinstance(value, list):
        return sum(cell_size(v) for v in value)
    if isinstance(value, bool):
        return 1
    if isinstance(value, (int, float)):
        return 8
    return len(str(value).encode())


# JDBC java.sql.Types codes, which the service reports in ColumnMetadata.type.
_JDBC_TYPES: dict[str, int] = {
    "bool": -7, "int2": 5, "int4": 4, "int8": -5, "oid": -5, "float4": 7, "float8": 8, "numeric": 2,
    "money": 8, "char": 1, "bpchar": 1, "varchar": 12, "text": 12, "name": 12, "bytea": -2, "date": 91,
    "time": 92, "timetz": 92, "timestamp": 93, "timestamptz": 93,
}
_JDBC_OTHER, _JDBC_ARRAY = 1111, 2003
_SIGNED = {"int2", "int4", "int8", "float4", "float8", "numeric", "money"}
_CASE_SENSITIVE = {"char", "bpchar", "varchar", "text", "name", "json", "jsonb", "xml"}


def _precision(column: psycopg.Column) -> int:
    """numeric precision, else declared length (varchar(n)), else the fixed byte size, else 0."""
    if column.precision is not None:
        return column.precision
    if column.display_size is not None:
        return column.display_size
    size = column.internal_size
    return size if size is not None and size > 0 else 0


def column_metadata(column: psycopg.Column, type_name: str, element_type: str | None) -> dict[str, Any]:
    """``ColumnMetadata`` for one result column. Table and schema names are not looked up."""
    is_array = element_type is not None
    base = element_type or type_name
    return {
        "name": column.name,
        "label": column.name,
        "type": _JDBC_ARRAY if is_array else _JDBC_TYPES.get(type_name, _JDBC_OTHER),
        "typeName": type_name,
        "schemaName": "",
        "tableName": "",
        "isAutoIncrement": False,
        "isSigned": base in _SIGNED,
        "isCurrency": base == "money",
        "isCaseSensitive": base in _CASE_SENSITIVE,
        "nullable": 2,  # JDBC columnNullableUnknown: the result does not say
        "precision": _precision(column),
        "scale": column.scale or 0,
        "arrayBaseColumnType": _JDBC_TYPES.get(base, _JDBC_OTHER) if is_array else 0,
    }


def formatted_records(names: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[bool], *,
                      decimal_as_number: bool, long_as_string: bool) -> str:
    return json.dumps([
        {name: json_cell(cell, decimal_as_number=decimal_as_number, long_as_string=long_as_string,
                         is_numeric=is_num)
         for name, cell, is_num in zip(names, row, numeric, strict=True)}
        for row in rows
    ], separators=(",", ":"))
