"""Discovery end to end (issue 6, item 3): one real agent running FAKE in its own process, two FAKE clouds seeded
out of band, ``POST /api/v1/admin/discover``, and what landed in ``$unmanaged`` read back through the API.

The agent's FAKE config carries two discovery filters (one on a tag, one with two conditions on another type) and
label rules; the ``denied`` cloud refuses to list subnets (AccessDenied). The tests run in file order: discovery,
then adoption of what it found, then a second run that must find nothing new.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from svc_plugin_fake.cloud import FakeCloud

from support.processes import Agent, on_demand_agent, run_svc

NET, SUBNET, ADDRESS = "FAKE::Net::Network", "FAKE::Net::Subnet", "FAKE::Net::Address"
ITEM, MARKER, GATEWAY = "FAKE::Test::Item", "FAKE::Test::Marker", "FAKE::Net::Gateway"

PLUGIN = """\
new FAKE.PluginConfig {
  labelConfig = new { defaultQuery = "$.Name"; resourceOverrides = new { ["FAKE::Test::Item"] = "$.Value" } }
  discoveryFilters {
    new { resourceTypes { "FAKE::Net::Network" }
          conditions { new { propertyPath = "$.Tags[?(@.Key=='svc:owner')].Value"; propertyValue = "agent" } } }
    new { resourceTypes { "FAKE::Test::Item" }
          conditions { new { propertyPath = "$.Value"; propertyValue = "skip-me" }; new { propertyPath = "$.Token" } } }
  }
}"""


def tags(**pairs: str) -> list[dict[str, str]]:
    return [{"Key": key.replace("_", ":"), "Value": value} for key, value in pairs.items()]


def seed_main(cloud: FakeCloud) -> None:
    cloud.put(NET, "net-a", {"NetworkId": "net-a", "Cidr": "10.1.0.0/16", "Mtu": 1500, "Tags": tags(Name="alpha")})
    cloud.put(NET, "net-b", {"NetworkId": "net-b", "Cidr": "10.2.0.0/16", "Mtu": 1500,
                             "Tags": tags(Name="beta", svc_owner="agent")})  # the agent's own: filtered out
    cloud.put(NET, "net-c", {"NetworkId": "net-c", "Cidr": "10.3.0.0/16", "Mtu": 1500,
                             "Tags": tags(Name="alpha", svc_owner="someone")})  # label alpha is taken: alpha-1
    cloud.put(SUBNET, "sub-a1", {"SubnetId": "sub-a1", "NetworkId": "net-a", "Cidr": "10.1.1.0/24"})
    cloud.put(SUBNET, "sub-c1", {"SubnetId": "sub-c1", "NetworkId": "net-c", "Cidr": "10.3.1.0/24"})
    cloud.put(ADDRESS, "addr-1", {"AddressId": "addr-1", "SubnetId": "sub-a1", "Ip": "10.1.1.5"})
    cloud.put(ADDRESS, "addr-2", {"AddressId": "addr-2", "SubnetId": "sub-c1", "Ip": "10.3.1.5"})
    cloud.put(ITEM, "item-1", {"Id": "item-1", "Value": "keep", "Token": "t"})
    cloud.put(ITEM, "item-2", {"Id": "item-2", "Value": "skip-me", "Token": "t"})  # both conditions: filtered out
    cloud.put(ITEM, "item-3", {"Id": "item-3", "Value": "skip-me"})  # one condition only: kept
    cloud.put(ITEM, "item-4", {"Id": "item-4", "Value": "tagged", "Tags": tags(svc_owner="agent")})  # not a network
    cloud.put(MARKER, "mark-1", {"Id": "mark-1", "Value": "never listed"})  # discoverable = false
    cloud.put(GATEWAY, "gw-1", {"GatewayId": "gw-1", "NetworkId": "net-a", "Name": "front"})


def seed_denied(cloud: FakeCloud) -> None:
    for n in (1, 2):
        cloud.put(NET, f"n-{n}", {"NetworkId": f"n-{n}", "Cidr": f"10.{n}.0.0/16", "Mtu": 1500})
        cloud.put(SUBNET, f"s-{n}", {"SubnetId": f"s-{n}", "NetworkId": f"n-{n}", "Cidr": f"10.{n}.1.0/24"})
    cloud.put(ITEM, "i-1", {"Id": "i-1", "Value": "elsewhere"})
    cloud.set_knob("fail", {"code": "AccessDenied", "ops": ["list"], "types": [SUBNET]})


@dataclass
class World:
    agent: Agent
    directory: Path
    env: dict[str, str]
    main: FakeCloud
    denied: FakeCloud

    @property
    def api(self) -> str:
        return f"{self.agent.url}/api/v1"

    def svc(self, *args: str) -> Any:
        return run_svc(*args, "--config", str(self.agent.config), env={**self.env, "COLUMNS": "200"})

    def discover(self) -> dict[str, Any]:
        response = httpx.post(f"{self.api}/admin/discover", timeout=120)
        assert response.status_code == 200, response.text
        return response.json()

    def resources(self, query: str) -> dict[tuple[str, str], dict[str, Any]]:
        """(type, native id) → resource, from ``GET /resources``."""
        response = httpx.get(f"{self.api}/resources", params={"query": query}, timeout=30)
        if response.status_code == 404:
            return {}
        assert response.status_code == 200, response.text
        return {(r["Type"], r["NativeID"]): r for r in response.json()["Resources"]}

    def forma(self, name: str, body: str) -> Path:
        path = self.directory / name
        path.write_text(
            'amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\nimport "@fake/fake.pkl"\n'
            'import "@fake/net/network.pkl"\nimport "@fake/test/item.pkl"\n\nforma {\n'
            f'  new svc.Target {{ label = "main"; config = new fake.Config {{ path = "{self.directory / "main.db"}" }} }}\n'
            f'  new svc.Target {{ label = "denied"; config = new fake.Config {{ path = "{self.directory / "denied.db"}" }} }}\n'
            + textwrap.indent(textwrap.dedent(body), "  ") + "}\n")
        return path

    def apply(self, path: Path) -> Any:
        result = self.svc("apply", "--mode", "reconcile", str(path), "--yes", "--wait")
        assert result.returncode == 0, result.stdout + result.stderr
        return result


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("discovery")
    home = directory / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
           "SVC_PID_FILE": str(directory / "agent.pid")}
    main, denied = FakeCloud(directory / "main.db"), FakeCloud(directory / "denied.db")
    seed_main(main)
    seed_denied(denied)
    agent = on_demand_agent(directory, PLUGIN, max_retries=2, env=env).start()
    try:
        world = World(agent, directory, env, main, denied)
        world.apply(world.forma("targets.pkl", ""))  # the targets only: what discovery scans
        yield world
    finally:
        agent.stop()


@pytest.fixture(scope="module")
def first_run(world: World) -> dict[str, Any]:
    return world.discover()


def test_discovered_resources_land_unmanaged_in_the_unmanaged_stack(world: World, first_run: dict[str, Any]) -> None:
    found = world.resources("managed:false")
    assert all(r["Stack"] == "$unmanaged" and "Managed" not in r for r in found.values())
    assert {native_id for (_, native_id) in found} == {
        "net-a", "net-c", "sub-a1", "sub-c1", "addr-1", "addr-2", "item-1", "item-3", "item-4", "gw-1",
        "n-1", "n-2", "i-1"}
    assert first_run["Discovered"] == 13 and first_run["Filtered"] == 2 and first_run["CommandId"]
    assert found[(NET, "net-a")]["Target"] == "main" and found[(NET, "n-1")]["Target"] == "denied"
    assert found[(NET, "net-a")]["ReadOnlyProperties"] == {"NetworkId": "net-a"}


def test_filters_apply_per_type_and_need_every_condition(world: World, first_run: dict[str, Any]) -> None:
    found = world.resources("managed:false")
    assert (NET, "net-b") not in found  # its tag matches the network filter
    assert (ITEM, "item-2") not in found  # both conditions of the item filter match
    assert (ITEM, "item-3") in found  # only one does
    assert (ITEM, "item-4") in found  # carries the network filter's tag, but is no network


def test_types_that_are_not_discoverable_are_never_listed(world: World, first_run: dict[str, Any]) -> None:
    assert (MARKER, "mark-1") not in world.resources("")


def test_children_are_found_at_every_depth_and_refer_to_their_parents(world: World,
                                                                       first_run: dict[str, Any]) -> None:
    found = world.resources("managed:false")
    subnet = found[(SUBNET, "sub-a1")]["Properties"]["NetworkId"]
    assert (subnet["$res"], subnet["$type"], subnet["$label"], subnet["$stack"], subnet["$property"],
            subnet["$value"]) == (True, NET, "alpha", "$unmanaged", "NetworkId", "net-a")
    address = found[(ADDRESS, "addr-2")]["Properties"]["SubnetId"]  # a grandchild, under net-c's subnet
    assert (address["$type"], address["$label"], address["$value"]) == (SUBNET, "sub-c1", "sub-c1")


def test_labels_follow_the_label_rules_and_stay_unique(world: World, first_run: dict[str, Any]) -> None:
    labels = {native_id: r["Label"] for (_, native_id), r in world.resources("managed:false").items()}
    assert labels["net-a"] == "alpha" and labels["net-c"] == "alpha-1"  # the Name tag; taken, so suffixed
    assert labels["item-1"] == "keep" and labels["item-3"] == "skip-me"  # the type's override, $.Value
    assert labels["gw-1"] == "front"  # the default query, $.Name
    assert labels["sub-a1"] == "sub-a1"  # nothing else: the native id


def test_access_denied_on_one_type_is_logged_once_and_the_rest_is_discovered(world: World,
                                                                             first_run: dict[str, Any]) -> None:
    assert first_run["Denied"] == [f"{SUBNET} on target 'denied'"]
    warnings = [line for line in world.agent.output().splitlines() if "AccessDenied listing" in line]
    assert len(warnings) == 1, warnings  # two networks on that target, so two refused listings
    assert SUBNET in warnings[0] and "'denied'" in warnings[0]
    found = world.resources("target:denied")
    assert {native_id for (_, native_id) in found} == {"n-1", "n-2", "i-1"}


def test_a_forma_adopts_discovered_resources_without_creating_them(world: World, first_run: dict[str, Any]) -> None:
    before = world.resources("managed:false")
    world.apply(world.forma("adopt.pkl", """\
        new svc.Stack { label = "app" }
        new network.Network { label = "alpha"; target = "main"; cidr = "10.1.0.0/16"; mtu = 9000
                              tags { new { key = "Name"; value = "alpha" } } }
        new item.Item { label = "mine"; alias = "keep"; target = "main"; value = "keep"; token = "t" }
    """))
    app = world.resources("stack:app")
    network, item = app[(NET, "net-a")], app[(ITEM, "item-1")]
    assert network["Managed"] and network["Label"] == "alpha" and network["Ksuid"] == before[(NET, "net-a")]["Ksuid"]
    assert item["Managed"] and item["Label"] == "mine" and item["Ksuid"] == before[(ITEM, "item-1")]["Ksuid"]
    assert world.main.calls("create") == []  # adopted, never created again
    assert [(c["op"], c["subject"]) for c in world.main.calls()] == [("update", "net-a")]  # mtu: in place
    assert world.main.get("net-a")["properties"]["Mtu"] == 9000
    left = world.resources("managed:false")
    assert (NET, "net-a") not in left and (ITEM, "item-1") not in left and (NET, "net-c") in left


def test_a_second_run_finds_nothing_new(world: World, first_run: dict[str, Any]) -> None:
    again = world.discover()
    assert (again["Discovered"], again["CommandId"]) == (0, None)
    commands = world.svc("command", "list", "--output-consumer", "machine")
    assert {c["Command"] for c in json.loads(commands.stdout)["Commands"]} == {"apply"}  # no background runs
    world.main.put(ITEM, "item-5", {"Id": "item-5", "Value": "late"})
    late = world.discover()
    assert late["Discovered"] == 1 and world.resources("label:late")[(ITEM, "item-5")]["Stack"] == "$unmanaged"
    assert json.loads(world.svc("inventory", "resources", "--query", "managed:false label:late",
                                "--output-consumer", "machine").stdout)["Resources"][0]["NativeID"] == "item-5"
