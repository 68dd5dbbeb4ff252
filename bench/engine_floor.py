"""What the latency benchmark's lower bound leaves out: the FAKE plugin's own time, measured without the engine.

Both engine benches divide the wall time of 400 creates (100 chains of 4 references) at 20 ms per plugin call
by a lower bound that assumes everything but the 20 ms is free:

* each create is exactly one plugin call: the FAKE plugin answers a create with the resource's properties, so
  the engine does not read it back, and a reference resolves from the state the engine stored (no call);
  ``count_calls`` checks this rather than assuming it;
* the critical path: a chain's creates run one after another, ``depth`` × calls per create × latency;
* the in-flight limit: at most ``slots`` calls at once, each lasting at least the latency, so the N calls take
  at least ⌈N / slots⌉ rounds of the latency (the continuous N × latency / slots is a little lower, e.g.
  0.125 s instead of 0.140 s here, but calls cannot be split between slots);
* the bound is the larger of the two.

The plugin itself is not free: each FAKE create writes its SQLite file under a process-wide lock and its calls
share the plugin process's interpreter, so even a caller that costs nothing cannot reach that bound.
``plugin_floor`` measures that caller: the same chains, the same slots, the same calls, straight to the plugin
runner, with no planning, no datastore and no bookkeeping. Its time over the bound is the part of the ratio
that belongs to the plugin; the engine's wall time over the floor is the part that belongs to the engine.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svc.plugins.runner import Call, PluginRunner
from svc.plugins.sdk import Status

ITEM = "FAKE::Test::Item"
OPERATIONS = ("create", "read", "update", "delete", "status", "list")


@dataclass(frozen=True)
class Bound:
    depth: int
    calls: int  # plugin calls the whole apply made
    resources: int
    slots: int
    latency: float

    @property
    def calls_per_create(self) -> float:
        return self.calls / self.resources

    @property
    def critical_path(self) -> float:
        return self.depth * self.calls_per_create * self.latency

    @property
    def in_flight_limit(self) -> float:
        return math.ceil(self.calls / self.slots) * self.latency

    @property
    def seconds(self) -> float:
        return max(self.critical_path, self.in_flight_limit)

    @property
    def cycles(self) -> int:
        """How many latencies long the bound is: how often a slot goes round (its answer handled, the next call
        sent and acted on, the latency, the answer) on the way that binds. Whatever a round costs beyond the
        latency is paid that many times over."""
        return round(self.seconds / self.latency)

    def per_cycle(self, seconds: float) -> float:
        """What ``seconds`` (a run of the calls) took over the bound, per cycle."""
        return (seconds - self.seconds) / self.cycles

    def __str__(self) -> str:
        return (f"lower bound {self.seconds:.3f} s = max(critical path {self.depth} × {self.calls_per_create:g} "
                f"call × {self.latency * 1000:g} ms = {self.critical_path:.3f} s, in-flight limit "
                f"⌈{self.calls} calls / {self.slots}⌉ × {self.latency * 1000:g} ms = {self.in_flight_limit:.3f} s)")


def count_calls(runner: Any) -> Counter[str]:
    """Counts every call made through ``runner`` from now on (its operation methods are wrapped in place)."""
    counts: Counter[str] = Counter()

    def counted(name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return await method(*args, **kwargs)

        return call

    for name in OPERATIONS:
        setattr(runner, name, counted(name, getattr(runner, name)))
    return counts


async def _create(runner: PluginRunner, target: dict[str, str], timeout: float, token: str, label: str,
                  properties: dict[str, Any]) -> str:
    """One FAKE create, as the engine sends it; the new resource's native id."""
    progress = await runner.create(Call(ITEM, target, timeout, token), label, properties)
    if progress.status is not Status.SUCCESS:
        raise RuntimeError(f"the FAKE plugin failed a create: {progress.message}")
    return progress.native_id


async def lone_call(runner: PluginRunner, cloud: Path, *, repeat: int = 20, timeout: float = 60.0) -> float:
    """Median seconds of one create sent straight to ``runner`` with nothing else in flight: the round trip (both
    processes' work, the pipes, and the wake-ups) below which no cycle of ``plugin_floor`` or of the engine goes."""
    target = {"Type": "FAKE", "Path": str(cloud)}
    seconds = []
    for n in range(repeat + 2):  # the first two warm the plugin's path
        started = time.perf_counter()
        await _create(runner, target, timeout, f"lone-{n}", f"lone-{n}", {"Value": "v"})
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds[2:])


async def plugin_floor(runner: PluginRunner, cloud: Path, *, chains: int, depth: int, slots: int,
                       timeout: float = 60.0) -> float:
    """Seconds for ``chains`` chains of ``depth`` creates sent straight to ``runner``, ``slots`` at a time, each
    create after the one it references (with that one's id, as the engine sends it)."""
    target = {"Type": "FAKE", "Path": str(cloud)}
    gate = asyncio.Semaphore(slots)

    async def chain(c: int) -> None:
        previous = None
        for d in range(depth):
            properties = {"Value": f"v{d}", **({"Ref": previous} if previous else {})}
            async with gate:
                previous = await _create(runner, target, timeout, f"floor-{c}-{d}", f"c{c}-{d}", properties)

    started = time.perf_counter()
    await asyncio.gather(*(chain(c) for c in range(chains)))
    return time.perf_counter() - started
