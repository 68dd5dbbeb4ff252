"""Target reaping in process (the Engine on a real datastore, the FAKE plugin, a clock the test moves): reads and
listings that fail with NetworkFailure make a target unreachable, reaper ticks accrue its time, and past its
ReapAfter it is reaped with its resources (stack cleaned up, nothing synchronized any more, an apply on it without
declaring it refused with TargetReaped); declaring it again recovers the same resources without creating them
twice, destroying it forgets them without a plugin call. NeverReap keeps a target however long it is unreachable."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from svc_plugin_fake import FakeCloud

from support.engine import CALLER, TIMEOUT, applied, fake_forma, item, reconciled, run, shown
from svc.datastore import Datastore
from svc.engine.discovery import discover
from svc.engine.engine import Engine
from svc.engine.errors import TargetReaped
from svc.engine.reaper import TargetReaper
from svc.engine.service import ApplyRequest, DestroyRequest
from svc.engine.sync import synchronize
from svc.engine.target_health import ReapSettings
from svc.model.forma import Forma

pytestmark = pytest.mark.parametrize("datastore_config_for_backend", ["sqlite"], indirect=True)
UNREACHABLE = {"code": "NetworkFailure", "ops": ["read", "list"]}


@dataclass
class Clock:
    now: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def with_reaping(forma: Forma, reaping: dict[str, Any]) -> Forma:
    document = forma.to_json()
    document["Targets"][0]["Reaping"] = reaping
    return Forma.model_validate(document)


def settings(clock: Clock) -> ReapSettings:
    return ReapSettings(interval=30, max_gap=60, floor=0, default_after=3600, clock=clock)


def test_unreachable_target_is_reaped_then_recovered_by_declaring_it(datastore: Datastore, tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")
    forma = with_reaping(fake_forma(cloud.path, [item("a", "1"), item("b", "2")]),
                         {"Kind": "after", "MaxUnreachableSeconds": 100})
    clock = Clock()
    health = settings(clock)
    reaper = TargetReaper(datastore, health)

    async def sync(engine: Engine) -> None:
        await synchronize(datastore, engine.gateway, engine.catalog, health=health)

    async def scenario(engine: Engine) -> None:
        await applied(engine, forma)
        ksuids = {r.label: r.ksuid for r in datastore.list_resources().items}
        await sync(engine)
        assert datastore.get_target("cloud").health_state == "reachable"
        cloud.set_knob("fail", UNREACHABLE)
        clock.advance(1)
        await sync(engine)
        assert datastore.get_target("cloud").health_state == "unreachable"
        for _ in range(3):  # ticks 30 s apart: 90 s accrued, not yet 100
            clock.advance(30)
            report = await reaper.tick()
            assert report.to_json() == {"ReapedTargets": [], "ReapPendingTargets": ["cloud"]}
        assert datastore.counts().reap_pending_targets == 1
        clock.advance(30)
        assert (await reaper.tick()).reaped == ["cloud"]
        assert not datastore.list_resources().items and datastore.get_stack("app") is None
        [audit] = datastore.reap_audit("cloud")
        assert (audit.resource_count, audit.unreachable_seconds, audit.last_error_code) == (2, 120.0, "NetworkFailure")
        assert (datastore.counts().reaped_targets, datastore.counts().reap_pending_targets) == (1, 0)

        cloud.clear_knobs("fail")
        reads = len(cloud.calls("read"))
        await sync(engine)  # reaped resources are not synchronized (nor brought back by it)
        assert len(cloud.calls("read")) == reads and not datastore.list_resources().items

        undeclared = Forma.model_validate({**forma.to_json(), "Targets": []})
        with pytest.raises(TargetReaped) as refused:
            await engine.apply(ApplyRequest(undeclared, "reconcile"), CALLER)
        assert refused.value.data == {"TargetLabels": ["cloud"]}

        await reconciled(engine, forma)  # declared again: recovered, the same resources, none created twice
        recovered = datastore.get_target("cloud")
        assert recovered.health_state == "unknown" and recovered.incarnation_id != audit.incarnation_id
        assert {r.label: r.ksuid for r in datastore.list_resources().items} == ksuids
        assert len(cloud.resources()) == 2 and len(cloud.calls("create")) == 2

    run(datastore, tmp_path, scenario)


def test_never_reap_keeps_an_unreachable_target(datastore: Datastore, tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")
    forma = with_reaping(fake_forma(cloud.path, [item("a", "1")]), {"Kind": "never"})
    clock = Clock()
    health = settings(clock)
    reaper = TargetReaper(datastore, health)

    async def scenario(engine: Engine) -> None:
        await applied(engine, forma)
        cloud.set_knob("fail", UNREACHABLE)
        for _ in range(10):  # discovery's failing listings are observations too
            clock.advance(30)
            await discover(datastore, engine.gateway, engine.catalog, {}, health)
            assert (await reaper.tick()).to_json() == {"ReapedTargets": [], "ReapPendingTargets": []}
        target = datastore.get_target("cloud")
        assert target.health_state == "unreachable" and target.reap_kind == "never"
        assert [r.label for r in datastore.list_resources().items] == ["a"] and datastore.reap_audit() == []

    run(datastore, tmp_path, scenario)


def test_destroying_a_reaped_target_forgets_its_resources_without_calling_the_cloud(datastore: Datastore,
                                                                                     tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")
    forma = fake_forma(cloud.path, [item("a", "1")])
    clock = Clock()
    health = settings(clock)

    async def scenario(engine: Engine) -> None:
        await applied(engine, forma)
        cloud.set_knob("fail", UNREACHABLE)
        for _ in range(3):
            await synchronize(datastore, engine.gateway, engine.catalog, health=health)
            clock.advance(30)
        target = datastore.get_target("cloud")
        assert datastore.reap_target("cloud", target.incarnation_id, threshold=60, at=clock()) is not None
        deletes = len(cloud.calls("delete"))
        targets_only = Forma.model_validate({**forma.to_json(), "Resources": [], "Stacks": []})
        response = await shown(engine).destroy(DestroyRequest(forma=targets_only), CALLER)
        assert response.Simulation.ChangesRequired
        view = await shown(engine).wait(response.CommandId, TIMEOUT)
        assert view is not None and view.State == "Success" and not view.ResourceUpdates
        assert datastore.get_target("cloud") is None and datastore.list_reaped_resources("cloud") == []
        assert len(cloud.calls("delete")) == deletes  # nothing to ask an unreachable cloud

    run(datastore, tmp_path, scenario)
