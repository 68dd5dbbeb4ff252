"""Native ids: a resource's provider identity, and the native id a create's answer holds at its type's
``identifier`` (``Schema.identifier``)."""

from __future__ import annotations

from typing import Any

from svc.model import values

NativeKey = tuple[str, str, str]


def native_key(target: str, type_: str, native_id: str) -> NativeKey:
    """A resource's provider identity, (target, type, native id): the same native id on another target is another
    resource (another root directory, AWS account or region). Every match by native id uses the whole key."""
    return (target, type_, native_id)


def native_id_in(properties: Any, identifier: str) -> str:
    """The native id at a schema's ``identifier`` (``$.Id``, ``$.Meta.Id``) in a create's answer; "" if none.

    A compound identifier (``$.DatabaseName|$.TableName``) is its values joined by ``|`` in that order, as the
    Cloud Control API writes a compound primary identifier; "" when one of them is missing."""
    parts = [_native_id_part(properties, path) for path in identifier.split("|")]
    return "|".join(parts) if all(parts) else ""


def _native_id_part(properties: Any, identifier: str) -> str:
    path = identifier.strip().removeprefix("$").removeprefix(".")
    if not properties or not path:
        return ""
    try:
        found = values.get_path(properties, path)
    except KeyError:
        return ""
    return str(found) if isinstance(found, (str, int)) and not isinstance(found, bool) and found != "" else ""
