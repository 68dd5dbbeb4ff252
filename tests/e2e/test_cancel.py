"""Cancel means stop (issue 24 item 12), through a real agent with the FAKE plugin and the real CLI: updates
waiting for their turn or for a retry end Canceled and are never sent again; what is in a plugin call finishes
(or, forced, is abandoned); ``svc cancel`` reports exactly that, naming updates by type, label and stack.

Retries wait an hour here, so an update that a cancel did not stop would hold its command past every wait."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from svc_plugin_fake.cloud import FakeCloud

from support.fake_world import World, submit
from support.processes import on_demand_agent

MACHINE = ("--output-consumer", "machine", "--output-schema", "json")
# a stands alone, c waits for b; the agent makes two plugin calls at a time.
FORMA = """\
new item.Item { label = "a"; value = "a"; token = "t" }
local b = new item.Item { label = "b"; value = "b"; token = "t" }
b
new item.Item { label = "c"; value = "c"; token = "t"; ref = b.res.id }
"""


@pytest.fixture
def world(home: Path, tmp_path: Path) -> Iterator[World]:
    cloud = tmp_path / "cloud.db"
    agent = on_demand_agent(tmp_path, "new FAKE.PluginConfig { maxInFlight = 2 }", max_retries=None,
                            members="retry { retryDelay = 1.h; statusCheckInterval = 100.ms; maxRetries = 3 }")
    agent.start()
    try:
        yield World(agent, FakeCloud(cloud), cloud, tmp_path)
    finally:
        agent.stop()


def updates(world: World, command_id: str) -> dict[str, dict[str, Any]]:
    return {u["ResourceLabel"]: u for u in world.command(command_id)["ResourceUpdates"]}


def started_busy(world: World) -> str:
    """The forma submitted with a's create hanging in its plugin call and b's create waiting to be retried after a
    failure; they hold both slots, and c waits for b. The command's id."""
    world.cloud.set_knob("hang", {"ops": ["create"], "labels": ["a"]})
    world.cloud.set_knob("fail", {"code": "ServiceInternalError", "ops": ["create"], "labels": ["b"],
                                  "remaining": 1})
    command_id = submit(world, world.forma(FORMA))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = updates(world, command_id)
        if states["a"]["State"] == "InProgress" and "ServiceInternalError" in (states["b"].get("StateMessage") or ""):
            assert states["c"]["State"] == "NotStarted"
            return command_id
        time.sleep(0.05)
    raise AssertionError(f"a never hung or b never failed: {updates(world, command_id)}")


def canceled(world: World, command_id: str) -> dict[str, tuple[str, bool]]:
    """``svc cancel`` of one command in machine mode: its updates by label, (state, abandoned), each named by its
    type and stack too."""
    result = world.svc("cancel", "--query", f"id:{command_id}", *MACHINE)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["CommandIds"] == [command_id]
    found = {}
    for uri, state in (outcome.get("ResourceUpdateStates") or {}).items():
        assert uri.startswith("svc://") and state["ResourceType"] == "FAKE::Test::Item", state
        assert state["CommandId"] == command_id and state["StackName"] in ("app", "other"), state
        found[state["ResourceLabel"]] = (state["State"], bool(state.get("ForceCanceled")))
    return found


def created(world: World) -> list[str]:
    return sorted(item["properties"]["Value"] for item in world.cloud_labels("FAKE::Test::Item").values())


def test_cancel_stops_what_waits_and_lets_the_call_in_flight_finish(world: World) -> None:
    busy = started_busy(world)
    # d, of another command, waits for a slot: a's call and b's wait for a retry hold them.
    pending = submit(world, world.forma('new item.Item { label = "d"; value = "d"; token = "t"; stack = "other" }\n',
                                        name="other.pkl", stacks=("other",)))
    assert updates(world, pending)["d"]["State"] == "NotStarted"
    assert canceled(world, pending) == {"d": ("Canceled", False)}
    # It ends at once, not when a slot frees: a's call holds one for a minute (its timeout), b's retry for an hour.
    final = world.wait_terminal(pending, timeout=30)
    assert final["State"] == "Canceled" and updates(world, pending)["d"]["State"] == "Canceled"
    assert updates(world, busy)["a"]["State"] == "InProgress"

    # b was waiting to retry: it stops, as c; a is in its call, which goes on.
    assert canceled(world, busy) == {"a": ("InProgress", False), "b": ("Canceled", False), "c": ("Canceled", False)}
    states = updates(world, busy)
    assert (states["b"]["State"], states["c"]["State"]) == ("Canceled", "Canceled")
    assert states["b"]["StateMessage"] == "canceled before it changed anything"

    world.cloud.clear_knobs()  # a's create goes on and finishes; b is never sent again
    final = world.wait_terminal(busy)
    assert final["State"] == "Canceled"
    assert {u["ResourceLabel"]: u["State"] for u in final["ResourceUpdates"]} == {
        "a": "Success", "b": "Canceled", "c": "Canceled"}
    assert created(world) == ["a"]
    assert set(world.inventory()) == {"a"}


def test_the_human_report_says_what_stopped_and_what_still_runs(world: World) -> None:
    command_id = started_busy(world)
    canceled = world.svc("cancel", "--query", f"id:{command_id}")
    assert canceled.returncode == 0, canceled.stderr
    out = canceled.stdout
    assert f"Canceled command {command_id}: 2 resource update(s) stopped before changing anything." in out, out
    assert "Still running (they finish first): FAKE::Test::Item a (stack app)" in out, out
    assert f"follow with: svc command status {command_id}" in out, out
    world.cloud.clear_knobs()
    assert world.wait_terminal(command_id)["State"] == "Canceled"


def test_force_cancel_lists_only_what_it_abandoned_by_type_label_and_stack(world: World) -> None:
    command_id = started_busy(world)
    forced = world.svc("cancel", "--query", f"id:{command_id}", "--force", "--yes")
    assert forced.returncode == 0, forced.stderr
    out = forced.stdout
    assert f"Canceled command {command_id} (forced): 2 resource update(s) stopped before changing anything." in out
    lines = out.splitlines()
    start = lines.index("Abandoned while running (they may exist in your cloud; check them with svc inventory):")
    assert lines[start + 1:] == ["  FAKE::Test::Item a (stack app)"], out  # b was not running: not abandoned
    final = world.wait_terminal(command_id, timeout=30)
    assert final["State"] == "Canceled"
    assert {u["ResourceLabel"]: u["State"] for u in final["ResourceUpdates"]} == dict.fromkeys("abc", "Canceled")
    world.cloud.clear_knobs()
