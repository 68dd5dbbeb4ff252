"""Crash recovery: an engine process SIGKILLed at random points of a 200-resource apply, 10 times; and
during an apply of updates, each time the cloud acted on a further share of them (``support.crash_loop``).

Each restart resumes the unfinished command (re-attaching to in-flight operations by their persisted
tokens). At the end every command is terminal, the inventory equals the FAKE cloud, no native id is
duplicated and the cloud holds nothing the inventory does not know (no orphans); what the killed engine
wrote is never taken for a change outside svc.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from svc_plugin_fake import FakeCloud

from support.crash_loop import run_crash_loop
from support.datastores import sqlite_config
from support.engine import fake_forma, item
from svc.datastore import open_datastore
from svc.model.states import TERMINAL_COMMAND_STATES

TESTS = Path(__file__).resolve().parents[1]
CHAINS, DEPTH, KILLS = 20, 10, 10


def _worker(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen(
        [sys.executable, "-m", "support.engine_worker", "--db", str(tmp_path / "svc.db"), "--key",
         str(tmp_path / "engine.key"), "--forma", str(tmp_path / "forma.json"), "--in-flight", "6", *extra],
        stdout=subprocess.PIPE, stderr=open(tmp_path / "worker.log", "a"), text=True, env=env)  # noqa: SIM115


def _wait_for_line(process: subprocess.Popen[str], word: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"worker exited before printing {word!r}")
        if line.startswith(word):
            return
    raise AssertionError(f"no {word!r} within {timeout}s")


def test_sigkill_mid_apply_ten_times_then_everything_is_consistent(tmp_path: Path):
    cloud_path = tmp_path / "cloud.db"
    resources = [item(f"c{c}-{d}", f"v{c}-{d}", ref=f"c{c}-{d - 1}" if d else None)
                 for c in range(CHAINS) for d in range(DEPTH)]
    (tmp_path / "forma.json").write_text(json.dumps(fake_forma(cloud_path, resources).to_json()))
    cloud = FakeCloud(cloud_path)
    # Slow enough that every kill lands mid-apply; some creates answer InProgress so kills also hit polls.
    cloud.set_knob("latency", {"create": 0.03})
    cloud.set_knob("in_progress", {"polls": 2, "ops": ["create"]})
    rng = random.Random(5)
    for _ in range(KILLS):
        process = _worker(tmp_path)
        _wait_for_line(process, "started")
        time.sleep(rng.uniform(0.05, 0.6))
        process.send_signal(signal.SIGKILL)
        process.wait()
    final = _worker(tmp_path, "--wait")
    _wait_for_line(final, "done", timeout=300)
    final.wait(timeout=60)

    store = open_datastore(sqlite_config(tmp_path / "svc.db"))
    try:
        commands = store.list_commands(sources=None).items
        assert len(commands) == 1 and all(c.state in TERMINAL_COMMAND_STATES for c in commands)
        assert commands[0].state == "Success"
        updates = store.get_resource_updates(commands[0].id, limit=1000).items
        assert len(updates) == CHAINS * DEPTH and {u.state for u in updates} == {"Success"}
        inventory = store.list_resources(limit=1000).items
        native_ids = [r.native_id for r in inventory]
        assert len(native_ids) == len(set(native_ids)) == CHAINS * DEPTH
        in_cloud = cloud.resources()
        assert set(native_ids) == set(in_cloud), "inventory and cloud differ (orphans or phantoms)"
        by_label = {r.label: r for r in inventory}
        for resource in inventory:
            ref = resource.properties.get("Ref")
            if ref:
                producer = by_label[resource.label.rsplit("-", 1)[0] + f"-{int(resource.label.rsplit('-', 1)[1]) - 1}"]
                assert in_cloud[resource.native_id]["properties"]["Ref"] == producer.native_id
        # The cloud acted on exactly one create per resource: re-sent calls were answered from their token.
        assert len(cloud.calls("create")) == CHAINS * DEPTH
    finally:
        store.close()


def test_sigkill_loop_during_updates_then_the_resumed_command_succeeds(tmp_path: Path):
    """Issue 24 item 13: the writes a killed engine made (or may have made) are its own, never a change
    outside svc. Each kill lands with updates whose write reached the cloud but whose answer was not stored."""
    size = 60
    loop = run_crash_loop(tmp_path, size=size, kills=4)
    unsuccessful = {label: message for label, (state, message) in loop.updates.items() if state != "Success"}
    assert unsuccessful == {}
    assert loop.state == "Success" and loop.kills == 4
    assert loop.inventory == loop.cloud
    assert {label: value for label, (_, value) in loop.cloud.items()} == {f"r{i}": f"v1-{i}" for i in range(size)}
