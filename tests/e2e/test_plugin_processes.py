"""Plugins as processes in a real agent: killed mid-apply they come back and the command completes once;
``GET /api/v1/plugins`` and ``svc plugin list`` describe them."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.fake_world import World, submit
from support.processes import child_command_lines, run_svc


def plugin_info(world: World, namespace: str) -> dict[str, Any]:
    # The one plugin: the whole listing describes the AWS plugin too, whose ~1,700 types are extracted until they
    # are cached (15 s on a loaded machine, past httpx's 5 s, when no test of the run extracted them before).
    response = httpx.get(f"{world.api}/plugins/{namespace.lower()}")
    assert response.status_code == 200, response.text
    return response.json()["plugin"]


def independent_items(count: int) -> str:
    return "".join(f'new item.Item {{ label = "i{n}"; value = "v{n}"; token = "t" }}\n' for n in range(count))


def test_killing_the_plugin_mid_apply_restarts_it_and_the_command_completes_once(world: World) -> None:
    before = plugin_info(world, "FAKE")
    assert before["loadStatus"] == "running" and before["process"]["restarts"] == 0
    world.cloud.set_knob("hang", {"ops": ["create"]})  # every create is held in flight before it acts
    command_id = submit(world, world.forma(independent_items(6)))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        states = [u["State"] for u in world.command(command_id)["ResourceUpdates"]]
        if states.count("InProgress") >= 3:
            break
        time.sleep(0.02)
    else:
        raise AssertionError(f"the creates never got in flight: {states}\n{world.agent.output()[-4000:]}")
    os.kill(before["process"]["pid"], signal.SIGKILL)
    world.cloud.clear_knobs("hang")

    final = world.wait_terminal(command_id, timeout=60)
    log = world.agent.output()
    seen = f"agent log (its end):\n{log[-4000:]}"  # what a failure under load needs to be understood
    assert final["State"] == "Success", (final, seen)
    items = world.cloud_labels("FAKE::Test::Item")
    assert sorted(item["properties"]["Value"] for item in items.values()) == [f"v{n}" for n in range(6)], seen
    tokens = [call["token"] for call in world.cloud.calls("create")]
    assert len(tokens) == len(set(tokens)) == 6, (tokens, seen)  # each create reached the cloud exactly once
    after = plugin_info(world, "FAKE")
    assert after["process"]["restarts"] == 1 and after["process"]["pid"] != before["process"]["pid"], (after, seen)
    assert "exited with code -9" in log and "never arrived; sending it again with the same token" in log, seen
    inventory = world.inventory()
    assert sorted(inventory) == [f"i{n}" for n in range(6)]
    assert {r["NativeID"] for r in inventory.values()} == set(items)


def test_plugins_endpoint_and_cli_list_describe_installed_plugins(world: World) -> None:
    response = httpx.get(f"{world.api}/plugins", timeout=120)  # may extract the AWS plugin's types (plugin_info)
    assert response.status_code == 200
    plugins = {p["namespace"]: p for p in response.json()["plugins"]}
    fake, local = plugins["FAKE"], plugins["LOCAL"]
    assert fake["type"] == "resource" and fake["installedVersion"] == "0.1.0" and fake["loadStatus"] == "running"
    assert "FAKE::Test::Item" in fake["resourceTypes"] and fake["process"]["pid"] > 0
    assert local["loadStatus"] == "disabled" and local["resourceTypes"] == ["LOCAL::FS::Directory",
                                                                           "LOCAL::FS::File"]
    assert httpx.get(f"{world.api}/plugins/local").json()["plugin"]["namespace"] == "LOCAL"
    missing = httpx.get(f"{world.api}/plugins/nope")
    assert missing.status_code == 404 and missing.json()["error"] == "PluginNotFound"
    # An editable install names no package source: the agent says how to name one.
    available = httpx.get(f"{world.api}/plugins", params={"scope": "available"})
    assert available.status_code == 400 and available.json()["error"] == "NoPackageSource", available.text
    assert "indexUrl / findLinks" in available.json()["message"]
    stats = httpx.get(f"{world.api}/stats").json()  # every command's first call: versions read once, at start
    # The rate the agent holds FAKE's calls to: its manifest's, as the config sets none.
    assert [(p["Namespace"], p["Version"], p["MaxRequestsPerSecond"]) for p in stats["Plugins"]] == [
        ("FAKE", "0.1.0", 1000)]
    assert httpx.get(f"{world.api}/plugins", params={"scope": "bogus"}).status_code == 400

    machine = run_svc("plugin", "list", "--output-consumer", "machine")
    assert machine.returncode == 0, machine.stderr
    listed = {p["namespace"]: p for p in json.loads(machine.stdout)["plugins"]}
    assert listed["LOCAL"]["resourceTypes"] == ["LOCAL::FS::Directory", "LOCAL::FS::File"]
    human = run_svc("plugin", "list", env={"COLUMNS": "200"})
    assert human.returncode == 0 and "LOCAL" in human.stdout and "LOCAL::FS::File" in human.stdout


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a process's children from /proc")
def test_once_started_the_agent_runs_its_plugins_and_no_pkl_server(world: World) -> None:
    assert world.agent.process is not None
    children = child_command_lines(world.agent.process.pid)
    assert children and all("svc.plugins.serve" in child for child in children), children
