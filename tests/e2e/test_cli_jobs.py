"""The commands for what was a curl (issue 28 item 6) through the real CLI and a real agent running FAKE:
``svc sync`` after a change made in the FAKE cloud behind svc's back, ``svc drift`` with and without ``--stack``
(a secret shown as (sensitive), never in clear), ``svc discover`` finding a resource made outside svc,
``svc reconcile`` reverting a stack's drift, ``svc ttl check`` destroying an expired stack; and ``svc apply``
without ``--mode`` reconciling (item 3). The tests run in file order on one agent."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from svc_plugin_fake.cloud import FakeCloud

from support.fake_world import HEAD, World
from support.processes import isolated_home, on_demand_agent

ITEM, VAULT = "FAKE::Test::Item", "FAKE::App::Vault"
OLD_SECRET, NEW_SECRET = "db-pw-first-7c21ab", "db-pw-by-hand-e4d903"
MACHINE = ("--output-consumer", "machine")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One agent for the module; the stack expirer's timer is off, so only ``svc ttl check`` expires stacks."""
    root = tmp_path_factory.mktemp("jobs")
    with isolated_home(root):
        agent = on_demand_agent(root, "new FAKE.PluginConfig {}", members="stackExpirer { enabled = false }").start()
        try:
            yield World(agent, FakeCloud(root / "cloud.db"), root / "cloud.db", root)
        finally:
            agent.stop()


def write_forma(world: World, name: str, stack: str, body: str) -> Path:
    """A forma over the FAKE cloud declaring ``stack`` (a Pkl ``svc.Stack``) and ``body``."""
    path = world.directory / name
    head = HEAD.format(cloud=world.cloud_path).replace('import "@svc/svc.pkl"\n',
                                                       'import "@svc/svc.pkl"\nimport "@fake/app/vault.pkl"\n')
    path.write_text(head + f"  {stack}\n" + textwrap.indent(textwrap.dedent(body), "  ") + "}\n")
    return path


def item(label: str, value: str, stack: str) -> str:
    return f'new item.Item {{ label = "{label}"; value = "{value}"; token = "t"; stack = "{stack}" }}\n'


def apply(world: World, path: Path) -> dict[str, Any]:
    """Applies ``path`` without ``--mode`` (reconcile by default) and returns the finished command."""
    result = world.svc("apply", str(path), "--yes", "--wait", *MACHINE)
    assert result.returncode == 0, result.stdout + result.stderr
    [command] = json.loads(result.stdout)["Commands"]
    return command


def native_id(world: World, label: str) -> str:
    return world.inventory()[label]["NativeID"]


