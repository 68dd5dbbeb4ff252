"""A PostgreSQL outage in the middle of an apply heals by itself (issue 24 items 14 and 15).

A real agent on a throwaway cluster runs the FAKE plugin; the cluster is stopped while plugin calls are under
way, the calls then complete (their results reach the agent while the datastore is down), and the cluster is
started again. Without restarting the agent, the command ends Success (and ``svc apply --wait``, following it,
says so), the inventory holds every resource the plugin made, a later apply plans nothing, and the agent's log
tells of the outage in two lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fake_world import ENV, World, fake_world
from support.pgcluster import PgCluster
from support.processes import SVC

PAIRS = 120  # an item and one referring to it: the second starts once the first's plugin call answered
OUTAGE_START = "datastore outage began"
OUTAGE_END = "datastore outage ended"


@pytest.fixture
def cluster() -> Iterator[PgCluster]:
    cluster = PgCluster().start()
    cluster.create_database("svc")
    yield cluster
    cluster.destroy()


def _pairs(count: int) -> str:
    return "".join(f'local x{i} = new item.Item {{ label = "x{i}"; value = "v{i}" }}\nx{i}\n'
                   f'new item.Item {{ label = "y{i}"; value = "w{i}"; ref = x{i}.res.id }}\n' for i in range(count))


def _wait_for(what: str, condition, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {timeout:g} s")
        time.sleep(0.1)


def _latest(world: World) -> str | None:
    """The id of this client's latest command, once there is one."""
    result = world.svc("command", "status", "--output-consumer", "machine")
    commands = json.loads(result.stdout).get("Commands") if result.returncode == 0 else None
    return commands[0]["CommandId"] if commands else None


def _states(world: World, command_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for update in world.command(command_id)["ResourceUpdates"]:
        counts[update["State"]] = counts.get(update["State"], 0) + 1
    return counts


def test_an_outage_mid_apply_is_waited_out_and_loses_nothing(home: Path, tmp_path: Path,
                                                             cluster: PgCluster) -> None:
    with fake_world(tmp_path, datastore=cluster.pkl_postgres_block()) as world:
        path = world.forma(_pairs(PAIRS))
        world.cloud.set_knob("hang", {"ops": ["create"]})  # the first creates wait for the outage
        # The user's CLI follows the command through the outage.
        follower = subprocess.Popen([SVC, "apply", "--mode", "reconcile", str(path), "--yes", "--wait", "--config",
                                     str(world.agent.config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env={**os.environ, **ENV})
        _wait_for("the command", lambda: _latest(world) is not None)
        command_id = _latest(world)
        _wait_for("creates under way", lambda: _states(world, command_id).get("InProgress", 0) >= 32)
        before = len(world.agent.output().splitlines())

        cluster.stop()
        try:
            world.cloud.clear_knobs("hang")
            # Every create answers while the datastore is down (a dependent's reference resolves from its
            # dependency's answer), so every result of the command is one the agent must keep until it is back.
            _wait_for("every create", lambda: len(world.cloud_labels("FAKE::Test::Item")) == 2 * PAIRS)
            time.sleep(3)  # the background jobs (the auto-reconciler ticks every second) meet the outage too
        finally:
            cluster.start()

        out, err = follower.communicate(timeout=90)
        assert follower.returncode == 0, out + err
        assert world.command(command_id)["State"] == "Success", _states(world, command_id)
        assert out.count("Success: create FAKE::Test::Item") == 2 * PAIRS, out
        # Said once, by the CLI's retries (the outage is shorter than cli.api.retryFor): the agent answered 503.
        assert err.count("svc: the agent at") == 1, err
        assert "is unavailable (503 Service Unavailable: datastore unavailable" in err, err
        made = set(world.cloud_labels("FAKE::Test::Item"))
        inventory = world.inventory()
        assert len(inventory) == 2 * PAIRS and {r["NativeID"] for r in inventory.values()} == made
        again = world.apply(path)
        assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr

        log = world.agent.output().splitlines()
        assert not [line for line in log if "Traceback" in line], "\n".join(log[before:])
        assert len([line for line in log if OUTAGE_START in line]) == 1, "\n".join(log[before:])
        assert len([line for line in log if OUTAGE_END in line]) == 1, "\n".join(log[before:])
        assert len(log) - before < 20, "\n".join(log[before:])
