"""Datastore benchmark: loads resource versions through the public interface, then times current-state pages.

Prints, per backend: insert rate (versions/s, batched ingest and one write per transaction), the time
to read one page of 200 current resources (p50/p95, walking pages by cursor and with a stack filter), and
peak memory (Python heap during the reads, and the process's max RSS). Figures only, no assertions.

    .venv/bin/python bench/datastore.py                       # 100,000 versions on sqlite and postgres
    .venv/bin/python bench/datastore.py --versions 20000 --backends sqlite

PostgreSQL comes from $SVC_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/postgres; see
scripts/ensure-postgres.sh); the bench creates a scratch database there and drops it afterwards.
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from svc.config.model import DatastoreConfig
from svc.datastore import Datastore, ResourceWrite, open_datastore, parse_query

PAGE = 200
VERSIONS_PER_RESOURCE = 5
STACKS = 50


def config(datastore_type: str, sqlite_path: str = "", postgres: dict[str, object] | None = None) -> DatastoreConfig:
    pg = {"host": "localhost", "port": 5432, "user": "postgres", "password": "", "database": "svc", "schema": "",
          "connectionParams": ""} | (postgres or {})
    return DatastoreConfig.model_validate({
        "datastoreType": datastore_type, "sqlite": {"filePath": sqlite_path}, "postgres": pg,
        "auroraDataAPI": {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""}})


@contextmanager
def sqlite_backend() -> Iterator[DatastoreConfig]:
    with tempfile.TemporaryDirectory() as directory:
        yield config("sqlite", sqlite_path=str(Path(directory) / "bench.db"))


@contextmanager
def postgres_backend() -> Iterator[DatastoreConfig]:
    url = os.environ.get("SVC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    params = conninfo_to_dict(url)
    name = f"svc_bench_{secrets.token_hex(4)}"
    admin = {"host": params.get("host", "127.0.0.1"), "port": int(params.get("port", 5432)),
             "user": params.get("user", "postgres"), "password": params.get("password", "")}
    with psycopg.connect(dbname=params.get("dbname", "postgres"), autocommit=True, **admin) as conn:  # type: ignore[arg-type]
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield config("postgres", postgres={**admin, "database": name})
    finally:
        with psycopg.connect(dbname=params.get("dbname", "postgres"), autocommit=True, **admin) as conn:  # type: ignore[arg-type]
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


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


def time_pages(store: Datastore, pages: int) -> list[float]:
    """Seconds per page of 200 current resources: a cursor walk, then stack-filtered first pages."""
    timings: list[float] = []
    cursor = None
    for _ in range(pages):
        started = time.perf_counter()
        page = store.list_resources(cursor=cursor, limit=PAGE)
        timings.append(time.perf_counter() - started)
        cursor = page.next_cursor
        if cursor is None:
            break
    for n in range(pages):
        started = time.perf_counter()
        store.list_resources(parse_query(f"stack:stack-{n % STACKS:02d} type:AWS::*"), limit=PAGE)
        timings.append(time.perf_counter() - started)
    return timings


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run(name: str, datastore_config: DatastoreConfig, versions: int, pages: int, batch: int, single: int) -> None:
    store = open_datastore(datastore_config)
    try:
        rate = load(store, versions, batch)
        single_rate = load_one_by_one(store, single)
        time_pages(store, 5)  # warm caches and the pool
        tracemalloc.start()
        timings = time_pages(store, pages)
        _, heap_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        store.close()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{name:10s} versions={versions:>7,d}  insert {rate:>7,.0f} versions/s (batches of {batch}), "
          f"{single_rate:>6,.0f}/s one by one  "
          f"page of {PAGE}: p50 {statistics.median(timings) * 1000:6.2f} ms  "
          f"p95 {percentile(timings, 0.95) * 1000:6.2f} ms  "
          f"({len(timings)} pages)  peak heap during reads {heap_peak / 2**20:5.1f} MiB  max RSS {rss_mb:6.1f} MiB",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=100_000)
    parser.add_argument("--pages", type=int, default=100, help="pages timed per pass (two passes)")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--batch", type=int, default=500, help="writes per store_resources call")
    parser.add_argument("--single", type=int, default=2000, help="extra versions stored one by one")
    args = parser.parse_args()
    backends = {"sqlite": sqlite_backend, "postgres": postgres_backend}
    for name in args.backends.split(","):
        with backends[name]() as datastore_config:
            run(name, datastore_config, args.versions, args.pages, args.batch, args.single)


if __name__ == "__main__":
    main()
