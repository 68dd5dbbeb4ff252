"""Reaping a target and recovering it: the two transactions that touch every resource on the target at once.

For each backend, a target with ``--size`` resources (in 10 stacks) is made unreachable by observations with
explicit times, reaped (``Datastore.reap_target``: one compare-and-swap, the resources set aside, the audit row),
then declared again (``put_target``: a fresh incarnation, its resources live again). Prints each transaction's
wall time; asserts nothing.

    .venv/bin/python bench/reaping.py                       # sqlite and postgres, 10,000 resources
    .venv/bin/python bench/reaping.py --size 50000 --backend sqlite
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

from datastore import postgres_backend, sqlite_backend

from svc.datastore import open_datastore
from svc.model.records import ResourceWrite, TargetWrite

BACKENDS = {"sqlite": sqlite_backend, "postgres": postgres_backend}


def measure(backend: str, size: int) -> None:
    with BACKENDS[backend]() as (config, _):
        store = open_datastore(config)
        try:
            store.put_target(TargetWrite("eu", "FAKE", {}))
            store.store_resources([ResourceWrite("FAKE::Test::Item", f"r{n}", f"stack-{n % 10}", "eu", {"Value": n},
                                                 native_id=f"native-{n}") for n in range(size)])
            start = datetime.now(UTC)
            for step in range(3):
                store.observe_target("eu", reachable=False, at=start + timedelta(seconds=30 * step), max_gap=60)
            target = store.get_target("eu")
            assert target is not None
            began = time.perf_counter()
            reap = store.reap_target("eu", target.incarnation_id, threshold=60, at=start + timedelta(seconds=61))
            reaped = time.perf_counter() - began
            assert reap is not None and reap.resource_count == size
            began = time.perf_counter()
            store.put_target(TargetWrite("eu", "FAKE", {}))
            recovered = time.perf_counter() - began
            assert store.count_resources(target="eu") == size
            print(f"{backend:>8}: {size:,} resources: reap {reaped * 1000:,.0f} ms, "
                  f"recovery {recovered * 1000:,.0f} ms")
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--backend", choices=sorted(BACKENDS), action="append")
    args = parser.parse_args()
    for backend in args.backend or sorted(BACKENDS, reverse=True):
        measure(backend, args.size)


if __name__ == "__main__":
    main()
