"""The index of references (migration 0011), on every backend: each version's references are stored with it, an
upgraded datastore has those of its current versions, and during a rolling deployment the versions an agent of the
earlier release writes without them are still found by the search for referrers."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from support.earlier_release import store_as_earlier_release
from svc.config.model import DatastoreConfig
from svc.datastore import Datastore, open_datastore
from svc.datastore.migrate import head_revision, migrate
from svc.datastore.sql_store import SqlDatastore
from svc.datastore.tables import resource_references, resources
from svc.model.records import ResourceScope, ResourceWrite

ITEM = "T::Test::Item"


def item(label: str, properties: dict[str, Any], *, ksuid: str | None = None, managed: bool = True) -> ResourceWrite:
    return ResourceWrite(ITEM, label, "app", "main", properties, managed=managed, native_id=f"n-{label}", ksuid=ksuid)


def ref(ksuid: str, path: str = "Value") -> dict[str, str]:
    return {"$ref": f"svc://{ksuid}#/{path}"}


def referrers(store: Datastore, *producers: str) -> list[str]:
    return sorted(r.label for r in store.live_resources_in(ResourceScope(referring_to=set(producers))))


def indexed(store: SqlDatastore) -> set[tuple[str, str]]:
    """(producer, referring label) of every reference indexed for a live version."""
    joined = resources.join(resource_references, sa.and_(resource_references.c.ksuid == resources.c.ksuid,
                                                         resource_references.c.version == resources.c.version))
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(resource_references.c.producer, resources.c.label).select_from(joined)
                            .where(resources.c.head == 1)).all()
    return {(row.producer, row.label) for row in rows}


def unindexed(store: SqlDatastore) -> list[str]:
    with store.engine.connect() as conn:
        return sorted(conn.execute(sa.select(resources.c.label).where(resources.c.head == 1,
                                                                      resources.c.references_indexed.is_(False))
                                   ).scalars())


def test_each_version_is_stored_with_its_references(datastore: Datastore) -> None:
    assert isinstance(datastore, SqlDatastore)
    a = datastore.store_resource(item("a", {"Value": "1"})).ksuid
    b = datastore.store_resource(item("b", {"Value": "2"})).ksuid
    one = datastore.store_resource(item("one", {"Ref": ref(a), "Again": [ref(a, "Other")]})).ksuid
    datastore.store_resources([item("both", {"Embedded": {"$embed": True, "$parts": ["x-", ref(a), ref(b)]}}),
                               item("plain", {"Value": f"see svc://{a}#/Value"})])
    assert indexed(datastore) == {(a, "one"), (a, "both"), (b, "both")} and unindexed(datastore) == []
    assert referrers(datastore, a) == ["both", "one"] and referrers(datastore, b) == ["both"]

    datastore.store_resource(item("one", {"Ref": ref(b)}, ksuid=one))  # a new version refers to b instead
    assert referrers(datastore, a) == ["both"] and referrers(datastore, b) == ["both", "one"]
    datastore.delete_resource(one)
    assert referrers(datastore, b) == ["both"]


def test_versions_an_earlier_release_writes_are_found_by_their_text(datastore: Datastore) -> None:
    assert isinstance(datastore, SqlDatastore)
    producer = datastore.store_resource(item("p", {"Value": "1"})).ksuid
    moved = datastore.store_resource(item("moved", {"Ref": ref(producer)})).ksuid
    # The earlier agent writes versions without their references: a new referrer, and a new version of an indexed
    # one that no longer refers to the producer (its earlier version's references stay, no longer live).
    store_as_earlier_release(datastore, item("new", {"Ref": ref(producer)}))
    store_as_earlier_release(datastore, item("moved", {"Value": "cut loose"}, ksuid=moved))
    store_as_earlier_release(datastore, item("unmanaged", {"Ref": ref(producer)}, managed=False))
    assert unindexed(datastore) == ["moved", "new", "unmanaged"]
    assert referrers(datastore, producer) == ["new"]

    # Written again by this release, a version is indexed and read by key.
    datastore.store_resource(item("moved", {"Ref": ref(producer)}, ksuid=moved))
    assert unindexed(datastore) == ["new", "unmanaged"]
    assert referrers(datastore, producer) == ["moved", "new"]


def test_the_upgrade_indexes_the_references_of_current_versions(datastore_config_for_backend: DatastoreConfig
                                                                ) -> None:
    store = open_datastore(datastore_config_for_backend, migrate=False)
    schema = datastore_config_for_backend.postgres.schema_ or None \
        if datastore_config_for_backend.datastore_type == "postgres" else None
    try:
        assert isinstance(store, SqlDatastore)
        migrate(store.engine, schema=schema, revision="0010")
        [producer] = store_as_earlier_release(store, item("p", {"Value": "1"}))
        [was] = store_as_earlier_release(
            store, item("was", {"Ref": ref(producer)}), item("direct", {"Ref": ref(producer)}),
            item("embedded", {"E": {"$embed": True, "$parts": [ref(producer, "Id")]}}))[:1]
        store_as_earlier_release(store, item("was", {"Value": "no longer"}, ksuid=was),
                                 *(item(f"e{n:04}", {"Ref": ref(producer)} if n % 400 == 0 else {})
                                   for n in range(1200)))  # more than one chunk of the upgrade

        result = migrate(store.engine, schema=schema)
        assert (result.before, result.after) == ("0010", head_revision())

        assert unindexed(store) == []
        assert indexed(store) == {(producer, label) for label in ("direct", "embedded", "e0000", "e0400", "e0800")}
        assert referrers(store, producer) == ["direct", "e0000", "e0400", "e0800", "embedded"]
    finally:
        store.close()
