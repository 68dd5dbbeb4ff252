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
    return _beyond(columns, [sa.bindparam(None, value, type_=column.type)
                             for column, value in zip(columns, key, strict=True)], descending)


def _beyond(columns: Sequence[sa.ColumnElement[Any]], key: Sequence[sa.BindParameter[Any]],
            descending: bool) -> sa.ColumnElement[bool]:
    left, right = sa.tuple_(*columns), sa.tuple_(*key)
    return left < right if descending else left > right


def _ordering(order: Sequence[sa.ColumnElement[Any]], descending: bool) -> list[sa.ColumnElement[Any]]:
    return [column.desc() if descending else column.asc() for column in order]


def paginate(conn: sa.Connection, statement: sa.Select[Any], *, list_name: str,
             order: Sequence[sa.ColumnElement[Any]], cursor: str | None, limit: int,
             convert: Callable[[sa.Row[Any]], T], descending: bool = False) -> Page[T]:
    """Runs ``statement`` for one page ordered by ``order`` (a unique key) and converts its rows.

    The sort key columns must be selected under their own names so the next cursor can be read from the last
    row. (A query run on every command is a ``PagedQuery``, built once.)
    """
    limit = clamp_limit(limit)
    if cursor is not None:
        statement = statement.where(after(order, decode_cursor(list_name, cursor, len(order)), descending))
    rows = conn.execute(statement.order_by(*_ordering(order, descending)).limit(limit + 1)).all()
    return _page(rows, limit, list_name, order, convert)


class PagedQuery:
    """``paginate`` for a query run on every command, built once: its first page's and its next pages' statements,
    the page size and the cursor's key as bound parameters, and the statement's own ``sa.bindparam``s given to
    ``page``. Building a select and generating its cache key cost more than running it on an index (~160 µs against
    ~30 for a small page), and a command ran some twenty such statements before its answer."""

    def __init__(self, statement: sa.Select[Any], *, order: Sequence[sa.ColumnElement[Any]],
                 descending: bool = False) -> None:
        self.order = tuple(order)
        ordering = _ordering(order, descending)
        size = sa.bindparam("page_size", type_=sa.Integer())
        key = [sa.bindparam(f"after_{index}", type_=column.type) for index, column in enumerate(order)]
        self._first = statement.order_by(*ordering).limit(size)
        self._next = statement.where(_beyond(order, key, descending)).order_by(*ordering).limit(size)

    def page(self, conn: sa.Connection, *, list_name: str, cursor: str | None, limit: int,
             convert: Callable[[sa.Row[Any]], T], **parameters: Any) -> Page[T]:
        """One page, as ``paginate`` answers it; ``parameters``: the values of the statement's own bound
        parameters."""
        limit = clamp_limit(limit)
        values = {**parameters, "page_size": limit + 1}
        statement = self._first
        if cursor is not None:
            key = decode_cursor(list_name, cursor, len(self.order))
            values.update((f"after_{index}", value) for index, value in enumerate(key))
            statement = self._next
        return _page(conn.execute(statement, values).all(), limit, list_name, self.order, convert)


def _page(rows: Sequence[sa.Row[Any]], limit: int, list_name: str, order: Sequence[sa.ColumnElement[Any]],
          convert: Callable[[sa.Row[Any]], T]) -> Page[T]:
    """The page of up to ``limit`` of ``rows`` (one more than that means more follow), with the next cursor."""
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
