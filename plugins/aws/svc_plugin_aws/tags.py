"""Tags in CloudFormation's form (``[{"Key": …, "Value": …}]``) and the differences an update applies."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

Tags = list[dict[str, str]]


def to_map(tags: Iterable[Mapping[str, Any]] | None, key: str = "Key", value: str = "Value") -> dict[str, str]:
    return {str(tag[key]): str(tag.get(value, "")) for tag in tags or () if key in tag}


def from_map(tags: Mapping[str, str] | None) -> Tags | None:
    """CloudFormation's list, sorted by key, without AWS's own ``aws:`` tags; None when empty."""
    shown = [{"Key": key, "Value": value} for key, value in sorted((tags or {}).items())
             if not key.startswith("aws:")]
    return shown or None


def normalized(tags: Iterable[Mapping[str, Any]] | None, key: str = "Key", value: str = "Value") -> Tags | None:
    """Any service's tag list (``key``/``value`` spelt its way) in CloudFormation's form."""
    return from_map(to_map(tags, key, value))


def difference(current: Mapping[str, str], desired: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Tags to set (new or changed) and tag keys to remove."""
    to_set = {key: value for key, value in desired.items() if current.get(key) != value}
    to_remove = sorted(key for key in current if key not in desired and not key.startswith("aws:"))
    return to_set, to_remove


def _as_list(tags: Mapping[str, str]) -> Tags:
    return [{"Key": key, "Value": value} for key, value in sorted(tags.items())]


def listed(properties: Mapping[str, Any], key: str = "Tags") -> Tags:
    """The forma's tags in the form create calls take, sorted by key (``[]`` when none)."""
    return _as_list(to_map(properties.get(key)))


def retag(current: Iterable[Mapping[str, Any]] | None, wanted: Iterable[Mapping[str, Any]] | None,
          tag: Callable[[Tags], Any], untag: Callable[[list[str]], Any]) -> None:
    """Brings an entity's tags from ``current`` to ``wanted`` with its own tag and untag calls."""
    to_set, to_remove = difference(to_map(current), to_map(wanted))
    if to_set:
        tag(_as_list(to_set))
    if to_remove:
        untag(to_remove)
