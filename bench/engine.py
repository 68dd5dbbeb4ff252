"""Engine benchmark: the engine in process on the embedded SQLite datastore, driving the FAKE plugin.

Prints, for chains of references (N/10 chains of 10) at zero plugin latency: the apply from submission
to Success, the no-op re-apply (plan only), and the destroy, at 1,000 and 10,000 resources, each with the
CPU seconds the process spent and the seconds its cyclic collector ran (each submission admitted as the agent's
API admits it: ``svc.collector.admitting``); then, with 20 ms latency per plugin call, 400 resources in chains of
depth 4: wall time ÷ the lower bound set by the critical path and the in-flight limit (``engine_floor`` says exactly
how the bound is computed, and measures the FAKE plugin's own share), ``--repeat`` times (the first run pays
the process's cold caches: SQL compilation, lazy imports). Ends with the process's peak RSS. Figures only.

The plugin runs in this process (``InProcessRunner``), so its work shares the interpreter with the engine's;
``engine_cli.py`` runs the real agent with the plugin in its own process.

    .venv/bin/python bench/engine.py                 # 1,000 and 10,000
    .venv/bin/python bench/engine.py --sizes 1000    # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from engine_floor import Bound, count_calls, plugin_floor  # noqa: E402
from svc_plugin_fake import FakeCloud  # noqa: E402

from support.datastores import sqlite_config  # noqa: E402
from support.engine import fake_forma, item, make_engine, shown  # noqa: E402
from svc.agent.lifecycle import SWITCH_INTERVAL  # noqa: E402
from svc.collector import admitting, tune_collector  # noqa: E402
from svc.datastore import open_datastore  # noqa: E402
from svc.engine.operations import RetryPolicy  # noqa: E402
from svc.engine.service import ApplyRequest, Caller, DestroyRequest  # noqa: E402
from svc.plugins.runner import InProcessRunner  # noqa: E402

CALLER = Caller("bench")
IN_FLIGHT = 64


def chains(cloud: Path, size: int, depth: int):  # type: ignore[no-untyped-def]
    resources = [item(f"c{c}-{d}", f"v{d}", ref=f"c{c}-{d - 1}" if d else None)
                 for c in range(size // depth) for d in range(depth)]
    return fake_forma(cloud, resources)


class _CollectorClock:
    """The seconds the cyclic collector has run in this process (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.total, self._started = 0.0, 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, _: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._started


COLLECTOR = _CollectorClock()


class Timer:
    """Wall, process CPU and collector seconds since it started."""

    def __init__(self) -> None:
        self.wall, self.cpu, self.collector = time.perf_counter(), time.process_time(), COLLECTOR.total

    def __str__(self) -> str:
        return (f"{time.perf_counter() - self.wall:7.2f} s (CPU {time.process_time() - self.cpu:6.2f} s, "
                f"collector {COLLECTOR.total - self.collector:5.2f} s)")


async def scale(size: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = open_datastore(sqlite_config(root / "svc.db"))
        engine = make_engine(store, root / "key", rate=1_000_000, max_in_flight=IN_FLIGHT)
        await engine.start()
        forma = chains(root / "cloud.db", size, 10)
        timer = Timer()
        with admitting() as admitted:  # as the agent's API admits a submission
            response = await shown(engine).apply(ApplyRequest(forma, "reconcile"), CALLER)
            admitted.started = True
        view = await shown(engine).wait(response.CommandId)
        applied = str(timer)
        assert view is not None and view.State == "Success", view and view.State
        timer = Timer()
        with admitting():
            again = await shown(engine).apply(ApplyRequest(forma, "reconcile"), CALLER)
        noop = str(timer)
        assert not again.Simulation.ChangesRequired
        timer = Timer()
        with admitting() as admitted:
            response = await shown(engine).destroy(DestroyRequest(forma=forma), CALLER)
            admitted.started = True
        view = await shown(engine).wait(response.CommandId)
        destroyed = str(timer)
        assert view is not None and view.State == "Success" and not FakeCloud(root / "cloud.db").resources()
        await engine.stop()
        store.close()
    print(f"{size:>6} resources  apply {applied}   no-op re-apply {noop}   destroy {destroyed}", flush=True)


async def latency(size: int = 400, depth: int = 4, delay: float = 0.02) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = open_datastore(sqlite_config(root / "svc.db"))
        retry = RetryPolicy(max_retries=3, retry_delay=0.01, status_interval=0.01, call_timeout=30)
        engine = make_engine(store, root / "key", retry=retry, rate=1_000_000, max_in_flight=IN_FLIGHT)
        calls = count_calls(engine.gateway.runners["FAKE"])
        await engine.start()
        FakeCloud(root / "cloud.db").set_knob("latency", {"*": delay})
        forma = chains(root / "cloud.db", size, depth)
        started = time.perf_counter()
        response = await shown(engine).apply(ApplyRequest(forma, "reconcile"), CALLER)
        submitted = time.perf_counter()
        view = await shown(engine).wait(response.CommandId)
        wall = time.perf_counter() - started
        assert view is not None and view.State == "Success" and view.StartTs and view.EndTs
        await engine.stop()
        store.close()
        floor_runner = InProcessRunner.load("FAKE", {}, max_threads=IN_FLIGHT)
        FakeCloud(root / "floor.db").set_knob("latency", {"*": delay})
        floor = await plugin_floor(floor_runner, root / "floor.db", chains=size // depth, depth=depth, slots=IN_FLIGHT)
        await floor_runner.close()
    bound = Bound(depth, sum(calls.values()), size, IN_FLIGHT, delay)
    # The command's StartTs→EndTs: from its record (after planning) to its final state, i.e. storing the
    # command and executing it, without planning before or building the final view after.
    executed = (view.EndTs - view.StartTs).total_seconds()
    print(f"latency {delay * 1000:.0f} ms, {size} resources, depth {depth}, {IN_FLIGHT} in flight, plugin calls "
          f"{dict(calls)}: {bound}\n"
          f"        wall {wall:.3f} s (submit {submitted - started:.3f} s, command StartTs→EndTs {executed:.3f} s) "
          f"→ ratio {wall / bound.seconds:.2f} (StartTs→EndTs alone {executed / bound.seconds:.2f}; goal ≤ 1.3)\n"
          f"        the FAKE plugin alone, same chains and slots, no engine: {floor:.3f} s → ratio "
          f"{floor / bound.seconds:.2f}; the engine's wall ÷ that floor {wall / floor:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3, help="latency runs (the first in a cold process)")
    args = parser.parse_args()
    tune_collector()  # as the agent does at startup
    sys.setswitchinterval(SWITCH_INTERVAL)
    print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{n:.1f}' for n in os.getloadavg())}",
          flush=True)
    for size in args.sizes:
        asyncio.run(scale(size))
    for _ in range(args.repeat):
        asyncio.run(latency())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
