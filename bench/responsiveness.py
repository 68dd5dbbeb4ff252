"""How long the agent leaves a request unanswered while it takes in and runs a big command.

The agent serves every command, status poll and plugin answer from one event loop, so CPU work done on that loop
delays all of them. This applies a forma of ``--sizes`` FAKE resources (chains of 10, zero latency) through the
real CLI while a thread asks the agent for ``GET /api/v1/health`` every 5 ms, and prints the longest waits, each
placed in the command's life: before its StartTs (the upload, its parsing, the plan), during its execution, or
after its EndTs. The forma is evaluated first (``svc eval``, kept), so the apply does not run Pkl again. The
poller costs the agent a little CPU, so the apply's own times here are not the engine benches'. Figures only.

    .venv/bin/python bench/responsiveness.py                 # 20,000 (~30 s)
    .venv/bin/python bench/responsiveness.py --sizes 100000  # ~2.5 minutes
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx
from engine_cli import Cli, write_forma
from fake_agent import start_fake_agent

POLL_EVERY = 0.005
SHOWN = 5


class HealthPoller:
    """``GET /health`` in a loop on a thread of its own: each answer's wait (seconds) and the wall time it ended."""

    def __init__(self, url: str) -> None:
        self.url = f"{url}/api/v1/health"
        self.waits: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> HealthPoller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        with httpx.Client() as client:
            while not self._stop.is_set():
                asked = time.perf_counter()
                client.get(self.url)
                self.waits.append((time.perf_counter() - asked, time.time()))
                time.sleep(POLL_EVERY)


def measure(directory: Path, size: int) -> None:
    agent = start_fake_agent(directory)
    cli = Cli(agent, directory / "data")
    try:
        forma = write_forma(directory, f"chains-{size}", directory / "cloud.db", size, 10)
        cli.svc("eval", str(forma), "--output-consumer", "machine")  # kept for the apply
        with HealthPoller(agent.url) as poller:
            timed = cli.timed("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")
        command = cli.latest_command()
        assert timed.before is not None and command is not None, "the apply ran no command"
        # The agent stamps StartTs and EndTs by the wall clock the waits were stamped with.
        start_ts, end_ts = (datetime.fromisoformat(command[key]).timestamp() for key in ("StartTs", "EndTs"))
        started = start_ts - timed.before  # the CLI's start
        print(f"{size:>7} resources: apply {timed.seconds:.2f} s (before it started {timed.before:.2f} s, execution "
              f"{timed.agent_seconds:.2f} s), {len(poller.waits)} health checks, median wait "
              f"{sorted(w for w, _ in poller.waits)[len(poller.waits) // 2] * 1000:.1f} ms; the longest:", flush=True)
        for wait, ended in sorted(poller.waits, reverse=True)[:SHOWN]:
            asked = ended - wait
            where = ("before the command started" if asked < start_ts else
                     "during its execution" if asked < end_ts else "after it ended")
            print(f"          {wait:6.3f} s, asked {asked - started:7.2f} s after the CLI started: {where}", flush=True)
    finally:
        cli.close()
        agent.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[20_000])
    args = parser.parse_args()
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="svc-bench-responsiveness-") as tmp:
            measure(Path(tmp), size)


if __name__ == "__main__":
    main()
