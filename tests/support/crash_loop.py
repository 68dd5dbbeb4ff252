"""A SIGKILL loop during an apply of updates: the engine in a child process (``engine_process``) over SQLite
and the FAKE cloud, killed each time the cloud has acted on a further share of the updates, and restarted
(each start resumes the command).

Updates are slow to answer (the FAKE cloud acts when a call arrives, then answers after its latency), so
most kills land after an update's write reached the cloud and before the engine recorded its answer: the
restarted engine must recognise those writes as its own. Kills are placed by progress (the cloud's call
count), not by time, so a run is the same on a slow machine. Used by ``tests/integration/test_engine_crash.py``
(a small loop) and ``bench/crash_loop.py`` (a long one).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc_plugin_fake import FakeCloud

from support.datastores import sqlite_config
from support.engine import fake_forma, item
from support.engine_process import EngineProcesses
from svc.datastore import open_datastore
from svc.model.records import every_item
from svc.model.states import TERMINAL_COMMAND_STATES

CHAIN = 10  # resources per chain: each refers to the one before, so a failure would fail its dependents
TIMEOUT = 300.0


@dataclass
class CrashLoop:
    """What a loop left: the update command's final state, each update's state and message, the inventory
    and the cloud (label → (native id, value)), and how many kills landed mid-command."""

    state: str = ""
    updates: dict[str, tuple[str, str]] = field(default_factory=dict)
    inventory: dict[str, tuple[str | None, Any]] = field(default_factory=dict)
    cloud: dict[str, tuple[str, Any]] = field(default_factory=dict)
    kills: int = 0
    commands: list[str] = field(default_factory=list)  # every command's state


def _forma(cloud: Path, size: int, value: str) -> dict[str, Any]:
    return fake_forma(cloud, [item(f"r{i}", f"{value}-{i}", ref=f"r{i - 1}" if i % CHAIN else None)
                              for i in range(size)]).to_json()


def _wait_for(done: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {TIMEOUT}s")
        time.sleep(0.01)


def run_crash_loop(directory: Path, *, size: int, kills: int, latency: float = 0.05,
                   in_flight: int = 16) -> CrashLoop:
    """Creates ``size`` resources, then applies an update of each, killing the engine ``kills`` times."""
    cloud_path = directory / "cloud.db"
    cloud = FakeCloud(cloud_path)
    store = open_datastore(sqlite_config(directory / "svc.db"))
    engines = EngineProcesses(directory / "svc.db", directory / "engine.key", directory / "engine.log", in_flight)
    result = CrashLoop()
    engine = None
    try:
        engine = engines.start()
        created = engine.request("apply", forma=_forma(cloud_path, size, "v0"), mode="reconcile", force=False)
        assert engine.request("wait", command_id=created["command_id"], timeout=TIMEOUT)["state"] == "Success"

        cloud.set_knob("latency", {"update": latency})
        updating = engine.request("apply", forma=_forma(cloud_path, size, "v1"), mode="reconcile", force=False)
        assert updating.get("changes"), updating
        for kill in range(1, kills + 1):
            acted = size * kill // (kills + 1)
            _wait_for(lambda a=acted: len(cloud.calls("update")) >= a or not store.list_incomplete_commands().items,
                      f"{acted} updates")
            if not store.list_incomplete_commands().items:
                break  # the command ended before this kill
            engine.kill()
            result.kills += 1
            engine = engines.start()
        engine.request("settle", timeout=TIMEOUT)

        commands = every_item(lambda c: store.list_commands(sources=None, cursor=c, limit=100))
        result.commands = [c.state for c in commands]
        update = next(c for c in commands if c.id != created["command_id"] and c.command == "apply")
        result.state = update.state
        for record in every_item(lambda c: store.get_resource_updates(update.id, cursor=c, limit=500)):
            result.updates[record.resource_label] = (record.state, str(record.data.get("message", "")))
        for resource in every_item(lambda c: store.list_resources(cursor=c, limit=500)):
            result.inventory[resource.label] = (resource.native_id, resource.properties.get("Value"))
        labels = {native_id: label for label, (native_id, _) in result.inventory.items()}
        for native_id, found in cloud.resources().items():
            result.cloud[labels.get(native_id, native_id)] = (native_id, found["properties"].get("Value"))
    finally:
        if engine is not None:
            engine.stop()
        engines.close()
        store.close()
    assert all(state in TERMINAL_COMMAND_STATES for state in result.commands), result.commands
    return result
