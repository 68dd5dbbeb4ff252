"""Following a command from the CLI: ``svc apply --yes --wait`` submits once and prints the plan it started,
then one line per finished update; the status endpoint's summary and ``updated_since`` forms it polls."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.fake_world import ENV, World, chain
from support.processes import SVC, child_command_lines
from svc.cli import agent_api
from svc.cli.client import AgentClient
from svc.cli.watch import LiveUpdates
from svc.config.cli_model import decode_cli_block
from svc.model.wire import CommandView

HEADERS = {"Client-ID": "test"}
SUMMARY_KEYS = {"ResourceId", "ResourceType", "ResourceLabel", "StackName", "Operation", "State", "StartedAt",
                "ErrorMessage"}
PROGRESS_KEYS = {"CurrentAttempt", "MaxAttempts", "Duration", "NativeId", "StateMessage"}


def _commands(world: World) -> list[Any]:
    listed = json.loads(world.svc("command", "list", "--output-consumer", "machine").stdout)
    return listed if isinstance(listed, list) else listed.get("Commands") or []


def test_apply_yes_prints_its_plan_then_each_finished_update_once(world: World) -> None:
    world.cloud.set_knob("fail", {"code": "AccessDenied", "labels": ["c"]})
    result = world.apply(world.forma(chain("a", "b", "c", "d")))
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert out.count("Plan: 4 to add, 0 to change, 0 to destroy.") == 1
    assert out.index("Plan:") < out.index("started on the agent")
    for label in ("a", "b"):
        assert out.count(f"Success: create FAKE::Test::Item {label} (stack app)") == 1
    assert out.count("Failed: create FAKE::Test::Item c (stack app): AccessDenied") == 1
    assert out.count("Failed: create FAKE::Test::Item d (stack app): DependencyFailure") == 1
    assert "Failed: 4 of 4 resource updates finished (2 Success, 2 Failed)" in out  # the agent's counts
    assert len(_commands(world)) == 1  # no simulation was stored

    command_id = world.svc("command", "status", "--output-consumer", "machine")
    command_id = json.loads(command_id.stdout)["Commands"][0]["CommandId"]
    url = f"{world.api}/commands/{command_id}/status"
    full = httpx.get(url, headers=HEADERS).json()["Commands"][0]
    summary = httpx.get(url, params={"summary": "true"}, headers=HEADERS)
    assert summary.status_code == 200 and summary.headers["X-Svc-Updates-As-Of"]
    updates = summary.json()["Commands"][0]["ResourceUpdates"]
    assert all(set(update) <= SUMMARY_KEYS for update in updates)
    assert [(u["ResourceLabel"], u["State"]) for u in updates] == [
        (u["ResourceLabel"], u["State"]) for u in full["ResourceUpdates"]]
    assert {u["ResourceLabel"]: u.get("ErrorMessage") for u in updates}["c"].startswith("AccessDenied")
    # An ended command's summary counts every update by state, whichever it lists; its full view does not.
    assert summary.json()["Commands"][0]["UpdateCounts"] == {"Success": 2, "Failed": 2}
    assert "UpdateCounts" not in full
    written_later = httpx.get(url, params={"updated_since": (datetime.now(UTC) + timedelta(hours=1)).isoformat()},
                              headers=HEADERS).json()["Commands"][0]
    assert not written_later.get("ResourceUpdates") and written_later["UpdateCounts"] == {"Success": 2, "Failed": 2}

    def since(moment: datetime) -> list[str]:
        answer = httpx.get(url, params={"updated_since": moment.isoformat()}, headers=HEADERS)
        assert answer.status_code == 200, answer.text
        return [u["ResourceLabel"] for u in answer.json()["Commands"][0].get("ResourceUpdates") or []]

    assert since(datetime.now(UTC) - timedelta(hours=1)) == ["a", "b", "c", "d"]
    assert since(datetime.now(UTC) + timedelta(hours=1)) == []
    bad = httpx.get(url, params={"updated_since": "yesterday"}, headers=HEADERS)
    assert bad.status_code == 400 and "updated_since" in bad.text

    # progress=true: a summary whose updates also say how far they got (what a live view's rows show).
    progress = httpx.get(url, params={"progress": "true"}, headers=HEADERS).json()["Commands"][0]["ResourceUpdates"]
    assert all(set(update) <= SUMMARY_KEYS | PROGRESS_KEYS for update in progress)
    by_label = {u["ResourceLabel"]: u for u in progress}
    assert by_label["a"]["CurrentAttempt"] == 1 and by_label["a"]["MaxAttempts"] >= 1 and by_label["a"]["Duration"] >= 0
    assert by_label["c"]["ErrorMessage"].startswith("AccessDenied")
    assert [(u["ResourceLabel"], u["State"]) for u in progress] == [(u["ResourceLabel"], u["State"]) for u in updates]


def test_a_live_view_merges_what_changed_into_the_whole_command(world: World) -> None:
    world.cloud.set_knob("latency", {"create": 0.2})
    world.cloud.set_knob("fail", {"code": "AccessDenied", "labels": ["c"]})
    submitted = world.svc("apply", "--mode", "reconcile", str(world.forma(chain("a", "b", "c", "d"))), "--yes",
                          "--output-consumer", "machine")
    assert submitted.returncode == 0, submitted.stderr
    command_id = json.loads(submitted.stdout)["CommandId"]
    config = decode_cli_block({"api": {"url": "http://127.0.0.1", "port": world.agent.port, "retryFor": 10000},
                              "upgrade": {"findLinks": []}})
    with AgentClient(config) as client:
        merged = LiveUpdates(client, command_id)
        view = merged(0.0)
        assert merged.since is not None  # each later poll asks for what was written since
        while view.State not in ("Success", "Failed", "Canceled"):
            time.sleep(0.1)
            view = merged(0.0)
        whole, _ = agent_api.command_changes(client, command_id, None, progress=True)
    assert whole is not None

    def rows(command: CommandView) -> list[tuple[Any, ...]]:
        return sorted((u.ResourceLabel, u.State, u.CurrentAttempt, u.MaxAttempts, u.ErrorMessage, u.Duration is None)
                      for u in command.ResourceUpdates or [])

    assert rows(view) == rows(whole)
    assert [(label, state) for label, state, *_ in rows(view)] == [
        ("a", "Success"), ("b", "Success"), ("c", "Failed"), ("d", "Failed")]


def test_status_with_wait_answers_as_soon_as_the_command_ends(world: World) -> None:
    world.cloud.set_knob("latency", {"create": 1.0})  # the chain takes two seconds at least
    submitted = world.svc("apply", "--mode", "reconcile", str(world.forma(chain("a", "b"))), "--yes",
                          "--output-consumer", "machine")
    assert submitted.returncode == 0, submitted.stderr
    url = f"{world.api}/commands/{json.loads(submitted.stdout)['CommandId']}/status"
    at_once = httpx.get(url, params={"summary": "true"}, headers=HEADERS).json()["Commands"][0]
    assert at_once["State"] not in ("Success", "Failed", "Canceled")
    assert "UpdateCounts" not in at_once  # counted once the command has ended

    started = time.monotonic()
    waited = httpx.get(url, params={"summary": "true", "wait": "30"}, headers=HEADERS, timeout=60)
    assert waited.status_code == 200, waited.text
    assert waited.json()["Commands"][0]["State"] == "Success"
    assert time.monotonic() - started < 25  # it answered when the command ended, not after the whole wait
    assert waited.headers["X-Svc-Updates-As-Of"]

    ended = httpx.get(url, params={"wait": "30"}, headers=HEADERS, timeout=60)  # nothing left to wait for
    assert [u["State"] for u in ended.json()["Commands"][0]["ResourceUpdates"]] == ["Success", "Success"]
    for bad in ("soon", "-1", "31", "nan"):
        refused = httpx.get(url, params={"wait": bad}, headers=HEADERS)
        assert refused.status_code == 400 and "wait must be a number of seconds from 0 to 30" in refused.text


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a process's children from /proc")
def test_apply_stops_its_pkl_server_before_it_follows_the_command(world: World) -> None:
    """A ``pkl server`` left running keeps compiling on a CPU after its evaluation, while the agent runs the
    command (on a small machine, a CPU the agent needs). Run in its own process (not by the CLI server), whose
    children are then the command's."""
    world.cloud.set_knob("hang", {"ops": ["create"]})
    follower = subprocess.Popen([SVC, "apply", "--mode", "reconcile", str(world.forma(chain("a"))), "--yes", "--wait",
                                 "--config", str(world.agent.config)],
                                env={**os.environ, **ENV, "SVC_CLI_SERVER": "off"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _commands(world) and follower.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _commands(world), "the apply was not submitted"
        assert follower.poll() is None  # following the hung create
        assert not [child for child in child_command_lines(follower.pid) if "pkl" in child]
    finally:
        world.cloud.clear_knobs()
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, out + err
