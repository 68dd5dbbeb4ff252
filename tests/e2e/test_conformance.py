"""The plugin conformance suite (``support.conformance``) for LOCAL and FAKE, through the real subprocess host.

Each case drives one resource type through create, read, a no-op re-apply, an in-place update, a replace on
a create-only change, list (paged), out-of-band change and delete (seen by read, and by destroy), and delete,
with a real agent running the plugin in its own process and the real ``svc`` CLI.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from svc_plugin_fake.cloud import FakeCloud

from support.conformance import Case, discovery_phase, extract_phase, run_conformance

LOCAL_IMPORTS = 'import "@local/local.pkl" as lcl\nimport "@local/fs.pkl"\n'


def local_file(directory: Path) -> Case:
    root = directory / "root"

    def change(native_id: str) -> dict[str, str]:
        (root / native_id).write_text("edited by hand")
        return {"Content": "edited by hand"}

    return Case(
        id="local-file", namespace="LOCAL", resource_type="LOCAL::FS::File", imports=LOCAL_IMPORTS,
        target=f'new lcl.Config {{ root = "{root}" }}', target_config={"Type": "LOCAL", "Root": str(root)},
        resources={
            "base": 'new fs.File { label = "subject"; path = "etc/app.conf"; content = "port = 80"; mode = "0640" }',
            "update": 'new fs.File { label = "subject"; path = "etc/app.conf"; content = "port = 8080"; '
                      'mode = "0600" }',
            "replace": 'new fs.File { label = "subject"; path = "etc/app2.conf"; content = "port = 8080"; '
                       'mode = "0600" }',
        },
        expected={
            "base": {"Path": "etc/app.conf", "Content": "port = 80", "Mode": "0640"},
            "update": {"Path": "etc/app.conf", "Content": "port = 8080", "Mode": "0600"},
            "replace": {"Path": "etc/app2.conf", "Content": "port = 8080", "Mode": "0600"},
        },
        change_out_of_band=change, delete_out_of_band=lambda native_id: (root / native_id).unlink())


def local_directory(directory: Path) -> Case:
    root = directory / "root"

    def change(native_id: str) -> dict[str, str]:
        os.chmod(root / native_id, 0o755)
        return {"Mode": "0755"}

    return Case(
        id="local-directory", namespace="LOCAL", resource_type="LOCAL::FS::Directory", imports=LOCAL_IMPORTS,
        target=f'new lcl.Config {{ root = "{root}" }}', target_config={"Type": "LOCAL", "Root": str(root)},
        resources={
            "base": 'new fs.Directory { label = "subject"; path = "var/data"; mode = "0750" }',
            "update": 'new fs.Directory { label = "subject"; path = "var/data"; mode = "0700" }',
            "replace": 'new fs.Directory { label = "subject"; path = "var/data2"; mode = "0700" }',
        },
        expected={
            "base": {"Path": "var/data", "Mode": "0750"},
            "update": {"Path": "var/data", "Mode": "0700"},
            "replace": {"Path": "var/data2", "Mode": "0700"},
        },
        change_out_of_band=change, delete_out_of_band=lambda native_id: (root / native_id).rmdir())


def _fake(directory: Path, case_id: str, resource_type: str, imports: str, resources: dict[str, str],
          expected: dict[str, dict[str, object]], key: str, value: object) -> Case:
    cloud_path = directory / "cloud.db"
    cloud = FakeCloud(cloud_path)

    def change(native_id: str) -> dict[str, object]:
        cloud.set_property(native_id, key, value)
        return {key: value}

    return Case(
        id=case_id, namespace="FAKE", resource_type=resource_type, imports='import "@fake/fake.pkl"\n' + imports,
        target=f'new fake.Config {{ path = "{cloud_path}" }}', target_config={"Type": "FAKE", "Path": str(cloud_path)},
        resources=resources, expected=expected, change_out_of_band=change,
        delete_out_of_band=lambda native_id: None if cloud.remove(native_id) else pytest.fail(f"no {native_id}"))


def fake_item(directory: Path) -> Case:
    return _fake(directory, "fake-item", "FAKE::Test::Item", 'import "@fake/test/item.pkl"\n', {
        "base": 'new item.Item { label = "subject"; value = "v1"; token = "t1" }',
        "update": 'new item.Item { label = "subject"; value = "v2"; token = "t1" }',
        "replace": 'new item.Item { label = "subject"; value = "v2"; token = "t2" }',
    }, {
        "base": {"Value": "v1", "Token": "t1"},
        "update": {"Value": "v2", "Token": "t1"},
        "replace": {"Value": "v2", "Token": "t2"},
    }, "Value", "changed out of band")


def fake_network(directory: Path) -> Case:
    return _fake(directory, "fake-network", "FAKE::Net::Network", 'import "@fake/net/network.pkl"\n', {
        "base": 'new network.Network { label = "subject"; cidr = "10.0.0.0/16" }',
        "update": 'new network.Network { label = "subject"; cidr = "10.0.0.0/16"; mtu = 9000 }',
        "replace": 'new network.Network { label = "subject"; cidr = "10.1.0.0/16"; mtu = 9000 }',
    }, {
        "base": {"Cidr": "10.0.0.0/16", "Mtu": 1500},  # the provider's default, read back
        "update": {"Cidr": "10.0.0.0/16", "Mtu": 9000},
        "replace": {"Cidr": "10.1.0.0/16", "Mtu": 9000},
    }, "Mtu", 1280)


CASES: dict[str, Callable[[Path], Case]] = {
    "local-file": local_file, "local-directory": local_directory, "fake-item": fake_item,
    "fake-network": fake_network,
}


@pytest.mark.parametrize("name", CASES)
def test_crud_conformance(name: str, home: Path, tmp_path: Path) -> None:
    run_conformance(CASES[name](tmp_path), tmp_path)


@pytest.mark.parametrize("name", CASES)
def test_discovery_conformance(name: str, home: Path, tmp_path: Path) -> None:
    discovery_phase(CASES[name](tmp_path), tmp_path)


@pytest.mark.parametrize("name", CASES)
def test_extract_conformance(name: str, home: Path, tmp_path: Path) -> None:
    extract_phase(CASES[name](tmp_path), tmp_path)
