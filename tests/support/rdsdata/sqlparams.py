"""Turns the Data API's ``:name`` placeholders into PostgreSQL's ``$n`` ones.

The scan skips everything where a colon is not a placeholder: ``::`` casts, string literals (with
``''`` and, in ``E'...'`` strings, backslash escapes), quoted identifiers, dollar-quoted bodies and
comments. Using ``$n`` (psycopg's raw query style) means ``%`` in the SQL needs no escaping.
"""

from __future__ import annotations

from dataclasses import dataclass

_IDENT_START = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_IDENT_CHAR = _IDENT_START | set("0123456789")
_DOLLAR_TAG_CHAR = _IDENT_CHAR  # $tag$ bodies: letters, digits, underscore (not starting with a digit)


@dataclass(frozen=True)
class ParsedSql:
    sql: str  # with $1, $2, ... in place of :name
    names: tuple[str, ...]  # the parameter name for $1, $2, ... (each name once, first use order)


def _dollar_tag_at(sql: str, i: int) -> str | None:
    """The full ``$tag$`` opening at ``i``, or None when ``$`` starts no dollar quote (e.g. ``$1``)."""
    j = i + 1
    if j < len(sql) and sql[j].isdigit():
        return None
    while j < len(sql) and sql[j] in _DOLLAR_TAG_CHAR:
        j += 1
    if j < len(sql) and sql[j] == "$":
        return sql[i:j + 1]
    return None


def parse_named(sql: str) -> ParsedSql:
    out: list[str] = []
    names: list[str] = []
    index: dict[str, int] = {}
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "'":
            # E'...' strings treat backslash as an escape; standard strings only double the quote.
            backslash = i > 0 and sql[i - 1] in "eE" and (i < 2 or sql[i - 2] not in _IDENT_CHAR)
            j = i + 1
            while j < n:
                if backslash and sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == "'":
                    if j + 1 < n and sql[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            out.append(sql[i:j + 1])
            i = j + 1
        elif c == '"':
            j = sql.find('"', i + 1)
            while j != -1 and j + 1 < n and sql[j + 1] == '"':
                j = sql.find('"', j + 2)
            j = n - 1 if j == -1 else j
            out.append(sql[i:j + 1])
            i = j + 1
        elif c == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j == -1 else j
            out.append(sql[i:j])
            i = j
        elif c == "/" and sql.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:  # PostgreSQL block comments nest
                if sql.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif sql.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(sql[i:j])
            i = j
        elif c == "$" and (tag := _dollar_tag_at(sql, i)) is not None:
            end = sql.find(tag, i + len(tag))
            j = n if end == -1 else end + len(tag)
            out.append(sql[i:j])
            i = j
        elif c == ":" and i + 1 < n and sql[i + 1] == ":":
            out.append("::")
            i += 2
        elif c == ":" and i + 1 < n and sql[i + 1] in _IDENT_START:
            j = i + 1
            while j < n and sql[j] in _IDENT_CHAR:
                j += 1
            name = sql[i + 1:j]
            if name not in index:
                names.append(name)
                index[name] = len(names)
            out.append(f"${index[name]}")
            i = j
        else:
            out.append(c)
            i += 1
    return ParsedSql("".join(out), tuple(names))
