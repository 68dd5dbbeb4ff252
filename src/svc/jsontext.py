"""JSON text on the hot paths (the plugin protocol, the datastore's JSON columns): orjson, several times faster
than the standard library, with the standard library's answers where the two differ.

orjson refuses integers beyond 64 bits, which ``json`` writes; those fall back to ``json``. Dates and dataclasses,
which orjson would write and ``json`` refuses, are refused here too, so that what is not plain JSON fails the
same way whichever encoder ran.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dump_bytes(value: Any, *, indent: bool = False, ascii_only: bool = False,
               default: Callable[[Any], Any] | None = None) -> bytes:
    """UTF-8 JSON as ``json.dumps(value, ensure_ascii=ascii_only, default=default)`` writes it: compact, or with
    ``indent`` indented by two spaces (for people: ``svc eval``, a saved plan); ``TypeError`` for what is not JSON
    and ``default`` does not turn into JSON. ``ascii_only``: non-ASCII characters escaped (a terminal, whatever
    its encoding), which orjson cannot do: a text with any is written by the standard library. The standard
    library indents in pure Python: 13 ms for the 480 KB ``svc eval`` prints for 40 AWS types, orjson 0.2 ms;
    compact, 156 ms for the 11 MB of 10,000 LOCAL resources against 12."""
    option = _OPTIONS | orjson.OPT_INDENT_2 if indent else _OPTIONS
    try:
        text: bytes | None = orjson.dumps(value, default=default, option=option)
    except orjson.JSONEncodeError as error:
        if "not JSON serializable" in str(error):
            raise TypeError(str(error)) from None
        text = None  # e.g. a 65-bit int
    if text is None or (ascii_only and not text.isascii()):
        return json.dumps(value, ensure_ascii=ascii_only, default=default, indent=2 if indent else None,
                          separators=None if indent else (",", ":")).encode("utf-8")
    return text


def dumps(value: Any) -> str:
    return dump_bytes(value).decode("utf-8")


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
