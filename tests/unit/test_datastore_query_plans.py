"""The group commit's lookups are point lookups on SQLite's indexes: a range scan would grow with every resource
the datastore holds, in each batch of every command. So is a poll for a command's updates written since the last
one: a scan would grow with the command, and the search for a resource's referrers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from support.datastores import sqlite_config
from support.earlier_release import store_as_earlier_release
from svc.datastore import open_datastore
from svc.datastore.paging import encode_cursor
from svc.datastore.sql_resource_batch import HEADS_BY_KSUID, OWNERS_BY_NATIVE_ID
from svc.datastore.sql_store import SqlDatastore
from svc.datastore.sql_update_batches import CURRENT_STATES
from svc.model.records import CommandRecord, ResourceScope, ResourceWrite


@pytest.fixture
def store() -> Iterator[SqlDatastore]:
    opened = open_datastore(sqlite_config(":memory:"))
    assert isinstance(opened, SqlDatastore)
    yield opened
    opened.close()


@pytest.fixture
def engine(store: SqlDatastore) -> sa.Engine:
    return store.engine


def _plan(engine: sa.Engine, statement: sa.Select[Any], params: dict[str, Any]) -> str:
    compiled = statement.compile(dialect=engine.dialect)
    expanded = compiled.construct_expanded_state(params)
    values = [expanded.parameters[name] for name in expanded.positiontup or ()]
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {expanded.statement}", tuple(values)).all()
    return " / ".join(row[-1] for row in rows)


# A batch's worth of keys: with a few, SQLite looks each up whatever the statement says.
KSUIDS = [f"k{n}" for n in range(40)]
NATIVE_IDS = [f"n{n}" for n in range(40)]


@pytest.mark.parametrize(("statement", "params", "lookup"), [
    (HEADS_BY_KSUID, {"ksuids": KSUIDS}, "USING INDEX uq_resources_head (ksuid=?)"),
    (OWNERS_BY_NATIVE_ID, {"targets": ["cloud"], "types": ["FAKE::Test::Item"], "native_ids": NATIVE_IDS},
     "USING INDEX uq_resources_native_id (target=? AND type=? AND native_id=?)"),
    (CURRENT_STATES, {"commands": ["c1"], "ksuids": KSUIDS}, "(command_id=? AND ksuid=?)"),
], ids=["heads", "owners", "update states"])
def test_each_lookup_searches_its_index_by_equality(engine: sa.Engine, statement: sa.Select[Any],
                                                    params: dict[str, Any], lookup: str) -> None:
    plan = _plan(engine, statement, params)
    assert plan.startswith("SEARCH") and lookup in plan, plan


def test_a_poll_for_a_commands_updates_written_since_reads_their_index_in_order(store: SqlDatastore) -> None:
    # Following a command of 100,000 updates, each poll read all of them (SQLite 112 ms, PostgreSQL 23 ms a poll;
    # 5 ms with the index). Then each page after a poll's first scanned the command's updates in ksuid order for
    # the few written lately, and the first page sorted every match (migration 0010).
    command = CommandRecord(id="c1", command="apply", state="InProgress", start_ts=datetime(2026, 1, 1, tzinfo=UTC),
                            client_id="c", mode="reconcile")
    store.put_command(command, [])
    executed: list[tuple[str, Any]] = []
    sa.event.listen(store.engine, "before_cursor_execute",
                    lambda conn, cursor, statement, parameters, *_: executed.append((statement, parameters)))
    since = datetime(2026, 1, 1, tzinfo=UTC)
    store.get_resource_update_summaries("c1", modified_since=since)
    first = executed[-1]
    cursor = encode_cursor("updates-written:c1", [since, "k0001", "create"])
    store.get_resource_update_summaries("c1", modified_since=since, cursor=cursor)
    for statement, parameters in (first, executed[-1]):
        with store.engine.connect() as conn:
            plan = " / ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters))
        assert "USING INDEX ix_resource_updates_modified (command_id=? AND modified_ts>?)" in plan \
            or "USING INDEX ix_resource_updates_modified (command_id=? AND (modified_ts,ksuid,operation)>(?,?,?))" \
            in plan, plan
        assert "TEMP B-TREE" not in plan, plan


def test_the_referrers_of_a_resource_are_looked_up_by_key(store: SqlDatastore) -> None:
    # A plan's search for the resources that refer to what it changes read every live row's properties as text: a
    # destroy of 10 beside 100,000 others spent 0.2 s in it (migration 0011). Only the live versions an agent of an
    # earlier release wrote are still read so, found by the partial index of them.
    def item(label: str, properties: dict[str, Any]) -> ResourceWrite:
        return ResourceWrite("T::Test::Item", label, "app", "main", properties, native_id=f"n-{label}")

    producer = store.store_resource(item("p", {"Value": "1"})).ksuid
    store.store_resources([item(f"c{n}", {"Ref": {"$ref": f"svc://{producer}#/Value"}}) for n in range(20)])
    store_as_earlier_release(store, item("old", {"Ref": {"$ref": f"svc://{producer}#/Value"}}))
    found: list[Any] = []
    plans = _plans_of_reads(store, lambda: found.extend(store.live_resources_in(ResourceScope(referring_to={producer}))))
    assert len(found) == 21
    assert len(plans) == 3, plans  # is any version unindexed, the index of references, the unindexed ones' text
    assert all("SCAN" not in plan for plan in plans), plans
    assert any("resource_references" in plan and "(producer=?)" in plan for plan in plans), plans
    assert sum("USING INDEX ix_resources_unindexed (references_indexed=?)" in plan for plan in plans) == 2, plans


def test_what_a_plan_looks_up_by_label_is_searched_in_an_index(store: SqlDatastore) -> None:
    # A row value (``(type, label) IN (...)``) is looked up in no index by SQLite: the search for the discovered
    # resources a forma of 10 could adopt scanned every live row, 13 ms of each plan beside 100,000 others.
    item = "T::Test::Item"

    def look_up() -> None:
        store.live_resources_in(ResourceScope(triplets={("app", item, f"a{n}") for n in range(10)}))
        store.live_resources_in(ResourceScope(labels={(item, f"a{n}") for n in range(10)}))

    plans = _plans_of_reads(store, look_up)
    assert len(plans) == 2, plans
    assert "USING INDEX ix_resources_live_stack (stack=? AND type=? AND label=?)" in plans[0], plans
    assert "USING INDEX ix_resources_live_order (type=? AND label=?)" in plans[1], plans


def test_the_last_reconcile_of_a_stack_no_command_touched_reads_no_command(store: SqlDatastore) -> None:
    # Walking the commands newest first for it went through the whole history to find nothing: each forma's first
    # apply paid 16 ms beside 20,000 commands.
    store.put_command(CommandRecord(id="c1", command="apply", state="Success", start_ts=datetime.now(UTC),
                                    client_id="x", mode="reconcile"), stacks=["other"])
    found: list[Any] = []
    plans = _plans_of_reads(store, lambda: found.append(store.last_reconcile("new")))
    assert found == [None] and len(plans) == 1, plans
    assert "SCAN" not in plans[0].replace("SCAN CONSTANT ROW", ""), plans  # a SELECT without FROM
    assert "ix_resource_updates_stack (stack_label=?)" in plans[0], plans
    assert "ix_command_stacks_stack (stack_label=?)" in plans[0], plans
    assert store.last_reconcile("other") is not None


def _plans_of_reads(store: SqlDatastore, action: Callable[[], None]) -> list[str]:
    """SQLite's plan of each SELECT ``action`` runs, in order."""
    executed: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        executed.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        action()
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    plans = []
    with store.engine.connect() as conn:
        for statement, parameters in executed:
            if statement.startswith("SELECT"):
                rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
                plans.append(" / ".join(row[-1] for row in rows))
    return plans
