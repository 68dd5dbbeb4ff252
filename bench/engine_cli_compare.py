"""Paired A/B of ``engine_cli.py``'s latency figure: this checkout against another (``--compare OTHER``).

One run of the latency bench says little on a shared machine: a 0.3 s apply swings by a third with whatever
else runs. So the two checkouts take turns, round after round (ABBA order, so that neither always goes first),
each round on a fresh agent of each checkout (its own ``.venv``: its ``svc`` console script, agent and FAKE
plugin; this file and ``tests/support`` serve both). Each side first applies one warm-up forma (the first
command pays for imports and caches), then ``--repeat`` applies of fresh chains: 400 resources in chains of
depth 4, 20 ms per plugin call, ``maxInFlight`` the in-flight limit. Per apply it reports the ratio of the
agent's execution (StartTs → EndTs) to the lower bound (``engine_floor.Bound``) and the CPU the agent process
spent per change (user + system, the whole ``svc apply``: submission, planning, execution, status polls),
which hardly moves with the machine's load. Each round pairs the two sides' medians: this ÷ other, for the
ratio and for the CPU per change; the summary is the median of those pairs (below 1: this checkout is faster).

    .venv/bin/python bench/engine_cli.py --compare /work/wt/base --rounds 4
    .venv/bin/python bench/engine_cli_compare.py --side --in-flight 16 --repeat 3   # one side, JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from engine_cli import Cli, write_forma
from engine_floor import Bound
from fake_agent import start_fake_agent
from svc_plugin_fake import FakeCloud

THIS = Path(__file__).resolve()
SIZE, DEPTH, DELAY = 400, 4, 0.02


def _apply(cli: Cli, directory: Path, name: str, in_flight: int) -> dict[str, float]:
    cloud = directory / f"cloud-{name}.db"
    FakeCloud(cloud).set_knob("latency", {"*": DELAY})
    forma = write_forma(directory, name, cloud, SIZE, DEPTH)
    timed = cli.timed("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")
    calls = Counter(call["op"] for call in FakeCloud(cloud).calls())
    bound = Bound(DEPTH, sum(calls.values()), SIZE, in_flight, DELAY)
    return {"ratio": (timed.agent_seconds or float("nan")) / bound.seconds,
            "agent_cpu_ms_per_change": timed.cpu.agent * 1000 / SIZE,
            "loop_cpu_ms_per_change": timed.cpu.agent_loop * 1000 / SIZE,
            "plugin_cpu_ms_per_change": timed.cpu.plugins * 1000 / SIZE}


def side(in_flight: int, repeat: int) -> list[dict[str, float]]:
    """``repeat`` measured applies on a fresh agent of the checkout whose Python runs this."""
    with tempfile.TemporaryDirectory(prefix="svc-bench-ab-") as tmp:
        directory = Path(tmp)
        # The A/B runs for long on a machine others share: give the agent time to start.
        agent = start_fake_agent(directory, plugin_config=f"maxInFlight = {in_flight}", healthy_within=300)
        try:
            cli = Cli(agent, directory / "data")
            _apply(cli, directory, "warm-up", in_flight)
            return [_apply(cli, directory, f"run-{run}", in_flight) for run in range(repeat)]
        finally:
            agent.stop()


def _run_side(checkout: Path, in_flight: int, repeat: int) -> dict[str, float]:
    """One side in ``checkout``'s own interpreter; the medians of its applies."""
    python = checkout / ".venv" / "bin" / "python"
    result = subprocess.run([str(python), str(THIS), "--side", "--in-flight", str(in_flight), "--repeat",
                             str(repeat)], capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise SystemExit(f"the side in {checkout} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    runs: list[dict[str, float]] = json.loads(result.stdout.splitlines()[-1])
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def _commit(checkout: Path) -> str:
    return subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h %s"], capture_output=True,
                          text=True).stdout.strip()[:72]


def compare(other: Path, in_flights: list[int], rounds: int, repeat: int) -> None:
    this = THIS.parent.parent
    print(f"A (this): {this} at {_commit(this)}\nB (other): {other} at {_commit(other)}\n"
          f"{SIZE} resources in chains of depth {DEPTH}, {DELAY * 1000:g} ms per call; per side and round the "
          f"median of {repeat} applies after a warm-up; rounds alternate which side goes first", flush=True)
    for in_flight in in_flights:
        pairs: list[tuple[float, float]] = []
        for round_ in range(rounds):
            order = [("A", this), ("B", other)] if round_ % 2 == 0 else [("B", other), ("A", this)]
            measured: dict[str, dict[str, float]] = {name: _run_side(path, in_flight, repeat) for name, path in order}
            a, b = measured["A"], measured["B"]
            pairs.append((a["ratio"] / b["ratio"], a["agent_cpu_ms_per_change"] / b["agent_cpu_ms_per_change"]))
            print(f"  {in_flight:>2} in flight, round {round_ + 1}: {_side('A', a)} | {_side('B', b)} → A÷B ratio "
                  f"{pairs[-1][0]:.3f}, CPU per change {pairs[-1][1]:.3f}", flush=True)
        print(f"{in_flight:>2} in flight: A÷B over {rounds} rounds, median: ratio "
              f"{statistics.median(p[0] for p in pairs):.3f}, agent CPU per change "
              f"{statistics.median(p[1] for p in pairs):.3f}", flush=True)


def _side(name: str, figures: dict[str, Any]) -> str:
    return (f"{name} ratio {figures['ratio']:.2f}, agent CPU {figures['agent_cpu_ms_per_change']:.2f} ms/change "
            f"(event loop {figures['loop_cpu_ms_per_change']:.2f}), plugin "
            f"{figures['plugin_cpu_ms_per_change']:.2f} ms/change")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--side", action="store_true", help="measure this interpreter's checkout; JSON out")
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.side:
        parser.error("run the comparison through engine_cli.py --compare OTHER_CHECKOUT")
    print(json.dumps(side(args.in_flight, args.repeat)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
