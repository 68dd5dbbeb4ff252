"""Values between Python and the RDS Data API's typed JSON: parameters out, records back.

The Data API types every parameter by the member of its ``value`` union and an optional ``typeHint``. A
string sent into a jsonb or timestamp column needs its hint (JSON, TIMESTAMP, …) or PostgreSQL refuses it,
so the conversion here is by Python type, and ``JsonText`` marks strings that are JSON documents (the
dialect's JSON serializer produces it). The service takes no array parameters: lists travel as PostgreSQL
array literals that the SQL casts (``CAST(:keys AS text[])``).

Records come back as ``Field`` unions; with the result metadata's type names, timestamps, dates, numerics
and uuids become the Python values a PostgreSQL driver would return.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from svc import jsontext

Field = dict[str, Any]
Parameter = dict[str, Any]


class JsonText(str):
    """A JSON document already serialized: sent as a string with ``typeHint`` JSON."""


def json_text(value: Any) -> JsonText:
    """The dialect's JSON serializer: compact, UTF-8 kept as is (fewer bytes against the request cap)."""
    return JsonText(jsontext.dumps(value))


def _array_literal(items: Sequence[Any]) -> str:
    """A PostgreSQL array literal (``{"a","b\\"c",NULL}``); every element quoted, so any text is safe."""
    parts: list[str] = []
    for item in items:
        if item is None:
            parts.append("NULL")
        elif isinstance(item, (list, tuple)):
            parts.append(_array_literal(item))
        else:
            text = str(item).replace("\\", "\\\\").replace('"', '\\"')
            parts.append(f'"{text}"')
    return "{" + ",".join(parts) + "}"


def to_parameter(name: str, value: Any) -> Parameter:
    """One named ``SqlParameter``."""
    parameter: Parameter = {"name": name}
    if value is None:
        parameter["value"] = {"isNull": True}
    elif isinstance(value, JsonText):
        parameter.update(value={"stringValue": str(value)}, typeHint="JSON")
    elif isinstance(value, bool):
        parameter["value"] = {"booleanValue": value}
    elif isinstance(value, int):
        parameter["value"] = {"longValue": value}
    elif isinstance(value, float):
        parameter["value"] = {"doubleValue": value}
    elif isinstance(value, Decimal):
        parameter.update(value={"stringValue": str(value)}, typeHint="DECIMAL")
    elif isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        parameter.update(value={"stringValue": value.isoformat(sep=" ", timespec="microseconds")},
                         typeHint="TIMESTAMP")
    elif isinstance(value, date):
        parameter.update(value={"stringValue": value.isoformat()}, typeHint="DATE")
    elif isinstance(value, time):
        parameter.update(value={"stringValue": value.isoformat(timespec="microseconds")}, typeHint="TIME")
    elif isinstance(value, uuid.UUID):
        parameter.update(value={"stringValue": str(value)}, typeHint="UUID")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        parameter["value"] = {"blobValue": bytes(value)}  # botocore base64-encodes blobs itself
    elif isinstance(value, (list, tuple)):
        parameter["value"] = {"stringValue": _array_literal(value)}
    elif isinstance(value, Mapping):
        parameter.update(value={"stringValue": json_text(value)}, typeHint="JSON")
    elif isinstance(value, str):
        parameter["value"] = {"stringValue": value}
    else:
        raise TypeError(f"parameter {name!r}: {type(value).__name__} values cannot be sent to the Data API")
    return parameter


def to_parameters(values: Mapping[str, Any] | None) -> list[Parameter]:
    return [to_parameter(name, value) for name, value in (values or {}).items()]


def body_bytes(body: Any) -> int:
    """Bytes of ``body`` as botocore serializes it (``json.dumps`` defaults: ASCII-escaped, ", " separators),
    with blobs counted as the base64 text botocore sends."""
    return len(json.dumps(body, default=_base64_text).encode())


def _base64_text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _field_value(field: Field) -> Any:
    (kind, value), = field.items()
    if kind == "isNull":
        return None
    if kind == "arrayValue":
        return _array_value(value)
    return value  # stringValue, longValue, doubleValue, booleanValue, blobValue (bytes from botocore)


def _array_value(array: Mapping[str, Any]) -> list[Any]:
    (kind, values), = array.items()
    if kind == "arrayValues":
        return [_array_value(item) for item in values]
    return list(values)


def _timestamp(text: str, aware: bool) -> datetime:
    parsed = datetime.fromisoformat(text)
    if aware and parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


# typeName of the result metadata → how its stringValue becomes the Python value psycopg would return.
_CONVERT: dict[str, Any] = {
    "timestamp": lambda text: _timestamp(text, aware=False),
    "timestamptz": lambda text: _timestamp(text, aware=True),
    "date": date.fromisoformat,
    "time": time.fromisoformat,
    "numeric": Decimal,
    "uuid": uuid.UUID,
    # Catalog vectors (index keys and options, read by reflection) arrive as "1 2 3", as PostgreSQL prints them.
    "int2vector": lambda text: [int(item) for item in text.split()],
    "oidvector": lambda text: [int(item) for item in text.split()],
}


def from_field(field: Field, type_name: str) -> Any:
    value = _field_value(field)
    if isinstance(value, str):
        convert = _CONVERT.get(type_name)
        if convert is not None:
            return convert(value)
    return value


def from_json(value: Any, type_name: str) -> Any:
    """A cell of ``formatRecordsAs=JSON`` records (plain JSON: text, numbers, booleans, arrays, null)."""
    if isinstance(value, str):
        if type_name == "bytea":
            return base64.b64decode(value)
        return from_text(value, type_name)
    if type_name in ("json", "jsonb") and value is not None:
        # A service that inlines JSON columns as JSON: hand them on as text, as the typed records do.
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return value


def from_text(text: str, type_name: str) -> Any:
    """A value fetched as its text form (a large cell read in slices) as ``from_field`` would return it."""
    convert = _CONVERT.get(type_name)
    return convert(text) if convert is not None else text
