"""The agent and its PostgreSQL datastore: outages and bad connection settings."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from support.pgcluster import PgCluster
from support.processes import run_svc
from svc.config.model import DatastoreConfig
from svc.datastore import open_datastore
from svc.model.records import ResourceWrite


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    cluster = PgCluster().start()
    cluster.create_database("svc")
    yield cluster
    cluster.destroy()


def wait_for_status(url: str, status: int, timeout: float = 60) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if httpx.get(url, timeout=5).status_code == status:
                return time.monotonic() - start
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"{url} never answered {status} within {timeout}s")


def datastore_for(cluster: PgCluster, database: str = "svc"):
    config = DatastoreConfig.model_validate({
        "datastoreType": "postgres", "sqlite": {"filePath": "unused"},
        "postgres": {"host": "127.0.0.1", "port": cluster.port, "user": "postgres", "password": cluster.password,
                     "database": database, "schema": "", "connectionParams": ""},
        "auroraDataAPI": {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""},
    })
    return open_datastore(config)


def test_health_follows_a_postgres_outage_and_recovers_by_itself(agent_factory, cluster: PgCluster) -> None:
    agent = agent_factory(cluster.pkl_postgres_block()).start()
    store = datastore_for(cluster)  # the agent migrated the schema; write through the same datastore code
    outcome = store.store_resource(ResourceWrite(type="FAKE::Test::Thing", label="kept", stack="s", target="t",
                                                 native_id="n-1", properties={"Answer": 42}, managed=True))
    store.close()
    health = f"{agent.url}/api/v1/health"
    assert httpx.get(health).status_code == 200

    cluster.stop()
    try:
        wait_for_status(health, 503)
        body = httpx.get(health).json()
        assert body["message"].startswith("datastore unavailable:")
        assert cluster.password not in body["message"]
        during = httpx.get(f"{agent.url}/api/v1/resources/summary", timeout=30)
        assert during.status_code == 503, during.text
        assert during.json()["message"].startswith("datastore unavailable:")
    finally:
        cluster.start()
    wait_for_status(health, 200)

    store = datastore_for(cluster)
    kept = store.get_resource(outcome.ksuid)
    store.close()
    assert kept is not None and kept.properties == {"Answer": 42}
    assert agent.process.poll() is None  # it rode out the outage
    after = httpx.get(f"{agent.url}/api/v1/resources/summary")
    assert after.status_code == 200
    assert [row["Label"] for row in after.json()] == ["kept"]


@pytest.mark.parametrize(("overrides", "setting", "fragment"), [
    ({"password": "wrong"}, "agent.datastore.postgres.password", "password authentication failed"),
    ({"database": "nope"}, "agent.datastore.postgres.database", 'database "nope" does not exist'),
    ({"host": "127.0.0.2"}, "agent.datastore.postgres.host", "connection refused"),
    ({"connectionParams": "sslmode=verify-full"}, "agent.datastore.postgres.connectionParams", "SSL"),
    ({"connectionParams": "sslmode=sometimes"}, "agent.datastore.postgres.connectionParams", "sslmode"),
])
def test_bad_connection_settings_are_one_line_naming_the_setting(
        agent_factory, cluster: PgCluster, overrides: dict[str, str], setting: str, fragment: str) -> None:
    agent = agent_factory(cluster.pkl_postgres_block(**overrides))
    result = run_svc("agent", "start", "--config", str(agent.config), timeout=60)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr  # the console log may precede it; the error itself is one line
    error = errors[0]
    assert error == result.stderr.strip().splitlines()[-1]
    assert error.startswith("Error: cannot open the datastore: ")
    assert setting in error and fragment in error
    assert cluster.password not in result.stderr


def test_two_agents_starting_at_once_migrate_one_database_safely(agent_factory, cluster: PgCluster) -> None:
    cluster.create_database("twins")
    block = cluster.pkl_postgres_block(database="twins")
    first = agent_factory(block, name="first")
    second = agent_factory(block, name="second", env={"SVC_PID_FILE": str(first.config.parent / "second.pid")})
    first.start(wait=False)
    second.start(wait=False)
    first.wait_healthy()
    second.wait_healthy()
    store = datastore_for(cluster, database="twins")
    try:
        assert store.get_resource("3MTDktWupCOqg3WWYcVV0I98m3h") is None  # the schema is there and usable
    finally:
        store.close()
