"""A plugin process's own cost per call: the real host (``HostedPlugin``) drives a LOCAL or FAKE plugin process with
nothing else around it (no agent, no datastore), and the plugin process's CPU is read from ``/proc``.

* ``local``: ``--calls`` file creates under a fresh root, ``--in-flight`` at a time (the agent's default for a
  namespace is 32), each with its request token as the engine sends them, then as many deletes. Per phase: the
  wall seconds and the plugin process's CPU seconds (per call in µs).
* ``fake``: the latency floor of ``bench/engine_floor.py``: 400 creates in chains of 4, 64 in flight, the FAKE
  cloud answering each after 20 ms; the wall time over the in-flight bound (⌈400 / 64⌉ × 20 ms = 0.140 s) and the
  plugin's CPU per call. Then ``--calls`` creates at zero latency, for the CPU per call alone.

``--compare OTHER_CHECKOUT`` runs the other checkout's plugin process (its ``.venv/bin/python -m svc.plugins.serve``,
or this one's Python with the other's sources first on ``PYTHONPATH`` when it has no ``.venv``) in turn with this
one's, round after round, and prints the medians of each and their ratio (this ÷ other): the paired A/B of a
change to the plugin side. ``--under /dev/shm`` puts the roots on a tmpfs: on ext4 a create's CPU is mostly the
kernel's inode allocator, whose cost swings with how many inodes anyone freed lately (see ``local_files.py``).

    .venv/bin/python bench/plugin_calls.py                       # both plugins, this checkout, 5 rounds
    .venv/bin/python bench/plugin_calls.py --compare ../base --rounds 8 --plugins local
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from engine_floor import plugin_floor  # noqa: E402
from svc_plugin_fake.cloud import FakeCloud  # noqa: E402

from svc.plugins.host import HostedPlugin  # noqa: E402
from svc.plugins.runner import Call  # noqa: E402
from svc.plugins.sdk import Progress, Status  # noqa: E402

FILE = "LOCAL::FS::File"
PACKAGES = ("src", "plugins/local", "plugins/fake")  # where a checkout's svc and plugin packages are
# The latency floor of bench/engine_floor.py: 400 creates in chains of 4, 64 in flight, 20 ms each.
FLOOR_SIZE, FLOOR_DEPTH, FLOOR_SLOTS, FLOOR_LATENCY = 400, 4, 64, 0.02


def cpu_seconds(pid: int) -> float:
    """User + system seconds of every thread of a live process, in nanoseconds' precision (schedstat), not ticks."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended between the listing and the read
    return total / 1e9


