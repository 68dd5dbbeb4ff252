"""Stored resources in the reference's ``Resource`` shape (the one ``GET /resources`` and extract use).

A resource version's ``document`` holds the rest of the forma resource under its wire keys
(``Schema``, ``Group``, ``Alias``). References are stored resolved to the producer's KSUID
(``{"$ref": "svc://<ksuid>#/<property>", "$value": …}``); on the way out they become the forma's
``$res`` envelope again, naming the producer by label, type and stack, so the output can be re-applied.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from svc.datastore import Datastore
from svc.model import wire
from svc.model.records import ResourceSummary, ResourceVersion
from svc.model.schema_cache import written_out

_REF = re.compile(r"^[a-z][a-z0-9+.-]*://(?P<ksuid>[0-9A-Za-z]{27})#/?(?P<property>.*)$")
# Bookkeeping of the engine that means nothing to a reader of the forma.
_INTERNAL_KEYS = frozenset({"$ref", "$applied"})

Lookup = Callable[[str], ResourceVersion | None]


class ReferenceNames:
    """KSUID → (label, type, stack), looked up once per producer per request."""

    def __init__(self, datastore: Datastore) -> None:
        self._datastore = datastore
        self._known: dict[str, ResourceVersion | None] = {}

    def __call__(self, ksuid: str) -> ResourceVersion | None:
        if ksuid not in self._known:
            self._known[ksuid] = self._datastore.get_resource(ksuid)
        return self._known[ksuid]


def _untranslate(value: Any, lookup: Lookup) -> Any:
    if isinstance(value, list):
        return [_untranslate(item, lookup) for item in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    match = _REF.match(ref) if isinstance(ref, str) else None
    if match is None:
        return {key: _untranslate(item, lookup) for key, item in value.items()}
    envelope: dict[str, Any] = {"$res": True}
    producer = lookup(match["ksuid"])
    if producer is not None:
        envelope.update({"$label": producer.label, "$type": producer.type, "$stack": producer.stack})
    else:  # the producer is gone; keep the id so the reference stays traceable
        envelope["$ksuid"] = match["ksuid"]
    envelope["$property"] = match["property"]
    envelope.update({key: item for key, item in value.items() if key not in _INTERNAL_KEYS})
    return envelope


def resource_json(resource: ResourceVersion, lookup: Lookup) -> dict[str, Any]:
    document = resource.document
    out: dict[str, Any] = {"Label": resource.label, "Type": resource.type, "Stack": resource.stack,
                           "Target": resource.target,
                           "Schema": written_out(document.get("Schema") or {"Identifier": ""}),
                           "Properties": _untranslate(dict(resource.properties), lookup)}
    if resource.read_only_properties:
        out["ReadOnlyProperties"] = dict(resource.read_only_properties)
    if resource.native_id is not None:
        out["NativeID"] = resource.native_id
    if resource.managed:  # the reference omits Managed when false
        out["Managed"] = True
    out["Ksuid"] = resource.ksuid
    for key in ("Group", "Alias"):
        if document.get(key):
            out[key] = document[key]
    return out


def summary_json(summary: ResourceSummary) -> dict[str, Any]:
    return wire.ResourceSummary(Label=summary.label, Stack=summary.stack, Type=summary.type,
                                NativeID=summary.native_id, Ksuid=summary.ksuid, Target=summary.target,
                                Managed=summary.managed).to_json()
