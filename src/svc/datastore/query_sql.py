"""Translation of a parsed ``Query`` into SQL conditions. The only place the query language meets SQL."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa

from svc.datastore.query import STAR, BoolFilter, Pattern, Query, TextFilter

LIKE_ESCAPE = "\\"

Condition = sa.ColumnElement[bool]
TextColumn = Callable[[Pattern], Condition]


def like_pattern(pattern: Pattern) -> str:
    """``*`` becomes ``%``; the escape character, ``%`` and ``_`` in the text are escaped, so they match
    themselves."""
    out: list[str] = []
    for part in pattern.parts:
        if part is STAR:
            out.append("%")
        else:
            assert isinstance(part, str)
            out.append(part.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2).replace("%", LIKE_ESCAPE + "%")
                       .replace("_", LIKE_ESCAPE + "_"))
    return "".join(out)


def match(column: sa.ColumnElement[Any], pattern: Pattern, *, case_insensitive: bool = False) -> Condition:
    if case_insensitive:
        column = sa.func.lower(column)
        pattern = Pattern(tuple(p if p is STAR else str(p).lower() for p in pattern.parts))
    if pattern.has_wildcard:
        return column.like(like_pattern(pattern), escape=LIKE_ESCAPE)
    return column == pattern.text


def matcher(column: sa.ColumnElement[Any], *, case_insensitive: bool = False) -> TextColumn:
    return lambda pattern: match(column, pattern, case_insensitive=case_insensitive)


def _text_condition(flt: TextFilter, to_sql: TextColumn) -> Condition:
    clauses: list[Condition] = []
    if flt.include:
        clauses.append(sa.or_(*(to_sql(p) for p in flt.include)))
    clauses.extend(sa.not_(to_sql(p)) for p in flt.exclude)
    return sa.and_(sa.true(), *clauses)


def _bool_condition(flt: BoolFilter, column: sa.ColumnElement[bool]) -> Condition:
    clauses: list[Condition] = []
    if flt.include:
        clauses.append(sa.or_(*(column.is_(sa.true()) if v else column.is_(sa.false()) for v in flt.include)))
    clauses.extend(column.is_not(sa.true()) if v else column.is_not(sa.false()) for v in flt.exclude)
    return sa.and_(sa.true(), *clauses)


def conditions(query: Query | None, text_fields: Mapping[str, TextColumn],
               bool_fields: Mapping[str, sa.ColumnElement[bool]] | None = None) -> list[Condition]:
    """One SQL condition per filter of ``query``; a field without a mapping is a programming error."""
    if query is None:
        return []
    out: list[Condition] = []
    for flt in query.filters:
        if isinstance(flt, BoolFilter):
            column = (bool_fields or {}).get(flt.field)
            if column is None:
                raise ValueError(f"no column for boolean query field {flt.field!r} in {query.context}")
            out.append(_bool_condition(flt, column))
        else:
            to_sql = text_fields.get(flt.field)
            if to_sql is None:
                raise ValueError(f"no column for query field {flt.field!r} in {query.context}")
            out.append(_text_condition(flt, to_sql))
    return out
