"""An agent upgraded with commands in its datastore keeps them readable and resumable: revision 0004 moves each
resource update's change (and its sealed desired state) out of the update's data into ``resource_changes``.

The datastore is built as an agent at revision 0003 left it (the change inside ``data``), upgraded, and read
back the way the engine reads it, on every backend.
"""

from __future__ import annotations

from datetime import UTC, datetime

from cryptography.fernet import Fernet

from svc.config.model import DatastoreConfig
from svc.datastore import open_datastore
from svc.datastore.migrate import head_revision, migrate
from svc.datastore.sql_store import SqlDatastore
from svc.engine.command_records import UpdateData, change_of, stored_change
from svc.engine.planner.changeset import ResourceChange
from svc.engine.sealing import Sealer
from svc.model.records import CommandRecord, ResourceUpdateRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HASHED = {"$value": {"$hashed": "sha256:abc"}, "$visibility": "Opaque"}


def _schema_of(config: DatastoreConfig) -> str | None:
    return config.postgres.schema_ or None if config.datastore_type == "postgres" else None


def _update(command_id: str, ksuid: str, data: dict) -> ResourceUpdateRecord:
    return ResourceUpdateRecord(command_id=command_id, ksuid=ksuid, operation="create", state="InProgress",
                                resource_type="FAKE::Test::Item", resource_label=ksuid.lower(), stack_label="app",
                                start_ts=T0, data=data)


def test_upgrade_moves_each_change_out_of_its_update(datastore_config_for_backend: DatastoreConfig) -> None:
    sealer = Sealer(Fernet.generate_key())
    change = ResourceChange(ksuid="K1", operation="create", type="FAKE::Test::Item", label="k1", stack="app",
                            target="main", schema={"Identifier": "$.Id"}, desired={"Name": "a", "Password": HASHED})
    attempt = {"op": "create", "token": "c1-K1-create", "number": 2, "request_id": "r-7"}
    old_data = {"change": change.to_json(), "desired_sealed": sealer.seal({"Name": "a", "Password": "s3cret"}),
                "attempt": attempt, "current_attempt": 2, "max_attempts": 5, "message": "waiting"}
    store = open_datastore(datastore_config_for_backend, migrate=False)
    try:
        assert isinstance(store, SqlDatastore)
        migrate(store.engine, schema=_schema_of(datastore_config_for_backend), revision="0003")
        # Written as revision 0003 stores them: the change inside data (no ``change`` on the records, so
        # ``put_command`` writes no row of the table that does not exist yet).
        store.put_command(CommandRecord(id="c1", command="apply", state="InProgress", start_ts=T0),
                          [_update("c1", "K1", old_data), _update("c1", "K2", {"message": "not the engine's"})])

        result = migrate(store.engine, schema=_schema_of(datastore_config_for_backend))
        assert (result.before, result.after) == ("0003", head_revision())

        first, second = store.get_resource_updates("c1").items
        assert stored_change(first) == change  # what is shown: secrets hashed
        assert change_of(first, sealer).desired == {"Name": "a", "Password": "s3cret"}  # what a resume sends
        assert first.data == {"attempt": attempt, "current_attempt": 2, "max_attempts": 5, "message": "waiting"}
        progress = UpdateData.from_json(dict(first.data))
        assert (progress.attempt, progress.message) == (attempt, "waiting")
        assert (second.change, second.desired_sealed, second.data) == ({}, None, {"message": "not the engine's"})
        # A transition now writes the progress alone, and the change stays.
        assert store.set_resource_update_state("c1", "K1", "create", "Success", data={"message": "done"})
        (first, _) = store.get_resource_updates("c1").items
        assert (first.state, first.data, stored_change(first)) == ("Success", {"message": "done"}, change)
        assert store.delete_command("c1") and store.get_resource_updates("c1").items == ()
    finally:
        store.close()
