"""Synchronization in process (the Engine on a real datastore, the FAKE plugin): out-of-band changes become
versions, secrets stay hashed and unchanged ones make no version, deletes become tombstones, a stale read
never overwrites or deletes a resource rewritten meanwhile, busy stacks wait, unmanaged resources are
synchronized too (and evicted when a discovery filter now matches them), and the periodic job built from a
real config fires by itself."""

from __future__ import annotations

import asyncio
import textwrap
import time
from pathlib import Path

import pytest
from svc_plugin_fake import FakeCloud

from support.engine import TIMEOUT, applied, fake_forma, item, resource, run, running, shown
from svc.config import load_config
from svc.datastore import Datastore
from svc.engine.discovery import discover
from svc.engine.discovery_filters import Condition, MatchFilter
from svc.engine.discovery_settings import PluginDiscovery
from svc.engine.engine import Engine
from svc.engine.factory import build_engine
from svc.engine.service import ApplyRequest, Caller
from svc.engine.sync import SyncPass, synchronize
from svc.model.records import ResourceVersion, ResourceWrite

# The embedded default: the datastore side (conditional writes) has its own contract tests on every backend.
pytestmark = pytest.mark.parametrize("datastore_config_for_backend", ["sqlite"], indirect=True)


def stored(datastore: Datastore, label: str) -> ResourceVersion:
    [found] = [r for r in datastore.list_resources().items if r.label == label]
    return found


def native(cloud: FakeCloud, key: str, value: object) -> str:
    return next(i for i, r in cloud.resources().items() if r["properties"].get(key) == value)


def versions(datastore: Datastore, label: str) -> int:
    return len(datastore.resource_history(stored(datastore, label).ksuid).items)


def bucket(api_key: str) -> dict:
    return resource("bkt", "FAKE::Storage::Bucket", {"Name": "bkt-1", "ApiKey": api_key})


