"""``BulkStatement``: hot INSERT/UPDATE statements bound without SQLAlchemy's per-row machinery must store
exactly what ``Connection.execute`` stores (every column type through its own processor, the statement's
own literals kept), on SQLite here and, through the datastore contract tests, on PostgreSQL and the Data API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from svc.datastore.bulk import BulkStatement
from svc.datastore.sql_base import JSON_CODEC
from svc.datastore.tables import UtcDateTime

metadata = sa.MetaData()
items = sa.Table(
    "items", metadata,
    sa.Column("id", sa.String, primary_key=True),
    sa.Column("state", sa.String, nullable=False),
    sa.Column("done", sa.Boolean, nullable=False),
    sa.Column("at", UtcDateTime, nullable=True),
    sa.Column("doc", sa.JSON(none_as_null=True), nullable=False),
)
T0 = datetime(2026, 11, 25, 10, 0, 0, 1, tzinfo=UTC)


@pytest.fixture
def engine() -> sa.Engine:
    engine = sa.create_engine("sqlite://", **JSON_CODEC)
    metadata.create_all(engine)
    return engine


def _rows(count: int) -> list[dict[str, Any]]:
    return [{"id": f"i{n}", "state": "NotStarted", "done": n % 2 == 0, "at": T0 + timedelta(seconds=n) if n else None,
             "doc": {"n": n, "tags": ["a", n], "deep": {"x": None}}} for n in range(count)]


def _stored(engine: sa.Engine, table: sa.Table = items) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        # Raw column text too: the bytes the processors wrote, not only what reading them back makes of them.
        return [tuple(row) for row in conn.exec_driver_sql(f"SELECT * FROM {table.name} ORDER BY id")]


def test_an_insert_stores_what_connection_execute_stores(engine: sa.Engine) -> None:
    twin = items.to_metadata(sa.MetaData(), name="twin")
    twin.create(engine)
    with engine.begin() as conn:
        BulkStatement(sa.insert(items)).execute(conn, _rows(5))
        conn.execute(sa.insert(twin), _rows(5))
    assert _stored(engine) == _stored(engine, twin)
    with engine.connect() as conn:
        first = conn.execute(sa.select(items).where(items.c.id == "i1")).one()
    assert (first.done, first.at, first.doc) == (False, T0 + timedelta(seconds=1), {"n": 1, "tags": ["a", 1],
                                                                                     "deep": {"x": None}})


def test_an_update_keeps_the_statements_own_literals(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        BulkStatement(sa.insert(items)).execute(conn, _rows(3))
        conn.execute(sa.update(items).where(items.c.id == "i1").values(state="Canceled"))
    fenced = BulkStatement(
        sa.update(items).where(items.c.id == sa.bindparam("p_id"),
                               items.c.state.not_in([sa.literal("Canceled"), sa.literal("Failed")]))
        .values(state=sa.bindparam("p_state"), at=sa.bindparam("p_at", type_=items.c.at.type)))
    with engine.begin() as conn:
        fenced.execute(conn, [{"p_id": f"i{n}", "p_state": "Success", "p_at": T0} for n in range(3)])
    with engine.connect() as conn:
        rows = {row.id: (row.state, row.at) for row in conn.execute(sa.select(items))}
    assert rows == {"i0": ("Success", T0), "i1": ("Canceled", T0 + timedelta(seconds=1)), "i2": ("Success", T0)}


def test_a_missing_value_is_an_error_not_a_null(engine: sa.Engine) -> None:
    row = _rows(1)[0]
    del row["state"]
    with pytest.raises(KeyError, match="state"), engine.begin() as conn:
        BulkStatement(sa.insert(items)).execute(conn, [row])
    assert _stored(engine) == []


def test_a_failing_row_raises_sqlalchemys_error_and_the_transaction_stores_nothing(engine: sa.Engine) -> None:
    rows = _rows(3)
    rows[2]["id"] = "i0"
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        BulkStatement(sa.insert(items)).execute(conn, rows)
    assert _stored(engine) == []


def test_each_dialect_gets_its_own_parameter_style() -> None:
    statement = BulkStatement(lambda dialect: sa.insert(items))
    positional, named = statement.plan(sqlite.dialect()), statement.plan(postgresql.psycopg.dialect())
    row = _rows(2)[1]
    assert positional.sql.count("?") == 5 and positional.bind(row)[:3] == ("i1", "NotStarted", 0)
    bound = named.bind(row)
    assert isinstance(bound, dict) and set(bound) == {"id", "state", "done", "at", "doc"}
    assert all(f"%({name})s" in named.sql for name in bound)
