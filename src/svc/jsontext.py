"""JSON text on the hot paths (the plugin protocol, the datastore's JSON columns): orjson, several times faster
than the standard library, with the standard library's answers where the two differ.

orjson refuses integers beyond 64 bits, which ``json`` writes; those fall back to ``json``. Dates and dataclasses,
which orjson would write and ``json`` refuses, are refused here too, so that what is not plain JSON fails the
same way whichever encoder ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dump_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON; ``TypeError`` for what is not JSON."""
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except orjson.JSONEncodeError as error:
        if "not JSON serializable" in str(error):
            raise TypeError(str(error)) from None
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")  # e.g. a 65-bit int


def dumps(value: Any) -> str:
    return dump_bytes(value).decode("utf-8")


def dump_indented(value: Any, *, ascii_only: bool = False) -> bytes:
    """JSON indented by two spaces for people to read (``svc eval``, a saved plan), as ``json.dumps(value,
    indent=2, ensure_ascii=ascii_only)`` writes it, in UTF-8. The standard library indents in pure Python: 13 ms for
    the 480 KB ``svc eval`` prints for 40 AWS types, a sixth of their evaluation; orjson 0.2 ms. ``ascii_only``:
    non-ASCII characters escaped, for a terminal whatever its encoding (orjson cannot: a text with any is written
    by the standard library)."""
    try:
        text: bytes | None = orjson.dumps(value, option=_OPTIONS | orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError as error:
        if "not JSON serializable" in str(error):
            raise TypeError(str(error)) from None
        text = None  # e.g. a 65-bit int
    if text is None or (ascii_only and not text.isascii()):
        return json.dumps(value, indent=2, ensure_ascii=ascii_only).encode("utf-8")
    return text


def loads(text: str | bytes) -> Any:
    """The value of a JSON text; ``ValueError`` when it is not JSON."""
    return orjson.loads(text)


def read_table(path: Path, format_: int, table: str) -> dict[str, Any]:
    """The table ``table`` of a cache file svc wrote as ``{"Format": format_, table: {…}}``; empty when the file is
    missing, unreadable or of another format (a cache never needed)."""
    try:
        document = loads(path.read_bytes())
        if document.get("Format") == format_ and isinstance(document.get(table), dict):
            return document[table]  # type: ignore[no-any-return]
    except (OSError, ValueError, AttributeError):
        pass
    return {}
