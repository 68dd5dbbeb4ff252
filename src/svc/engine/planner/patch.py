"""The hint-aware JSON differ: RFC 6902 operations from an actual and a desired plain document.

Collections follow the field's ``updateMethod``: ``Array`` by position (at any length), ``EntitySet`` by
``indexField``, ``Set`` and the default as unordered multisets, ``Atomic`` as one value. ``exact`` (reconcile) also
removes surplus collection elements and whole EntitySet fields the desired side drops; otherwise
(patch mode) only adds and replaces are produced. Object keys present only on the actual side are
never removed: a property dropped from a forma is left as the provider has it (engine.md §3.4).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from svc.model.schema import FieldHint

Json = dict[str, Any]
Op = dict[str, Any]


def escape(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(path: list[Any]) -> str:
    return "".join("/" + escape(step) for step in path)


def _key(path: list[Any]) -> str:
    return ".".join(str(step) for step in path if not isinstance(step, int))


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _same(a: Any, b: Any) -> bool:
    """Deep equality with lists compared as multisets (for unordered collections)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        remaining = list(b)
        for item in a:
            for index, candidate in enumerate(remaining):
                if _same(item, candidate):
                    del remaining[index]
                    break
            else:
                return False
        return True
    return type(a) is type(b) and a == b


class Differ:
    def __init__(self, hints: Mapping[str, FieldHint], *, exact: bool) -> None:
        self.hints = hints
        self.exact = exact
        self.ops: list[Op] = []

    def method(self, path: list[Any]) -> str:
        hint = self.hints.get(_key(path))
        return hint.update_method if hint is not None else ""

    def diff(self, actual: Json, desired: Json) -> list[Op]:
        self._object(actual, desired, [])
        return self.ops

    def _value(self, actual: Any, desired: Any, path: list[Any]) -> None:
        method = self.method(path)
        if actual is None:
            self.ops.append({"op": "add", "path": pointer(path), "value": desired})
        elif method == "Atomic":
            if canonical(actual) != canonical(desired):
                self.ops.append({"op": "replace", "path": pointer(path), "value": desired})
        elif type(actual) is not type(desired) and not _numbers(actual, desired):
            self.ops.append({"op": "replace", "path": pointer(path), "value": desired})
        elif isinstance(desired, dict):
            self._object(actual, desired, path)
        elif isinstance(desired, list):
            self._list(actual, desired, path, method)
        elif actual != desired:
            self.ops.append({"op": "replace", "path": pointer(path), "value": desired})

    def _object(self, actual: Json, desired: Json, path: list[Any]) -> None:
        for key, value in desired.items():
            if value is None:
                continue
            self._value(actual.get(key), value, [*path, key])
        if self.exact:
            for key in actual:
                if key not in desired and self.method([*path, key]) == "EntitySet":
                    self.ops.append({"op": "remove", "path": pointer([*path, key])})

    def _list(self, actual: list[Any], desired: list[Any], path: list[Any], method: str) -> None:
        if method == "Array":
            self._array(actual, desired, path)
            return
        if method == "EntitySet":
            self._entity_set(actual, desired, path)
            return
        # Set, default: unmatched actual elements go, missing desired ones come.
        remaining = list(range(len(actual)))
        missing: list[Any] = []
        for item in desired:
            match = next((i for i in remaining if _same(actual[i], item)), None)
            if match is None:
                missing.append(item)
            else:
                remaining.remove(match)
        removed = remaining if self.exact else []
        for index in sorted(removed, reverse=True):
            self.ops.append({"op": "remove", "path": pointer([*path, index])})
        base = len(actual) - len(removed)
        for offset, item in enumerate(missing):
            self.ops.append({"op": "add", "path": pointer([*path, base + offset]), "value": item})

    def _array(self, actual: list[Any], desired: list[Any], path: list[Any]) -> None:
        """Position by position at any length, so one patch yields the desired order: the shared positions are
        compared, the desired tail is added, and (``exact``) the actual tail removed."""
        for index, (a, d) in enumerate(zip(actual, desired, strict=False)):
            self._value(a, d, [*path, index])
        if self.exact:
            for index in range(len(actual) - 1, len(desired) - 1, -1):
                self.ops.append({"op": "remove", "path": pointer([*path, index])})
        for index in range(len(actual), len(desired)):
            self.ops.append({"op": "add", "path": pointer([*path, index]), "value": desired[index]})

    def _entity_set(self, actual: list[Any], desired: list[Any], path: list[Any]) -> None:
        hint = self.hints.get(_key(path))
        index_field = hint.index_field if hint is not None else ""
        by_key = {item.get(index_field): i for i, item in enumerate(actual) if isinstance(item, dict)}
        matched: set[int] = set()
        missing: list[Any] = []
        for item in desired:
            position = by_key.get(item.get(index_field)) if isinstance(item, dict) else None
            if position is None:
                missing.append(item)
                continue
            matched.add(position)
            self._value(actual[position], item, [*path, position])
        removed = [i for i in range(len(actual)) if i not in matched] if self.exact else []
        for index in sorted(removed, reverse=True):
            self.ops.append({"op": "remove", "path": pointer([*path, index])})
        base = len(actual) - len(removed)
        for offset, item in enumerate(missing):
            self.ops.append({"op": "add", "path": pointer([*path, base + offset]), "value": item})


def _numbers(a: Any, b: Any) -> bool:
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
        and not isinstance(b, bool)


def create_patch(actual: Json, desired: Json, hints: Mapping[str, FieldHint], *, exact: bool) -> list[Op]:
    return Differ(hints, exact=exact).diff(actual, desired)
