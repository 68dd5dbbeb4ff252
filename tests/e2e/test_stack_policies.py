"""Stack policies end to end (issue 6 item 6): a real agent with the FAKE plugin, formas applied with the real
CLI. TTL: an expired stack is destroyed (``POST /admin/check-ttl``, and once by the timer); ``onDependents =
"abort"`` keeps a stack other stacks still refer to. Auto-reconcile: a change made in the FAKE cloud behind
svc's back is reverted (``POST /stacks/:stack/reconcile``, and once by the timer); 403 without a policy."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from svc_plugin_fake.cloud import FakeCloud

from support.fake_world import HEAD, World
from support.processes import isolated_home, on_demand_agent

HEADERS = {"Client-ID": "policy-tests"}


def start_world(root: Path, expirer: str) -> World:
    """An agent with FAKE, synchronization and discovery on demand only, and the stack expirer as given."""
    agent = on_demand_agent(root, "new FAKE.PluginConfig {}", members=f"stackExpirer {{ {expirer} }}").start()
    return World(agent, FakeCloud(root / "cloud.db"), root / "cloud.db", root)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One agent for the module; the expirer's timer is off, so only ``check-ttl`` expires stacks here."""
    root = tmp_path_factory.mktemp("policies")
    with isolated_home(root):
        world = start_world(root, "enabled = false")
        try:
            yield world
        finally:
            world.agent.stop()


def write_forma(world: World, name: str, stacks: str, body: str) -> Path:
    """A forma over the FAKE cloud declaring ``stacks`` (Pkl) and ``body``."""
    path = world.directory / name
    path.write_text(HEAD.format(cloud=world.cloud_path) + textwrap.indent(textwrap.dedent(stacks), "  ")
                    + textwrap.indent(textwrap.dedent(body), "  ") + "}\n")
    return path


def item(label: str, value: str, stack: str, ref: str | None = None) -> str:
    reference = f"; ref = {ref}.res.id" if ref else ""
    return (f'local {label} = new item.Item {{ label = "{label}"; value = "{value}"; token = "t"; '
            f'stack = "{stack}"{reference} }}\n{label}\n')


def applied(world: World, path: Path) -> dict[str, Any]:
    """Applies ``path`` (reconcile) and returns the finished command."""
    result = world.svc("apply", "--mode", "reconcile", str(path), "--yes", "--wait", "--output-consumer", "machine")
    assert result.returncode == 0, result.stdout + result.stderr
    [command] = json.loads(result.stdout)["Commands"]
    return command


