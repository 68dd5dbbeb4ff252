"""Synchronization benchmark: a real agent process (SQLite in a temp dir, the FAKE plugin in its own process)
with N managed ``FAKE::Test::Item`` resources, applied first with ``svc apply``; then ``POST
/api/v1/admin/synchronize`` is timed twice: with nothing changed, and with N/10 resources changed out of band
(in the FAKE cloud's file). Prints each pass's time and the agent's peak RSS (VmHWM) over the passes (the
peak is reset after the apply, where the kernel allows it) and over its whole life. Goals (issue 6): each
pass under 30 s and 1 GB at 10,000. Nothing is asserted.

    .venv/bin/python bench/sync.py                # 10,000
    .venv/bin/python bench/sync.py --size 1000    # quicker
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fake_agent import start_fake_agent  # noqa: E402
from svc_plugin_fake import FakeCloud  # noqa: E402

from support.processes import Agent, run_svc  # noqa: E402

GOAL_SECONDS = 30.0
GOAL_RSS_MIB = 1024

FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/test/item.pkl"

forma {{
  new svc.Stack {{ label = "sync-{part}" }}
  new svc.Target {{ label = "cloud"; config = new fake.Config {{ path = "{cloud}" }} }}
  for (i in IntSeq(0, {size} - 1)) {{
    new item.Item {{ label = "item-{part}-\\(i)"; value = "v\\(i)" }}
  }}
}}
"""
PARTS = 10  # applied as ten stacks: one apply of 10,000 plans longer than the CLI waits on a loaded machine


def status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return -1


def reset_peak(pid: int) -> bool:
    """Resets VmHWM to the current RSS (Linux ≥ 4.0, same user); False where that is not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def synchronize(agent: Agent) -> tuple[float, str | None]:
    started = time.perf_counter()
    response = httpx.post(f"{agent.url}/api/v1/admin/synchronize", timeout=600)
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"synchronize answered {response.status_code}: {response.text}\n{agent.output()[-3000:]}")
    return seconds, response.json().get("CommandId")


def _goal(seconds: float) -> str:
    return f"[goal ≤ {GOAL_SECONDS:g} s: {'met' if seconds <= GOAL_SECONDS else 'NOT met'}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    size, changed = args.size, args.size // 10
    with tempfile.TemporaryDirectory(prefix="svc-bench-sync-") as tmp:
        directory = Path(tmp)
        cloud = FakeCloud(directory / "cloud.db")
        agent = start_fake_agent(directory)
        try:
            assert agent.process is not None
            pid = agent.process.pid
            started = time.perf_counter()
            for part in range(PARTS):
                forma = directory / f"sync-{part}.pkl"
                forma.write_text(FORMA.format(cloud=cloud.path, size=size // PARTS, part=part))
                applied = run_svc("apply", "--mode", "reconcile", str(forma), "--yes", "--wait", "--config",
                                  str(agent.config), env={"XDG_DATA_HOME": str(directory / "data")}, timeout=1800)
                if applied.returncode != 0:
                    raise SystemExit(f"apply failed:\n{applied.stdout[-2000:]}{applied.stderr[-2000:]}")
            print(f"{size} managed FAKE resources applied in {time.perf_counter() - started:.1f} s (setup)",
                  flush=True)
            after_apply = status_kib(pid, "VmHWM")
            reset = reset_peak(pid)

            seconds, command = synchronize(agent)
            print(f"synchronize, nothing changed:        {seconds:6.2f} s  (command: {command})  {_goal(seconds)}",
                  flush=True)
            for native_id in sorted(cloud.resources("FAKE::Test::Item"))[:changed]:
                cloud.set_property(native_id, "Value", "changed out of band")
            seconds, command = synchronize(agent)
            print(f"synchronize, {changed} changed out of band: {seconds:6.2f} s  (command: {command})  "
                  f"{_goal(seconds)}", flush=True)
            seconds, command = synchronize(agent)
            print(f"synchronize again, absorbed:         {seconds:6.2f} s  (command: {command})", flush=True)

            peak = status_kib(pid, "VmHWM") / 1024
            scope = "during the passes" if reset else "whole life (could not reset the peak)"
            print(f"agent peak RSS (VmHWM) {scope}: {peak:.0f} MiB  [goal ≤ {GOAL_RSS_MIB} MiB: "
                  f"{'met' if peak <= GOAL_RSS_MIB else 'NOT met'}]; after the apply it was {after_apply / 1024:.0f} "
                  f"MiB", flush=True)
        finally:
            agent.stop()


if __name__ == "__main__":
    main()
