"""Engine benchmark: the engine in process on the embedded SQLite datastore, driving the FAKE plugin.

Prints, for chains of references (N/10 chains of 10) at zero plugin latency: the apply from submission
to Success, the no-op re-apply (plan only), and the destroy, at 1,000 and 10,000 resources; then, with
20 ms latency per plugin call, 400 resources in chains of depth 4: wall time ÷ the lower bound set by
the critical path and the in-flight limit, ``--repeat`` times (the first run pays the process's cold
caches: SQL compilation, lazy imports). Ends with the process's peak RSS. Figures only.

    .venv/bin/python bench/engine.py                 # 1,000 and 10,000
    .venv/bin/python bench/engine.py --sizes 1000    # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from svc_plugin_fake import FakeCloud  # noqa: E402

from support.engine import fake_forma, item, make_engine  # noqa: E402
from svc.config.model import DatastoreConfig  # noqa: E402
from svc.datastore import open_datastore  # noqa: E402
from svc.engine.operations import RetryPolicy  # noqa: E402
from svc.engine.service import ApplyRequest, Caller, DestroyRequest  # noqa: E402

CALLER = Caller("bench")
IN_FLIGHT = 64


def _config(path: Path) -> DatastoreConfig:
    return DatastoreConfig.model_validate({
        "datastoreType": "sqlite", "sqlite": {"filePath": str(path)},
        "postgres": {"host": "", "port": 5432, "user": "", "password": "", "database": "", "schema": "",
                     "connectionParams": ""},
        "auroraDataAPI": {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""}})


def chains(cloud: Path, size: int, depth: int):  # type: ignore[no-untyped-def]
    resources = [item(f"c{c}-{d}", f"v{d}", ref=f"c{c}-{d - 1}" if d else None)
                 for c in range(size // depth) for d in range(depth)]
    return fake_forma(cloud, resources)


async def scale(size: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = open_datastore(_config(root / "svc.db"))
        engine = make_engine(store, root / "key", rate=1_000_000, max_in_flight=IN_FLIGHT)
        await engine.start()
        forma = chains(root / "cloud.db", size, 10)
        started = time.perf_counter()
        response = await engine.apply(ApplyRequest(forma, "reconcile"), CALLER)
        view = await engine.wait(response.CommandId)
        apply_s = time.perf_counter() - started
        assert view is not None and view.State == "Success", view and view.State
        started = time.perf_counter()
        again = await engine.apply(ApplyRequest(forma, "reconcile"), CALLER)
        noop_s = time.perf_counter() - started
        assert not again.Simulation.ChangesRequired
        started = time.perf_counter()
        response = await engine.destroy(DestroyRequest(forma=forma), CALLER)
        view = await engine.wait(response.CommandId)
        destroy_s = time.perf_counter() - started
        assert view is not None and view.State == "Success" and not FakeCloud(root / "cloud.db").resources()
        await engine.stop()
        store.close()
    print(f"{size:>6} resources  apply {apply_s:7.2f} s ({size / apply_s:6.0f}/s)   no-op re-apply {noop_s:6.2f} s"
          f"   destroy {destroy_s:7.2f} s", flush=True)


async def latency(size: int = 400, depth: int = 4, delay: float = 0.02) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = open_datastore(_config(root / "svc.db"))
        retry = RetryPolicy(max_retries=3, retry_delay=0.01, status_interval=0.01, call_timeout=30)
        engine = make_engine(store, root / "key", retry=retry, rate=1_000_000, max_in_flight=IN_FLIGHT)
        await engine.start()
        FakeCloud(root / "cloud.db").set_knob("latency", {"*": delay})
        forma = chains(root / "cloud.db", size, depth)
        started = time.perf_counter()
        response = await engine.apply(ApplyRequest(forma, "reconcile"), CALLER)
        submitted = time.perf_counter()
        view = await engine.wait(response.CommandId)
        wall = time.perf_counter() - started
        assert view is not None and view.State == "Success" and view.StartTs and view.EndTs
        await engine.stop()
        store.close()
    calls_per_resource = 1  # a create is one plugin call; references resolve from stored state
    critical = depth * calls_per_resource * delay
    throughput = size * calls_per_resource * delay / IN_FLIGHT
    bound = max(critical, throughput)
    # The command's StartTs→EndTs: from its record (after planning) to its final state, i.e. storing the
    # command and executing it, without planning before or building the final view after.
    executed = (view.EndTs - view.StartTs).total_seconds()
    print(f"latency {delay * 1000:.0f} ms, {size} resources, depth {depth}, {IN_FLIGHT} in flight: wall {wall:.3f} s "
          f"(submit {submitted - started:.3f} s, command StartTs→EndTs {executed:.3f} s), lower bound {bound:.3f} s "
          f"(critical path {critical:.3f} s, in-flight limit {throughput:.3f} s), ratio {wall / bound:.2f} "
          f"(StartTs→EndTs alone {executed / bound:.2f}; goal ≤ 1.3)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3, help="latency runs (the first in a cold process)")
    args = parser.parse_args()
    for size in args.sizes:
        asyncio.run(scale(size))
    for _ in range(args.repeat):
        asyncio.run(latency())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
