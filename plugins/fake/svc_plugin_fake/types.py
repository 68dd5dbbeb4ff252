"""How the FAKE cloud treats each of its resource types (mirrors the Pkl schema under ``schema/``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TypeSpec:
    id_field: str  # a dotted path for an id inside an object (``Meta.RecordId``)
    id_prefix: str | None  # None: the user names the resource (the id field is a property)
    create_only: frozenset[str] = frozenset()
    write_only: frozenset[str] = frozenset()  # accepted, never returned by Read
    forget_unless_resent: frozenset[str] = frozenset()  # dropped by an update that does not carry them
    defaults: dict[str, Any] = field(default_factory=dict)  # provider defaults when omitted
    parent_field: str | None = None  # List filter key for child types
    answers_id: bool = True  # False: a create answer names no native id (the agent finds it in the properties)


TYPES: dict[str, TypeSpec] = {
    "FAKE::Net::Network": TypeSpec("NetworkId", "net", frozenset({"Cidr"}), defaults={"Mtu": 1500}),
    "FAKE::Net::Subnet": TypeSpec("SubnetId", "subnet", frozenset({"NetworkId", "Cidr"}), parent_field="NetworkId"),
    "FAKE::Net::Gateway": TypeSpec("GatewayId", "gw"),
    "FAKE::Net::Address": TypeSpec("AddressId", "addr", frozenset({"SubnetId"}), parent_field="SubnetId"),
    "FAKE::Compute::Server": TypeSpec(
        "ServerId", "srv", frozenset({"SubnetId", "Image"}), write_only=frozenset({"AdminPassword"}),
        forget_unless_resent=frozenset({"AdminPassword"}), defaults={"Tags": [{"Key": "fake:owner", "Value": "fake"}]}),
    "FAKE::Storage::Bucket": TypeSpec("Name", None, frozenset({"Name"}), defaults={"Versioning": False}),
    "FAKE::Test::Item": TypeSpec("Id", "item", frozenset({"Token"})),
    "FAKE::Test::Marker": TypeSpec("Id", "mark"),
    "FAKE::Test::Rules": TypeSpec("Id", "rules", frozenset({"Seed"}), write_only=frozenset({"Seed", "Passphrase"})),
    "FAKE::Test::Record": TypeSpec("Meta.RecordId", "rec", answers_id=False),
    "FAKE::App::Vault": TypeSpec("VaultId", "vault"),
    "FAKE::Dns::Record": TypeSpec("Id", "dns", frozenset({"Name"})),
    "FAKE::Secret::Value": TypeSpec("Id", "secret"),
    "FAKE::Secret::Map": TypeSpec("Id", "kv"),
    "FAKE::Secret::Consumer": TypeSpec("Id", "use"),
}


def spec(resource_type: str) -> TypeSpec | None:
    return TYPES.get(resource_type)
