"""Engine benchmark through the CLI: a real agent process (SQLite in a temp dir, the FAKE plugin) and the
real ``svc`` console script, timed from ``svc apply`` start to Success.

For chains of references (N/10 chains of 10 ``FAKE::Test::Item``), at zero plugin latency, it prints:
``svc apply --mode reconcile --yes --wait`` of the forma, the no-op re-apply, and ``svc destroy --yes
--wait``, at 1,000 and 10,000 resources, each split at the command's StartTs and EndTs: before it started (the
CLI's start and evaluation, the upload, the agent's parsing and planning), the agent's execution (StartTs→EndTs,
storing the command's updates included: StartTs is stamped when its record is made), and from its end to the
CLI's exit (the last poll, the last lines); beside it ``svc eval`` of the same file, nothing kept (it prints the
forma, so it takes longer than an apply's evaluation); and the CPU seconds the svc process, the agent and its
plugin process spent (wall
times grow with whatever else runs on the machine; CPU seconds hardly do). Then, with 20 ms latency per
plugin call, 400 resources in chains of depth 4: the agent's execution ÷ the lower bound set by the critical
path and the in-flight limit, and the FAKE plugin process's own floor (``engine_floor`` says how both are
computed), each the median of five applies, and where the median run's time went (storing the command before
its first call, the calls, what came after the last answer: ``Phases``), and what each cycle cost over the latency
(``Bound.cycles``: a slot's round of answer, next call and latency) for the agent's calls and for the floor, beside
one call sent alone (``engine_floor.lone_call``). On a machine with two CPUs or more,
the same again with the agent on CPU 0 and its plugin on CPU 1 (``_latency_at``: a diagnostic of the
kernel's placement, which svc leaves alone). The same at lower in-flight limits (``--in-flight``, each on an
agent of its own whose FAKE plugin has that ``maxInFlight``): at 64 calls in flight the bound asks for 3,200
creates a second, so the ratio there measures the agent's CPU per change; at a lower limit it measures how
promptly the scheduler refills the slots and starts dependents. Ends with the agent's peak RSS (VmHWM).
Figures and ratios against the issue's goals only; nothing is asserted.

    .venv/bin/python bench/engine_cli.py                # 1,000 and 10,000
    .venv/bin/python bench/engine_cli.py --sizes 1000   # quicker
    .venv/bin/python bench/engine_cli.py --compare ../base   # the paired A/B against another checkout
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import timeit
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from engine_floor import Bound, lone_call, plugin_floor  # noqa: E402
from fake_agent import (  # noqa: E402
    children,
    cli_server,
    peak_rss_mib,
    process_cpu,
    start_fake_agent,
    stop_cli_server,
    workers_cpu,
)
from svc_plugin_fake import FakeCloud  # noqa: E402

from support.processes import Agent, run_svc  # noqa: E402
from svc.plugins import installed_plugins  # noqa: E402
from svc.plugins.host import HostedPlugin  # noqa: E402
from svc.plugins.manifest import read_manifest  # noqa: E402

IN_FLIGHT = 64  # the FAKE plugin's default maxInFlight (plugins/fake/…/Config.pkl)
GOALS = {"apply 1000": 5.0, "no-op 1000": 2.0, "apply 10000": 60.0, "apply 100000": 120.0, "no-op 100000": 20.0}
RSS_GOAL_MIB = 1024
RATIO_GOAL = 1.1  # issue 30, goal 5 (the engine issue before it asked for 1.3)

FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/test/item.pkl"

local function node(c: Int, d: Int): item.Item = new item.Item {{
  label = "c\\(c)-\\(d)"
  value = "v\\(d)"
  ref = if (d > 0) node(c, d - 1).res.id else null
}}

forma {{
  new svc.Stack {{ label = "{stack}" }}
  new svc.Target {{ label = "{stack}"; config = new fake.Config {{ path = "{cloud}" }} }}
  for (c in IntSeq(0, {chains} - 1)) {{
    for (d in IntSeq(0, {depth} - 1)) {{
      node(c, d)
    }}
  }}
}}
"""


