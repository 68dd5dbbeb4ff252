"""Drift taken into the forma, in process (the Engine on a real datastore, the FAKE plugin): a change made in
the cloud behind svc's back is stored by synchronization, then the forma is made to say the same (what
``svc extract`` is for) and reconciled. That reconcile changes nothing, yet it is the stack's new baseline:
the drift list is empty, auto-reconcile keeps the change, and a later reconcile that changes the same
resource in the forma goes through. A plain no-op reconcile, with nothing drifted, still stores no command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from svc_plugin_fake import FakeCloud

from support.engine import CALLER, fake_forma, item, reconciled, run, shown
from svc.datastore import COMMAND_FIELDS, Datastore, parse_query
from svc.engine import drift
from svc.engine.engine import Engine
from svc.engine.errors import ReconcileRejected
from svc.engine.reconciler import AutoReconciler
from svc.engine.service import ApplyRequest
from svc.model.forma import Forma

POLICY = {"Type": "auto-reconcile", "IntervalSeconds": 3600}
pytestmark = pytest.mark.parametrize("datastore_config_for_backend", ["sqlite"], indirect=True)


def forma(cloud: Path, a: str) -> Forma:
    """The stack ``app`` (with an auto-reconcile policy): item a with value ``a``, item b unchanged."""
    document = fake_forma(cloud, [item("a", a), item("b", "1")]).to_json()
    document["Stacks"][0]["Policies"] = [POLICY]
    return Forma.model_validate(document)


def native_id(datastore: Datastore, label: str) -> str:
    found = next(r for r in datastore.list_resources().items if r.label == label).native_id
    assert found is not None
    return found


def value_in_cloud(cloud: Path) -> set[str]:
    return {r["properties"]["Value"] for r in FakeCloud(cloud).resources("FAKE::Test::Item").values()}


async def absorb(engine: Engine, cloud: Path) -> Any:
    """a changed by hand to "by hand", synchronized, refused, then folded into the forma and reconciled."""
    await reconciled(engine, forma(cloud, "1"))
    FakeCloud(cloud).set_property(native_id(engine.store, "a"), "Value", "by hand")
    assert await engine.synchronize() is not None
    assert [d.current.label for d in drift.drift(engine.store, "app")] == ["a"]
    with pytest.raises(ReconcileRejected):
        await reconciled(engine, forma(cloud, "1"))
    absorbed = await reconciled(engine, forma(cloud, "by hand"))
    assert absorbed.Simulation.ChangesRequired is False  # nothing to execute
    return absorbed


def test_absorbed_drift_is_no_longer_listed(datastore: Datastore, tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.db"

    async def scenario(engine: Engine) -> None:
        absorbed = await absorb(engine, cloud)
        assert drift.drift(datastore, "app") == []  # GET /stacks/app/drift
        assert drift.modified(datastore, "app") == []  # the reconcile drift gate
        # The baseline is a finished reconcile without updates, found by `svc command list --query stack:app`.
        stored = datastore.get_command(absorbed.CommandId)
        assert stored is not None and (stored.command, stored.mode, stored.state) == ("apply", "reconcile", "Success")
        assert datastore.get_resource_updates(stored.id).items == ()
        found = datastore.list_commands(parse_query("stack:app command:apply", COMMAND_FIELDS), limit=1).items
        assert [c.id for c in found] == [stored.id]

    run(datastore, tmp_path, scenario)


def test_auto_reconcile_keeps_an_absorbed_change(datastore: Datastore, tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.db"

    async def scenario(engine: Engine) -> None:
        await absorb(engine, cloud)
        assert await AutoReconciler(engine).reconcile("app", CALLER) is None  # no drift: no command
        assert value_in_cloud(cloud) == {"by hand", "1"}

    run(datastore, tmp_path, scenario)


def test_a_later_reconcile_may_change_the_absorbed_resource(datastore: Datastore, tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.db"

    async def scenario(engine: Engine) -> None:
        await absorb(engine, cloud)
        changed = await reconciled(engine, forma(cloud, "2"))  # not refused as drift
        assert changed.Simulation.ChangesRequired
        assert value_in_cloud(cloud) == {"2", "1"}

    run(datastore, tmp_path, scenario)


def test_forced_reconcile_saying_what_drifted_moves_the_baseline_and_plain_no_ops_store_nothing(
        datastore: Datastore, tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.db"

    async def scenario(engine: Engine) -> None:
        await reconciled(engine, forma(cloud, "1"))
        commands = len(datastore.list_commands(sources=None, limit=100).items)
        no_op = await reconciled(engine, forma(cloud, "1"))  # nothing drifted: no command
        assert no_op.Simulation.ChangesRequired is False and datastore.get_command(no_op.CommandId) is None
        assert len(datastore.list_commands(sources=None, limit=100).items) == commands

        FakeCloud(cloud).set_property(native_id(datastore, "a"), "Value", "by hand")
        assert await engine.synchronize() is not None
        simulated = await shown(engine).apply(ApplyRequest(forma(cloud, "by hand"), "reconcile", simulate=True), CALLER)
        assert simulated.Simulation.ChangesRequired is False and datastore.get_command(simulated.CommandId) is None
        assert [d.current.label for d in drift.drift(datastore, "app")] == ["a"]  # a simulation moves nothing
        forced = await reconciled(engine, forma(cloud, "by hand"), force=True)
        assert forced.Simulation.ChangesRequired is False and datastore.get_command(forced.CommandId) is not None
        assert drift.drift(datastore, "app") == []

    run(datastore, tmp_path, scenario)