def eventually(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def check_ttl(world: World) -> dict[str, list[str]]:
    response = httpx.post(f"{world.api}/admin/check-ttl", timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def stacks(world: World) -> dict[str, dict[str, Any]]:
    response = httpx.get(f"{world.api}/stacks")
    return {s["Label"]: s for s in response.json()} if response.status_code == 200 else {}


def inventory(world: World) -> dict[str, dict[str, Any]]:
    """The stored resources by label (labels are unique across this module's stacks)."""
    response = httpx.get(f"{world.api}/resources")
    return {r["Label"]: r for r in response.json()["Resources"]} if response.status_code == 200 else {}


def native_ids(world: World, *labels: str) -> dict[str, str]:
    stored = inventory(world)
    return {label: stored[label]["NativeID"] for label in labels}


def in_cloud(world: World, native_id: str) -> str | None:
    """The FAKE cloud's ``Value`` of an item; None when the item is gone."""
    found = world.cloud.get(native_id)
    return None if found is None else found["properties"]["Value"]


# -- TTL -----------------------------------------------------------------------------------------------------

def test_an_expired_stack_is_destroyed_and_its_policy_shown_until_then(world: World) -> None:
    path = write_forma(world, "temp.pkl", """\
        new svc.Stack { label = "temp"; policies { new svc.TTLPolicy { ttl = 1.s } } }
        """, item("t1", "one", "temp") + item("t2", "two", "temp", ref="t1"))
    command = applied(world, path)
    [update] = command["PolicyUpdates"]
    assert (update["PolicyType"], update["Operation"], update["StackLabel"]) == ("ttl", "create", "temp")
    assert update["PolicyLabel"].startswith("temp-ttl-") and update["PolicyConfig"] == {"TTLSeconds": 1,
                                                                                         "OnDependents": "abort"}
    [policy] = stacks(world)["temp"]["Policies"]
    assert policy == {"Type": "ttl", "Label": update["PolicyLabel"], "TTLSeconds": 1, "OnDependents": "abort"}
    shown = world.svc("inventory", "stacks")
    assert f"ttl {update['PolicyLabel']} (1s)" in shown.stdout, shown.stdout
    assert "No changes needed" in world.svc("apply", "--mode", "reconcile", str(path), "--yes", "--wait").stdout
    ids = native_ids(world, "t1", "t2")

    sweep = eventually(lambda: (s := check_ttl(world))["expired_stacks"] and s, "the stack expires")
    assert sweep["expired_stacks"] == ["temp"] and len(sweep["command_ids"]) == 1
    destroy = world.wait_terminal(sweep["command_ids"][0])
    assert (destroy["Command"], destroy["Source"], destroy["State"]) == ("destroy", "stack-expirer", "Success")
    assert {u["ResourceLabel"] for u in destroy["ResourceUpdates"]} == {"t1", "t2"}
    assert in_cloud(world, ids["t1"]) is None and in_cloud(world, ids["t2"]) is None
    assert "temp" not in stacks(world)
    assert check_ttl(world) == {"expired_stacks": [], "command_ids": []}
    # Commands of the expirer are not the user's: command lists leave them out.
    listed = httpx.get(f"{world.api}/commands/status", headers=HEADERS, params={"scope": "agent"}).json()
    assert sweep["command_ids"][0] not in {c["CommandId"] for c in listed["Commands"]}


def test_abort_keeps_a_stack_other_stacks_refer_to_until_they_let_go(world: World) -> None:
    declared = """\
        new svc.Stack { label = "base"; policies { new svc.TTLPolicy { ttl = 1.s; onDependents = "abort" } } }
        new svc.Stack { label = "users" }
        """
    applied(world, write_forma(world, "abort.pkl", declared, item("b1", "base", "base")
                               + item("u1", "user", "users", ref="b1")))
    ids = native_ids(world, "b1", "u1")
    time.sleep(1.1)  # past the TTL: the deadline is the stack's creation plus one second
    assert check_ttl(world) == {"expired_stacks": [], "command_ids": []}
    assert in_cloud(world, ids["b1"]) == "base" and "base" in stacks(world)

    gone = world.svc("destroy", "--query", "stack:users", "--yes", "--wait")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    sweep = check_ttl(world)
    assert sweep["expired_stacks"] == ["base"]
    assert world.wait_terminal(sweep["command_ids"][0])["State"] == "Success"
    assert in_cloud(world, ids["b1"]) is None and "base" not in stacks(world)


def test_cascade_destroys_the_dependents_in_other_stacks_too(world: World) -> None:
    declared = """\
        new svc.Stack { label = "parent"; policies { new svc.TTLPolicy { ttl = 1.s; onDependents = "cascade" } } }
        new svc.Stack { label = "child" }
        """
    applied(world, write_forma(world, "cascade.pkl", declared, item("p1", "parent", "parent")
                               + item("c1", "child", "child", ref="p1")))
    ids = native_ids(world, "p1", "c1")
    sweep = eventually(lambda: (s := check_ttl(world))["expired_stacks"] and s, "the stack expires")
    destroy = world.wait_terminal(sweep["command_ids"][0])
    assert destroy["State"] == "Success"
    cascade = next(u for u in destroy["ResourceUpdates"] if u["ResourceLabel"] == "c1")
    assert cascade["IsCascade"] and cascade["CascadeSource"] == "p1"
    assert in_cloud(world, ids["p1"]) is None and in_cloud(world, ids["c1"]) is None
    assert not {"parent", "child"} & set(stacks(world))


def test_the_expirer_timer_destroys_an_expired_stack(tmp_path: Path, home: Path) -> None:
    world = start_world(tmp_path, "interval = 1.s")
    try:
        applied(world, write_forma(world, "timed.pkl", """\
            new svc.Stack { label = "short"; policies { new svc.TTLPolicy { ttl = 1.s } } }
            """, item("s1", "x", "short")))
        assert len(world.cloud.calls("create")) == 1  # this agent's own cloud: the item was made…
        eventually(lambda: "short" not in stacks(world) and world.cloud.resources() == {},
                   "the timer destroys the stack")  # …and is gone with its stack
    finally:
        world.agent.stop()


def test_a_shared_policy_is_planned_attached_listed_and_detached(world: World) -> None:
    shared = 'local long = new svc.TTLPolicy { label = "long"; ttl = 24.h; onDependents = "cascade" }\nlong\n'
    path = write_forma(world, "shared.pkl", 'new svc.Stack { label = "sharing"; policies { long.res } }\n',
                       shared + item("s9", "x", "sharing"))
    plan = world.svc("apply", "--mode", "reconcile", str(path), "--simulate")
    rows = [" ".join(line.split()) for line in plan.stdout.splitlines()]
    assert "+ create policy ttl long: TTLSeconds 86400, OnDependents cascade" in rows, plan.stdout
    assert "+ attach policy ttl long (stack sharing)" in rows, plan.stdout
    command = applied(world, path)
    assert [(u["PolicyLabel"], u["Operation"], u.get("StackLabel")) for u in command["PolicyUpdates"]] == [
        ("long", "create", None), ("long", "attach", "sharing")]
    # GET /stacks shows an attached standalone policy in full, as the original clients read it.
    assert stacks(world)["sharing"]["Policies"] == [{"Type": "ttl", "Label": "long", "TTLSeconds": 86400,
                                                     "OnDependents": "cascade"}]
    listed = httpx.get(f"{world.api}/policies").json()
    assert listed == [{"Label": "long", "Type": "ttl", "AttachedStacks": ["sharing"],
                       "Config": {"Type": "ttl", "Label": "long", "TTLSeconds": 86400, "OnDependents": "cascade"}}]
    shown = world.svc("inventory", "policies")
    assert "ttl long (86400s)" in " ".join(shown.stdout.split()) and "sharing" in shown.stdout, shown.stdout

    command = applied(world, write_forma(world, "shared.pkl", 'new svc.Stack { label = "sharing" }\n',
                                         shared + item("s9", "x", "sharing")))
    assert [(u["PolicyLabel"], u["Operation"]) for u in command["PolicyUpdates"]] == [("long", "detach")]
    assert httpx.get(f"{world.api}/policies").json()[0].get("AttachedStacks") is None
    assert "Policies" not in stacks(world)["sharing"]


# -- auto-reconcile ------------------------------------------------------------------------------------------

def reconcile(world: World, stack: str) -> httpx.Response:
    return httpx.post(f"{world.api}/stacks/{stack}/reconcile", headers=HEADERS, timeout=60)


def synchronize(world: World) -> None:
    response = httpx.post(f"{world.api}/admin/synchronize", timeout=60)
    assert response.status_code == 200, response.text


def test_reconcile_now_reverts_a_change_made_outside_svc(world: World) -> None:
    path = write_forma(world, "guarded.pkl", """\
        new svc.Stack { label = "guarded"; policies { new svc.AutoReconcilePolicy { interval = 1.h } } }
        """, item("g1", "desired", "guarded") + item("g2", "other", "guarded"))
    command = applied(world, path)
    assert [(u["PolicyType"], u["Operation"]) for u in command["PolicyUpdates"]] == [("auto-reconcile", "create")]
    no_drift = reconcile(world, "guarded")
    assert (no_drift.status_code, no_drift.json()) == (200, {"message": "no drift detected"})

    ids = native_ids(world, "g1", "g2")
    world.cloud.set_property(ids["g1"], "Value", "changed by hand")
    world.cloud.remove(ids["g2"])
    synchronize(world)
    assert inventory(world)["g1"]["Properties"]["Value"] == "changed by hand"
    started = reconcile(world, "guarded")
    assert started.status_code == 202, started.text
    done = world.wait_terminal(started.json()["command_id"])
    assert (done["Command"], done["Mode"], done["State"]) == ("apply", "reconcile", "Success")
    assert in_cloud(world, ids["g1"]) == "desired"  # updated back
    assert in_cloud(world, inventory(world)["g2"]["NativeID"]) == "other"  # created again
    assert reconcile(world, "guarded").json() == {"message": "no drift detected"}


def test_reconcile_now_is_refused_while_the_stack_is_busy(world: World) -> None:
    applied(world, write_forma(world, "busy.pkl", """\
        new svc.Stack { label = "busy"; policies { new svc.AutoReconcilePolicy { interval = 1.h } } }
        """, item("k1", "desired", "busy")))
    [k1] = native_ids(world, "k1").values()
    world.cloud.set_property(k1, "Value", "drifted")
    synchronize(world)
    world.cloud.set_knob("hang", {"ops": ["update"]})
    try:
        started = reconcile(world, "busy")
        assert started.status_code == 202, started.text
        refused = reconcile(world, "busy")
        assert refused.status_code == 409 and refused.json()["error"] == "ConflictingCommands"
        assert [c["CommandId"] for c in refused.json()["data"]["ConflictingCommands"]] == [
            started.json()["command_id"]]
    finally:
        world.cloud.clear_knobs("hang")
    assert world.wait_terminal(started.json()["command_id"])["State"] == "Success"
    assert in_cloud(world, k1) == "desired"


def test_reconcile_now_needs_an_auto_reconcile_policy(world: World) -> None:
    applied(world, write_forma(world, "plain.pkl", 'new svc.Stack { label = "plain" }\n', item("p9", "x", "plain")))
    for stack in ("plain", "no-such-stack"):
        refused = reconcile(world, stack)
        assert refused.status_code == 403
        assert refused.json()["error"] == "ReconcilePolicyRequired"
        assert refused.json()["data"] == {"StackLabel": stack}


def test_the_auto_reconcile_timer_reverts_drift(world: World) -> None:
    applied(world, write_forma(world, "watched.pkl", """\
        new svc.Stack { label = "watched"; policies { new svc.AutoReconcilePolicy { interval = 1.s } } }
        """, item("w1", "desired", "watched")))
    [w1] = native_ids(world, "w1").values()
    world.cloud.set_property(w1, "Value", "drifted")
    synchronize(world)
    eventually(lambda: in_cloud(world, w1) == "desired", "the auto-reconciler reverts the change")
    listed = httpx.get(f"{world.api}/commands/status", headers=HEADERS,
                       params={"scope": "agent", "query": "stack:watched"}).json()["Commands"]
    assert [c["Source"] for c in listed] == ["user"]  # the auto-reconciler's commands are not listed
