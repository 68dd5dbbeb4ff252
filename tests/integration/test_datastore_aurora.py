"""The ``auroradataapi`` backend against the rds-data stand-in: the 1 MiB caps, "not ready" answers, bad
settings, and the service's legacy error vocabulary. (The persistence contract itself runs on this backend
through the ``datastore`` fixture, with the other two backends.)"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from support.rdsdata import MIB, ErrorStyle, NotReadyKind, RdsDataStandIn, temporary_database
from svc.datastore import (
    ConflictError,
    Datastore,
    DatastoreConfigError,
    DatastoreError,
    DatastoreUnavailable,
    open_datastore,
    parse_query,
)
from svc.datastore import aurora as aurora_backend
from svc.datastore.dataapi_transport import RetryPolicy
from svc.model.records import ResourceWrite

PREFIX = "agent.datastore.auroraDataAPI"
BUCKET = "AWS::S3::Bucket"
ConfigFor = Callable[..., Any]


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waits of milliseconds instead of seconds for "not ready" answers."""
    monkeypatch.setattr(aurora_backend, "NOT_READY_RETRY", RetryPolicy(deadline_seconds=1.0, first_delay=0.01,
                                                                        max_delay=0.05))


@pytest.fixture
def database(postgres_server: Any) -> Iterator[str]:
    with temporary_database(postgres_server.url(), prefix="svc_aurora") as name:
        yield name


@pytest.fixture
def make_standin(postgres_server: Any, aws_test_credentials: None
                 ) -> Iterator[Callable[..., RdsDataStandIn]]:
    """Stand-ins of the test's own (fault injection and error styles must not leak into other tests)."""
    started: list[RdsDataStandIn] = []

    def make(**kwargs: Any) -> RdsDataStandIn:
        standin = RdsDataStandIn(postgres_server.url(), **kwargs)
        standin.start()
        started.append(standin)
        return standin

    yield make
    for standin in started:
        standin.stop()


@pytest.fixture
def store_and_standin(make_standin: Callable[..., RdsDataStandIn], database: str, aurora_datastore_config: ConfigFor) -> Iterator[tuple[Datastore, RdsDataStandIn]]:
    standin = make_standin()
    store = open_datastore(aurora_datastore_config(standin, database))
    try:
        yield store, standin
    finally:
        store.close()
        standin.stop()


