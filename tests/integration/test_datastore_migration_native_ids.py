"""Revision 0006: a datastore an older agent left, holding resources, is upgraded to the (target, type, native id)
identity on every backend; afterwards another target's resource may have a native id a stored one has."""

from __future__ import annotations

import pytest

from support.earlier_release import store_as_earlier_release
from svc.config.model import DatastoreConfig
from svc.datastore import ConflictError, open_datastore
from svc.datastore.migrate import head_revision, migrate
from svc.datastore.sql_store import SqlDatastore
from svc.ids import new_id
from svc.model.records import ResourceWrite


def _schema_of(config: DatastoreConfig) -> str | None:
    return config.postgres.schema_ or None if config.datastore_type == "postgres" else None


def _site(stack: str, target: str) -> ResourceWrite:
    return ResourceWrite(type="LOCAL::FS::Directory", label="site", stack=stack, target=target,
                         properties={"Path": "site"}, native_id="site", ksuid=new_id())


def test_upgrade_keys_native_ids_by_target(datastore_config_for_backend: DatastoreConfig) -> None:
    store = open_datastore(datastore_config_for_backend, migrate=False)
    try:
        assert isinstance(store, SqlDatastore)
        migrate(store.engine, schema=_schema_of(datastore_config_for_backend), revision="0005")
        first = _site("quickstart", "home")
        store_as_earlier_release(store, first)

        result = migrate(store.engine, schema=_schema_of(datastore_config_for_backend))
        assert (result.before, result.after) == ("0005", head_revision())

        second = store.store_resource(_site("hello", "hello"))
        assert second.ksuid != first.ksuid and second.operation == "create"
        assert {(r.stack, r.target) for r in store.list_resources().items} == {("quickstart", "home"),
                                                                               ("hello", "hello")}
        with pytest.raises(ConflictError):  # on one target, one native id is still one resource
            store.store_resource(_site("other", "home"))
    finally:
        store.close()
