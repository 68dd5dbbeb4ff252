"""The RDS Data API stand-in, driven by the real boto3 ``rds-data`` client against the real PostgreSQL.

These tests pin the protocol behaviour the datastore's ``auroradataapi`` backend relies on: typed
parameters and records, transactions, batches, the error classes botocore raises, and the 1 MiB
request/response limits enforced to the byte.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import botocore.config
import psycopg
import pytest
from botocore.exceptions import ClientError

from support.aws import dummy_aws_credentials
from support.rdsdata import MIB, ErrorStyle, NotReadyKind, RdsDataStandIn, temporary_database

POSTGRES_URL = os.environ.get("SVC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")

Client = Any  # botocore generates the rds-data client class at run time


@pytest.fixture(scope="module", autouse=True)
def aws_env() -> Iterator[None]:
    """Dummy credentials from the environment, and no user AWS config leaking into the tests."""
    with dummy_aws_credentials():
        yield


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with temporary_database(POSTGRES_URL, prefix="svc_rdsdata") as name:
        yield name


def make_client(standin: RdsDataStandIn, **config: Any) -> Client:
    return boto3.client("rds-data", endpoint_url=standin.endpoint_url, region_name="us-east-1",
                        config=botocore.config.Config(**config) if config else None)


@pytest.fixture
def make_standin() -> Iterator[Callable[..., RdsDataStandIn]]:
    """Stand-ins with custom settings, stopped after the test."""
    started: list[RdsDataStandIn] = []

    def make(**kwargs: Any) -> RdsDataStandIn:
        standin = RdsDataStandIn(kwargs.pop("postgres_url", POSTGRES_URL), **kwargs)
        standin.start()
        started.append(standin)
        return standin

    yield make
    for standin in started:
        standin.stop()


@pytest.fixture(scope="module")
def standin() -> Iterator[RdsDataStandIn]:
    with RdsDataStandIn(POSTGRES_URL) as running:
        yield running


@pytest.fixture(scope="module")
def client(standin: RdsDataStandIn) -> Client:
    return make_client(standin)


class Db:
    """Shorthand for calls against one stand-in and database."""

    def __init__(self, client: Client, standin: RdsDataStandIn, database: str) -> None:
        self.client, self.standin, self.database = client, standin, database

    @property
    def arns(self) -> dict[str, str]:
        return {"resourceArn": self.standin.resource_arn, "secretArn": self.standin.secret_arn}

    def execute(self, sql: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        parameters = kwargs.pop("parameters", None) or [param(k, v) for k, v in (params or {}).items()]
        return self.client.execute_statement(sql=sql, database=self.database, parameters=parameters,
                                             **self.arns, **kwargs)

    def begin(self) -> str:
        return self.client.begin_transaction(database=self.database, **self.arns)["transactionId"]

    def commit(self, transaction_id: str) -> dict[str, Any]:
        return self.client.commit_transaction(transactionId=transaction_id, **self.arns)

    def rollback(self, transaction_id: str) -> dict[str, Any]:
        return self.client.rollback_transaction(transactionId=transaction_id, **self.arns)

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Records as plain values (each Field's single member)."""
        return [[next(iter(f.values())) if "isNull" not in f else None for f in record]
                for record in self.execute(sql, params).get("records", [])]


def param(name: str, value: Any, hint: str | None = None) -> dict[str, Any]:
    if value is None:
        field: dict[str, Any] = {"isNull": True}
    elif isinstance(value, bool):
        field = {"booleanValue": value}
    elif isinstance(value, int):
        field = {"longValue": value}
    elif isinstance(value, float):
        field = {"doubleValue": value}
    elif isinstance(value, bytes):
        field = {"blobValue": value}
    else:
        field = {"stringValue": value}
    return {"name": name, "value": field, **({"typeHint": hint} if hint else {})}


@pytest.fixture
def db(client: Client, standin: RdsDataStandIn, database: str) -> Db:
    return Db(client, standin, database)


def error_of(call: Callable[[], Any]) -> ClientError:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value


