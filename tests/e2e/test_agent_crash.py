"""A real agent SIGKILLed during an apply of updates and started again (issue 24 item 13): what it wrote
before the kill is its own, so the resumed command ends Success with nothing left to do, and the inventory
is what the cloud holds. The longer loop, on an engine process, is ``tests/integration/test_engine_crash.py``
and ``bench/crash_loop.py``."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fake_world import World, chain, fake_world, submit

CHAINS, DEPTH, KILLS = 8, 5, 2
LATENCY = 0.3  # an update acts when it arrives and answers this much later (less than a start's deferral)


@pytest.fixture
def world(home: Path, tmp_path: Path) -> Iterator[World]:
    with fake_world(tmp_path) as world:
        yield world


def _items(value: str) -> str:
    return "".join(chain(*(f"c{c}d{d}" for d in range(DEPTH)), value=value) for c in range(CHAINS))


def _kill_and_restart(world: World) -> None:
    assert world.agent.process is not None
    world.agent.process.send_signal(signal.SIGKILL)
    world.agent.process.wait()
    world.agent.start()


def test_an_agent_killed_during_updates_resumes_them_to_success(world: World) -> None:
    created = world.apply(world.forma(_items("old")))
    assert created.returncode == 0, created.stdout + created.stderr
    world.cloud.set_knob("latency", {"update": LATENCY})
    command_id = submit(world, world.forma(_items("new")))
    size, kills = CHAINS * DEPTH, 0
    for kill in range(1, KILLS + 1):
        # Killed right after the cloud acted on a further share of the updates: those writes landed, their
        # answers are still on the way, and the agent has stored nothing about them yet.
        deadline = time.monotonic() + 120
        while len(world.cloud.calls("update")) < size * kill // (KILLS + 1):
            if world.command(command_id)["State"] != "InProgress":
                break  # it ended early: the assertions below say how
            assert time.monotonic() < deadline, "the updates stopped reaching the cloud"
            time.sleep(0.005)
        else:
            _kill_and_restart(world)
            kills += 1
            continue
        break

    final = world.wait_terminal(command_id, timeout=120)
    unsuccessful = {u["ResourceLabel"]: f"{u['State']}: {u.get('ErrorMessage', '')}"
                    for u in final["ResourceUpdates"] if u["State"] != "Success"}
    assert unsuccessful == {}
    assert final["State"] == "Success" and kills == KILLS
    inventory = {r["NativeID"]: (r["Label"], r["Properties"]["Value"]) for r in world.inventory("stack:app").values()}
    cloud = world.cloud_labels("FAKE::Test::Item")
    assert inventory == {native_id: (label, f"new-{label}") for native_id, (label, _) in inventory.items()}
    assert {native_id: found["properties"]["Value"] for native_id, found in cloud.items()} == {
        native_id: value for native_id, (_, value) in inventory.items()}
