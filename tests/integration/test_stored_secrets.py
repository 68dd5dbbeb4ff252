"""Secrets an earlier version stored in clear are hashed in place when an agent leads (``stored_secrets``), on
every backend: every version of a resource, the changes of past commands and their progress; nothing else of a
row changes, the walk is recorded per type and done again only when the type's secrets change."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from svc.config.model import DatastoreConfig
from svc.datastore import Datastore, open_datastore, sqlite
from svc.engine.planner import Catalog
from svc.engine.stored_secrets import RUN_KIND, hash_stored_secrets
from svc.ids import new_id
from svc.model.records import CommandRecord, ResourceUpdateRecord, ResourceVersion, ResourceWrite
from svc.model.schema import Schema
from svc.model.values import hashed_secret

VAULT = "FAKE::App::Vault"
PLAIN = "FAKE::Test::Item"
CLEAR = ("db-pw-first", "db-pw-second", "user-token", "env-secret")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def vault_schema(*paths: str) -> Schema:
    return Schema.model_validate({"Identifier": "$.Name", "Fields": ["Name", "Database", "Users", "Env"],
                                  "OpaquePaths": list(paths)})


SECRETS = ("Database.Password", "Users.Token", "Env.*")
ITEM = Schema.model_validate({"Identifier": "$.Id", "Fields": ["Value"]})


def catalog(*paths: str) -> Catalog:
    return Catalog(namespaces=frozenset({"FAKE"}), types={VAULT: vault_schema(*paths), PLAIN: ITEM})


def vault(password: str) -> dict[str, Any]:
    """Properties as a version before nested secrets were hashed stored them."""
    return {"Name": "app", "Database": {"Host": "db.internal", "Password": password},
            "Users": [{"Name": "alice", "Token": "user-token"}, {"Name": "bob"}], "Env": {"DB_URL": "env-secret"}}


def hashed_vault(password: str) -> dict[str, Any]:
    return {"Name": "app", "Database": {"Host": "db.internal", "Password": hashed_secret(password)},
            "Users": [{"Name": "alice", "Token": hashed_secret("user-token")}, {"Name": "bob"}],
            "Env": {"DB_URL": hashed_secret("env-secret")}}


def store_old_records(datastore: Datastore) -> tuple[str, str]:
    """Two versions of a vault, an unrelated resource whose values look like secrets, and a command whose change,
    patch and progress hold the secrets in clear; the vault's ksuid and the command's id."""
    first = datastore.store_resource(ResourceWrite(VAULT, "vault", "prod", "t", vault("db-pw-first"), native_id="app"))
    ksuid = first.ksuid
    datastore.store_resource(ResourceWrite(VAULT, "vault", "prod", "t", vault("db-pw-second"), native_id="app",
                                           ksuid=ksuid))
    datastore.store_resource(ResourceWrite(PLAIN, "item", "prod", "t", {"Value": "db-pw-first"}, native_id="i"))
    record = CommandRecord(id=new_id(), command="apply", state="Success", start_ts=T0, mode="reconcile")
    change = {"type": VAULT, "label": "vault", "desired": vault("db-pw-second"), "prior": vault("db-pw-first"),
              "patch": [{"op": "replace", "path": "/Database/Password", "value": "db-pw-second"},
                        {"op": "add", "path": "/Users/0", "value": {"Name": "alice", "Token": "user-token"}},
                        {"op": "replace", "path": "/Database/Host", "value": "db.internal"},
                        {"op": "remove", "path": "/Env/OLD"}],
              "create_only_patch": None}
    progress = {"attempt": {"op": "update", "number": 1},
                "progress": {"OperationStatus": "Success", "ResourceProperties": vault("db-pw-second")}}
    datastore.put_command(record, [ResourceUpdateRecord(
        command_id=record.id, ksuid=ksuid, operation="update", state="Success", resource_type=VAULT,
        resource_label="vault", stack_label="prod", data=progress, change=change)])
    return ksuid, record.id


def history(datastore: Datastore, ksuid: str) -> list[ResourceVersion]:
    return list(datastore.resource_history(ksuid, limit=100).items)


def test_clear_secrets_are_hashed_in_every_stored_document(datastore: Datastore) -> None:
    ksuid, command_id = store_old_records(datastore)
    before = history(datastore, ksuid)

    assert hash_stored_secrets(datastore, catalog(*SECRETS)) == {VAULT: 4}  # two versions, a change, its progress

    after = history(datastore, ksuid)
    assert sorted(v.properties["Database"]["Password"]["$value"] for v in after) == sorted(
        hashed_secret(p)["$value"] for p in ("db-pw-first", "db-pw-second"))
    assert [(v.version, v.current, v.operation, v.valid_from) for v in after] == [
        (v.version, v.current, v.operation, v.valid_from) for v in before]
    current = datastore.get_resource(ksuid)
    assert current is not None and current.properties == hashed_vault("db-pw-second")
    (update,) = datastore.get_resource_updates(command_id).items
    assert update.state == "Success" and update.change["desired"] == hashed_vault("db-pw-second")
    assert update.change["prior"] == hashed_vault("db-pw-first")
    assert update.change["patch"] == [
        {"op": "replace", "path": "/Database/Password", "value": hashed_secret("db-pw-second")},
        {"op": "add", "path": "/Users/0", "value": {"Name": "alice", "Token": hashed_secret("user-token")}},
        {"op": "replace", "path": "/Database/Host", "value": "db.internal"},
        {"op": "remove", "path": "/Env/OLD"}]
    assert update.data["progress"]["ResourceProperties"] == hashed_vault("db-pw-second")
    assert update.data["attempt"] == {"op": "update", "number": 1}
    stored = json.dumps([[v.properties for v in after], update.change, update.data])
    assert not [secret for secret in CLEAR if secret in stored]
    # A type without secrets is not touched, whatever its values look like.
    item = datastore.get_resource_by_label("prod", PLAIN, "item")
    assert item is not None and item.properties == {"Value": "db-pw-first"}


def test_the_walk_is_recorded_and_done_again_only_when_the_secrets_change(datastore: Datastore) -> None:
    ksuid, _ = store_old_records(datastore)
    assert hash_stored_secrets(datastore, catalog("Database.Password")) == {VAULT: 4}
    run = datastore.get_run(RUN_KIND, VAULT)
    assert run is not None and run.state == "succeeded"
    assert run.details == {"paths": ["Database.Password"], "rewritten": 4}
    assert all("user-token" in json.dumps(v.properties) for v in history(datastore, ksuid))  # not secret (yet)

    assert hash_stored_secrets(datastore, catalog("Database.Password")) == {}  # walked for these secrets already
    # The plugin's new schema declares more secrets: walked again; what was hashed stays as it is.
    assert hash_stored_secrets(datastore, catalog(*SECRETS)) == {VAULT: 4}
    stored = sorted(json.dumps(v.properties, sort_keys=True) for v in history(datastore, ksuid))
    assert stored == sorted(json.dumps(hashed_vault(p), sort_keys=True) for p in ("db-pw-first", "db-pw-second"))
    assert hash_stored_secrets(datastore, catalog(*SECRETS)) == {}


def test_a_type_no_plugin_serves_is_left_until_one_does(datastore: Datastore) -> None:
    ksuid, _ = store_old_records(datastore)
    assert hash_stored_secrets(datastore, Catalog(namespaces=frozenset({"FAKE"}), types={PLAIN: ITEM})) == {}
    assert datastore.get_run(RUN_KIND, VAULT) is None
    assert datastore.get_resource(ksuid).properties == vault("db-pw-second")  # type: ignore[union-attr]
    assert hash_stored_secrets(datastore, catalog(*SECRETS)) == {VAULT: 4}


def test_a_walk_over_more_rows_than_a_page(datastore: Datastore) -> None:
    writes = [ResourceWrite(VAULT, f"vault-{n:04d}", "prod", "t", vault(f"pw-{n}"), native_id=f"app-{n}")
              for n in range(1203)]
    datastore.store_resources(writes)
    assert hash_stored_secrets(datastore, catalog(*SECRETS)) == {VAULT: 1203}
    page = datastore.list_resources(limit=1000)
    assert page.items[0].properties["Database"]["Password"] == hashed_secret("pw-0")
    assert all("$hashed" in v.properties["Database"]["Password"] for v in page.items)


def test_the_sqlite_file_keeps_no_byte_of_a_replaced_secret(
        tmp_path: Path, datastore_config: Callable[..., DatastoreConfig]) -> None:
    datastore = open_datastore(datastore_config("sqlite", sqlite_path=str(tmp_path / "svc.db")))
    try:
        store_old_records(datastore)
        assert hash_stored_secrets(datastore, catalog(*SECRETS)) == {VAULT: 4}
        # Scanned while the datastore is open, as an agent's files are: its write-ahead log held the old rows too.
        files = [file for file in tmp_path.iterdir() if file.name.startswith("svc.db")]
        assert [file.name for file in files if b"db-pw-second" in file.read_bytes()] == []
    finally:
        datastore.close()


def test_the_sqlite_file_keeps_no_byte_of_a_replaced_secret_a_reader_held_back(
        tmp_path: Path, datastore_config: Callable[..., DatastoreConfig], monkeypatch: pytest.MonkeyPatch) -> None:
    # A reader still on the snapshot from before the walk when the log is emptied, for longer than the busy
    # timeout: the checkpoint answers "busy" and leaves the old pages in the files until it is tried again.
    monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "svc.db"
    datastore = open_datastore(datastore_config("sqlite", sqlite_path=str(path)))
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    release = threading.Timer(1.0, reader.rollback)
    try:
        store_old_records(datastore)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM resources").fetchone()
        release.start()
        assert hash_stored_secrets(datastore, catalog(*SECRETS)) == {VAULT: 4}
        files = [file for file in tmp_path.iterdir() if file.name.startswith("svc.db")]
        assert [file.name for file in files if b"db-pw-second" in file.read_bytes()] == []
    finally:
        release.cancel()
        reader.close()
        datastore.close()


def test_a_walk_left_running_by_an_agent_that_died_is_done_again_at_once(datastore: Datastore) -> None:
    store_old_records(datastore)
    assert datastore.begin_run(RUN_KIND, VAULT, stale_after=timedelta(hours=1)) is not None  # then it died
    assert hash_stored_secrets(datastore, catalog(*SECRETS)) == {VAULT: 4}
    run = datastore.get_run(RUN_KIND, VAULT)
    assert run is not None and run.state == "succeeded"
