"""The planner's RFC 6902 patch, fitted to the model Cloud Control applies it to.

The planner diffs what the agent stored against the desired properties; Cloud Control applies the patch to the
resource as its read handler returns it, which lacks write-only properties and often unset optional ones. An
operation valid against the first may fail against the second, so, against the current model:

* a ``replace`` of a value the model lacks becomes an ``add`` (same result, and valid);
* a ``remove`` of a value the model lacks is dropped (it is gone already);
* an ``add`` or ``replace`` below an object or list the model lacks becomes one ``add`` of the first missing
  level, with the desired value there.

Only the planner's paths are touched: nothing the planner did not change is sent.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]
_MISSING = object()


def steps(pointer: str) -> list[str]:
    """A JSON pointer's reference tokens, unescaped."""
    return [raw.replace("~1", "/").replace("~0", "~") for raw in pointer.split("/")[1:]]


def pointer(tokens: list[str]) -> str:
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens)


def _at(document: Any, tokens: list[str]) -> Any:
    current = document
    for token in tokens:
        if isinstance(current, dict):
            current = current.get(token, _MISSING)
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            return _MISSING
        if current is _MISSING:
            return _MISSING
    return current


def _first_missing(current: Json, tokens: list[str]) -> int:
    """How many leading tokens lead to an existing container (the rest start at a missing level)."""
    for depth in range(1, len(tokens)):
        if _at(current, tokens[:depth]) is _MISSING:
            return depth - 1
    return len(tokens) - 1


def fit_patch(ops: list[Json], current: Json, desired: Json) -> list[Json]:
    fitted: list[Json] = []
    hoisted: set[str] = set()
    for op in ops:
        kind = op.get("op")
        tokens = steps(str(op.get("path", "")))
        if kind not in ("add", "replace", "remove") or not tokens:
            fitted.append(op)
            continue
        depth = _first_missing(current, tokens)
        if depth < len(tokens) - 1:  # below a missing level: add that level whole, once
            if kind == "remove":
                continue
            level = tokens[:depth + 1]
            path = pointer(level)
            value = _at(desired, level)
            if path not in hoisted and value is not _MISSING:
                hoisted.add(path)
                fitted.append({"op": "add", "path": path, "value": value})
            continue
        if any(str(op["path"]).startswith(path + "/") for path in hoisted):
            continue  # the level it is in is added whole
        present = _at(current, tokens) is not _MISSING
        if kind == "remove" and not present:
            continue
        if kind == "replace" and not present:
            fitted.append({"op": "add", "path": op["path"], "value": op.get("value")})
            continue
        fitted.append(op)
    return fitted
