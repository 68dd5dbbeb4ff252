"""Resource schemas from their stored JSON, parsed once per distinct schema.

Every change and stored resource carries its type's schema as JSON; validating it into a ``Schema`` for
each change, each write and each view row cost more than the work it served (a command has thousands of
changes but a handful of types). ``Schema`` values are only read, so one parsed object per distinct
document is shared.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from svc.model.opaque import NONE, OpaqueFields, opaque_fields
from svc.model.schema import Schema

_CACHED = 256  # distinct schemas kept: far more types than any agent serves


@functools.lru_cache(maxsize=_CACHED)
def _parse(text: str) -> Schema:
    return Schema.model_validate(json.loads(text))


# The canonical text of schema documents seen lately, by identity: one change's document is looked up several
# times (stored, viewed, executed, its result written), and serialising it each time was most of the lookup.
# Each entry keeps its document alive, so that its id cannot be reused while the entry exists.
_TEXTS: dict[int, tuple[dict[str, Any], str]] = {}
_TEXTS_KEPT = 4096


def _text(document: dict[str, Any]) -> str:
    known = _TEXTS.get(id(document))
    if known is not None and known[0] is document:
        return known[1]
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    if len(_TEXTS) >= _TEXTS_KEPT:
        _TEXTS.clear()
    _TEXTS[id(document)] = (document, text)
    return text


def schema_of(document: dict[str, Any]) -> Schema:
    """The ``Schema`` of a schema document (shared: do not modify it)."""
    return _parse(_text(document))


@functools.lru_cache(maxsize=_CACHED)
def _written_out(text: str) -> dict[str, Any]:
    document = _parse(text).model_dump(mode="json", by_alias=True)
    if not document.get("OpaquePaths"):
        document.pop("OpaquePaths", None)
    return document


def written_out(document: dict[str, Any]) -> dict[str, Any]:
    """A stored (compact) schema document with every default written out, as answers show it: the reference's
    clients read a missing ``Discoverable``/``Extractable`` or hint flag as false (shared: do not modify it)."""
    return _written_out(_text(document))


@functools.lru_cache(maxsize=_CACHED)
def _opaque(text: str) -> OpaqueFields:
    return opaque_fields(_parse(text))


def opaque_fields_of(document: dict[str, Any] | None) -> OpaqueFields:
    """The opaque fields (at any depth) of a schema document (none without a schema)."""
    if not document:
        return NONE
    return _opaque(_text(document))


@functools.lru_cache(maxsize=_CACHED)
def _fields(text: str) -> frozenset[str]:
    return frozenset(_parse(text).fields)


def fields_of(document: dict[str, Any]) -> frozenset[str]:
    """The fields a schema document declares (empty: it declares none, so every property is one)."""
    return _fields(_text(document))
