"""Keyset pagination: a cursor is the last row's sort key, so every page is one bounded index range scan."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa

from svc.datastore.errors import InvalidCursorError
from svc.model.records import Page

T = TypeVar("T")
KeyValue = str | int | bool | datetime | None

DEFAULT_PAGE_SIZE = 200
MAX_PAGE_SIZE = 1000


def clamp_limit(limit: int) -> int:
    if limit < 1:
        raise ValueError(f"page size must be at least 1, got {limit}")
    return min(limit, MAX_PAGE_SIZE)


def _encode_value(value: KeyValue) -> Any:
    return {"t": value.isoformat()} if isinstance(value, datetime) else value


def _decode_value(value: Any) -> KeyValue:
    if isinstance(value, dict) and set(value) == {"t"}:
        return datetime.fromisoformat(value["t"])
    if value is None or isinstance(value, (str, int, bool)):
        return value
    raise ValueError("bad cursor value")


def encode_cursor(list_name: str, key: Sequence[KeyValue]) -> str:
    raw = json.dumps([list_name, *(_encode_value(v) for v in key)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(list_name: str, cursor: str, arity: int) -> tuple[KeyValue, ...]:
    """The sort key inside ``cursor``; a cursor of another list (or garbage) is an ``InvalidCursorError``."""
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(raw, list) or len(raw) != arity + 1 or raw[0] != list_name:
            raise ValueError("wrong shape")
        return tuple(_decode_value(v) for v in raw[1:])
    except (ValueError, binascii.Error, UnicodeDecodeError) as error:
        raise InvalidCursorError(f"invalid cursor for the {list_name} list") from error


def after(columns: Sequence[sa.ColumnElement[Any]], key: Sequence[KeyValue],
          descending: bool = False) -> sa.ColumnElement[bool]:
    """Rows strictly after ``key`` in (columns) order; binds are typed by their column so that e.g. datetimes
    are stored-format strings on SQLite."""
    values = [sa.bindparam(None, value, type_=column.type) for column, value in zip(columns, key, strict=True)]
    left, right = sa.tuple_(*columns), sa.tuple_(*values)
    return left < right if descending else left > right


def paginate(conn: sa.Connection, statement: sa.Select[Any], *, list_name: str,
             order: Sequence[sa.ColumnElement[Any]], cursor: str | None, limit: int,
             convert: Callable[[sa.Row[Any]], T], descending: bool = False) -> Page[T]:
    """Runs ``statement`` for one page ordered by ``order`` (a unique key) and converts its rows.

    The sort key columns must be selected under their own names so the next cursor can be read from the last
    row.
    """
    limit = clamp_limit(limit)
    if cursor is not None:
        statement = statement.where(after(order, decode_cursor(list_name, cursor, len(order)), descending))
    ordering = [column.desc() if descending else column.asc() for column in order]
    rows = conn.execute(statement.order_by(*ordering).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if more and rows:
        last = rows[-1]._mapping
        next_cursor = encode_cursor(list_name, [last[_key_name(column)] for column in order])
    return Page(tuple(convert(row) for row in rows), next_cursor)


def _key_name(column: sa.ColumnElement[Any]) -> str:
    name = getattr(column, "key", None) or getattr(column, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"sort column {column!r} has no name")
    return name
