"""What write fencing costs: write transactions per second with and without ``fence_writes``, per backend.

A fenced write transaction first reads the leader lease's epoch under a share lock (``svc.datastore.write_fence``):
one more statement, hence one more round trip, in every write transaction. This times small write transactions
(one ``begin_run`` upsert each, through ``SqlBase.write``) from 1 and from 8 threads, unfenced and fenced (two
datastore objects on one database, measured in turn, the best of a few rounds each), and prints the rates and the
cost per transaction. Figures only, no assertions.

    .venv/bin/python bench/lease_fence.py                          # PostgreSQL and the Data API stand-in
    .venv/bin/python bench/lease_fence.py --backends postgres,sqlite --seconds 5

PostgreSQL comes from $SVC_TEST_POSTGRES_URL, as for bench/datastore.py (a scratch database, dropped after).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datastore import aurora_backend, postgres_backend, sqlite_backend  # noqa: E402 (bench/datastore.py)

from svc.datastore import Datastore, open_datastore  # noqa: E402

BACKENDS = {"sqlite": sqlite_backend, "postgres": postgres_backend, "auroradataapi": aurora_backend}
STALE = timedelta(hours=1)


def rate(store: Datastore, threads: int, seconds: float, tag: str) -> float:
    """Write transactions per second that ``threads`` threads complete in ``seconds``."""
    done = [0] * threads
    stop = threading.Event()

    def work(index: int) -> None:
        n = 0
        while not stop.is_set():
            # Claims scope (tag, thread, n): every transaction an INSERT of its own, no conflicts between threads.
            store.begin_run("bench", f"{tag}-{index}-{n}", stale_after=STALE)
            n += 1
        done[index] = n

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    began = time.perf_counter()
    for worker in workers:
        worker.start()
    time.sleep(seconds)
    stop.set()
    for worker in workers:
        worker.join()
    return sum(done) / (time.perf_counter() - began)


def run(name: str, seconds: float, rounds: int, thread_counts: list[int]) -> None:
    with BACKENDS[name]() as (config, _extra):
        plain_store, fenced_store = open_datastore(config), open_datastore(config)  # two agents' worth of pools
        try:
            epoch = fenced_store.acquire_lease("bench", "http://bench", 3600)
            assert epoch is not None
            fenced_store.fence_writes(epoch)
            for store in (plain_store, fenced_store):
                rate(store, 1, min(seconds, 1.0), "warm")  # pools filled, statements cached
            for threads in thread_counts:
                # Alternated, best of each: on a shared machine the load of the moment sways a single pass more
                # than the fence does.
                plain = fenced = 0.0
                for round_ in range(rounds):
                    plain = max(plain, rate(plain_store, threads, seconds, f"plain{threads}-{round_}"))
                    fenced = max(fenced, rate(fenced_store, threads, seconds, f"fenced{threads}-{round_}"))
                cost_ms = (threads / fenced - threads / plain) * 1000
                print(f"{name:14s} {threads:2d} thread(s): unfenced {plain:8,.0f} tx/s, fenced {fenced:8,.0f} tx/s "
                      f"({fenced / plain:5.1%}); the fence adds {cost_ms:.2f} ms per transaction", flush=True)
        finally:
            plain_store.close()
            fenced_store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="postgres,auroradataapi")
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each, alternated; the best counts")
    parser.add_argument("--threads", default="1,8", help="thread counts, comma-separated")
    args = parser.parse_args()
    counts = [int(n) for n in args.threads.split(",")]
    for name in args.backends.split(","):
        run(name, args.seconds, args.rounds, counts)


if __name__ == "__main__":
    main()
