"""The inventory/command query language, parsed once into a typed query. Pure: no SQL, no I/O.

Grammar (a subset of the Bleve query-string syntax the reference uses)::

    query  := term (whitespace term)*
    term   := ["+" | "-"] field ":" value
    value  := (char | "\\" any | '"' (char | "\\" any)* '"')+

* ``+`` and no prefix both mean "must match"; ``-`` means "must not match".
* Repeated included terms of one field are ORed (``target:eu target:us``); excluded ones are ANDed; included
  and excluded terms of one field combine (``stack:a* -stack:ab`` keeps both constraints).
* ``*`` matches any run of characters, anywhere in a value, quoted or not; ``\\*`` is a literal star. SQL's
  ``%`` and ``_`` are ordinary characters. ``?`` is not supported (an error, not a silent literal).
* Double quotes only group characters, so values may hold spaces: ``label:"my app"``.
* The first ``:`` after a field name separates field and value, so ``::`` needs no escaping anywhere:
  ``type:AWS::S3::Bucket``. A term whose first colon starts a ``::`` has no field (``AWS::S3::Bucket``).
* Field names are case-insensitive; values are case-sensitive (the SQL layer may relax that per field).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Final


class _Star:
    """The ``*`` wildcard inside a pattern."""

    _instance: _Star | None = None

    def __new__(cls) -> _Star:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "STAR"


STAR: Final = _Star()


@dataclass(frozen=True, slots=True)
class Pattern:
    """A value to match: literal text runs and ``STAR`` wildcards."""

    parts: tuple[str | _Star, ...]

    @classmethod
    def literal(cls, text: str) -> Pattern:
        return cls((text,) if text else ())

    @property
    def has_wildcard(self) -> bool:
        return any(part is STAR for part in self.parts)

    @property
    def text(self) -> str:
        """The literal value; only meaningful when there is no wildcard."""
        return "".join(part for part in self.parts if isinstance(part, str))

    def matches(self, value: str) -> bool:
        """Reference semantics of the pattern, for callers that filter in memory."""
        regex = "".join(".*" if part is STAR else re.escape(part) for part in self.parts)
        return re.fullmatch(regex, value, re.DOTALL) is not None

    def __str__(self) -> str:
        return "".join("*" if part is STAR else re.sub(r'([\\*?"\s])', r"\\\1", part) for part in self.parts)


class FieldKind(Enum):
    TEXT = "text"
    BOOL = "bool"


@dataclass(frozen=True, slots=True)
class QueryFields:
    """The fields one query context accepts, and fields it rejects with a specific reason."""

    context: str
    fields: Mapping[str, FieldKind]
    rejected: Mapping[str, str] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.fields)


RESOURCE_FIELDS: Final = QueryFields("resources", {
    "stack": FieldKind.TEXT, "type": FieldKind.TEXT, "label": FieldKind.TEXT,
    "target": FieldKind.TEXT, "managed": FieldKind.BOOL,
})
DESTROY_FIELDS: Final = QueryFields(
    "destroy",
    {"stack": FieldKind.TEXT, "type": FieldKind.TEXT, "label": FieldKind.TEXT, "target": FieldKind.TEXT,
     "native_id": FieldKind.TEXT},
    rejected={"managed": "the managed field cannot be used in destroy queries (only managed resources are "
                         "destroyed)"},
)
COMMAND_FIELDS: Final = QueryFields("commands", {
    "id": FieldKind.TEXT, "client": FieldKind.TEXT, "command": FieldKind.TEXT, "status": FieldKind.TEXT,
    "stack": FieldKind.TEXT, "source": FieldKind.TEXT,
})


@dataclass(frozen=True, slots=True)
class TextFilter:
    field: str
    include: tuple[Pattern, ...] = ()
    exclude: tuple[Pattern, ...] = ()


@dataclass(frozen=True, slots=True)
class BoolFilter:
    field: str
    include: tuple[bool, ...] = ()
    exclude: tuple[bool, ...] = ()


Filter = TextFilter | BoolFilter


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: at most one filter per field, in the order fields first appeared. Empty = match all."""

    context: str
    filters: tuple[Filter, ...] = ()

    def get(self, name: str) -> Filter | None:
        return next((f for f in self.filters if f.field == name), None)


class InvalidQueryError(ValueError):
    """A query that cannot be parsed; names the bad term and lists the valid fields."""

    def __init__(self, term: str, reason: str, valid_fields: tuple[str, ...]) -> None:
        self.term = term
        self.reason = reason
        self.valid_fields = valid_fields
        super().__init__(f"invalid query term '{term}': {reason}; valid fields: {', '.join(valid_fields)}")


_TRUE: Final = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "false", "FALSE", "False"})
_FIELD_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class _Char:
    char: str
    literal: bool  # escaped with a backslash: never syntax


