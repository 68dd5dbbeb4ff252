"""Builders for pure planner tests: schemas, stored resource records and formas, no database."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

from svc.engine.planner import Catalog, Inventory
from svc.model.forma import Forma
from svc.model.records import ResourceVersion, StackRecord, TargetRecord
from svc.model.schema import Schema

_ids = itertools.count(1)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def new_id() -> str:
    return f"K{next(_ids):026d}"


def schema(identifier: str, hints: dict[str, dict[str, Any]], *, portable: bool = False, parent: str = "",
           mappings: tuple[tuple[str, str], ...] = ()) -> Schema:
    return Schema.model_validate({
        "Identifier": identifier, "Fields": [k for k in hints if "." not in k], "Hints": hints,
        "Portable": portable, "Parent": parent,
        "ParentMappings": [{"parentProperty": p, "childProperty": c} for p, c in mappings]})


NETWORK = schema("$.NetworkId", {"Cidr": {"CreateOnly": True}, "Mtu": {"HasProviderDefault": True},
                                 "Tags": {"UpdateMethod": "EntitySet", "IndexField": "Key"}, "Labels": {},
                                 "Settings": {"Format": "json"}})
SUBNET = schema("$.SubnetId", {"NetworkId": {"CreateOnly": True}, "Cidr": {"CreateOnly": True, "RequiredOnCreate": True}},
                parent="T::Net::Network", mappings=(("NetworkId", "NetworkId"),))
GATEWAY = schema("$.GatewayId", {"NetworkId": {"EdgeKind": "runtimeDependency"}, "Name": {}})
SERVER = schema("$.ServerId", {
    "SubnetId": {"CreateOnly": True}, "GatewayId": {"EdgeKind": "attachesTo", "AttachesTo": True},
    "Size": {}, "AdminPassword": {"WriteOnly": True, "RequiredOnUpdate": True, "Opaque": True},
    "UserData": {"Format": "json"}, "Rules": {"UpdateMethod": "Array"}, "Placement": {"UpdateMethod": "Atomic"},
    "Tags": {"UpdateMethod": "EntitySet", "IndexField": "Key", "HasProviderDefault": True},
    "Image": {"CreateOnly": True}, "Boot": {"WriteOnly": True, "CreateOnly": True}})
BUCKET = schema("$.Name", {"Name": {"CreateOnly": True}, "ApiKey": {"Opaque": True}, "Version": {},
                           "Versioning": {"HasProviderDefault": True}}, portable=True)
ITEM = schema("$.Id", {"Value": {}, "Ref": {}, "Token": {"CreateOnly": True}}, portable=True)

TYPES = {"T::Net::Network": NETWORK, "T::Net::Subnet": SUBNET, "T::Net::Gateway": GATEWAY,
         "T::Compute::Server": SERVER, "T::Storage::Bucket": BUCKET, "T::Test::Item": ITEM}
CATALOG = Catalog(frozenset({"T"}), TYPES)
TARGET_CONFIG = {"Type": "T", "Path": "/cloud"}


def stored(ksuid: str, type_: str, label: str, properties: dict[str, Any], *, stack: str = "app",
           target: str = "main", managed: bool = True, native_id: str | None = None,
           read_only: dict[str, Any] | None = None) -> ResourceVersion:
    return ResourceVersion(
        ksuid=ksuid, version=ksuid, operation="create", type=type_, label=label, stack=stack, target=target,
        native_id=native_id or f"native-{label}", managed=managed, properties=properties,
        read_only_properties=read_only or {}, document={"Schema": TYPES[type_].to_json()}, command_id=None,
        valid_from=NOW, current=True, deleted=False)


def target_record(label: str = "main", config: dict[str, Any] | None = None) -> TargetRecord:
    return TargetRecord(label=label, version=1, namespace="T", config=config or TARGET_CONFIG,
                        config_schema={"Hints": {"Path": {"CreateOnly": True}, "Note": {"CreateOnly": False}}},
                        discoverable=True, incarnation_id="i", health_state="unknown", observed_at=None,
                        created_at=NOW, updated_at=NOW)


def stack_record(label: str = "app") -> StackRecord:
    return StackRecord(id=f"S-{label}", label=label, description="", version="1", created_at=NOW, updated_at=NOW,
                       command_id=None)


def inventory(*resources: ResourceVersion, stacks: tuple[str, ...] = ("app",),
              targets: dict[str, dict[str, Any]] | None = None) -> Inventory:
    target_map = {label: target_record(label, config) for label, config in (targets or {"main": None}).items()}
    return Inventory(list(resources), target_map, {s: stack_record(s) for s in stacks})


def ref(ksuid: str, prop: str, value: Any = None) -> dict[str, Any]:
    envelope: dict[str, Any] = {"$ref": f"svc://{ksuid}#/{prop}"}
    if value is not None:
        envelope["$value"] = value
    return envelope


def res(label: str, type_: str, prop: str, stack: str = "app") -> dict[str, Any]:
    return {"$res": True, "$label": label, "$type": type_, "$property": prop, "$stack": stack, "$visibility": "Clear"}


def forma(*resources: dict[str, Any], stacks: tuple[str, ...] = ("app",), config: dict[str, Any] | None = None,
          targets: bool = True) -> Forma:
    return Forma.model_validate({
        "Stacks": [{"Label": s} for s in stacks],
        "Targets": [{"Label": "main", "Namespace": "T", "Config": config or TARGET_CONFIG,
                     "ConfigSchema": {"Hints": {"Path": {"CreateOnly": True}, "Note": {"CreateOnly": False}}}}]
        if targets else [],
        "Resources": list(resources)})


def resource(label: str, type_: str, properties: dict[str, Any], *, stack: str = "app", alias: str | None = None,
             target: str = "main") -> dict[str, Any]:
    document = {"Label": label, "Type": type_, "Stack": stack, "Target": target, "Schema": TYPES.get(type_, ITEM).to_json(),
                "Properties": properties}
    if alias:
        document["Alias"] = alias
    return document