def table(db: Db, ddl: str) -> str:
    """A fresh table per test (the database is shared by the module)."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    db.execute(f"CREATE TABLE {name} ({ddl})")
    return name


# -- typed parameters and records ------------------------------------------------------------------


def test_typed_parameters_round_trip(db: Db) -> None:
    t = table(db, "id bigint PRIMARY KEY, name text, doc jsonb, ref uuid, at timestamp, at_tz timestamptz, "
                  "day date, clock time, amount numeric(12,3), ratio float8, ok bool, raw bytea, nothing text")
    ref = str(uuid.uuid4())
    result = db.execute(
        f"INSERT INTO {t} VALUES (:id, :name, :doc, :ref, :at, :at_tz, :day, :clock, :amount, :ratio, :ok, "
        ":raw, :nothing)",
        parameters=[
            param("id", 9_007_199_254_740_993),  # beyond a double's exact range: must stay a long
            param("name", "it's \"quoted\" ünïcode"),
            param("doc", '{"b": [1, 2], "a": null}', "JSON"),
            param("ref", ref, "UUID"),
            param("at", "2024-02-29 23:59:58.123456", "TIMESTAMP"),
            param("at_tz", "2024-03-01 10:00:00", "TIMESTAMP"),
            param("day", "2024-02-29", "DATE"),
            param("clock", "13:14:15", "TIME"),
            param("amount", "123456789.125", "DECIMAL"),
            param("ratio", 0.25),
            param("ok", True),
            param("raw", b"\x00\xffbinary"),
            param("nothing", None),
        ])
    assert result["numberOfRecordsUpdated"] == 1
    assert result["generatedFields"] == []

    records = db.execute(f"SELECT * FROM {t}")["records"]
    assert records == [[
        {"longValue": 9_007_199_254_740_993},
        {"stringValue": "it's \"quoted\" ünïcode"},
        {"stringValue": '{"a": null, "b": [1, 2]}'},  # jsonb's own text form
        {"stringValue": ref},
        {"stringValue": "2024-02-29 23:59:58.123456"},
        {"stringValue": "2024-03-01 10:00:00"},  # timestamptz in UTC, without an offset
        {"stringValue": "2024-02-29"},
        {"stringValue": "13:14:15"},
        {"stringValue": "123456789.125"},  # decimals are strings by default
        {"doubleValue": 0.25},
        {"booleanValue": True},
        {"blobValue": b"\x00\xffbinary"},
        {"isNull": True},
    ]]


def test_untyped_string_is_not_coerced_into_other_types(db: Db) -> None:
    # The service sends a plain stringValue as a character string: a jsonb column needs the JSON hint
    # (or a cast). Code that forgets it must fail here, as it would against Aurora.
    t = table(db, "doc jsonb")
    error = error_of(lambda: db.execute(f"INSERT INTO {t} VALUES (:doc)", {"doc": "{}"}))
    assert error.response["Error"]["Code"] == "DatabaseErrorException"
    assert "SQLState: 42804" in error.response["Error"]["Message"]
    db.execute(f"INSERT INTO {t} VALUES (:doc::jsonb)", {"doc": '{"ok": true}'})
    assert db.rows(f"SELECT doc->>'ok' FROM {t}") == [["true"]]


def test_named_parameters_leave_casts_literals_and_comments_alone(db: Db) -> None:
    rows = db.rows(
        "SELECT :a::int + :a AS twice, ':a' AS literal, $$ :a $$ AS dollar, E'\\' :a' AS escaped, "
        "'2024-01-01'::date::text AS cast_chain, 10 % 3 AS modulo /* :nope */ -- :nope\n",
        {"a": 21})
    assert rows == [[42, ":a", " :a ", "' :a", "2024-01-01", 1]]


def test_arrays_and_nulls_in_records(db: Db) -> None:
    records = db.execute(
        "SELECT ARRAY[1, NULL, 3]::int8[] AS longs, ARRAY['x', NULL]::text[] AS strings, "
        "ARRAY[true, false] AS bools, ARRAY[1.5, 2.5]::float8[] AS doubles, "
        "ARRAY[[1, 2], [3, 4]] AS nested, NULL::jsonb AS empty")["records"]
    assert records == [[
        {"arrayValue": {"longValues": [1, None, 3]}},
        {"arrayValue": {"stringValues": ["x", None]}},
        {"arrayValue": {"booleanValues": [True, False]}},
        {"arrayValue": {"doubleValues": [1.5, 2.5]}},
        {"arrayValue": {"arrayValues": [{"longValues": [1, 2]}, {"longValues": [3, 4]}]}},
        {"isNull": True},
    ]]


def test_result_metadata(db: Db) -> None:
    t = table(db, "id bigint, name varchar(20), doc jsonb, tags text[], amount numeric(8,2)")
    result = db.execute(f"SELECT id, name AS label, doc, tags, amount FROM {t}", includeResultMetadata=True)
    assert result["records"] == []
    columns = [(c["name"], c["typeName"], c["type"]) for c in result["columnMetadata"]]
    assert columns == [("id", "int8", -5), ("label", "varchar", 12), ("doc", "jsonb", 1111),
                       ("tags", "_text", 2003), ("amount", "numeric", 2)]
    amount = result["columnMetadata"][4]
    assert (amount["precision"], amount["scale"]) == (8, 2)
    assert "columnMetadata" not in db.execute(f"SELECT id FROM {t}")


def test_json_formatted_records(db: Db) -> None:
    result = db.execute(
        "SELECT 1::int8 AS n, 'x' AS s, NULL::text AS z, true AS b, 2.5::numeric AS d, "
        "'{\"k\": 1}'::jsonb AS doc, ARRAY[1, 2] AS arr", formatRecordsAs="JSON", includeResultMetadata=True)
    assert "records" not in result and "columnMetadata" not in result
    assert json.loads(result["formattedRecords"]) == [
        {"n": 1, "s": "x", "z": None, "b": True, "d": "2.5", "doc": '{"k": 1}', "arr": [1, 2]}]


def test_result_set_options(db: Db) -> None:
    result = db.execute("SELECT 2.5::numeric AS d, 7::numeric AS whole, 9007199254740993::int8 AS big",
                        resultSetOptions={"decimalReturnType": "DOUBLE_OR_LONG", "longReturnType": "STRING"})
    assert result["records"] == [[{"doubleValue": 2.5}, {"longValue": 7}, {"stringValue": "9007199254740993"}]]


def test_numbers_of_records_updated(db: Db) -> None:
    t = table(db, "id int")
    assert db.execute(f"INSERT INTO {t} SELECT generate_series(1, 5)")["numberOfRecordsUpdated"] == 5
    assert db.execute(f"UPDATE {t} SET id = id + 1 WHERE id > 2")["numberOfRecordsUpdated"] == 3
    returning = db.execute(f"DELETE FROM {t} WHERE id > 4 RETURNING id")
    assert returning["numberOfRecordsUpdated"] == 2
    assert sorted(r[0]["longValue"] for r in returning["records"]) == [5, 6]
    assert db.execute(f"SELECT * FROM {t}")["numberOfRecordsUpdated"] == 0


# -- sessions and transactions ---------------------------------------------------------------------


def test_each_call_outside_a_transaction_is_its_own_session(db: Db) -> None:
    db.execute("SET application_name = 'leaky'")
    db.execute("CREATE TEMP TABLE scratch (x int)")
    assert db.rows("SELECT current_setting('application_name')") != [["leaky"]]
    error = error_of(lambda: db.execute("SELECT * FROM scratch"))
    assert "SQLState: 42P01" in error.response["Error"]["Message"]


def test_commit_makes_writes_visible(db: Db) -> None:
    t = table(db, "id int")
    transaction_id = db.begin()
    db.execute(f"INSERT INTO {t} VALUES (:id)", {"id": 1}, transactionId=transaction_id)
    db.execute("CREATE TEMP TABLE session_scratch (x int)", transactionId=transaction_id)
    db.execute("INSERT INTO session_scratch VALUES (1)", transactionId=transaction_id)  # same session
    assert db.rows(f"SELECT count(*) FROM {t}") == [[0]]  # not visible outside yet
    assert db.commit(transaction_id)["transactionStatus"] == "Transaction Committed"
    assert db.rows(f"SELECT count(*) FROM {t}") == [[1]]
    assert db.standin.open_transactions == 0


def test_rollback_discards_writes(db: Db) -> None:
    t = table(db, "id int")
    transaction_id = db.begin()
    db.execute(f"INSERT INTO {t} VALUES (1)", transactionId=transaction_id)
    assert db.rollback(transaction_id)["transactionStatus"] == "Rollback Complete"
    assert db.rows(f"SELECT count(*) FROM {t}") == [[0]]


def test_unknown_transaction(db: Db) -> None:
    error = error_of(lambda: db.execute("SELECT 1", transactionId="bm90LWEtdHJhbnNhY3Rpb24="))
    assert error.response["Error"]["Code"] == "TransactionNotFoundException"
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert error.response["Error"]["Message"] == "Transaction bm90LWEtdHJhbnNhY3Rpb24= is not found"
    assert isinstance(error, db.client.exceptions.TransactionNotFoundException)
    transaction_id = db.begin()
    db.commit(transaction_id)
    assert isinstance(error_of(lambda: db.commit(transaction_id)), db.client.exceptions.TransactionNotFoundException)


def test_an_error_ends_the_transaction(db: Db) -> None:
    t = table(db, "id int PRIMARY KEY")
    transaction_id = db.begin()
    db.execute(f"INSERT INTO {t} VALUES (1)", transactionId=transaction_id)
    error = error_of(lambda: db.execute(f"INSERT INTO {t} VALUES (1)", transactionId=transaction_id))
    assert error.response["Error"]["Code"] == "DatabaseErrorException"
    assert "duplicate key value violates unique constraint" in error.response["Error"]["Message"]
    assert "Key (id)=(1) already exists" in error.response["Error"]["Message"]
    assert error.response["Error"]["Message"].endswith("SQLState: 23505")
    follow_up = error_of(lambda: db.execute("SELECT 1", transactionId=transaction_id))
    assert follow_up.response["Error"]["Code"] == "TransactionNotFoundException"
    assert db.rows(f"SELECT count(*) FROM {t}") == [[0]]
    assert db.standin.open_transactions == 0


def test_idle_transactions_time_out(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin(transaction_timeout=0.3)
    db = Db(make_client(standin), standin, database)
    t = table(db, "id int")
    transaction_id = db.begin()
    db.execute(f"INSERT INTO {t} VALUES (1)", transactionId=transaction_id)
    time.sleep(0.6)
    assert error_of(lambda: db.commit(transaction_id)).response["Error"]["Code"] == "TransactionNotFoundException"
    assert db.rows(f"SELECT count(*) FROM {t}") == [[0]]


def test_transactions_are_isolated_from_each_other(db: Db) -> None:
    t = table(db, "id int")
    first, second = db.begin(), db.begin()
    db.execute(f"INSERT INTO {t} VALUES (1)", transactionId=first)
    assert db.execute(f"SELECT count(*) FROM {t}", transactionId=second)["records"] == [[{"longValue": 0}]]
    db.commit(first)
    db.rollback(second)
    assert db.rows(f"SELECT count(*) FROM {t}") == [[1]]


def test_concurrent_calls(db: Db) -> None:
    t = table(db, "id int")
    errors: list[BaseException] = []

    def insert(start: int) -> None:
        try:
            for i in range(start, start + 10):
                db.execute(f"INSERT INTO {t} VALUES (:i)", {"i": i})
        except BaseException as error:  # surfaced below; a thread cannot fail the test itself
            errors.append(error)

    threads = [threading.Thread(target=insert, args=(n * 10,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert db.rows(f"SELECT count(DISTINCT id) FROM {t}") == [[40]]


# -- batches ---------------------------------------------------------------------------------------


def test_batch_execute(db: Db) -> None:
    t = table(db, "id int PRIMARY KEY, name text")
    result = db.client.batch_execute_statement(
        sql=f"INSERT INTO {t} VALUES (:id, :name) RETURNING id", database=db.database, **db.arns,
        parameterSets=[[param("id", i), param("name", f"n{i}")] for i in range(3)])
    assert result["updateResults"] == [{"generatedFields": [{"longValue": i}]} for i in range(3)]
    plain = db.client.batch_execute_statement(
        sql=f"UPDATE {t} SET name = :name WHERE id = :id", database=db.database, **db.arns,
        parameterSets=[[param("id", 0), param("name", "zero")]])
    assert plain["updateResults"] == [{"generatedFields": []}]
    assert db.rows(f"SELECT name FROM {t} ORDER BY id") == [["zero"], ["n1"], ["n2"]]


def test_batch_outside_a_transaction_is_all_or_nothing(db: Db) -> None:
    t = table(db, "id int PRIMARY KEY")
    error = error_of(lambda: db.client.batch_execute_statement(
        sql=f"INSERT INTO {t} VALUES (:id)", database=db.database, **db.arns,
        parameterSets=[[param("id", 1)], [param("id", 2)], [param("id", 1)]]))
    assert error.response["Error"]["Code"] == "DatabaseErrorException"
    assert db.rows(f"SELECT count(*) FROM {t}") == [[0]]


def test_batch_inside_a_transaction(db: Db) -> None:
    t = table(db, "id int")
    transaction_id = db.begin()
    db.client.batch_execute_statement(sql=f"INSERT INTO {t} VALUES (:id)", transactionId=transaction_id,
                                      **db.arns, parameterSets=[[param("id", i)] for i in range(5)])
    db.rollback(transaction_id)
    assert db.rows(f"SELECT count(*) FROM {t}") == [[0]]


# -- size limits -----------------------------------------------------------------------------------


def test_request_limit_is_exact_at_one_mib(db: Db) -> None:
    t = table(db, "payload text")
    insert = f"INSERT INTO {t} VALUES (:p)"
    probe_length = 1_000_000  # same number of Content-Length digits as the requests below
    db.execute(insert, {"p": "x" * probe_length})
    probe_size = db.standin.stats.recent[-1].request_bytes
    at_limit = probe_length + (MIB - probe_size)

    db.execute(insert, {"p": "y" * at_limit})
    assert db.standin.stats.recent[-1].request_bytes == MIB

    rejected_before = db.standin.stats.rejected_requests
    error = error_of(lambda: db.execute(insert, {"p": "z" * (at_limit + 1)}))
    assert isinstance(error, db.client.exceptions.BadRequestException)
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "Request payload size exceeded" in error.response["Error"]["Message"]
    assert db.standin.stats.rejected_requests == rejected_before + 1
    assert db.standin.stats.largest_request_bytes == MIB + 1
    assert db.rows(f"SELECT left(payload, 1), length(payload) FROM {t} ORDER BY 2") == [
        ["x", probe_length], ["y", at_limit]]  # the rejected request never reached the database


def test_response_limit_is_exact(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin(max_row_bytes=None)  # one big row, to hit the whole-response limit exactly
    db = Db(make_client(standin), standin, database)
    query = "SELECT repeat('x', :n::int) AS v"
    probe = 1_000_000
    db.execute(query, {"n": probe})
    overhead = standin.stats.recent[-1].response_bytes - probe

    assert len(db.execute(query, {"n": MIB - overhead})["records"][0][0]["stringValue"]) == MIB - overhead
    assert standin.stats.largest_response_bytes == MIB
    error = error_of(lambda: db.execute(query, {"n": MIB - overhead + 1}))
    assert isinstance(error, db.client.exceptions.UnsupportedResultException)
    assert error.response["Error"]["Message"] == "Database returned more than the allowed response size limit"
    assert standin.stats.rejected_responses == 1
    assert standin.stats.largest_response_bytes == MIB + 1


def test_large_result_fails_and_pages_under_the_limit_pass(db: Db) -> None:
    t = table(db, "id int PRIMARY KEY, blob text")
    db.client.batch_execute_statement(
        sql=f"INSERT INTO {t} VALUES (:id, repeat('b', 4096))", database=db.database, **db.arns,
        parameterSets=[[param("id", i)] for i in range(400)])  # ~1.6 MB of data
    error = error_of(lambda: db.execute(f"SELECT * FROM {t}"))
    assert error.response["Error"]["Code"] == "UnsupportedResultException"

    db.standin.reset_stats()
    seen, after = 0, -1
    while True:
        page = db.rows(f"SELECT id, blob FROM {t} WHERE id > :after ORDER BY id LIMIT 100", {"after": after})
        if not page:
            break
        seen, after = seen + len(page), page[-1][0]
    assert seen == 400
    assert db.standin.stats.rejected_responses == 0
    assert 400_000 < db.standin.stats.largest_response_bytes <= MIB


def test_response_over_the_limit_ends_the_transaction(db: Db) -> None:
    t = table(db, "id int")
    transaction_id = db.begin()
    db.execute(f"INSERT INTO {t} VALUES (1)", transactionId=transaction_id)
    error_of(lambda: db.execute("SELECT repeat('x', 60000) FROM generate_series(1, 20)", transactionId=transaction_id))
    assert error_of(lambda: db.commit(transaction_id)).response["Error"]["Code"] == "TransactionNotFoundException"
    assert db.rows(f"SELECT count(*) FROM {t}") == [[0]]


def test_row_limit(db: Db) -> None:
    assert db.rows("SELECT length(repeat('r', 60000))") == [[60000]]
    error = error_of(lambda: db.execute("SELECT repeat('r', 70000)"))
    assert error.response["Error"]["Code"] == "UnsupportedResultException"
    assert "Packet for query is too large" in error.response["Error"]["Message"]


def test_smaller_limits_for_tests(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin(max_bytes=8 * 1024)
    db = Db(make_client(standin), standin, database)
    assert isinstance(error_of(lambda: db.execute("SELECT :p", {"p": "x" * 9000})),
                      db.client.exceptions.BadRequestException)
    assert isinstance(error_of(lambda: db.execute("SELECT repeat('x', 9000)")),
                      db.client.exceptions.UnsupportedResultException)
    assert db.rows("SELECT :p", {"p": "x" * 4000}) == [["x" * 4000]]


# -- errors and not-ready --------------------------------------------------------------------------


def test_sql_error_shape(db: Db) -> None:
    error = error_of(lambda: db.execute("SELEC 1"))
    assert isinstance(error, db.client.exceptions.DatabaseErrorException)
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error.response["Error"]["Message"].startswith('ERROR: syntax error at or near "SELEC"')
    assert error.response["Error"]["Message"].endswith("SQLState: 42601")


def test_parameter_errors(db: Db) -> None:
    missing = error_of(lambda: db.execute("SELECT :a, :b", {"a": 1}))
    assert "No value specified for parameter: b" in missing.response["Error"]["Message"]
    array = error_of(lambda: db.execute("SELECT :a", parameters=[
        {"name": "a", "value": {"arrayValue": {"longValues": [1, 2]}}}]))
    assert array.response["Error"]["Code"] == "BadRequestException"
    assert "Array parameters are not supported" in array.response["Error"]["Message"]
    bad_json = error_of(lambda: db.execute("SELECT :a", parameters=[param("a", "{nope", "JSON")]))
    assert "SQLState: 22P02" in bad_json.response["Error"]["Message"]


def test_legacy_error_style(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin(error_style=ErrorStyle.LEGACY)
    db = Db(make_client(standin), standin, database)
    sql_error = error_of(lambda: db.execute("SELECT * FROM missing_table"))
    assert isinstance(sql_error, db.client.exceptions.BadRequestException)
    assert "relation \"missing_table\" does not exist" in sql_error.response["Error"]["Message"]
    transaction = error_of(lambda: db.execute("SELECT 1", transactionId="abc"))
    assert isinstance(transaction, db.client.exceptions.BadRequestException)
    assert transaction.response["Error"]["Message"] == "Transaction abc is not found"
    too_big = error_of(lambda: db.execute("SELECT repeat('x', 60000) FROM generate_series(1, 20)"))
    assert isinstance(too_big, db.client.exceptions.BadRequestException)
    assert too_big.response["Error"]["Message"] == "Database returned more than the allowed response size limit"


def test_bad_secret(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin(valid_secret_arns=["arn:aws:secretsmanager:us-east-1:123456789012:secret:good-AbCdEf"])
    client = make_client(standin)
    error = error_of(lambda: client.execute_statement(resourceArn=standin.resource_arn, secretArn=standin.secret_arn,
                                                      database=database, sql="SELECT 1"))
    assert isinstance(error, client.exceptions.SecretsErrorException)
    assert standin.secret_arn in error.response["Error"]["Message"]
    ok = client.execute_statement(resourceArn=standin.resource_arn, database=database, sql="SELECT 1",
                                  secretArn="arn:aws:secretsmanager:us-east-1:123456789012:secret:good-AbCdEf")
    assert ok["records"] == [[{"longValue": 1}]]


def test_database_resuming(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin()
    db = Db(make_client(standin), standin, database)
    standin.not_ready_for(2)
    for _ in range(2):
        error = error_of(lambda: db.execute("SELECT 1"))
        assert isinstance(error, db.client.exceptions.DatabaseResumingException)
        assert error.response["Error"]["Message"].startswith(f"The Aurora DB instance {standin.resource_arn} is "
                                                             "resuming after being auto-paused")
        assert error.response["ResponseMetadata"]["RetryAttempts"] == 0  # botocore leaves this to us
    assert db.rows("SELECT 1") == [[1]]
    assert standin.stats.errors["DatabaseResumingException"] == 2
    assert standin.stats.requests["ExecuteStatement"] == 3


def test_communications_link_failure(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin()
    db = Db(make_client(standin), standin, database)
    standin.not_ready_for(1, NotReadyKind.COMMUNICATIONS)
    error = error_of(lambda: db.begin())
    assert isinstance(error, db.client.exceptions.BadRequestException)
    assert error.response["Error"]["Message"].startswith("Communications link failure")
    db.commit(db.begin())


def test_unavailable_is_a_504_that_botocore_retries(make_standin: Callable[..., RdsDataStandIn],
                                                     database: str) -> None:
    standin = make_standin()
    client = make_client(standin, retries={"mode": "standard", "total_max_attempts": 3})
    db = Db(client, standin, database)
    standin.not_ready_for(2, NotReadyKind.UNAVAILABLE)
    result = db.execute("SELECT 1")
    assert result["ResponseMetadata"]["RetryAttempts"] == 2
    standin.not_ready_for(3, NotReadyKind.UNAVAILABLE)
    error = error_of(lambda: db.execute("SELECT 1"))
    assert isinstance(error, client.exceptions.DatabaseUnavailableException)
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 504


def test_injected_error(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin()
    db = Db(make_client(standin), standin, database)
    standin.fail_next(1, "StatementTimeoutException", "The statement timed out")
    assert isinstance(error_of(lambda: db.execute("SELECT 1")), db.client.exceptions.StatementTimeoutException)


def test_missing_database(make_standin: Callable[..., RdsDataStandIn]) -> None:
    standin = make_standin()
    db = Db(make_client(standin), standin, "svc_no_such_database")
    error = error_of(lambda: db.execute("SELECT 1"))
    assert error.response["Error"]["Code"] == "DatabaseErrorException"
    assert 'database "svc_no_such_database" does not exist' in error.response["Error"]["Message"]


def test_postgres_unreachable(make_standin: Callable[..., RdsDataStandIn]) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    standin = make_standin(postgres_url=f"postgresql://postgres@127.0.0.1:{port}/postgres")
    client = make_client(standin, retries={"mode": "standard", "total_max_attempts": 1})
    error = error_of(lambda: client.execute_statement(resourceArn=standin.resource_arn,
                                                      secretArn=standin.secret_arn, sql="SELECT 1"))
    assert isinstance(error, client.exceptions.DatabaseUnavailableException)


def test_recovers_after_its_connections_are_cut(make_standin: Callable[..., RdsDataStandIn]) -> None:
    with temporary_database(POSTGRES_URL, prefix="svc_rdsdata_cut") as own_database:
        standin = make_standin()
        db = Db(make_client(standin, retries={"mode": "standard", "total_max_attempts": 1}), standin, own_database)
        db.execute("SELECT 1")
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                          [own_database])
        try:  # the call that finds the dead connection may fail, as a real outage would
            db.execute("SELECT 1")
        except ClientError as error:
            assert error.response["Error"]["Code"] == "DatabaseUnavailableException"
        assert db.rows("SELECT 2") == [[2]]


def test_stop_leaves_no_connections_behind(make_standin: Callable[..., RdsDataStandIn]) -> None:
    with temporary_database(POSTGRES_URL, prefix="svc_rdsdata_stop") as own_database:
        standin = make_standin()
        db = Db(make_client(standin), standin, own_database)
        db.execute("SELECT 1")
        db.begin()  # left open on purpose
        assert connections_to(own_database) == 2
        standin.stop()
        deadline = time.monotonic() + 5
        while connections_to(own_database) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert connections_to(own_database) == 0


def connections_to(database: str) -> int:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [database]).fetchone()
    return row[0] if row else 0


def test_stats(make_standin: Callable[..., RdsDataStandIn], database: str) -> None:
    standin = make_standin()
    db = Db(make_client(standin), standin, database)
    transaction_id = db.begin()
    db.execute("SELECT 1", transactionId=transaction_id)
    db.commit(transaction_id)
    stats = standin.stats
    assert dict(stats.requests) == {"BeginTransaction": 1, "ExecuteStatement": 1, "CommitTransaction": 1}
    assert stats.total_requests == 3 and stats.statements == 1
    assert [c.operation for c in stats.recent] == ["BeginTransaction", "ExecuteStatement", "CommitTransaction"]
    assert 0 < stats.largest_request_bytes < 4096 and 0 < stats.largest_response_bytes < 1024
    old = standin.reset_stats()
    assert old.total_requests == 3 and standin.stats.total_requests == 0


def test_blob_round_trip_through_base64(db: Db) -> None:
    payload = os.urandom(1000)
    records = db.execute("SELECT :b::bytea AS b, length(:b) AS n", parameters=[param("b", payload)])["records"]
    # botocore base64-encodes blobValue on the wire both ways; the length proves the server decoded it.
    assert records == [[{"blobValue": payload}, {"longValue": 1000}]]
