"""A PostgreSQL outage seen from the datastore layer and from what waits on it: a throwaway cluster (never the
shared server) is stopped and started again. The datastore logs the outage once when it starts and once when it
ends; the engine's writer keeps what it was given and commits it, in order, once the datastore is back, and so
does a synchronization pass; a background job says nothing while it lasts."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from svc_plugin_fake import FakeCloud

from support.engine import fake_forma, item, run_with_engine, shown
from support.pgcluster import PgCluster
from support.records import item_write, stored_command
from svc.config.model import DatastoreConfig
from svc.datastore import Datastore, DatastoreUnavailable, open_datastore
from svc.datastore.update_writes import UpdateStateWrite
from svc.engine.background import PeriodicJob
from svc.engine.engine import Engine
from svc.engine.service import ApplyRequest, Caller
from svc.engine.sync import SyncPass
from svc.engine.writer import BatchWriter
from svc.ids import new_id


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    cluster = PgCluster().start()
    yield cluster
    cluster.destroy()


@pytest.fixture
def store(cluster: PgCluster) -> Iterator[Datastore]:
    """A fresh database of the cluster (an engine starting on it must not resume another test's commands)."""
    database = f"svc_{new_id().lower()}"
    cluster.create_database(database)
    config = DatastoreConfig.model_validate({
        "datastoreType": "postgres", "sqlite": {"filePath": "unused"},
        "postgres": {"host": "127.0.0.1", "port": cluster.port, "user": "postgres", "password": cluster.password,
                     "database": database, "schema": "", "connectionParams": ""},
        "auroraDataAPI": {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""},
    })
    store = open_datastore(config)
    yield store
    store.close()


def _outage_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "svc.datastore" and "datastore outage" in r.getMessage()]


def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends(cluster: PgCluster, store: Datastore,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    store.create_stack("kept")
    caplog.set_level(logging.INFO, logger="svc.datastore")
    cluster.stop()
    try:
        failures: list[Exception] = []

        def hammer() -> None:
            for _ in range(10):
                for operation in (lambda: store.get_stack("kept"), lambda: store.create_stack(new_id()), store.ping):
                    try:
                        operation()
                    except Exception as error:  # noqa: BLE001 - collected and checked below
                        failures.append(error)

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(failures) == 120 and all(isinstance(f, DatastoreUnavailable) for f in failures)
        assert cluster.password not in "".join(_outage_lines(caplog))
    finally:
        cluster.start()
    assert store.get_stack("kept") is not None
    store.create_stack(new_id())
    lines = _outage_lines(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith("datastore outage began: ") and "Connection refused" in lines[0], lines
    assert lines[1].startswith("datastore outage ended: ") and "120 operation(s) failed meanwhile" in lines[1], lines


def test_the_writer_waits_out_an_outage_and_commits_everything_in_order(cluster: PgCluster,
                                                                        store: Datastore) -> None:
    ksuids = [new_id() for _ in range(30)]
    command = stored_command(store, *ksuids, state="NotStarted")

    async def run() -> list[Any]:
        writer = BatchWriter(store)
        cluster.stop()
        try:
            # Results that arrive while the datastore is away: the first ones fail a commit, the rest queue behind.
            first = [writer.finish(item_write(k, "v1"), None, UpdateStateWrite(command, k, "create", "Success",
                                                                            data={"n": 1})) for k in ksuids[:10]]
            while not store.availability.down:  # type: ignore[attr-defined]
                await asyncio.sleep(0.05)
            rest = [writer.finish(item_write(k, "v1"), None, UpdateStateWrite(command, k, "create", "Success",
                                                                           data={"n": 1})) for k in ksuids[10:]]
            later = writer.store_resource(item_write(ksuids[0], "v2"), command)  # after its first version
        finally:
            cluster.start()
        try:
            return list(await asyncio.gather(*first, *rest, later))
        finally:
            await writer.close()

    *finished, last = asyncio.run(run())
    assert all(f.moved for f in finished), finished
    assert last.changed
    updates = {u.ksuid: u.state for u in store.get_resource_updates(command).items}
    assert updates == dict.fromkeys(ksuids, "Success")
    assert {k: store.get_resource(k).properties for k in ksuids} == {  # type: ignore[union-attr]
        k: {"Value": "v2" if k == ksuids[0] else "v1"} for k in ksuids}


def test_a_background_job_is_quiet_during_an_outage_and_runs_again_after(cluster: PgCluster, store: Datastore,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    outcomes: list[str] = []

    async def work() -> None:
        try:
            await asyncio.to_thread(store.get_stack, "anything")
        except DatastoreUnavailable:
            outcomes.append("unavailable")
            raise
        outcomes.append("ok")

    async def run() -> None:
        job = PeriodicJob("probe", work, interval=0.05)
        job.start()
        try:
            cluster.stop()
            try:
                while outcomes.count("unavailable") < 3:
                    await asyncio.sleep(0.05)
            finally:
                cluster.start()
            while outcomes[-1] != "ok":
                await asyncio.sleep(0.05)
        finally:
            await job.stop()

    asyncio.run(run())
    logged = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    assert logged == [next(line for line in logged if "datastore outage began" in line)], logged
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_a_synchronization_keeps_what_it_read_through_an_outage(cluster: PgCluster, store: Datastore,
                                                                 tmp_path: Path) -> None:
    """The reads of a pass are done when the datastore goes away: their findings are written once it is back,
    not dropped (nor logged resource by resource)."""
    cloud = FakeCloud(tmp_path / "cloud.db")

    async def scenario(engine: Engine) -> None:
        response = await shown(engine).apply(ApplyRequest(fake_forma(cloud.path, [item(f"i{n}", "1") for n in range(5)]),
                                                   "reconcile"), Caller("client-1"))
        assert (view := await shown(engine).wait(response.CommandId, 60)) is not None and view.State == "Success"
        for native_id in cloud.resources():
            cloud.set_property(native_id, "Value", "by hand")
        resources = store.list_resources().items
        sync = SyncPass(engine.store, engine.gateway, engine.catalog, {t.label: t for t in store.list_targets().items}, busy=set())
        for resource in resources:
            await sync.one(resource)
        cluster.stop()
        try:
            flushing = asyncio.create_task(sync.flush())
            while not store.availability.down:  # type: ignore[attr-defined]
                await asyncio.sleep(0.05)
        finally:
            cluster.start()
        await flushing
        assert sync.tally.versions == 5
        assert {r.label: r.properties["Value"] for r in store.list_resources().items} == {
            f"i{n}": "by hand" for n in range(5)}

    run_with_engine(store, tmp_path / "engine.key", scenario)
