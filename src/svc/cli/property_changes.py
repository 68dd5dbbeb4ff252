"""One way to show a property change, for every command that shows one (``svc plan``, ``svc apply``, ``svc
drift``, a refused reconcile): ``/Path: old → new``.

Values are shown as JSON as the provider would get them: a reference or template as its value, or ``(known after
apply)`` while it has none; a secret (an ``Opaque`` envelope or a stored hash, anywhere in a value) is
``(sensitive)``, never its value or hash; a side the change lacks (the property is added, or removed) is
``(absent)``. A multi-line string that changes is shown as a unified diff of its lines.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import Any

from msgspec import UNSET

from svc.model import values
from svc.model.wire import DriftChange

MAX_FIELDS = 8  # changed properties shown per resource where a listing is only a reminder (drift)
MAX_VALUE = 60  # characters of a value shown there
ABSENT = "(absent)"
SENSITIVE = "(sensitive)"
UNKNOWN = "(known after apply)"
INDENT = "  "


def is_secret(value: Any) -> bool:
    if isinstance(value, dict):
        if value.get("$hashed") or value.get("$visibility") == "Opaque":
            return True
        return any(is_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(is_secret(v) for v in value)
    return False


def _plain(value: Any) -> Any:
    """Envelopes as their values: a reference or template without one yet is ``UNKNOWN``."""
    if isinstance(value, dict):
        if value.get("$embed") is True:  # a template: its parts once each reference in it has a value
            text = values.assemble(value)
            return UNKNOWN if text is None else text
        if "$ref" in value or value.get("$res") is True:
            return _plain(value["$value"]) if value.get("$value") is not None else UNKNOWN
        if "$value" in value:
            return _plain(value["$value"])
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def shown(value: Any, max_value: int | None = None) -> str:
    """A value on one line: ``(sensitive)`` for a secret, else its JSON (``max_value`` characters at most)."""
    if is_secret(value):
        return SENSITIVE
    value = _plain(value)
    text = UNKNOWN if value == UNKNOWN else json.dumps(value, ensure_ascii=False)
    return text if max_value is None or len(text) <= max_value else text[:max_value - 1] + "…"


def _text(value: Any) -> str | None:
    """The text of a value that is a plain string (not a secret, a reference or an unknown), else None."""
    if is_secret(value):
        return None
    value = _plain(value)
    return value if isinstance(value, str) and value != UNKNOWN else None


def _multi_line(value: Any) -> str | None:
    """The text of a multi-line string, else None: one line ending in a newline (a typical one-line file) reads
    better as ``"old" → "new"`` than as a diff."""
    text = _text(value)
    return text if text is not None and "\n" in text.removesuffix("\n") else None


def change_lines(changes: list[DriftChange] | None, *, max_fields: int | None = MAX_FIELDS,
                 max_value: int | None = MAX_VALUE) -> list[str]:
    """``/Content: "old" → "new"`` lines (a multi-line string's as ``/Content:`` then its unified diff); at most
    ``max_fields`` changes (None: all), then how many more."""
    lines = []
    listed = changes or []
    for change in listed if max_fields is None else listed[:max_fields]:
        has_old, has_new = change.Old is not UNSET, change.New is not UNSET
        old, new = (change.Old if has_old else None), (change.New if has_new else None)
        old_text = _text(old) if has_old else ""
        new_text = _text(new) if has_new else ""
        path = change.Path or "/"
        if old_text is not None and new_text is not None and (_multi_line(old_text) or _multi_line(new_text)):
            lines.append(f"{path}:")
            lines.extend(INDENT + line for line in _unified(old_text, new_text))
            continue
        old_shown = shown(old, max_value) if has_old else ABSENT
        new_shown = shown(new, max_value) if has_new else ABSENT
        lines.append(f"{path}: {old_shown} → {new_shown}")
    if max_fields is not None and len(listed) > max_fields:
        lines.append(f"… and {len(listed) - max_fields} more")
    return lines


def _unified(old: str, new: str) -> Iterator[str]:
    """The hunks of a unified diff of two texts' lines (the ``---``/``+++`` header left out: the path says what)."""
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3)
    for line in diff:
        if not line.startswith(("---", "+++")):
            yield line


def value_lines(properties: dict[str, Any] | None) -> list[str]:
    """Each property a create sets or a delete takes away: ``/Path: value`` per leaf (objects and lists are
    followed; a secret, a reference or a template is one value), a multi-line string as ``/Path:`` then its
    lines."""
    lines = []
    for path, value in _leaves(properties or {}, ""):
        text = _multi_line(value)
        if text is None:
            lines.append(f"{path}: {shown(value)}")
        else:
            lines.append(f"{path}:")
            lines.extend(INDENT + line for line in text.splitlines())
    return lines


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value and not any(key.startswith("$") for key in value):  # not an envelope
        for key, item in value.items():
            yield from _leaves(item, f"{path}/{_escape(key)}")
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}/{index}")
    else:
        yield path or "/", value


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def pointer_value(document: Any, pointer: str) -> tuple[bool, Any]:
    """(found, value) at an RFC 6901 pointer of ``document`` (``/Tags/0``), through envelopes' ``$value``."""
    for token in pointer.split("/")[1:] if pointer not in ("", "/") else []:
        if isinstance(document, dict) and "$value" in document and token not in document:
            document = document["$value"]
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(document, dict) and token in document:
            document = document[token]
        elif isinstance(document, list) and token.isdigit() and int(token) < len(document):
            document = document[int(token)]
        else:
            return False, None
    return True, document


def patch_changes(patch: list[dict[str, Any]] | None, old: dict[str, Any] | None) -> list[DriftChange]:
    """An RFC 6902 patch (a planned update's) as changes from ``old`` (the stored properties): ``Old`` where the
    path has a value, ``New`` unless the operation removes it."""
    changes = []
    for op in patch or []:
        path = op.get("path", "")
        found, before = pointer_value(old or {}, path)
        was = {"Old": before} if found else {}  # absent, not null: the path had no value
        becomes = {} if op.get("op") == "remove" else {"New": op.get("value")}
        changes.append(DriftChange(Path=path or "/", **was, **becomes))
    return changes