def system_seconds(pid: int) -> float:
    """The kernel's share of a live process's CPU (clock ticks: 10 ms steps)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[12]) / os.sysconf("SC_CLK_TCK")


@dataclass
class Figure:
    wall: float
    cpu: float
    system: float
    calls: int

    @property
    def cpu_per_call_us(self) -> float:
        return self.cpu / self.calls * 1e6


class Plugin:
    """One hosted plugin process of a checkout, with its pid for the CPU readings."""

    def __init__(self, checkout: Path, namespace: str, state: Path, in_flight: int) -> None:
        env = {"SVC_PLUGIN_STATE_DIR": str(state)}
        python = checkout / ".venv" / "bin" / "python"
        if not python.exists():  # a checkout without its own environment runs on this one's, its sources first
            python = ROOT / ".venv" / "bin" / "python"
            env["PYTHONPATH"] = os.pathsep.join(str(checkout / part) for part in PACKAGES)
        self.host = HostedPlugin(namespace, plugin_config={"maxInFlight": in_flight},
                                 argv=[str(python), "-m", "svc.plugins.serve", namespace], env=env)

    async def __aenter__(self) -> Plugin:
        await self.host.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.host.close()

    @property
    def pid(self) -> int:
        return int(self.host.describe()["pid"])

    async def measured(self, calls: int, work: Callable[[], Awaitable[object]]) -> Figure:
        before, system, started = cpu_seconds(self.pid), system_seconds(self.pid), time.perf_counter()
        await work()
        return Figure(time.perf_counter() - started, cpu_seconds(self.pid) - before,
                      system_seconds(self.pid) - system, calls)


async def _gathered(slots: int, calls: list[Callable[[], Awaitable[Progress]]]) -> None:
    gate = asyncio.Semaphore(slots)

    async def one(call: Callable[[], Awaitable[Progress]]) -> None:
        async with gate:
            progress = await call()
            if progress.status is not Status.SUCCESS:
                raise RuntimeError(f"a call failed: {progress.message}")

    await asyncio.gather(*(one(call) for call in calls))


async def local_round(checkout: Path, scratch: Path, calls: int, in_flight: int) -> dict[str, Figure]:
    root = scratch / "root"
    target = {"Type": "LOCAL", "Root": str(root)}
    async with Plugin(checkout, "LOCAL", scratch / "state", in_flight) as plugin:
        runner = plugin.host
        warm = [f"warm/w{n}.txt" for n in range(20)]
        await _gathered(in_flight, [lambda p=p: runner.create(Call(FILE, target, 60, f"w-{p}"), p,
                                                              {"Path": p, "Content": "warm\n"}) for p in warm])
        paths = [f"d{n % 10}/f{n}.txt" for n in range(calls)]
        created = await plugin.measured(calls, lambda: _gathered(in_flight, [
            lambda n=n, p=p: runner.create(Call(FILE, target, 60, f"c-{n}"), f"f{n}",
                                           {"Path": p, "Content": f"file {n}\n"}) for n, p in enumerate(paths)]))
        deleted = await plugin.measured(calls, lambda: _gathered(in_flight, [
            lambda n=n, p=p: runner.delete(Call(FILE, target, 60, f"d-{n}"), p) for n, p in enumerate(paths)]))
    return {"local create": created, "local delete": deleted}


async def fake_round(checkout: Path, scratch: Path, calls: int) -> dict[str, Figure]:
    floor_cloud, plain_cloud = scratch / "floor.db", scratch / "plain.db"
    FakeCloud(floor_cloud).set_knob("latency", {"*": FLOOR_LATENCY})
    FakeCloud(plain_cloud)
    async with Plugin(checkout, "FAKE", scratch / "state", FLOOR_SLOTS) as plugin:
        runner = plugin.host
        await plugin_floor(runner, plain_cloud, chains=16, depth=1, slots=16)  # warm-up
        floor = await plugin.measured(FLOOR_SIZE, lambda: plugin_floor(
            runner, floor_cloud, chains=FLOOR_SIZE // FLOOR_DEPTH, depth=FLOOR_DEPTH, slots=FLOOR_SLOTS))
        plain = await plugin.measured(calls, lambda: plugin_floor(runner, plain_cloud, chains=calls, depth=1,
                                                                  slots=FLOOR_SLOTS))
    return {"fake floor": floor, "fake create": plain}


def floor_bound() -> float:
    return math.ceil(FLOOR_SIZE / FLOOR_SLOTS) * FLOOR_LATENCY


def one_round(checkout: Path, plugins: list[str], calls: int, in_flight: int, under: Path | None) -> dict[str, Figure]:
    figures: dict[str, Figure] = {}
    with tempfile.TemporaryDirectory(prefix="svc-bench-plugin-", dir=under) as tmp:
        if "local" in plugins:
            figures.update(asyncio.run(local_round(checkout, Path(tmp) / "local", calls, in_flight)))
        if "fake" in plugins:
            figures.update(asyncio.run(fake_round(checkout, Path(tmp) / "fake", calls)))
    return figures


def _describe(name: str, figures: list[Figure]) -> str:
    wall = statistics.median(f.wall for f in figures)
    cpu = statistics.median(f.cpu for f in figures)
    per_call = statistics.median(f.cpu_per_call_us for f in figures)
    system = statistics.median(f.system for f in figures)
    ratio = f", ratio to the bound {wall / floor_bound():.3f}" if name == "fake floor" else ""
    return (f"{name:<12} wall {wall:6.3f} s, plugin CPU {cpu:6.3f} s ({per_call:6.0f} µs a call, "
            f"{system:5.2f} s in the kernel){ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plugins", nargs="*", choices=("local", "fake"), default=["local", "fake"])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=32, help="LOCAL calls in flight (the agent's default)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", type=Path, metavar="OTHER_CHECKOUT")
    parser.add_argument("--under", type=Path, help="where the roots and clouds go (default: the system's temporary "
                                                   "directory); a tmpfs such as /dev/shm leaves out the file system's "
                                                   "own cost, which on ext4 swings with the inodes freed lately")
    args = parser.parse_args()
    sides = {"this": ROOT}
    if args.compare is not None:
        sides["other"] = args.compare.resolve()
    results: dict[str, dict[str, list[Figure]]] = {side: {} for side in sides}
    print(f"load average {' '.join(f'{n:.1f}' for n in os.getloadavg())}; {args.calls} calls, sides: "
          + ", ".join(f"{side} {path}" for side, path in sides.items()), flush=True)
    for round_ in range(args.rounds):
        order = list(sides.items()) if round_ % 2 == 0 else list(reversed(sides.items()))
        for side, checkout in order:
            for name, figure in one_round(checkout, args.plugins, args.calls, args.in_flight, args.under).items():
                results[side].setdefault(name, []).append(figure)
                print(f"round {round_ + 1} {side:<5} {_describe(name, [figure])}", flush=True)
    print(f"medians of {args.rounds} rounds; load average {' '.join(f'{n:.1f}' for n in os.getloadavg())}")
    for side in sides:
        for name, figures in results[side].items():
            print(f"{side:<5} {_describe(name, figures)}")
    if "other" in results:
        for name in results["this"]:
            mine, theirs = results["this"][name], results["other"][name]
            cpu = statistics.median(f.cpu for f in mine) / statistics.median(f.cpu for f in theirs)
            wall = statistics.median(f.wall for f in mine) / statistics.median(f.wall for f in theirs)
            paired = statistics.median(a.cpu / b.cpu for a, b in zip(mine, theirs, strict=True))
            print(f"this ÷ other, {name:<12}: CPU {cpu:.3f} (paired by round {paired:.3f}), wall {wall:.3f}")


if __name__ == "__main__":
    main()