@dataclass(frozen=True, slots=True)
class _RawTerm:
    source: str
    chars: tuple[_Char, ...]
    quoted: tuple[bool, ...]  # per char: inside double quotes
    had_quotes: bool = False


def _tokenize(text: str, fields: QueryFields) -> list[_RawTerm]:
    terms: list[_RawTerm] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start = i
        chars: list[_Char] = []
        quoted: list[bool] = []
        in_quotes = False
        had_quotes = False
        while i < n and (in_quotes or not text[i].isspace()):
            char = text[i]
            if char == "\\":
                if i + 1 >= n:
                    raise InvalidQueryError(text[start:], "a trailing backslash escapes nothing", fields.names)
                chars.append(_Char(text[i + 1], True))
                quoted.append(in_quotes)
                i += 2
                continue
            if char == '"':
                in_quotes = not in_quotes
                had_quotes = True
                i += 1
                continue
            chars.append(_Char(char, False))
            quoted.append(in_quotes)
            i += 1
        if in_quotes:
            raise InvalidQueryError(text[start:i], "unterminated double quote", fields.names)
        terms.append(_RawTerm(text[start:i], tuple(chars), tuple(quoted), had_quotes))
    return terms


def _split_field(term: _RawTerm, fields: QueryFields) -> tuple[str, tuple[_Char, ...]]:
    chars = term.chars
    for index, item in enumerate(chars):
        if item.char == ":" and not item.literal and not term.quoted[index]:
            name = "".join(c.char for c in chars[:index])
            followed_by_colon = index + 1 < len(chars) and chars[index + 1].char == ":"
            if (followed_by_colon or not _FIELD_NAME.fullmatch(name)
                    or any(c.literal or term.quoted[k] for k, c in enumerate(chars[:index]))):
                break
            return name.lower(), chars[index + 1:]
    raise InvalidQueryError(term.source, "the term must have an explicit field, e.g. type:AWS::S3::Bucket",
                            fields.names)


def _pattern(source: str, chars: tuple[_Char, ...], fields: QueryFields) -> Pattern:
    parts: list[str | _Star] = []
    run: list[str] = []
    for item in chars:
        if item.char == "*" and not item.literal:
            if run:
                parts.append("".join(run))
                run = []
            if not parts or parts[-1] is not STAR:  # "**" means the same as "*"
                parts.append(STAR)
        elif item.char == "?" and not item.literal:
            raise InvalidQueryError(source, "'?' wildcards are not supported; use '*' (or '\\?' for a literal ?)",
                                    fields.names)
        else:
            run.append(item.char)
    if run:
        parts.append("".join(run))
    if parts and all(part is STAR for part in parts):
        raise InvalidQueryError(source, "a value of only '*' matches everything; drop the term", fields.names)
    return Pattern(tuple(parts))


@dataclass
class _Accumulator:
    include: list[object] = field(default_factory=list)
    exclude: list[object] = field(default_factory=list)


def parse_query(text: str, fields: QueryFields = RESOURCE_FIELDS) -> Query:
    """Parses ``text`` for the given context; raises ``InvalidQueryError`` naming the first bad term."""
    collected: dict[str, _Accumulator] = {}
    for term in _tokenize(text, fields):
        chars = term.chars
        excluded = False
        if chars and chars[0].char in "+-" and not chars[0].literal and not term.quoted[0]:
            excluded = chars[0].char == "-"
            term = _RawTerm(term.source, chars[1:], term.quoted[1:], term.had_quotes)
        name, value = _split_field(term, fields)
        if name in fields.rejected:
            raise InvalidQueryError(term.source, fields.rejected[name], fields.names)
        kind = fields.fields.get(name)
        if kind is None:
            raise InvalidQueryError(term.source, f"unknown field '{name}'", fields.names)
        if not value and not term.had_quotes:
            raise InvalidQueryError(term.source, "the value is empty (write \"\" to match an empty value)",
                                    fields.names)
        parsed: object
        if kind is FieldKind.BOOL:
            raw = "".join(c.char for c in value)
            if raw in _TRUE:
                parsed = True
            elif raw in _FALSE:
                parsed = False
            else:
                raise InvalidQueryError(term.source, f"'{name}' takes true or false, not '{raw}'", fields.names)
        else:
            parsed = _pattern(term.source, value, fields)
        bucket = collected.setdefault(name, _Accumulator())
        target = bucket.exclude if excluded else bucket.include
        if parsed not in target:
            target.append(parsed)
    filters: list[Filter] = []
    for name, bucket in collected.items():
        if fields.fields[name] is FieldKind.BOOL:
            filters.append(BoolFilter(name, tuple(bool(v) for v in bucket.include),
                                      tuple(bool(v) for v in bucket.exclude)))
        else:
            filters.append(TextFilter(name, tuple(v for v in bucket.include if isinstance(v, Pattern)),
                                      tuple(v for v in bucket.exclude if isinstance(v, Pattern))))
    return Query(fields.context, tuple(filters))
