"""Backend-specific behaviour: SQLite file handling, PostgreSQL settings errors, outages and reconnection."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

from svc.config.model import DatastoreConfig
from svc.datastore import DatastoreConfigError, DatastoreError, DatastoreUnavailable, open_datastore, sqlite_checkpoints
from svc.datastore.postgres import connection_params
from svc.datastore.sql_base import SqlBase
from svc.model.records import ResourceWrite

ConfigFactory = Callable[..., DatastoreConfig]


# -- SQLite ---------------------------------------------------------------------------------------------------

def test_sqlite_creates_its_file_under_home_with_wal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    datastore_config: ConfigFactory) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    store = open_datastore(datastore_config("sqlite", sqlite_path="~/.local/share/svc/data/svc.db"))
    try:
        store.create_stack("s")
    finally:
        store.close()
    path = tmp_path / ".local/share/svc/data/svc.db"
    assert path.is_file()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT label FROM stacks").fetchall() == [("s",)]


def test_sqlite_reopens_existing_data(tmp_path: Path, datastore_config: ConfigFactory) -> None:
    config = datastore_config("sqlite", sqlite_path=str(tmp_path / "svc.db"))
    first = open_datastore(config)
    first.create_stack("kept")
    first.close()
    second = open_datastore(config)
    try:
        assert second.get_stack("kept") is not None
    finally:
        second.close()


def _checkpoint_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name == "svc-sqlite-checkpoints"}


def test_sqlite_checkpoints_on_a_thread_of_its_own_not_in_commits(tmp_path: Path,
                                                                  datastore_config: ConfigFactory) -> None:
    """A commit never copies the log into the database file (a checkpoint, ~12 ms, made whichever transaction
    crossed 1,000 pages wait for it); the engine's checkpoint thread does, soon after writes."""
    before = _checkpoint_threads()
    path = tmp_path / "svc.db"
    store = open_datastore(datastore_config("sqlite", sqlite_path=str(path)))
    try:
        assert isinstance(store, SqlBase)
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        size = path.stat().st_size
        for index in range(100):
            store.create_stack(f"s{index}")
        give_up = time.monotonic() + 10
        while path.stat().st_size == size and time.monotonic() < give_up:
            time.sleep(0.05)
        assert path.stat().st_size > size, "no checkpoint copied the stacks into the database file"
        assert len(_checkpoint_threads() - before) == 1
    finally:
        store.close()
    assert _checkpoint_threads() == before, "closing the datastore stops its checkpoint thread"


