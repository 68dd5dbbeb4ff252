"""FAKE's conformance cases (``svc plugin test FAKE``): an item and a network in a fake cloud (a SQLite file in the
kit's scratch directory), changed and deleted behind svc's back through ``FakeCloud``."""

from __future__ import annotations

from pathlib import Path

from svc.plugins.conformance import Case, expect
from svc_plugin_fake.cloud import FakeCloud


def _case(directory: Path, case_id: str, resource_type: str, imports: str, resources: dict[str, str],
          expected: dict[str, dict[str, object]], key: str, value: object) -> Case:
    cloud_path = directory / "cloud.db"
    cloud = FakeCloud(cloud_path)

    def change(native_id: str) -> dict[str, object]:
        cloud.set_property(native_id, key, value)
        return {key: value}

    def delete(native_id: str) -> None:
        expect(cloud.remove(native_id), f"no {native_id} in the fake cloud to delete")

    return Case(
        id=case_id, namespace="FAKE", resource_type=resource_type, imports='import "@fake/fake.pkl"\n' + imports,
        target=f'new fake.Config {{ path = "{cloud_path}" }}', target_config={"Type": "FAKE", "Path": str(cloud_path)},
        resources=resources, expected=expected, change_out_of_band=change, delete_out_of_band=delete)


def item_case(directory: Path) -> Case:
    return _case(directory, "fake-item", "FAKE::Test::Item", 'import "@fake/test/item.pkl"\n', {
        "base": 'new item.Item { label = "subject"; value = "v1"; token = "t1" }',
        "update": 'new item.Item { label = "subject"; value = "v2"; token = "t1" }',
        "replace": 'new item.Item { label = "subject"; value = "v2"; token = "t2" }',
    }, {
        "base": {"Value": "v1", "Token": "t1"},
        "update": {"Value": "v2", "Token": "t1"},
        "replace": {"Value": "v2", "Token": "t2"},
    }, "Value", "changed out of band")


def network_case(directory: Path) -> Case:
    return _case(directory, "fake-network", "FAKE::Net::Network", 'import "@fake/net/network.pkl"\n', {
        "base": 'new network.Network { label = "subject"; cidr = "10.0.0.0/16" }',
        "update": 'new network.Network { label = "subject"; cidr = "10.0.0.0/16"; mtu = 9000 }',
        "replace": 'new network.Network { label = "subject"; cidr = "10.1.0.0/16"; mtu = 9000 }',
    }, {
        "base": {"Cidr": "10.0.0.0/16", "Mtu": 1500},  # the provider's default, read back
        "update": {"Cidr": "10.0.0.0/16", "Mtu": 9000},
        "replace": {"Cidr": "10.1.0.0/16", "Mtu": 9000},
    }, "Mtu", 1280)


def cases(directory: Path) -> list[Case]:
    return [item_case(directory), network_case(directory)]
