"""Inventory and stats end to end: a real agent on SQLite, the datastore seeded through its own API from the
test (as the engine would write it), read back over HTTP and through the real CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from support.datastores import sqlite_config
from support.processes import Agent, run_svc
from svc.datastore import Datastore, open_datastore
from svc.ids import new_id
from svc.model.records import CommandRecord, PolicyWrite, ResourceWrite, TargetWrite

T0 = datetime(2026, 3, 1, tzinfo=UTC)
NET_SCHEMA = {"Identifier": "Name", "Fields": ["Name", "Cidr"], "Hints": {"Name": {"CreateOnly": True}}}
ENV = {"COLUMNS": "200"}  # wide tables: rows must not wrap in assertions


@dataclass
class Seeded:
    agent: Agent
    store: Datastore
    client_id: str

    @property
    def api(self) -> str:
        return f"{self.agent.url}/api/v1"

    def headers(self, client_id: str | None = None) -> dict[str, str]:
        return {"Client-ID": client_id or self.client_id}


@pytest.fixture
def seeded(agent_factory, tmp_path: Path, home: Path) -> Iterator[Seeded]:
    database = tmp_path / "svc.db"
    agent = agent_factory(f'datastore {{ sqlite {{ filePath = "{database}" }} }}').start()
    # The CLI's persistent client id, known in advance so that "this client's commands" can be seeded.
    client_id = new_id()
    id_file = home / ".local" / "share" / "svc" / "cli_client_id"
    id_file.parent.mkdir(parents=True, exist_ok=True)
    id_file.write_text(client_id + "\n")
    store = open_datastore(sqlite_config(str(database)),
        migrate=False)
    try:
        yield Seeded(agent, store, client_id)
    finally:
        store.close()


def seed_inventory(store: Datastore) -> dict[str, str]:
    """Two targets, two stacks (one with an inline policy, one with a standalone one), a network and a
    subnet that references it, and one discovered (unmanaged) resource. Returns ksuids by label."""
    store.put_target(TargetWrite("eu", "FAKE", {"Region": "eu-west-1"}, {"Hints": {"Region": {"CreateOnly": True}}},
                                 discoverable=True))
    store.put_target(TargetWrite("us", "FAKE", {"Region": "us-east-1"}))
    prod = store.create_stack("prod", "production")
    store.put_policy(PolicyWrite("ttl-1h", "ttl", {"TTLSeconds": 3600, "OnDependents": "abort"}, stack_id=prod.id))
    dev = store.create_stack("dev")
    shared = store.put_policy(PolicyWrite("nightly", "auto-reconcile", {"IntervalSeconds": 86400}))
    store.attach_policy(dev.id, shared.id)
    net = store.store_resource(ResourceWrite("FAKE::Net::Network", "net", "prod", "eu", {"Name": "n1", "Cidr": "10/8"},
                                             native_id="net-1", document={"Schema": NET_SCHEMA}))
    subnet = store.store_resource(ResourceWrite(
        "FAKE::Net::Subnet", "sub", "prod", "eu",
        {"Network": {"$ref": f"svc://{net.ksuid}#/Name", "$value": "n1", "$applied": True}, "Size": 24},
        native_id="sub-1", read_only_properties={"Arn": "arn:sub-1"},
        document={"Schema": {"Identifier": "Id", "Fields": ["Network", "Size"]}, "Group": "g1"}))
    box = store.store_resource(ResourceWrite("FAKE::Compute::Server", "box", "dev", "us", {"Size": "small"},
                                             native_id="srv-1", document={"Schema": {"Identifier": "Id"}}))
    stray = store.store_resource(ResourceWrite("FAKE::Compute::Server", "stray", "$unmanaged", "us", {"Size": "big"},
                                               native_id="srv-9", managed=False))
    return {"net": net.ksuid, "sub": subnet.ksuid, "box": box.ksuid, "stray": stray.ksuid}


def seed_command(store: Datastore, client_id: str, *, command: str = "apply", state: str = "Success",
                 minutes: int = 0, source: str = "user") -> None:
    """A finished command without resource updates: what the stats count (its payload is the engine's)."""
    start = T0 + timedelta(minutes=minutes)
    store.put_command(CommandRecord(id=new_id(), command=command, state=state, start_ts=start, mode="reconcile",
                                    source=source, client_id=client_id, end_ts=start + timedelta(seconds=5)))


# -- resources ----------------------------------------------------------------------------------------------

def test_resources_as_a_forma_with_stacks_targets_policies_and_references(seeded: Seeded) -> None:
    ids = seed_inventory(seeded.store)
    response = httpx.get(f"{seeded.api}/resources")
    assert response.status_code == 200
    forma = response.json()
    assert forma["Description"] == {}
    by_label = {resource["Label"]: resource for resource in forma["Resources"]}
    assert set(by_label) == {"net", "sub", "box", "stray"}
    sub = by_label["sub"]
    # The stored KSUID reference comes back as the forma's $res envelope, by label/type/stack.
    assert sub["Properties"]["Network"] == {"$res": True, "$label": "net", "$type": "FAKE::Net::Network",
                                            "$stack": "prod", "$property": "Name", "$value": "n1"}
    assert sub["ReadOnlyProperties"] == {"Arn": "arn:sub-1"} and sub["Group"] == "g1"
    assert (sub["NativeID"], sub["Ksuid"], sub["Managed"], sub["Target"]) == ("sub-1", ids["sub"], True, "eu")
    # Stored compact, answered with every default written out: a Go client reads a missing flag as false.
    unset = {"WriteOnly": False, "Required": False, "RequiredOnCreate": False, "RequiredOnUpdate": False,
             "HasProviderDefault": False, "Opaque": False, "AttachesTo": False, "EdgeKind": "default",
             "UpdateMethod": "", "IndexField": "", "Format": ""}
    assert by_label["net"]["Schema"] == {**NET_SCHEMA, "Hints": {"Name": {"CreateOnly": True, **unset}},
                                         "Discoverable": True, "Extractable": True, "Portable": False, "Parent": "",
                                         "ParentMappings": []}
    assert "Managed" not in by_label["stray"]  # the reference omits Managed when false
    stacks = {stack["Label"]: stack for stack in forma["Stacks"]}
    assert set(stacks) == {"prod", "dev"}  # "$unmanaged" was never declared: no stack to show
    assert stacks["prod"]["Policies"] == [{"Type": "ttl", "Label": "ttl-1h", "TTLSeconds": 3600,
                                           "OnDependents": "abort"}]
    assert stacks["dev"]["Policies"] == [{"$ref": "policy://nightly"}]
    assert forma["Policies"] == [{"Type": "auto-reconcile", "Label": "nightly", "IntervalSeconds": 86400}]
    assert {target["Label"]: target["Namespace"] for target in forma["Targets"]} == {"eu": "FAKE", "us": "FAKE"}

    unmanaged = httpx.get(f"{seeded.api}/resources", params={"query": "managed:false"}).json()
    assert [r["Label"] for r in unmanaged["Resources"]] == ["stray"]
    assert [t["Label"] for t in unmanaged["Targets"]] == ["us"] and unmanaged["Stacks"] == []
    typed = httpx.get(f"{seeded.api}/resources", params={"query": "type:FAKE::Net::* -label:sub"}).json()
    assert [r["Label"] for r in typed["Resources"]] == ["net"]

    none = httpx.get(f"{seeded.api}/resources", params={"query": "stack:nowhere"})
    assert none.status_code == 404 and none.json() == {"error": "No resources found"}
    bad = httpx.get(f"{seeded.api}/resources", params={"query": "colour:blue"})
    assert bad.status_code == 400 and bad.json()["error"] == "InvalidQueryError"
    assert "unknown field 'colour'" in bad.json()["data"]["Reason"]


def test_summaries_page_through_the_whole_inventory(seeded: Seeded) -> None:
    """450 resources span three datastore pages; every one comes back once, in order; max_results stops early."""
    writes = [ResourceWrite("FAKE::Net::Network", f"n{i:03}", "bulk", "eu", {"Name": f"n{i}"}, native_id=f"id-{i}")
              for i in range(450)]
    seeded.store.store_resources(writes)
    rows = httpx.get(f"{seeded.api}/resources/summary").json()
    assert [row["Label"] for row in rows] == [f"n{i:03}" for i in range(450)]
    assert rows[0] == {"Label": "n000", "Stack": "bulk", "Type": "FAKE::Net::Network", "NativeID": "id-0",
                       "Ksuid": rows[0]["Ksuid"], "Target": "eu", "Managed": True}
    assert len(httpx.get(f"{seeded.api}/resources/summary", params={"max_results": "201"}).json()) == 201
    assert len(httpx.get(f"{seeded.api}/resources", params={"max_results": "7"}).json()["Resources"]) == 7
    empty = httpx.get(f"{seeded.api}/resources/summary", params={"query": "stack:none"})
    assert empty.status_code == 200 and empty.json() == []
    assert httpx.get(f"{seeded.api}/resources/summary", params={"max_results": "x"}).status_code == 400


def test_resource_by_ksuid(seeded: Seeded) -> None:
    ids = seed_inventory(seeded.store)
    found = httpx.get(f"{seeded.api}/resources/by-ksuid/{ids['box']}")
    assert found.status_code == 200
    assert (found.json()["Label"], found.json()["Properties"]) == ("box", {"Size": "small"})
    missing = new_id()
    assert httpx.get(f"{seeded.api}/resources/by-ksuid/{missing}").json() == {
        "error": f"no resource found for ksuid: {missing}"}
    bad = httpx.get(f"{seeded.api}/resources/by-ksuid/not-a-ksuid")
    assert bad.status_code == 400 and "invalid ksuid" in bad.json()["message"]


# -- stacks, targets, stats ---------------------------------------------------------------------------------

def test_stacks_and_targets(seeded: Seeded) -> None:
    assert httpx.get(f"{seeded.api}/stacks").json() == {"error": "No stacks found"}
    assert httpx.get(f"{seeded.api}/targets").status_code == 404
    seed_inventory(seeded.store)
    stacks = httpx.get(f"{seeded.api}/stacks").json()
    assert [(s["Label"], s.get("Description")) for s in stacks] == [("dev", None), ("prod", "production")]
    assert all(len(stack["ID"]) == 27 and stack["CreatedAt"] for stack in stacks)
    targets = httpx.get(f"{seeded.api}/targets").json()
    assert targets[0] == {"Label": "eu", "Namespace": "FAKE", "Config": {"Region": "eu-west-1"},
                          "ConfigSchema": {"Hints": {"Region": {"CreateOnly": True}}}, "Discoverable": True,
                          "Version": 1}
    assert [t["Label"] for t in httpx.get(f"{seeded.api}/targets", params={"query": "label:u*"}).json()] == ["us"]
    assert [t["Label"] for t in httpx.get(f"{seeded.api}/targets",
                                          params={"query": "discoverable:true namespace:FAKE"}).json()] == ["eu"]
    typo = httpx.get(f"{seeded.api}/targets", params={"query": "lable:eu"})
    assert typo.status_code == 400 and "key one of label, namespace, discoverable" in typo.json()["data"]["Reason"]


def test_stats_count_what_is_stored(seeded: Seeded) -> None:
    seed_inventory(seeded.store)
    seed_command(seeded.store, seeded.client_id)
    seed_command(seeded.store, seeded.client_id, state="Failed", minutes=1)
    seed_command(seeded.store, "other-client", command="destroy", minutes=2)
    seed_command(seeded.store, "", command="sync", source="synchronizer", minutes=3)
    stats = httpx.get(f"{seeded.api}/stats").json()
    assert stats["Clients"] == 2
    assert stats["Commands"] == {"apply": 2, "destroy": 1}  # background sync is not user activity
    assert stats["States"] == {"Success": 2, "Failed": 1}
    assert stats["Stacks"] == 2
    assert stats["Resources"] == {"FAKE": 3} and stats["UnmanagedResources"] == {"FAKE": 1}
    assert stats["Targets"] == {"FAKE": 2}
    assert stats["ResourceTypes"] == {"FAKE::Compute::Server": 2, "FAKE::Net::Network": 1, "FAKE::Net::Subnet": 1}
    assert stats["Plugins"] == []  # this agent's config enables no resource plugin


# -- the CLI ---------------------------------------------------------------------------------------------------

def test_a_new_cli_creates_one_persistent_client_id(agent_factory, home: Path) -> None:
    agent = agent_factory().start()
    id_file = home / ".local" / "share" / "svc" / "cli_client_id"
    assert not id_file.exists()
    assert run_svc("command", "list", "--config", str(agent.config)).returncode == 0
    first = id_file.read_text().strip()
    assert len(first) == 27
    assert run_svc("inventory", "--config", str(agent.config)).returncode == 0
    assert id_file.read_text().strip() == first


def test_cli_inventory(seeded: Seeded) -> None:
    config = str(seeded.agent.config)
    empty = run_svc("inventory", "--config", config)
    assert empty.returncode == 0 and "No resources found." in empty.stdout
    empty_machine = run_svc("inventory", "resources", "--config", config, "--output-consumer", "machine")
    assert json.loads(empty_machine.stdout) == {"Description": {}, "Stacks": [], "Targets": [], "Resources": []}
    seed_inventory(seeded.store)

    table = run_svc("inventory", "--config", config, env=ENV)
    assert table.returncode == 0, table.stderr
    stray = next(line for line in table.stdout.splitlines() if "stray" in line)
    assert "⚠ unmanaged" in stray and "srv-9" in stray
    machine = run_svc("inventory", "resources", "--query", "stack:prod", "--config", config,
                      "--output-consumer", "machine")
    assert machine.stdout.count("\n") == 1
    assert machine.stdout.strip() == httpx.get(f"{seeded.api}/resources", params={"query": "stack:prod"}).text
    limited = run_svc("inventory", "--max-results", "2", "--config", config, env=ENV)
    assert "Showing the first 2 resources" in limited.stdout

    stacks = run_svc("inventory", "stacks", "--config", config, "--output-consumer", "machine")
    assert [s["Label"] for s in json.loads(stacks.stdout)["Stacks"]] == ["dev", "prod"]
    stacks_human = run_svc("inventory", "stacks", "--config", config, env=ENV)
    assert "ttl-1h" in stacks_human.stdout and "production" in stacks_human.stdout
    targets = run_svc("inventory", "targets", "--query", "label:eu", "--config", config,
                      "--output-consumer", "machine", "--output-schema", "yaml")
    assert targets.returncode == 0 and "Region: eu-west-1" in targets.stdout and "us-east-1" not in targets.stdout
    bad = run_svc("inventory", "--query", "colour:blue", "--config", config)
    assert bad.returncode == 1 and "unknown field 'colour'" in bad.stderr
