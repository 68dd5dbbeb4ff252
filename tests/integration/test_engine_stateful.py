"""A hypothesis state machine over the engine: random applies, patches, destroys, out-of-band changes,
cancels and agent kills (SIGKILL of the process running the engine, with work in flight) against the
FAKE cloud.

The engine runs in a child process (``support.engine_worker --serve``); a kill is a real SIGKILL at a
random moment, and the next process resumes what the killed one left. Invariants at every quiescent
point (after a synchronization pass): no phantoms and no orphans (the inventory's native ids are exactly
the cloud's), no duplicate native ids or labels, every command terminal, and a terminal update state
never changes afterwards. After a successful reconcile the cloud holds exactly the forma's values.

``SVC_STATEFUL_EXAMPLES`` raises the number of examples for a longer local run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from svc_plugin_fake import FakeCloud

from support.datastores import sqlite_config
from support.engine import fake_forma, item
from support.engine_process import EngineProcesses
from svc.datastore import open_datastore
from svc.model.states import TERMINAL_COMMAND_STATES, TERMINAL_UPDATE_STATES

LABELS = ("a", "b", "c", "d")
TIMEOUT = 60
EXAMPLES = int(os.environ.get("SVC_STATEFUL_EXAMPLES", "6"))
KILLS: list[int] = []  # one entry per SIGKILL, over all examples

desired = st.dictionaries(st.sampled_from(LABELS), st.sampled_from(["1", "2", "3"]), min_size=1)


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="svc-stateful-"))
        self.store = open_datastore(sqlite_config(self.dir / "svc.db"))
        self.cloud = FakeCloud(self.dir / "cloud.db")
        self.engines = EngineProcesses(self.dir / "svc.db", self.dir / "engine.key", self.dir / "engine.log")
        self.engine = self.engines.start()
        self.terminal: dict[tuple[str, str, str], str] = {}

    def forma(self, values: dict[str, str]) -> dict[str, Any]:
        # "b" refers to "a" when both are declared: a dependency the planner and executor must order.
        return fake_forma(self.dir / "cloud.db", [item(label, value, ref="a" if label == "b" and "a" in values
                                                       else None) for label, value in sorted(values.items())]).to_json()

    def _submit(self, values: dict[str, str], mode: str, force: bool) -> str | None:
        answer = self.engine.request("apply", forma=self.forma(values), mode=mode, force=force)
        if "refused" in answer:
            return None  # a refusal (drift, unknown stack in patch mode, dependents) changes nothing
        return answer["command_id"] if answer["changes"] else None

    def _kill_and_restart(self) -> None:
        """SIGKILL the engine's process wherever it is, then a new one resumes its unfinished work."""
        self.engine.kill()
        KILLS.append(1)
        self.cloud.clear_knobs()
        self.engine = self.engines.start()
        self.engine.request("settle", timeout=TIMEOUT)

    @rule(values=desired, mode=st.sampled_from(["reconcile", "patch"]), force=st.booleans())
    def apply(self, values: dict[str, str], mode: str, force: bool) -> None:
        command_id = self._submit(values, mode, force)
        if command_id is None:
            return
        state = self.engine.request("wait", command_id=command_id, timeout=TIMEOUT)["state"]
        assert state in TERMINAL_COMMAND_STATES
        if state == "Success" and mode == "reconcile":
            inventory = {r.label: r.native_id for r in self.store.list_resources().items}
            cloud = self.cloud.resources()
            assert {label: cloud[inventory[label]]["properties"]["Value"] for label in inventory} == values

    @rule(labels=st.sets(st.sampled_from(LABELS), min_size=1))
    def destroy(self, labels: set[str]) -> None:
        answer = self.engine.request("destroy", forma=self.forma(dict.fromkeys(labels, "1")),
                                     on_dependents="cascade")
        if answer.get("changes"):
            self.engine.request("wait", command_id=answer["command_id"], timeout=TIMEOUT)

    @rule(label=st.sampled_from(LABELS), delete=st.booleans())
    def out_of_band(self, label: str, delete: bool) -> None:
        found = next((r for r in self.store.list_resources().items if r.label == label), None)
        if found is None or found.native_id not in self.cloud.resources():
            return
        if delete:
            self.cloud.remove(found.native_id)
        else:
            self.cloud.set_property(found.native_id, "Value", "changed-by-hand")

    @rule(values=desired, force=st.booleans())
    def cancel(self, values: dict[str, str], force: bool) -> None:
        self.cloud.set_knob("hang", {"ops": ["create", "update"]})
        command_id = self._submit(values, "reconcile", True)
        if command_id is not None:
            self.engine.request("cancel", query=f"id:{command_id}", force=force)
        self.cloud.clear_knobs()
        self.engine.request("settle", timeout=TIMEOUT)

    @rule(values=desired, after=st.floats(0.0, 0.15))
    def kill_mid_apply(self, values: dict[str, str], after: float) -> None:
        """Calls hang, so the kill lands with operations in flight (their tokens stored or not yet)."""
        self.cloud.set_knob("hang", {"ops": ["create", "update", "delete"]})
        self.engine.submit("apply", forma=self.forma(values), mode="reconcile", force=True)
        time.sleep(after)
        self._kill_and_restart()

    @rule(values=desired, destroy=st.booleans(), polled=st.booleans(), after=st.floats(0.0, 0.3))
    def kill_anywhere(self, values: dict[str, str], destroy: bool, polled: bool, after: float) -> None:
        """Calls are slow, so the kill lands anywhere: planning, storing, calling, recording, finishing;
        ``polled`` operations answer InProgress first, so kills also land while the cloud has acted and
        the engine is polling (re-attaching by request id is then all that avoids a second resource)."""
        self.cloud.set_knob("latency", {"*": 0.02})
        if polled:
            self.cloud.set_knob("in_progress", {"polls": 3})
        if destroy:
            self.engine.submit("destroy", forma=self.forma(values), on_dependents="cascade")
        else:
            self.engine.submit("apply", forma=self.forma(values), mode="reconcile", force=True)
        time.sleep(after)
        self._kill_and_restart()

    @invariant()
    def consistent(self) -> None:
        self.engine.request("settle", timeout=TIMEOUT)
        self.engine.request("synchronize")
        commands = self.store.list_commands(sources=None, limit=500).items
        assert all(c.state in TERMINAL_COMMAND_STATES for c in commands)
        for command in commands:
            for update in self.store.get_resource_updates(command.id, limit=500).items:
                key = (command.id, update.ksuid, update.operation)
                if key in self.terminal:
                    assert update.state == self.terminal[key], f"terminal state changed for {key}"
                elif update.state in TERMINAL_UPDATE_STATES:
                    self.terminal[key] = update.state
        inventory = self.store.list_resources().items
        native_ids = [r.native_id for r in inventory]
        assert len(native_ids) == len(set(native_ids)), "duplicate native ids"
        assert len({r.label for r in inventory}) == len(inventory), "duplicate labels"
        assert set(native_ids) == set(self.cloud.resources()), "inventory differs from the cloud"

    def teardown(self) -> None:
        self.engine.stop()
        self.engines.close()
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def test_engine_state_machine() -> None:
    EngineMachine.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=8, deadline=None,
                                               suppress_health_check=list(HealthCheck))
    EngineMachine.TestCase().runTest()
    print(f"{len(KILLS)} engine processes killed")
