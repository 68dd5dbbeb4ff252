"""A discovery run in process (``svc.engine.discovery``) on a real datastore (SQLite and PostgreSQL) and the FAKE
plugin: paging, throttled listings retried, ``resourceTypesToDiscover``, managed resources left alone, and a run
that finds nothing leaving no command behind. The agent-level behaviour is in ``tests/e2e/test_discovery.py``."""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
from pathlib import Path

import pytest
from svc_plugin_fake import FakeCloud

from support.engine import applied, fake_forma, item, make_engine, running, shown
from svc.config import load_config
from svc.datastore import Datastore
from svc.engine.discovery import PAGE_SIZE, discover
from svc.engine.discovery_filters import LabelRules
from svc.engine.discovery_settings import PluginDiscovery
from svc.engine.factory import build_engine
from svc.engine.service import ApplyRequest, Caller
from svc.model.forma import Forma

pytestmark = pytest.mark.parametrize("datastore_config_for_backend", ["sqlite", "postgres"], indirect=True)

ITEMS = 2 * PAGE_SIZE + 50  # three pages


def seed(cloud: FakeCloud) -> None:
    rows = [(f"item-{n:04d}", "FAKE::Test::Item", json.dumps({"Id": f"item-{n:04d}", "Value": f"v{n % 7}"}),
             time.time()) for n in range(ITEMS)]
    with cloud.transaction() as conn:
        conn.executemany("INSERT INTO resources VALUES (?, ?, ?, ?)", rows)
    cloud.put("FAKE::Net::Network", "net-1", {"NetworkId": "net-1", "Cidr": "10.0.0.0/16"})


def test_paged_throttled_restricted_and_idempotent(datastore: Datastore, tmp_path: Path) -> None:
    cloud_path = tmp_path / "cloud.db"
    cloud = FakeCloud(cloud_path)
    seed(cloud)
    cloud.set_knob("throttle", {"remaining": 2, "ops": ["list"]})  # the first two pages asked for are refused once
    settings = {"FAKE": PluginDiscovery("FAKE", (), LabelRules("$.Value"), frozenset({"FAKE::Test::Item"}))}

    async def scenario() -> None:
        engine = make_engine(datastore, tmp_path / "engine.key")
        async with running(engine):
            managed = await shown(engine).apply(ApplyRequest(fake_forma(cloud_path, [item("mine", "m", token="t")]),
                                                      "reconcile"), Caller("client"))
            assert (await shown(engine).wait(managed.CommandId, 60)).State == "Success"
            first = await discover(engine.store, engine.gateway, engine.catalog, settings)
            assert (first.listed, first.discovered, first.errors) == (ITEMS + 1, ITEMS, [])
            assert cloud.knobs()["throttle"]["remaining"] == 0  # the refused listings were retried
            again = await discover(engine.store, engine.gateway, engine.catalog, settings)
            assert (again.discovered, again.command_id) == (0, None)
            command = datastore.get_command(first.command_id or "")
            assert command is not None and (command.command, command.source, command.state) == (
                "discovery", "discovery", "Success")

    asyncio.run(scenario())
    found = [r for r in datastore.list_resources(limit=1000).items if not r.managed]
    assert len(found) == ITEMS and {r.stack for r in found} == {"$unmanaged"}
    assert {r.type for r in found} == {"FAKE::Test::Item"}  # the network's type was not asked for
    labels = sorted(r.label for r in found)
    assert labels[:3] == ["v0", "v0-1", "v0-10"] and len(set(labels)) == ITEMS  # $.Value, made unique
    mine = datastore.get_resource_by_label("app", "FAKE::Test::Item", "mine")
    assert mine is not None and mine.managed  # listed too, but known: left as it is


def test_a_target_made_discoverable_is_discovered_when_its_command_ends(datastore: Datastore, tmp_path: Path) -> None:
    """engine.md §6 triggers: a discoverable target created, or updated to be discoverable, is listed at once,
    not by the timer (put off here) or at the next interval (10 min)."""
    config_file = tmp_path / "agent.pkl"
    config_file.write_text(textwrap.dedent("""\
        amends "svc:/Config.pkl"
        import "plugins:/FAKE.pkl"
        agent {
          resourcePlugins { new FAKE.PluginConfig {} }
          retry { retryDelay = 50.ms; statusCheckInterval = 50.ms; maxRetries = 3 }
          synchronization { enabled = false }
        }
    """))
    clouds = {name: FakeCloud(tmp_path / f"{name}.db") for name in ("first", "second")}
    for name, cloud in clouds.items():
        cloud.put("FAKE::Test::Item", f"stray-{name}", {"Id": f"stray-{name}", "Value": "made by hand"})

    def forma(name: str, discoverable: bool) -> Forma:
        document = fake_forma(tmp_path / f"{name}.db", [item(f"mine-{name}", "1", target=name, stack=name)],
                              stacks=(name,), target=name).to_json()
        document["Targets"][0]["Discoverable"] = discoverable
        return Forma.model_validate(document)

    async def discovered(target: str) -> None:
        deadline = time.monotonic() + 60
        while datastore.get_resource_by_native_id(target, "FAKE::Test::Item", f"stray-{target}") is None:
            assert time.monotonic() < deadline, f"stray-{target} was not discovered"
            await asyncio.sleep(0.05)

    async def scenario() -> None:
        engine = build_engine(load_config(config_file).agent, datastore, key_file=tmp_path / "engine.key",
                              in_process=True)
        engine.jobs["discovery"].first_delay = 3600
        async with running(engine):
            await applied(engine, forma("first", discoverable=True))  # created discoverable
            await discovered("first")
            await applied(engine, forma("second", discoverable=False))
            await applied(engine, forma("second", discoverable=True))  # an update that makes it discoverable
            await discovered("second")

    asyncio.run(scenario())
    found = datastore.get_resource_by_native_id("second", "FAKE::Test::Item", "stray-second")
    assert found is not None and not found.managed and found.stack == "$unmanaged"