def properties(n: int, size: int) -> dict[str, Any]:
    """About ``size`` bytes of JSON with what makes answers grow when escaped: quotes, backslashes,
    non-ASCII text."""
    filler = ('tag "quoted" \\ path ü€ ' * (size // 10 + 1))[: size - 64]
    return {"Name": f"bucket-{n}", "Description": filler, "Tags": [{"Key": "n", "Value": str(n)}]}


def writes(count: int, size: int) -> list[ResourceWrite]:
    return [ResourceWrite(type=BUCKET, label=f"r{n:05d}", stack=f"s{n % 7}", target="aws-eu",
                          native_id=f"native-{n}", properties=properties(n, size)) for n in range(count)]


def assert_within_caps(standin: RdsDataStandIn) -> None:
    stats = standin.stats
    assert stats.rejected_requests == 0 and stats.rejected_responses == 0, stats.errors
    assert not stats.errors, stats.errors
    assert stats.largest_request_bytes <= MIB and stats.largest_response_bytes <= MIB


# -- the 1 MiB caps -----------------------------------------------------------------------------------------

def test_ten_thousand_resources_of_4_kb_are_written_and_listed_within_the_caps(
        store_and_standin: tuple[Datastore, RdsDataStandIn]) -> None:
    store, standin = store_and_standin
    standin.reset_stats()
    batch = writes(10_000, 4096)
    for start in range(0, len(batch), 2000):
        outcomes = store.store_resources(batch[start:start + 2000])
        assert all(outcome.operation == "create" for outcome in outcomes)
    written = standin.reset_stats()
    assert_within_caps(standin)
    # The writes were split into requests that use the cap, not one request per resource.
    assert written.largest_request_bytes > MIB // 2
    assert written.requests["BatchExecuteStatement"] < 200  # ~10 kB per row as sent (escaped twice): ~100 requests

    labels: list[str] = []
    cursor = None
    while True:
        page = store.list_resources(cursor=cursor, limit=200)
        assert all(len(r.properties["Description"]) == 4096 - 64 for r in page.items)
        labels.extend(r.label for r in page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert labels == [f"r{n:05d}" for n in range(10_000)]
    big_pages = store.list_resources(parse_query("stack:s3"), limit=1000)  # 1,000 × 4 KB: ~5 MB of answers
    assert len(big_pages.items) == 1000 and big_pages.next_cursor is not None
    assert store.count_resources() == 10_000
    read = standin.stats
    assert_within_caps(standin)
    assert read.largest_response_bytes > MIB // 2  # pages are cut near the cap, not row by row

    # Updating them all (the lookup reads every current version back) stays within the caps too.
    again = [ResourceWrite(type=w.type, label=w.label, stack=w.stack, target=w.target, native_id=w.native_id,
                           properties=w.properties | {"Round": 2}) for w in batch[:3000]]
    assert all(outcome.operation == "update" for outcome in store.store_resources(again))
    assert_within_caps(standin)


def test_a_record_over_the_row_limit_is_read_back_in_slices(
        store_and_standin: tuple[Datastore, RdsDataStandIn]) -> None:
    store, standin = store_and_standin
    large = properties(1, 300_000)  # under the request cap, over the 64 KB row limit of answers
    outcome = store.store_resource(ResourceWrite(type=BUCKET, label="large", stack="s", target="t",
                                                 native_id="n-large", properties=large))
    store.store_resources(writes(50, 4096))
    current = store.get_resource(outcome.ksuid)
    assert current is not None and current.properties == large
    listed = {r.label: r for r in store.list_resources(limit=1000).items}
    assert len(listed) == 51 and listed["large"].properties == large
    assert_within_caps(standin)


def test_a_record_over_the_request_cap_is_refused_naming_the_resource(
        store_and_standin: tuple[Datastore, RdsDataStandIn]) -> None:
    store, standin = store_and_standin
    huge = ResourceWrite(type=BUCKET, label="huge-one", stack="prod", target="t", native_id="n-huge",
                         properties={"Blob": "x" * (MIB + 10)})
    with pytest.raises(DatastoreError) as caught:
        store.store_resources(writes(3, 100) + [huge])
    message = str(caught.value)
    assert "huge-one" in message and BUCKET in message and "too large" in message and "\n" not in message
    assert store.count_resources() == 0  # the whole chunk was rolled back
    assert standin.stats.rejected_requests == 0  # refused before sending


# -- "not ready" ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(NotReadyKind))
def test_not_ready_answers_are_retried(store_and_standin: tuple[Datastore, RdsDataStandIn], fast_retries: None,
                                       kind: NotReadyKind) -> None:
    store, standin = store_and_standin
    standin.not_ready_for(3, kind)
    store.create_stack("after-resume")
    assert store.get_stack("after-resume") is not None
    assert sum(standin.stats.errors.values()) == 3


def test_a_database_that_stays_unready_is_unavailable_naming_the_cluster(
        make_standin: Callable[..., RdsDataStandIn], database: str, fast_retries: None, aurora_datastore_config: ConfigFor) -> None:
    standin = make_standin()
    standin.not_ready_for(10_000)
    with pytest.raises(DatastoreUnavailable) as at_start:
        open_datastore(aurora_datastore_config(standin, database))
    message = str(at_start.value)
    assert standin.resource_arn in message and "not ready" in message and "\n" not in message
    assert at_start.value.setting == f"{PREFIX}.clusterArn"


def test_a_database_that_pauses_while_running_is_unavailable_then_back(
        make_standin: Callable[..., RdsDataStandIn], database: str, fast_retries: None, aurora_datastore_config: ConfigFor,
        caplog: pytest.LogCaptureFixture) -> None:
    """An outage like PostgreSQL's: ``DatastoreUnavailable`` while it lasts, logged once when it starts and once
    when it ends (``svc.datastore.outage``)."""
    standin = make_standin()
    store = open_datastore(aurora_datastore_config(standin, database))
    caplog.set_level(logging.INFO, logger="svc.datastore")
    try:
        store.create_stack("kept")
        standin.not_ready_for(500, NotReadyKind.UNAVAILABLE)
        with pytest.raises(DatastoreUnavailable) as caught:
            store.get_stack("kept")
        assert standin.resource_arn in str(caught.value) and "\n" not in str(caught.value)
        with pytest.raises(DatastoreUnavailable):
            store.ping()
        standin.stop()  # drops the rest of the injected answers with the server
        revived = RdsDataStandIn(standin.postgres_url, port=standin.port)
        revived.start()
        try:
            assert store.get_stack("kept") is not None
        finally:
            revived.stop()
    finally:
        store.close()
    outage = [r.getMessage() for r in caplog.records if "datastore outage" in r.getMessage()]
    assert len(outage) == 2 and outage[0].startswith("datastore outage began: ") and standin.resource_arn in outage[0]
    assert outage[1].startswith("datastore outage ended: ") and "2 operation(s) failed meanwhile" in outage[1]
    # The Data API's own retries of a database that is not ready: one line when they start, one when it answers.
    waiting = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Data API: ")]
    assert len(waiting) == 2 and "database not ready" in waiting[0] and waiting[1].endswith("answers again"), waiting


# -- settings -------------------------------------------------------------------------------------------------

def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("overrides, setting, words", [
    ({"clusterArn": "my-cluster"}, "clusterArn", ["'my-cluster' is not an Aurora cluster ARN"]),
    ({"clusterArn": ""}, "clusterArn", ["empty"]),
    ({"secretArn": "arn:aws:iam::123456789012:role/x"}, "secretArn", ["not a Secrets Manager secret ARN"]),
    ({"secretArn": ""}, "secretArn", ["empty"]),
    ({"database": ""}, "database", ["no database"]),
    ({"region": "eu-west-1"}, "region", ["'eu-west-1' differs", "'us-east-1'"]),
])
def test_malformed_settings_give_one_line_naming_the_setting(
        rdsdata_standin: RdsDataStandIn, overrides: dict[str, str], setting: str, words: list[str], aurora_datastore_config: ConfigFor) -> None:
    with pytest.raises(DatastoreConfigError) as caught:
        open_datastore(aurora_datastore_config(rdsdata_standin, "svc", **overrides))
    message = str(caught.value)
    assert caught.value.setting == f"{PREFIX}.{setting}" and f"{PREFIX}.{setting}" in message
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("style", list(ErrorStyle))
def test_a_secret_the_service_cannot_use_names_secret_arn(
        make_standin: Callable[..., RdsDataStandIn], database: str, style: ErrorStyle, aurora_datastore_config: ConfigFor) -> None:
    standin = make_standin(valid_secret_arns=["arn:aws:secretsmanager:us-east-1:123456789012:secret:right-AbCdEf"],
                           error_style=style)
    with pytest.raises(DatastoreConfigError) as caught:
        open_datastore(aurora_datastore_config(standin, database))
    message = str(caught.value)
    assert caught.value.setting == f"{PREFIX}.secretArn" and f"{PREFIX}.secretArn" in message
    assert "\n" not in message and standin.resource_arn in message


def test_a_missing_database_names_the_database_setting(rdsdata_standin: RdsDataStandIn, aurora_datastore_config: ConfigFor) -> None:
    with pytest.raises(DatastoreConfigError) as caught:
        open_datastore(aurora_datastore_config(rdsdata_standin, "svc_no_such_database"))
    message = str(caught.value)
    assert caught.value.setting == f"{PREFIX}.database" and "svc_no_such_database" in message
    assert "does not exist" in message and "\n" not in message


def test_an_unreachable_endpoint_names_the_endpoint(rdsdata_standin: RdsDataStandIn, fast_retries: None, aurora_datastore_config: ConfigFor) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(DatastoreUnavailable) as caught:
        open_datastore(aurora_datastore_config(rdsdata_standin, "svc", endpoint=endpoint))
    message = str(caught.value)
    assert caught.value.setting == f"{PREFIX}.endpoint" and endpoint in message and "\n" not in message


@pytest.mark.parametrize("code, words", [
    ("HttpEndpointNotEnabledException", "Data API is not enabled"),
    ("AccessDeniedException", "AWS refused"),
])
def test_a_cluster_the_agent_cannot_use_names_cluster_arn(
        make_standin: Callable[..., RdsDataStandIn], database: str, code: str, words: str, aurora_datastore_config: ConfigFor) -> None:
    standin = make_standin()
    standin.fail_next(1, code, "HTTP endpoint is not enabled" if "Http" in code else "not authorized")
    with pytest.raises(DatastoreConfigError) as caught:
        open_datastore(aurora_datastore_config(standin, database))
    assert caught.value.setting == f"{PREFIX}.clusterArn" and words in str(caught.value)


# -- the legacy (Serverless v1) error vocabulary --------------------------------------------------------------

def test_the_legacy_error_style_maps_to_the_same_outcomes(make_standin: Callable[..., RdsDataStandIn],
                                                          database: str, aurora_datastore_config: ConfigFor) -> None:
    standin = make_standin(error_style=ErrorStyle.LEGACY)
    store = open_datastore(aurora_datastore_config(standin, database))
    try:
        store.create_stack("one")
        with pytest.raises(ConflictError):
            store.create_stack("one")
        store.store_resource(ResourceWrite(type=BUCKET, label="a", stack="s", target="t", native_id="n1",
                                           properties={}))
        # A second managed "a" in the stack: a unique violation relayed as BadRequestException (with its
        # SQLSTATE), retried as a possible race, then refused.
        with pytest.raises(ConflictError):
            store.store_resource(ResourceWrite(type=BUCKET, label="a", stack="s", target="t", native_id="n2",
                                               properties={}))
        assert store.count_resources() == 1
    finally:
        store.close()


def test_an_oversized_answer_is_a_clear_error(store_and_standin: tuple[Datastore, RdsDataStandIn]) -> None:
    store, standin = store_and_standin
    standin.fail_next(1, "UnsupportedResultException", "Database returned more than the allowed response size limit")
    with pytest.raises(DatastoreError) as caught:
        store.get_stack("x")
    assert "too large" in str(caught.value) and "\n" not in str(caught.value)