def test_out_of_band_change_and_delete(datastore: Datastore, tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")

    async def scenario(engine: Engine) -> None:
        await applied(engine, fake_forma(cloud.path, [item("a", "1"), item("b", "2")]))
        assert await engine.synchronize() is None  # nothing changed: no command, no version
        assert versions(datastore, "a") == 1
        cloud.set_property(native(cloud, "Value", "1"), "Value", "by hand")
        cloud.remove(native(cloud, "Value", "2"))
        command_id = await engine.synchronize()
        assert command_id is not None
        a = stored(datastore, "a")
        assert (a.properties["Value"], a.command_id, versions(datastore, "a")) == ("by hand", command_id, 2)
        assert [r.label for r in datastore.list_resources().items] == ["a"]  # b: tombstoned
        sync = datastore.get_command(command_id)
        assert sync is not None and (sync.command, sync.source, sync.state) == ("sync", "synchronizer", "Success")
        assert await engine.synchronize() is None  # absorbed: the next pass finds nothing new

    run(datastore, tmp_path, scenario)


def test_secrets_stay_hashed_and_unchanged_ones_make_no_version(datastore: Datastore, tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")

    async def scenario(engine: Engine) -> None:
        await applied(engine, fake_forma(cloud.path, [bucket("first-secret")]))
        before = stored(datastore, "bkt")
        assert before.properties["ApiKey"]["$hashed"] and "first-secret" not in str(before.properties)
        assert await engine.synchronize() is None  # the read-back plaintext hashes to what is stored
        assert versions(datastore, "bkt") == 1
        cloud.set_property("bkt-1", "ApiKey", "rotated-by-hand")
        assert await engine.synchronize() is not None
        after = stored(datastore, "bkt")
        assert after.properties["ApiKey"]["$hashed"] and after.properties["ApiKey"] != before.properties["ApiKey"]
        assert "rotated-by-hand" not in str(after.properties) + str(after.read_only_properties)
        assert await engine.synchronize() is None and versions(datastore, "bkt") == 2

    run(datastore, tmp_path, scenario)


def test_a_stale_read_never_overwrites_or_deletes_a_resource_rewritten_meanwhile(datastore: Datastore,
                                                                                  tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")

    async def scenario(engine: Engine) -> None:
        await applied(engine, fake_forma(cloud.path, [item("a", "1", token="t1"), item("b", "1")]))
        targets = {t.label: t for t in datastore.list_targets().items}
        snapshot = {r.label: r for r in datastore.list_resources().items}  # what a pass planned to read
        old_a = native(cloud, "Token", "t1")
        cloud.remove(old_a)  # gone out of band, then replaced by a command (a create-only change)
        await applied(engine, fake_forma(cloud.path, [item("a", "1", token="t2"), item("b", "2")]))
        replaced, updated = stored(datastore, "a"), stored(datastore, "b")
        assert replaced.native_id != old_a and replaced.ksuid == snapshot["a"].ksuid
        cloud.set_property(updated.native_id, "Value", "what the stale read saw")
        sync = SyncPass(engine.store, engine.gateway, engine.catalog, targets, busy=set())
        await sync.one(snapshot["a"])  # reads the old native id: NotFound
        await sync.one(snapshot["b"])  # differs from the snapshot, but b has a newer version than the snapshot's
        await sync.flush()
        assert sync.finish() is None  # both dropped: nothing written
        assert stored(datastore, "a").version == replaced.version
        assert stored(datastore, "b").version == updated.version

    run(datastore, tmp_path, scenario)


@pytest.mark.parametrize("source", ["user", "auto-reconciler"])
def test_stacks_with_a_command_in_flight_are_skipped(datastore: Datastore, tmp_path: Path, source: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Whoever started the apply (a user, the auto-reconciler, the stack expirer) owns the stack meanwhile. Its
    stacks are read from its updates' stack labels, not from its updates whole (~2 s a pass beside 100,000)."""
    cloud = FakeCloud(tmp_path / "cloud.db")

    async def scenario(engine: Engine) -> None:
        await applied(engine, fake_forma(cloud.path, [item("a", "1"), item("b", "1")]))
        cloud.set_knob("hang", {"ops": ["update"]})
        response = await shown(engine).apply(ApplyRequest(fake_forma(cloud.path, [item("a", "2"), item("b", "1")]),
                                                   "patch"), Caller(source, source=source))
        cloud.set_property(stored(datastore, "b").native_id, "Value", "by hand")
        try:
            with monkeypatch.context() as patched:
                patched.setattr(type(datastore), "get_resource_updates",
                                lambda *_, **__: pytest.fail("a running command's updates were read whole"))
                assert await engine.synchronize() is None
        finally:
            cloud.clear_knobs()
        await shown(engine).wait(response.CommandId, TIMEOUT)
        assert await engine.synchronize() is not None

    run(datastore, tmp_path, scenario)


def test_unmanaged_resources_are_synchronized(datastore: Datastore, tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")

    async def scenario(engine: Engine) -> None:
        await applied(engine, fake_forma(cloud.path, [item("a", "1")]))
        cloud.put("FAKE::Test::Item", "item-found", {"Id": "item-found", "Value": "seen"})
        datastore.store_resource(ResourceWrite("FAKE::Test::Item", "found", "$unmanaged", "cloud",
                                               {"Id": "item-found", "Value": "seen"}, managed=False,
                                               native_id="item-found"))
        assert await engine.synchronize() is None
        cloud.set_property("item-found", "Value", "changed")
        assert await engine.synchronize() is not None
        found = stored(datastore, "found")
        assert (found.properties["Value"], found.managed, found.stack) == ("changed", False, "$unmanaged")

    run(datastore, tmp_path, scenario)


def test_discovery_filters_evict_unmanaged_resources_that_now_match(datastore: Datastore, tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")
    tagged = "$.Tags[?(@.Key=='svc:owner')].Value"
    settings = {"FAKE": PluginDiscovery("FAKE", (
        MatchFilter(("FAKE::Net::Network",), (Condition(tagged, "agent"),)),
        MatchFilter(("FAKE::Test::Item",), (Condition("$.Value", "1"),)),  # matches the managed item too
        MatchFilter(("FAKE::Net::Subnet",)),  # no conditions: keeps the type out of discovery, never evicts
    ))}

    async def scenario(engine: Engine) -> None:
        await applied(engine, fake_forma(cloud.path, [item("mine", "1")]))
        cloud.put("FAKE::Net::Network", "net-1", {"NetworkId": "net-1", "Cidr": "10.0.0.0/16"})
        cloud.put("FAKE::Net::Network", "net-2", {"NetworkId": "net-2", "Cidr": "10.1.0.0/16"})
        cloud.put("FAKE::Net::Subnet", "sub-1", {"SubnetId": "sub-1", "NetworkId": "net-2", "Cidr": "10.1.0.0/24"})
        await discover(engine.store, engine.gateway, engine.catalog, {"FAKE": PluginDiscovery("FAKE")})  # no filters yet: all three stored
        assert {r.label for r in datastore.list_resources().items if not r.managed} == {"net-1", "net-2", "sub-1"}
        assert await synchronize(engine.store, engine.gateway, engine.catalog, settings) is None  # none matches yet: nothing evicted
        cloud.set_property("net-1", "Tags", [{"Key": "svc:owner", "Value": "agent"}])  # tagged since
        command_id = await synchronize(engine.store, engine.gateway, engine.catalog, settings)
        assert command_id is not None
        live = {r.label: r for r in datastore.list_resources().items}
        assert set(live) == {"mine", "net-2", "sub-1"}  # net-1 forgotten; the managed item is never evicted
        [evicted] = [v for v in datastore.list_resource_versions(limit=1000).items if v.label == "net-1" and v.deleted]
        assert evicted.command_id == command_id
        assert "net-1" in cloud.resources("FAKE::Net::Network")  # forgotten, not deleted in the cloud
        assert (await discover(engine.store, engine.gateway, engine.catalog, settings)).discovered == 0  # and discovery leaves it out from now on

    run(datastore, tmp_path, scenario)


def test_the_periodic_job_from_the_config_fires_by_itself(datastore: Datastore, tmp_path: Path) -> None:
    cloud = FakeCloud(tmp_path / "cloud.db")
    config_file = tmp_path / "agent.pkl"
    config_file.write_text(textwrap.dedent("""\
        amends "svc:/Config.pkl"
        import "plugins:/FAKE.pkl"
        agent {
          resourcePlugins { new FAKE.PluginConfig {
            discoveryFilters { new { resourceTypes { "FAKE::Test::Item" }
                                     conditions { new { propertyPath = "$.Value"; propertyValue = "unwanted" } } } }
          } }
          retry { retryDelay = 50.ms; statusCheckInterval = 50.ms; maxRetries = 3 }
          synchronization { interval = 1.s }
        }
    """))
    config = load_config(config_file).agent
    cloud.put("FAKE::Test::Item", "item-found", {"Id": "item-found", "Value": "unwanted"})
    datastore.store_resource(ResourceWrite("FAKE::Test::Item", "found", "$unmanaged", "cloud",
                                           {"Id": "item-found", "Value": "unwanted"}, managed=False,
                                           native_id="item-found"))

    async def main() -> None:
        engine = build_engine(config, datastore, key_file=tmp_path / "engine.key", in_process=True)
        assert engine.jobs["synchronization"].interval == 1.0
        async with running(engine):
            await applied(engine, fake_forma(cloud.path, [item("a", "1")]))
            cloud.set_property(native(cloud, "Value", "1"), "Value", "by hand")
            deadline = time.monotonic() + TIMEOUT
            # The change is stored, and the config's discovery filters reach the job: the unmanaged item they
            # match is evicted.
            while [(r.label, r.properties.get("Value")) for r in datastore.list_resources().items] != [("a", "by hand")]:
                assert time.monotonic() < deadline, "no synchronization pass stored the change and evicted the item"
                await asyncio.sleep(0.1)

    asyncio.run(main())