def ok(world: World, *args: str) -> Any:
    result = world.svc(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_apply_reconciles_by_default_and_sync_prints_what_changed(world: World) -> None:
    command = apply(world, write_forma(world, "synced.pkl", 'new svc.Stack { label = "synced" }',
                                       item("s1", "as applied", "synced") + item("s2", "kept", "synced")))
    assert (command["Mode"], command["State"]) == ("reconcile", "Success")
    assert ok(world, "sync").stdout.strip() == ("Synchronized: nothing changed outside svc since the last "
                                                "synchronization (all drift since the last reconcile: svc drift).")

    world.cloud.set_property(native_id(world, "s1"), "Value", "changed by hand")
    shown = ok(world, "sync").stdout
    assert "Synchronized: 1 resource(s) changed outside svc:" in shown, shown
    assert f"update  synced/s1 ({ITEM})" in shown and "s2" not in shown, shown

    world.cloud.remove(native_id(world, "s2"))
    machine = json.loads(ok(world, "sync", *MACHINE).stdout)
    assert machine["CommandId"] and machine["Changed"] == [
        {"Stack": "synced", "Type": ITEM, "Label": "s2", "Operation": "delete"}]
    assert json.loads(ok(world, "sync", *MACHINE).stdout) == {"CommandId": None, "Changed": []}


def test_drift_shows_old_and_new_values_and_never_a_secret(world: World) -> None:
    apply(world, write_forma(world, "vault.pkl", 'new svc.Stack { label = "vaulted" }', f'''\
        new vault.Vault {{
          label = "vault"; name = "app"; stack = "vaulted"
          database {{ host = "db.internal"; password = "{OLD_SECRET}" }}
        }}
        '''))
    vault_id = native_id(world, "vault")
    cloud = world.cloud.get(vault_id)["properties"]
    world.cloud.set_property(vault_id, "Database", {**cloud["Database"], "Password": NEW_SECRET})
    world.cloud.set_property(vault_id, "Name", "renamed")
    ok(world, "sync")

    one = ok(world, "drift", "--stack", "vaulted").stdout
    assert "Stack vaulted:" in one and f"update  vault ({VAULT})" in one, one
    assert '/Name: "app" → "renamed"' in one, one
    assert "(sensitive) → (sensitive)" in one and "Stack synced:" not in one, one

    every = ok(world, "drift").stdout
    assert "Stack vaulted:" in every and "Stack synced:" in every, every
    assert f'update  s1 ({ITEM})' in every and '/Value: "as applied" → "changed by hand"' in every, every
    assert f"delete  s2 ({ITEM})" in every, every

    machine = json.loads(ok(world, "drift", *MACHINE).stdout)
    assert set(machine["ModifiedStacks"]) == {"synced", "vaulted"}
    [vault] = machine["ModifiedStacks"]["vaulted"]["ModifiedResources"]
    assert {change["Path"] for change in vault["Changes"]} >= {"/Name"}
    yaml_out = ok(world, "drift", "--stack", "synced", "--output-consumer", "machine", "--output-schema", "yaml")
    assert yaml_out.stdout.startswith("ModifiedStacks:\n  synced:\n"), yaml_out.stdout
    for text in (one, every, json.dumps(machine), yaml_out.stdout):
        assert OLD_SECRET not in text and NEW_SECRET not in text

    unknown = world.svc("drift", "--stack", "nowhere")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr == "Error: no stack named nowhere; list the stacks with: svc inventory stacks\n"


def test_reconcile_reverts_a_stacks_drift(world: World) -> None:
    apply(world, write_forma(world, "guarded.pkl", '''\
        new svc.Stack { label = "guarded"; policies { new svc.AutoReconcilePolicy { interval = 1.h } } }''',
                             item("g1", "desired", "guarded")))
    none = ok(world, "reconcile", "guarded").stdout
    assert none.strip() == "No drift in stack guarded: nothing to reconcile.", none
    assert json.loads(ok(world, "reconcile", "guarded", "--no-wait", *MACHINE).stdout) == {"CommandId": None}

    g1 = native_id(world, "g1")
    world.cloud.set_property(g1, "Value", "drifted")
    ok(world, "sync")
    shown = ok(world, "reconcile", "guarded").stdout
    assert "reconciling stack guarded" in shown and "succeeded." in shown, shown
    assert world.cloud.get(g1)["properties"]["Value"] == "desired"

    world.cloud.set_property(g1, "Value", "drifted again")
    ok(world, "sync")
    [final] = json.loads(ok(world, "reconcile", "guarded", *MACHINE).stdout)["Commands"]
    assert (final["Command"], final["Mode"], final["State"]) == ("apply", "reconcile", "Success")
    assert world.cloud.get(g1)["properties"]["Value"] == "desired"

    for stack in ("synced", "no-such-stack"):  # a stack without the policy, and no stack at all
        refused = world.svc("reconcile", stack)
        assert refused.returncode == 1 and refused.stdout == "", refused.stdout
        assert refused.stderr.startswith("Error: reconcile refused by the agent (ReconcilePolicyRequired): "
                                         f"stack {stack} has no auto-reconcile policy"), refused.stderr
        assert refused.stderr.count("\n") == 1


def test_ttl_check_destroys_an_expired_stack(world: World) -> None:
    apply(world, write_forma(world, "temp.pkl", '''\
        new svc.Stack { label = "temp"; policies { new svc.TTLPolicy { ttl = 1.s } } }''',
                             item("t1", "short-lived", "temp")))
    t1 = native_id(world, "t1")
    time.sleep(1.1)  # past the TTL: the deadline is the stack's creation plus one second
    shown = ok(world, "ttl", "check").stdout
    assert "Expired: temp." in shown and "Destroyed: command" in shown, shown
    assert world.cloud.get(t1) is None and "t1" not in world.inventory()
    assert ok(world, "ttl", "check").stdout.strip() == "No stack has expired."
    assert json.loads(ok(world, "ttl", "check", *MACHINE).stdout) == {"ExpiredStacks": [], "Commands": []}


def test_discover_prints_a_resource_made_outside_svc(world: World) -> None:
    world.cloud.put(ITEM, "item-outside", {"Id": "item-outside", "Value": "made by hand"})
    shown = ok(world, "discover").stdout
    assert "1 new." in shown and "found   $unmanaged/" in shown and f"({ITEM})" in shown, shown
    assert "synced" not in shown and "vault" not in shown, shown  # managed: not new
    again = json.loads(ok(world, "discover", *MACHINE).stdout)
    assert again["Resources"] == [] and again["Listed"] >= 1 and again["Errors"] == []
