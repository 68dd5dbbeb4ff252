"""Datastore benchmark: loads resource versions through the public interface, then times current-state pages.

Prints, per backend: insert rate (versions/s, batched ingest and one write per transaction), the time
to read one page of 200 current resources (p50/p95, walking pages by cursor and with a stack filter), and
peak memory (Python heap during the reads, and the process's max RSS). Figures only, no assertions.

    .venv/bin/python bench/datastore.py                       # 100,000 versions on every backend
    .venv/bin/python bench/datastore.py --versions 20000 --backends sqlite,auroradataapi

PostgreSQL comes from $SVC_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/postgres; see
scripts/ensure-postgres.sh); the bench creates a scratch database there and drops it afterwards. The
``auroradataapi`` backend runs through the local rds-data stand-in (tests/support/rdsdata) over that same
PostgreSQL, with the service's 1 MiB limits: its line adds the Data API calls made, the largest request
and answer, and how many the stand-in rejected (always 0 unless the paging is broken). Its figures are
local HTTP round trips: against AWS every call costs a network round trip more.
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from svc.config.model import DatastoreConfig
from svc.datastore import Datastore, open_datastore, parse_query
from svc.model.records import ResourceWrite

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.rdsdata import RdsDataStandIn, temporary_database  # noqa: E402 (the stand-in lives with the tests)

PAGE = 200
VERSIONS_PER_RESOURCE = 5
STACKS = 50


Extra = Callable[[], str]  # a backend's extra figures, printed after the common ones


def config(datastore_type: str, sqlite_path: str = "", postgres: dict[str, object] | None = None,
           aurora: dict[str, object] | None = None) -> DatastoreConfig:
    pg = {"host": "localhost", "port": 5432, "user": "postgres", "password": "", "database": "svc", "schema": "",
          "connectionParams": ""} | (postgres or {})
    au = {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""} | (aurora or {})
    return DatastoreConfig.model_validate({
        "datastoreType": datastore_type, "sqlite": {"filePath": sqlite_path}, "postgres": pg, "auroraDataAPI": au})


def postgres_url() -> str:
    return os.environ.get("SVC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextmanager
def sqlite_backend() -> Iterator[tuple[DatastoreConfig, Extra]]:
    with tempfile.TemporaryDirectory() as directory:
        yield config("sqlite", sqlite_path=str(Path(directory) / "bench.db")), lambda: ""


@contextmanager
def postgres_backend() -> Iterator[tuple[DatastoreConfig, Extra]]:
    url = postgres_url()
    params = conninfo_to_dict(url)
    name = f"svc_bench_{secrets.token_hex(4)}"
    admin = {"host": params.get("host", "127.0.0.1"), "port": int(params.get("port", 5432)),
             "user": params.get("user", "postgres"), "password": params.get("password", "")}
    with psycopg.connect(dbname=params.get("dbname", "postgres"), autocommit=True, **admin) as conn:  # type: ignore[arg-type]
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield config("postgres", postgres={**admin, "database": name}), lambda: ""
    finally:
        with psycopg.connect(dbname=params.get("dbname", "postgres"), autocommit=True, **admin) as conn:  # type: ignore[arg-type]
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def aurora_backend() -> Iterator[tuple[DatastoreConfig, Extra]]:
    """The Data API backend through the rds-data stand-in, on a scratch database, with dummy credentials."""
    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench"),
                        ("AWS_CONFIG_FILE", os.devnull), ("AWS_SHARED_CREDENTIALS_FILE", os.devnull)):
        os.environ.setdefault(name, value)
    with temporary_database(postgres_url(), prefix="svc_bench") as database, \
            RdsDataStandIn(postgres_url()) as standin:
        def extra() -> str:
            stats = standin.stats
            return (f"  Data API: {stats.total_requests:,} calls, largest request {stats.largest_request_bytes:,} B, "
                    f"largest answer {stats.largest_response_bytes:,} B, rejected "
                    f"{stats.rejected_requests + stats.rejected_responses}")

        yield config("auroradataapi", aurora={
            "clusterArn": standin.resource_arn, "secretArn": standin.secret_arn, "database": database,
            "region": "us-east-1", "endpoint": standin.endpoint_url}), extra
        standin.backend.close()  # its idle sessions would keep the scratch database from being dropped


def resource_write(n: int, round_: int, ksuid: str | None, prefix: str = "res") -> ResourceWrite:
    return ResourceWrite(
        type=("AWS::S3::Bucket", "AWS::EC2::Instance", "AWS::IAM::Role")[n % 3], label=f"{prefix}-{n:06d}",
        stack=f"stack-{n % STACKS:02d}", target="aws-eu", native_id=f"{prefix}-native-{n}", ksuid=ksuid,
        properties={"Name": f"{prefix}-{n}", "Round": round_, "Tags": [{"Key": "team", "Value": "x" * 64}]})


def load(store: Datastore, versions: int, batch: int) -> float:
    """Stores ``versions`` versions (5 per resource: a create and 4 property changes) through
    ``store_resources`` in batches of ``batch`` (the ingest path); returns versions/s."""
    resources = max(1, versions // VERSIONS_PER_RESOURCE)
    ksuids: list[str | None] = [None] * resources
    started = time.perf_counter()
    for round_ in range(VERSIONS_PER_RESOURCE):
        for first in range(0, resources, batch):
            numbers = range(first, min(first + batch, resources))
            outcomes = store.store_resources([resource_write(n, round_, ksuids[n]) for n in numbers])
            for n, outcome in zip(numbers, outcomes, strict=True):
                ksuids[n] = outcome.ksuid
    return resources * VERSIONS_PER_RESOURCE / (time.perf_counter() - started)


def load_one_by_one(store: Datastore, versions: int) -> float:
    """Versions/s through ``store_resource``: one transaction (and commit) per version."""
    started = time.perf_counter()
    ksuids: list[str] = []
    for n in range(versions):
        round_, index = divmod(n, max(1, versions // 2))
        outcome = store.store_resource(resource_write(index, round_, ksuids[index] if round_ else None, prefix="one"))
        if not round_:
            ksuids.append(outcome.ksuid)
    return versions / (time.perf_counter() - started)


def time_pages(store: Datastore, pages: int) -> tuple[list[float], list[float]]:
    """Seconds per page of 200 current resources: a cursor walk, and stack-filtered first pages."""
    walk: list[float] = []
    cursor = None
    for _ in range(pages):
        started = time.perf_counter()
        page = store.list_resources(cursor=cursor, limit=PAGE)
        walk.append(time.perf_counter() - started)
        cursor = page.next_cursor
        if cursor is None:
            break
    filtered: list[float] = []
    for n in range(pages):
        started = time.perf_counter()
        store.list_resources(parse_query(f"stack:stack-{n % STACKS:02d} type:AWS::*"), limit=PAGE)
        filtered.append(time.perf_counter() - started)
    return walk, filtered


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run(name: str, datastore_config: DatastoreConfig, extra: Extra, versions: int, pages: int, batch: int,
        single: int) -> None:
    store = open_datastore(datastore_config)
    try:
        rate = load(store, versions, batch)
        single_rate = load_one_by_one(store, single)
        time_pages(store, 5)  # warm caches and the pool
        walk, filtered = time_pages(store, pages)
        timings = walk + filtered
        # The heap is measured in a pass of its own: tracing allocations slows Python several times over, which
        # would inflate the timings of the backends whose reads run more Python (the Data API's JSON).
        tracemalloc.start()
        time_pages(store, pages)
        _, heap_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        store.close()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{name:10s} versions={versions:>7,d}  insert {rate:>7,.0f} versions/s (batches of {batch}), "
          f"{single_rate:>6,.0f}/s one by one  "
          f"page of {PAGE}: p50 {statistics.median(timings) * 1000:6.2f} ms  "
          f"p95 {percentile(timings, 0.95) * 1000:6.2f} ms  "
          f"({len(timings)} pages; p95 of the cursor walk {percentile(walk, 0.95) * 1000:.2f} ms, of the "
          f"stack-filtered {percentile(filtered, 0.95) * 1000:.2f} ms)  "
          f"peak heap during reads {heap_peak / 2**20:5.1f} MiB  max RSS {rss_mb:6.1f} MiB"
          + extra(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=100_000)
    parser.add_argument("--pages", type=int, default=100, help="pages timed per pass (two passes); as many as the "
                                                                "resources fill walk the whole inventory")
    parser.add_argument("--backends", default="sqlite,postgres,auroradataapi")
    parser.add_argument("--batch", type=int, default=500, help="writes per store_resources call")
    parser.add_argument("--single", type=int, default=2000, help="extra versions stored one by one")
    args = parser.parse_args()
    backends = {"sqlite": sqlite_backend, "postgres": postgres_backend, "auroradataapi": aurora_backend}
    for name in args.backends.split(","):
        with backends[name]() as (datastore_config, extra):
            run(name, datastore_config, extra, args.versions, args.pages, args.batch, args.single)


if __name__ == "__main__":
    main()
