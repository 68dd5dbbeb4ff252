"""A hypothesis state machine over the engine: random applies, patches, destroys, out-of-band changes,
cancels and restarts (with work in flight) against the FAKE cloud.

Invariants at every quiescent point (after a synchronization pass): no phantoms and no orphans (the
inventory's native ids are exactly the cloud's), no duplicate native ids or labels, every command
terminal, and a terminal update state never changes afterwards. After a successful reconcile the
cloud holds exactly the forma's values.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from svc_plugin_fake import FakeCloud

from support.engine import fake_forma, item, make_engine
from svc.config.model import DatastoreConfig
from svc.datastore import open_datastore
from svc.datastore.records import TERMINAL_COMMAND_STATES, TERMINAL_UPDATE_STATES
from svc.engine.errors import EngineError
from svc.engine.service import ApplyRequest, Caller, DestroyRequest

LABELS = ("a", "b", "c", "d")
CALLER = Caller("stateful")
TIMEOUT = 60

desired = st.dictionaries(st.sampled_from(LABELS), st.sampled_from(["1", "2", "3"]), min_size=1)


def _config(path: Path) -> DatastoreConfig:
    return DatastoreConfig.model_validate({
        "datastoreType": "sqlite", "sqlite": {"filePath": str(path)},
        "postgres": {"host": "", "port": 5432, "user": "", "password": "", "database": "", "schema": "",
                     "connectionParams": ""},
        "auroraDataAPI": {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""}})


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="svc-stateful-"))
        self.loop = asyncio.new_event_loop()
        self.store = open_datastore(_config(self.dir / "svc.db"))
        self.cloud = FakeCloud(self.dir / "cloud.db")
        self.engine = self._new_engine()
        self.terminal: dict[tuple[str, str, str], str] = {}

    def _new_engine(self):  # type: ignore[no-untyped-def]
        engine = make_engine(self.store, self.dir / "engine.key")
        self.loop.run_until_complete(engine.start())
        return engine

    def run(self, coroutine):  # type: ignore[no-untyped-def]
        return self.loop.run_until_complete(coroutine)

    def forma(self, values: dict[str, str]):  # type: ignore[no-untyped-def]
        # "b" refers to "a" when both are declared: a dependency the planner and executor must order.
        return fake_forma(self.dir / "cloud.db", [item(label, value, ref="a" if label == "b" and "a" in values
                                                       else None) for label, value in sorted(values.items())])

    async def _settle(self) -> None:
        while self.store.list_incomplete_commands().items or self.engine._detached:
            await asyncio.sleep(0.02)

    def _submit(self, values: dict[str, str], mode: str, force: bool) -> str | None:
        try:
            response = self.run(self.engine.apply(ApplyRequest(self.forma(values), mode, force=force), CALLER))
        except EngineError:
            return None  # a refusal (drift, unknown stack in patch mode, dependents) changes nothing
        return response.CommandId if response.Simulation.ChangesRequired else None

    @rule(values=desired, mode=st.sampled_from(["reconcile", "patch"]), force=st.booleans())
    def apply(self, values: dict[str, str], mode: str, force: bool) -> None:
        command_id = self._submit(values, mode, force)
        if command_id is None:
            return
        view = self.run(self.engine.wait(command_id, TIMEOUT))
        assert view.State in TERMINAL_COMMAND_STATES
        if view.State == "Success" and mode == "reconcile":
            inventory = {r.label: r.native_id for r in self.store.list_resources().items}
            cloud = self.cloud.resources()
            assert {label: cloud[inventory[label]]["properties"]["Value"] for label in inventory} == values

    @rule(labels=st.sets(st.sampled_from(LABELS), min_size=1))
    def destroy(self, labels: set[str]) -> None:
        try:
            response = self.run(self.engine.destroy(DestroyRequest(
                forma=self.forma(dict.fromkeys(labels, "1")), on_dependents="cascade"), CALLER))
        except EngineError:
            return
        if response.Simulation.ChangesRequired:
            self.run(self.engine.wait(response.CommandId, TIMEOUT))

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
            self.run(self.engine.cancel(f"id:{command_id}", CALLER, force=force))
        self.cloud.clear_knobs()
        self.run(self._settle())

    @rule(values=desired)
    def restart_mid_apply(self, values: dict[str, str]) -> None:
        self.cloud.set_knob("hang", {"ops": ["create", "update"]})
        self._submit(values, "reconcile", True)
        self.run(asyncio.sleep(0.05))
        self.run(self.engine.stop())
        self.cloud.clear_knobs()
        self.engine = self._new_engine()
        self.run(self._settle())

    @invariant()
    def consistent(self) -> None:
        self.run(self._settle())
        self.run(self.engine.synchronize())
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
        self.run(self.engine.stop())

        async def drain() -> None:  # stragglers of engines stopped mid-apply
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        self.run(drain())
        self.store.close()
        self.loop.close()


def test_engine_state_machine() -> None:
    EngineMachine.TestCase.settings = settings(max_examples=12, stateful_step_count=8, deadline=None,
                                               suppress_health_check=list(HealthCheck))
    EngineMachine.TestCase().runTest()
