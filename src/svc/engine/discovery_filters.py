"""What discovery decides about one resource it read: is it filtered out, and what is it called.

Pure functions over plain properties (no I/O), so the rules are tested on their own:

* **Filters** (seed 000, "Discovery filter"): a filter names resource types and conditions; a resource of
  one of those types is excluded when *every* condition matches. A condition matches when any value its
  JSONPath selects equals ``propertyValue`` (an empty or missing value: when the path selects anything).
  Arrays are searched and tag-like ``{"Value": …}`` objects stand for their value, so both
  ``$.Tags[?(@.Key=='k')].Value`` and ``$.Tags[?(@.Key=='k')]`` work.
* **Labels** (engine.md §5.3): the type's JSONPath override, else the default query (several matches
  joined by ``-``), else the first tag among ``labelTagKeys``, else the native id; a label already taken
  in ``$unmanaged`` for the type gets ``-1``, ``-2``… appended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonpath

Json = Mapping[str, Any]


class FilterError(ValueError):
    """A JSONPath in a filter or a label query does not parse."""


@dataclass(frozen=True)
class Condition:
    property_path: str
    property_value: str | None = None  # None or "": the path selects anything


@dataclass(frozen=True)
class MatchFilter:
    resource_types: tuple[str, ...]
    conditions: tuple[Condition, ...] = ()

    @classmethod
    def from_json(cls, document: Json) -> MatchFilter:
        """A filter as the manifest and the config render it (``resourceTypes``, ``conditions``)."""
        conditions = tuple(Condition(c["propertyPath"], c.get("propertyValue"))
                           for c in document.get("conditions") or ())
        return cls(tuple(document.get("resourceTypes") or ()), conditions)


@dataclass(frozen=True)
class LabelRules:
    default_query: str | None = None
    resource_overrides: Mapping[str, str] = field(default_factory=dict)
    tag_keys: tuple[str, ...] = ("Name",)

    def query_for(self, resource_type: str) -> list[str]:
        return [q for q in (self.resource_overrides.get(resource_type), self.default_query) if q]


@lru_cache(maxsize=256)
def compiled(path: str) -> jsonpath.JSONPath | jsonpath.CompoundJSONPath:
    try:
        return jsonpath.compile(path)
    except jsonpath.JSONPathError as error:
        raise FilterError(f"invalid JSONPath {path!r}: {str(error).splitlines()[0]}") from None


def check_paths(filters: Iterable[MatchFilter], labels: LabelRules) -> None:
    """Raises ``FilterError`` naming the first path that does not parse (checked once, up front)."""
    for match_filter in filters:
        for condition in match_filter.conditions:
            compiled(condition.property_path)
    for query in [labels.default_query, *labels.resource_overrides.values()]:
        if query:
            compiled(query)


# -- filters ----------------------------------------------------------------------------------------------

def _text(value: Any) -> str | None:
    """A scalar as the filter's string compares to it (JSON spelling for numbers and booleans)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return None


def _candidates(value: Any) -> Iterable[Any]:
    """A selected node and what it stands for: an array's items, a tag's ``Value``."""
    if isinstance(value, list):
        for item in value:
            yield from _candidates(item)
    elif isinstance(value, Mapping):
        if "Value" in value:
            yield from _candidates(value["Value"])
    else:
        yield value


def condition_matches(condition: Condition, properties: Json) -> bool:
    found = compiled(condition.property_path).findall(properties)
    if not condition.property_value:
        return bool(found)
    return any(_text(candidate) == condition.property_value for node in found for candidate in _candidates(node))


def filter_matches(match_filter: MatchFilter, resource_type: str, properties: Json) -> bool:
    """Whether this filter excludes the resource: its type is listed and every condition holds."""
    return resource_type in match_filter.resource_types and all(
        condition_matches(condition, properties) for condition in match_filter.conditions)


def excluded(filters: Sequence[MatchFilter], resource_type: str, properties: Json) -> bool:
    """Whether any filter excludes the resource from discovery."""
    return any(filter_matches(f, resource_type, properties) for f in filters)


# -- labels -----------------------------------------------------------------------------------------------

def _query_label(query: str, properties: Json) -> str:
    parts = []
    for node in compiled(query).findall(properties):
        for candidate in _candidates(node):
            text = _text(candidate) if candidate is not None else None
            if text and text.strip():
                parts.append(text.strip())
    return "-".join(parts)


def _tag_label(tag_keys: Sequence[str], properties: Json) -> str:
    tags = properties.get("Tags")
    for key in tag_keys:
        value: Any = None
        if isinstance(tags, list):
            value = next((t.get("Value") for t in tags if isinstance(t, Mapping) and t.get("Key") == key), None)
        elif isinstance(tags, Mapping):
            value = tags.get(key)
        text = _text(value) if value is not None else None
        if text and text.strip():
            return text.strip()
    return ""


def base_label(rules: LabelRules, resource_type: str, properties: Json, native_id: str) -> str:
    """The label a discovered resource asks for, before uniqueness."""
    for query in rules.query_for(resource_type):
        label = _query_label(query, properties)
        if label:
            return label
    return _tag_label(rules.tag_keys, properties) or native_id


def unique_label(label: str, taken: set[str]) -> str:
    """``label``, or the first free ``label-N``; the result is added to ``taken``."""
    chosen = label
    suffix = 0
    while chosen in taken:
        suffix += 1
        chosen = f"{label}-{suffix}"
    taken.add(chosen)
    return chosen