def test_sqlite_log_grown_past_its_limit_is_emptied(tmp_path: Path, datastore_config: ConfigFactory,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes that never pause leave a passive checkpoint behind: past ``LOG_LIMIT`` pages the checkpoint
    thread copies the rest while writers wait, and empties the log file."""
    monkeypatch.setattr(sqlite_checkpoints, "LOG_LIMIT", 0)
    path = tmp_path / "svc.db"
    log = path.with_name("svc.db-wal")
    store = open_datastore(datastore_config("sqlite", sqlite_path=str(path)))
    try:
        for index in range(20):
            store.create_stack(f"s{index}")
        give_up = time.monotonic() + 10
        while log.stat().st_size and time.monotonic() < give_up:
            time.sleep(0.05)
        assert log.stat().st_size == 0
        assert len(store.list_stacks().items) == 20
    finally:
        store.close()


def test_sqlite_checkpoints_resume_after_the_checkpoint_connection_failed(
        tmp_path: Path, datastore_config: ConfigFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread that cannot open its own connection says so and tries again after a later write."""
    real_connect = sqlite3.connect
    attempts: list[object] = []

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        attempts.append(args)
        if len(attempts) == 1:
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(sqlite_checkpoints.sqlite3, "connect", connect)
    monkeypatch.setattr(sqlite_checkpoints, "INTERVAL", 0.05)
    path = tmp_path / "svc.db"
    store = open_datastore(datastore_config("sqlite", sqlite_path=str(path)))  # the engine's own connect is not this
    try:
        size = path.stat().st_size
        give_up = time.monotonic() + 10
        while path.stat().st_size == size and time.monotonic() < give_up:
            store.create_stack(f"s{time.monotonic_ns()}")
            time.sleep(0.05)
        assert len(attempts) >= 2
        assert path.stat().st_size > size, "no checkpoint after the failed connection"
    finally:
        store.close()


def test_sqlite_in_memory_works(datastore_config: ConfigFactory) -> None:
    store = open_datastore(datastore_config("sqlite", sqlite_path=":memory:"))
    try:
        store.create_stack("s")
        assert store.get_stack("s") is not None
    finally:
        store.close()


def test_sqlite_unusable_path_names_the_setting(tmp_path: Path, datastore_config: ConfigFactory) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(DatastoreConfigError) as caught:
        open_datastore(datastore_config("sqlite", sqlite_path=str(blocker / "svc.db")))
    assert caught.value.setting == "agent.datastore.sqlite.filePath"
    assert "\n" not in str(caught.value)


# -- PostgreSQL settings --------------------------------------------------------------------------------------

def pg(server: Any, **overrides: object) -> dict[str, object]:
    return {"host": server.host, "port": server.port, "user": server.user, "password": server.password,
            "database": server.database} | overrides


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("overrides, setting, words", [
    ({"database": "svc_missing_db"}, "agent.datastore.postgres.database",
     ['database "svc_missing_db" does not exist', "CREATE DATABASE svc_missing_db"]),
    ({"user": "svc_no_such_role"}, "agent.datastore.postgres.user", ['"svc_no_such_role" does not exist']),
    ({"host": "no-such-host.invalid"}, "agent.datastore.postgres.host", ['"no-such-host.invalid"']),
    ({"connectionParams": "sslmode=bogus"}, "agent.datastore.postgres.connectionParams", ["sslmode"]),
    ({"connectionParams": "sslmode=require"}, "agent.datastore.postgres.connectionParams", ["SSL"]),
    ({"connectionParams": "nonsense_option=1"}, "agent.datastore.postgres.connectionParams", ["nonsense_option"]),
])
def test_bad_postgres_settings_give_one_line_naming_the_setting(
        postgres_server: Any, datastore_config: ConfigFactory, overrides: dict[str, object], setting: str,
        words: list[str]) -> None:
    with pytest.raises(DatastoreError) as caught:
        open_datastore(datastore_config("postgres", postgres=pg(postgres_server, **overrides)))
    message = str(caught.value)
    assert caught.value.setting == setting and setting in message and "\n" not in message
    for word in words:
        assert word in message


def test_unreachable_postgres_is_unavailable_and_names_host_and_port(postgres_server: Any,
                                                                    datastore_config: ConfigFactory) -> None:
    port = closed_port()
    with pytest.raises(DatastoreUnavailable) as caught:
        open_datastore(datastore_config("postgres", postgres=pg(postgres_server, host="127.0.0.1", port=port)))
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and "agent.datastore.postgres.host" in message and "\n" not in message


def test_connection_params_pass_through_and_win(datastore_config: ConfigFactory) -> None:
    config = datastore_config("postgres", postgres={
        "password": "p@ss:w/rd!<(#*", "schema": "my schema",
        "connectionParams": "sslmode=verify-full&sslrootcert=/etc/ssl/rds.pem&connect_timeout=3"}).postgres
    params = connection_params(config)
    assert params["sslmode"] == "verify-full" and params["sslrootcert"] == "/etc/ssl/rds.pem"
    assert params["connect_timeout"] == "3" and params["password"] == "p@ss:w/rd!<(#*"
    assert params["options"] == '-c search_path="my\\ schema"'
    with pytest.raises(DatastoreConfigError, match="connectionParams"):
        connection_params(datastore_config("postgres", postgres={"connectionParams": "novalue"}).postgres)


# -- outages --------------------------------------------------------------------------------------------------

def test_postgres_recovers_after_its_connections_are_cut(postgres_server: Any,
                                                         datastore_config: ConfigFactory) -> None:
    schema = "outage_test"
    store = open_datastore(datastore_config("postgres", postgres=pg(postgres_server, schema=schema)))
    try:
        store.create_stack("before")
        with postgres_server.connect() as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND application_name = 'svc-agent'", (postgres_server.database,)).fetchone()
            assert killed and killed[0] >= 1
        store.ping()  # the pool notices dead connections and replaces them by itself
        assert store.get_stack("before") is not None
        store.create_stack("after")
    finally:
        store.close()
        with postgres_server.connect() as admin:
            admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def test_ping_reports_an_unreachable_database_as_unavailable(postgres_server: Any,
                                                             datastore_config: ConfigFactory) -> None:
    schema = "ping_test"
    store = open_datastore(datastore_config("postgres", postgres=pg(postgres_server, schema=schema)))
    try:
        store.ping()
        # Point the pool at a port where nothing listens: what a server that went away looks like.
        store.engine.dispose()  # type: ignore[attr-defined]
        store.engine.pool._creator = lambda *_: __import__("psycopg").connect(  # type: ignore[attr-defined]
            host="127.0.0.1", port=closed_port(), user="postgres", connect_timeout=2)
        with pytest.raises(DatastoreUnavailable):
            store.ping()
        with pytest.raises(DatastoreUnavailable):
            store.get_stack("x")
    finally:
        store.close()
        with postgres_server.connect() as admin:
            admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.mark.parametrize("datastore_config_for_backend", ["postgres"], indirect=True)
def test_postgres_planner_statistics_follow_a_growing_inventory(datastore_config_for_backend: DatastoreConfig,
                                                                 postgres_server: Any) -> None:
    """Never analyzed (autovacuum had not come by), 500 resources made the search for a destroy's referrers loop
    over the live versions scanning the references for each, 15 ms instead of 0.2: the datastore analyzes the
    resources and their references itself as the versions it writes double, from a few hundred on."""
    def analyzed() -> dict[str, int]:
        with postgres_server.connect() as admin:
            rows = admin.execute("SELECT relname, analyze_count FROM pg_stat_user_tables WHERE schemaname = %s AND "
                                 "relname IN ('resources', 'resource_references')",
                                 (datastore_config_for_backend.postgres.schema_,)).fetchall()
        return {name: count for name, count in rows}

    store = open_datastore(datastore_config_for_backend)
    try:
        first = store.store_resource(ResourceWrite("T::Test::Item", "p", "app", "main", {"Value": "1"}, native_id="p"))
        assert not any(analyzed().values())
        store.store_resources([ResourceWrite("T::Test::Item", f"c{n}", "app", "main",
                                             {"Ref": {"$ref": f"svc://{first.ksuid}#/Value"}}, native_id=f"c{n}")
                               for n in range(250)])
        deadline = time.monotonic() + 10  # a session reports its statistics when it goes idle, within a second
        while analyzed() != {"resources": 1, "resource_references": 1} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert analyzed() == {"resources": 1, "resource_references": 1}
    finally:
        store.close()