def write_forma(directory: Path, name: str, cloud: Path, size: int, depth: int) -> Path:
    path = directory / f"{name}.pkl"
    # A stack and a target per forma: re-applying a destroyed stack's forma would be refused as drift (a
    # destroy is not a reconcile, as in the reference), and another cloud file under the same target label
    # would replace that target, moving every resource on it.
    path.write_text(FORMA.format(stack=name, cloud=cloud, chains=size // depth, depth=depth))
    return path


@dataclass
class Timed:
    seconds: float
    agent_seconds: float | None  # the command's StartTs → EndTs, when a command ran
    cpu: Cpu
    command_id: str | None = None
    before: float | None = None  # the CLI's start → StartTs
    after: float | None = None  # EndTs → the CLI's exit


@dataclass(frozen=True)
class Phases:
    """Where a command's StartTs → EndTs went, from its updates' StartedAt and Duration: storing the command
    before its first plugin call, the calls (the first start to the last end), and what came after the last
    call (its last commits, then its end)."""

    before: float
    calls: float
    after: float

    def __str__(self) -> str:
        return (f"stored before the first call {self.before * 1000:.0f} ms, first call → last answer "
                f"{self.calls * 1000:.0f} ms, last answer → end {self.after * 1000:.0f} ms")


@dataclass
class Cpu:
    """CPU seconds spent meanwhile: by the svc process (with Pkl), by the agent, by its plugin processes.
    Unlike wall times, these hardly change when other work shares the machine."""

    cli: float = 0.0
    agent: float = 0.0
    agent_loop: float = 0.0  # the agent's main thread (the event loop); the rest ran on its worker threads
    plugins: float = 0.0

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.cli - other.cli, self.agent - other.agent, self.agent_loop - other.agent_loop,
                   self.plugins - other.plugins)

    def __str__(self) -> str:
        return (f"CPU: svc {self.cli:.2f} s, agent {self.agent:.2f} s (event loop {self.agent_loop:.2f} s, worker "
                f"threads {self.agent - self.agent_loop:.2f} s), plugin {self.plugins:.2f} s")


def cpu_now(agent_pid: int, in_server: float = 0.0) -> Cpu:
    """``in_server``: the CPU of the CLI server's workers that ran this bench's commands."""
    cli = resource.getrusage(resource.RUSAGE_CHILDREN)  # every svc process this bench ran and waited for
    return Cpu(cli.ru_utime + cli.ru_stime + in_server, process_cpu(agent_pid), process_cpu(agent_pid, agent_pid),
               sum(process_cpu(child) for child in children(agent_pid)))


class Cli:
    def __init__(self, agent: Agent, data: Path) -> None:
        self.agent = agent
        # A cache of its own: the evaluations every svc on the machine keeps are the latest 16, so another run's
        # commands (a test suite, another bench) would push this one's out and a no-op would evaluate again.
        # A CLI server of its own too, whose workers' CPU is its commands'.
        self.runtime = data.parent / "run"
        self.runtime.mkdir(mode=0o700, exist_ok=True)
        self.env = {"COLUMNS": "200", "XDG_DATA_HOME": str(data), "XDG_CACHE_HOME": str(data / "cache"),
                    "XDG_RUNTIME_DIR": str(self.runtime)}

    def cpu(self) -> Cpu:
        assert self.agent.process is not None
        server = cli_server(self.runtime)
        return cpu_now(self.agent.process.pid, workers_cpu(server) if server else 0.0)

    def close(self) -> None:
        stop_cli_server(self.runtime)

    def svc(self, *args: str, timeout: float = 1800, env: dict[str, str] | None = None) -> str:
        result = run_svc(*args, "--config", str(self.agent.config), env={**self.env, **(env or {})},
                         timeout=timeout)
        if result.returncode != 0:
            kept = Path(tempfile.gettempdir()) / "svc-bench-cli-agent.log"  # the agent's directory goes at exit
            shutil.copyfile(self.agent.log, kept)
            raise SystemExit(f"svc {' '.join(args)} failed ({result.returncode}):\n{result.stderr[-2000:]}\n"
                             f"agent log: {kept}")
        return result.stdout

    def timed(self, *args: str) -> Timed:
        assert self.agent.process is not None
        before = self.latest_command()
        cpu = self.cpu()
        started, begun = time.perf_counter(), time.time()  # the agent stamps StartTs and EndTs by the same clock
        self.svc(*args)
        seconds, ended = time.perf_counter() - started, time.time()
        spent = self.cpu() - cpu
        command = self.latest_command()
        # A no-op re-apply runs no command: the latest one is then still the one from before.
        if (command is None or not command.get("EndTs")
                or (before is not None and command.get("CommandId") == before.get("CommandId"))):
            return Timed(seconds, None, spent)
        start, end = _moment(command["StartTs"]).timestamp(), _moment(command["EndTs"]).timestamp()
        return Timed(seconds, end - start, spent, command.get("CommandId"), start - begun, ended - end)

    def latest_command(self) -> dict[str, Any] | None:
        """The newest command, its updates counted, not listed (``svc command list``'s machine document lists all
        of them: at 100,000 that bookkeeping took longer than the no-op it surrounds)."""
        response = httpx.get(f"{self.agent.url}/api/v1/commands/status", headers={"Client-ID": "bench"}, timeout=60,
                             params={"scope": "agent", "max_results": "1", "counts": "true"})
        if response.status_code == 404:
            return None
        response.raise_for_status()
        commands = response.json()["Commands"]
        return commands[0] if commands else None

    def phases(self, command_id: str) -> Phases | None:
        command = json.loads(self.svc("command", "status", command_id, "--output-consumer", "machine"))["Commands"][0]
        updates = [u for u in command.get("ResourceUpdates") or [] if u.get("StartedAt")]
        if not updates or not command.get("EndTs"):
            return None
        start, end = _moment(command["StartTs"]), _moment(command["EndTs"])
        first = min(_moment(u["StartedAt"]) for u in updates)
        last = max(_moment(u["StartedAt"]).timestamp() + (u.get("Duration") or 0) / 1000 for u in updates)
        return Phases((first - start).total_seconds(), last - first.timestamp(), end.timestamp() - last)

    def eval_seconds(self, forma: Path) -> float:
        """The forma's evaluation by Pkl (none kept from an earlier command)."""
        started = time.perf_counter()
        self.svc("eval", str(forma), "--output-consumer", "machine", env={"SVC_EVALUATION_CACHE": "off"})
        return time.perf_counter() - started


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _goal(name: str, seconds: float) -> str:
    goal = GOALS.get(name)
    if goal is None:
        return ""
    return f"  [goal ≤ {goal:g} s: {seconds / goal:.2f} of it, {'met' if seconds <= goal else 'NOT met'}]"


def _split(timed: Timed) -> str:
    if timed.agent_seconds is None:
        return f"(no command ran; {timed.cpu})"
    return (f"(before it started {timed.before:.2f} s + agent execution {timed.agent_seconds:.2f} s + end to exit "
            f"{timed.after:.2f} s; {timed.cpu})")


def _fake_rate_limit() -> float:
    """The calls a second the agent lets through to FAKE: its manifest's (the bench's agent config sets none)."""
    fake = next(plugin for plugin in installed_plugins() if plugin.namespace == "FAKE")
    return float(read_manifest(fake)["rateLimit"]["maxRequestsPerSecondForNamespace"])


def _load() -> str:
    return "load average " + " ".join(f"{n:.1f}" for n in os.getloadavg())


def _python_speed() -> str:
    """How fast this machine runs plain Python, so that figures from different machines can be compared (the
    64-in-flight ratio is bound by the agent's CPU per change, so it moves with the machine's speed)."""
    best = min(timeit.repeat("sum(range(1000))", number=2000, repeat=7)) / 2000
    return f"Python speed: sum(range(1000)) in {best * 1e6:.1f} µs"


def scale(cli: Cli, directory: Path, size: int) -> None:
    cloud = directory / f"cloud-{size}.db"
    forma = write_forma(directory, f"chains-{size}", cloud, size, 10)
    eval_s = cli.eval_seconds(forma)
    applied = cli.timed("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")
    noop = cli.timed("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")
    destroyed = cli.timed("destroy", str(forma), "--yes", "--wait")
    left = len(FakeCloud(cloud).resources())
    print(f"{size:>6} resources  svc eval alone {eval_s:6.2f} s (printing the forma)", flush=True)
    print(f"        apply   {applied.seconds:7.2f} s {_split(applied)}"
          f"{_goal(f'apply {size}', applied.seconds)}", flush=True)
    rate = _fake_rate_limit()
    print(f"                (FAKE's rate limit, {rate:g} calls a second, alone holds its {size} creates to "
          f"{size / rate:.1f} s of execution at least)", flush=True)
    print(f"        no-op   {noop.seconds:7.2f} s {_split(noop)}{_goal(f'no-op {size}', noop.seconds)}",
          flush=True)
    print(f"        destroy {destroyed.seconds:7.2f} s {_split(destroyed)}"
          f"{'' if left == 0 else f'  ({left} resources left in the cloud!)'}", flush=True)


def latency(cli: Cli, directory: Path, in_flight: int = IN_FLIGHT, repeat: int = 5, size: int = 400, depth: int = 4,
            delay: float = 0.02, setting: str = "") -> None:
    """``repeat`` applies of fresh chains (and as many floors); the median run is shown, every ratio listed:
    one 0.2 s run swings by a third with whatever else the machine does, and so does the machine's own speed,
    which is measured again just before (a run of the whole bench takes minutes)."""
    speed = _python_speed()
    runs: list[tuple[Timed, float, Counter[str]]] = []
    floors: list[float] = []
    for run in range(repeat):
        cloud = directory / f"cloud-latency-{in_flight}-{run}.db"
        FakeCloud(cloud).set_knob("latency", {"*": delay})
        forma = write_forma(directory, f"latency-{in_flight}-{run}", cloud, size, depth)
        eval_s = cli.eval_seconds(forma)
        applied = cli.timed("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")
        # The FAKE call log holds its mutating calls; a read-back would show as a create without properties,
        # which the FAKE plugin never answers (``engine_floor`` counts every call of the in-process bench).
        runs.append((applied, eval_s, Counter(call["op"] for call in FakeCloud(cloud).calls())))
        floor_cloud = directory / f"cloud-floor-{in_flight}-{run}.db"
        FakeCloud(floor_cloud).set_knob("latency", {"*": delay})
        floors.append(asyncio.run(_hosted(in_flight, partial(plugin_floor, cloud=floor_cloud, chains=size // depth,
                                                             depth=depth, slots=in_flight))))
    lone_cloud = directory / f"cloud-lone-{in_flight}.db"
    FakeCloud(lone_cloud).set_knob("latency", {"*": delay})
    lone = asyncio.run(_hosted(in_flight, partial(lone_call, cloud=lone_cloud)))
    runs.sort(key=lambda r: r[0].agent_seconds or float("inf"))
    applied, eval_s, calls = runs[len(runs) // 2]
    floor = statistics.median(floors)
    bound = Bound(depth, sum(calls.values()), size, in_flight, delay)
    agent = applied.agent_seconds or float("nan")
    phases = cli.phases(applied.command_id) if applied.command_id else None
    ratios = ", ".join(f"{(r[0].agent_seconds or float('nan')) / bound.seconds:.2f}" for r in runs)
    cycle_costs = (f"the agent's calls {bound.per_cycle(phases.calls) * 1000:.1f} ms, " if phases else "") + \
        f"the plugin alone {bound.per_cycle(floor) * 1000:.1f} ms"
    print(f"latency {delay * 1000:.0f} ms, {size} resources, depth {depth}, {in_flight} in flight{setting}, FAKE calls "
          f"{dict(calls)}: {bound}; {speed}\n"
          f"        agent execution {agent:.3f} s → ratio {agent / bound.seconds:.2f}, the median of {ratios}  "
          f"[goal ≤ {RATIO_GOAL}: {'met' if agent / bound.seconds <= RATIO_GOAL else 'NOT met'} for the execution]; "
          f"whole svc apply {applied.seconds:.2f} s (eval {eval_s:.2f} s) → ratio "
          f"{applied.seconds / bound.seconds:.2f}; {applied.cpu}"
          f"\n        that median run: {phases or 'no phases (no update started)'}"
          f"\n        the FAKE plugin process alone, same chains and slots, no engine: {floor:.3f} s (median) → "
          f"ratio {floor / bound.seconds:.2f}; the agent's execution ÷ that floor {agent / floor:.2f}"
          f"\n        over the bound per cycle ({bound.cycles} cycles): {cycle_costs}; one call alone "
          f"{lone * 1000:.2f} ms ({(lone - delay) * 1000:.2f} ms over its latency)", flush=True)


async def _hosted(in_flight: int, measure: Callable[[HostedPlugin], Awaitable[float]]) -> float:
    """What ``measure`` finds of a FAKE plugin process of its own, started as the agent starts one."""
    plugin = HostedPlugin("FAKE", plugin_config={"maxInFlight": in_flight})
    await plugin.start()
    try:
        return await measure(plugin)
    finally:
        await plugin.close()


def _latency_at(directory: Path, in_flight: int = IN_FLIGHT, *, apart: bool = False) -> None:
    """The latency runs on an agent of their own whose FAKE plugin has ``in_flight`` as its ``maxInFlight``;
    ``apart``: with the agent on CPU 0 and its plugin processes on CPU 1. That is a diagnostic, not a setting
    svc makes. A write to a plugin's pipe (one per event-loop turn and up to eight requests, ``svc.plugins.lines``)
    costs the event loop ~0.13 ms of wall time for 5 µs of CPU: it wakes the plugin, and where the kernel runs the
    woken plugin matters. Kept apart, the two processes halve that stall; plugin nice levels leave it as it is.
    The difference between the two runs is what the default placement costs."""
    directory.mkdir()
    agent = start_fake_agent(directory, plugin_config=f"maxInFlight = {in_flight}")
    try:
        assert agent.process is not None
        if apart:
            _pin(agent.process.pid, {0})
            for child in children(agent.process.pid):
                _pin(child, {1})
        cli = Cli(agent, directory / "data")
        try:
            latency(cli, directory, in_flight, setting=" (agent on CPU 0, plugin on CPU 1)" if apart else "")
        finally:
            cli.close()
    finally:
        agent.stop()


def _pin(pid: int, cpus: set[int]) -> None:
    """Lets every thread of process ``pid`` run on ``cpus`` only (threads it starts later inherit it)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--in-flight", type=int, nargs="*", default=[16, 32],
                        help=f"lower in-flight limits to measure the latency ratio at, besides {IN_FLIGHT}")
    parser.add_argument("--compare", type=Path, metavar="OTHER_CHECKOUT",
                        help="instead: the paired A/B of the latency figure against another checkout (with its own "
                             ".venv), at each --in-flight limit and 64 (engine_cli_compare.py)")
    parser.add_argument("--no-latency", action="store_true",
                        help="only the --sizes figures and the agent's peak RSS (e.g. --sizes 100000 alone)")
    parser.add_argument("--rounds", type=int, default=4, help="--compare: rounds per in-flight limit")
    parser.add_argument("--repeat", type=int, default=3, help="--compare: measured applies per side and round")
    args = parser.parse_args()
    if args.compare is not None:
        from engine_cli_compare import compare

        compare(args.compare.resolve(), [*args.in_flight, IN_FLIGHT], args.rounds, args.repeat)
        return
    with tempfile.TemporaryDirectory(prefix="svc-bench-cli-") as tmp:
        directory = Path(tmp)
        agent = start_fake_agent(directory)
        cli = Cli(agent, directory / "data")
        try:
            assert agent.process is not None
            print(f"machine: {os.cpu_count()} CPUs, {_load()} at the start; {_python_speed()}", flush=True)
            for size in args.sizes:
                scale(cli, directory, size)
            if args.no_latency:
                peak = peak_rss_mib(agent.process.pid)
                print(f"agent peak RSS (VmHWM) {peak:.0f} MiB  [goal ≤ {RSS_GOAL_MIB} MiB: "
                      f"{'met' if peak <= RSS_GOAL_MIB else 'NOT met'}]; {_load()} at the end", flush=True)
                return
            latency(cli, directory)
            peak = peak_rss_mib(agent.process.pid)
            if len(os.sched_getaffinity(0)) >= 2:
                _latency_at(directory / "apart", apart=True)
            for in_flight in args.in_flight:
                _latency_at(directory / f"in-flight-{in_flight}", in_flight)
            print(f"agent peak RSS (VmHWM) {peak:.0f} MiB  [goal ≤ {RSS_GOAL_MIB} MiB: "
                  f"{'met' if peak <= RSS_GOAL_MIB else 'NOT met'}]; {_load()} and {_python_speed()} at the end",
                  flush=True)
        finally:
            cli.close()
            agent.stop()


if __name__ == "__main__":
    main()
