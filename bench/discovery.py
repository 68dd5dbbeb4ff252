"""Discovery benchmark: a real agent process (SQLite in a temp dir, the FAKE plugin in its own process) discovers
N resources seeded out of band in a FAKE cloud, through ``POST /api/v1/admin/discover``.

It prints the run's wall time (list 100 ids a page, read each, label, store as unmanaged, batched), the
rate, and the peak RSS (VmHWM) of the agent and of the plugin process, against the issue's goals (10,000
resources under 30 s and 1 GB). Then a second run over the same cloud: nothing new, so it lists only.
The agent uses FAKE's own rate limit (1,000 requests/s: one token per List page and per Read) unless
``--rate`` overrides it. Figures only; nothing is asserted.

    .venv/bin/python bench/discovery.py                  # 10,000
    .venv/bin/python bench/discovery.py --count 1000     # quicker
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fake_agent import peak_rss_mib, start_fake_agent  # noqa: E402
from svc_plugin_fake import FakeCloud  # noqa: E402

from support.processes import Agent, run_svc  # noqa: E402

SECONDS_GOAL = 30.0
RSS_GOAL_MIB = 1024


def seed(cloud_path: Path, count: int) -> None:
    """``count`` items written straight into the cloud's file (one transaction: seeding is not measured)."""
    cloud = FakeCloud(cloud_path)
    rows = [(f"item-{n:06d}", "FAKE::Test::Item",
             json.dumps({"Id": f"item-{n:06d}", "Value": f"value {n}", "Token": "t",
                         "Tags": [{"Key": "Name", "Value": f"item {n}"}, {"Key": "Team", "Value": "bench"}]}),
             time.time()) for n in range(count)]
    with cloud.transaction() as conn:
        conn.executemany("INSERT INTO resources VALUES (?, ?, ?, ?)", rows)


def register_target(agent: Agent, directory: Path, cloud: Path) -> None:
    forma = directory / "target.pkl"
    target = f'new svc.Target {{ label = "bench"; config = new fake.Config {{ path = "{cloud}" }} }}'
    forma.write_text(f'amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\nimport "@fake/fake.pkl"\nforma {{ {target} }}\n')
    result = run_svc("apply", "--mode", "patch", str(forma), "--yes", "--wait", "--config", str(agent.config),
                     env={"XDG_DATA_HOME": str(directory / "data")})
    if result.returncode != 0:
        raise SystemExit(f"registering the target failed:\n{result.stdout}{result.stderr}")


def discover(agent: Agent) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    response = httpx.post(f"{agent.url}/api/v1/admin/discover", timeout=3600)
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"discover answered {response.status_code}: {response.text}")
    return seconds, response.json()


def plugin_pid(agent: Agent) -> int | None:
    for plugin in httpx.get(f"{agent.url}/api/v1/plugins", timeout=10).json()["plugins"]:
        if plugin["namespace"] == "FAKE" and (plugin.get("process") or {}).get("pid"):
            return int(plugin["process"]["pid"])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=None, help="the FAKE rate limit, requests per second")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="svc-bench-discovery-") as tmp:
        directory = Path(tmp)
        cloud = directory / "cloud.db"
        seed(cloud, args.count)
        agent = start_fake_agent(directory, max_retries=None, plugin_config=(
            f"rateLimit {{ maxRequestsPerSecondForNamespace = {args.rate} }}" if args.rate else ""))
        try:
            assert agent.process is not None
            register_target(agent, directory, cloud)
            seconds, report = discover(agent)
            found = report.get("Discovered")
            print(f"discovery of {args.count} FAKE resources: {seconds:.2f} s ({args.count / seconds:,.0f}/s), "
                  f"{found} stored as unmanaged  [goal ≤ {SECONDS_GOAL:g} s: "
                  f"{'met' if seconds <= SECONDS_GOAL and found == args.count else 'NOT met'}]", flush=True)
            again, report = discover(agent)
            print(f"second run (nothing new, {report.get('Listed')} ids listed): {again:.2f} s", flush=True)
            peak = peak_rss_mib(agent.process.pid)
            print(f"agent peak RSS (VmHWM) {peak:.0f} MiB  [goal ≤ {RSS_GOAL_MIB} MiB: "
                  f"{'met' if peak <= RSS_GOAL_MIB else 'NOT met'}]", flush=True)
            pid = plugin_pid(agent)
            if pid is not None:
                print(f"FAKE plugin process peak RSS (VmHWM) {peak_rss_mib(pid):.0f} MiB", flush=True)
        finally:
            agent.stop()


if __name__ == "__main__":
    main()
