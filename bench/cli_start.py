"""How much CPU a short CLI command costs: svc's against Terraform's, on this machine.

Runs each command N times and prints the median CPU seconds (user + system, the command's process and the
children it waited for, e.g. the Pkl server that evaluates the CLI config) and the median wall seconds, svc and
its Terraform counterpart side by side, with the ratio svc ÷ Terraform:

    svc --version           terraform version          (CHECKPOINT_DISABLE: no update check over the network)
    svc --help              terraform -help
    svc inventory           terraform state list       (a state of one terraform_data resource, made offline)
    svc command list        terraform show             (what the state holds, the nearest "what was done")

Each svc command runs twice over: through the warm CLI server (``svc.launcher``; the CPU of the worker that ran
it, which the server reaped, is added to the command's) and in its own process (``SVC_CLI_SERVER=off``).

svc talks to a real agent (SQLite, the FAKE plugin, in a temp dir) with one applied resource and its command,
through a config file as a user's ``~/.config/svc/svc.conf.pkl`` would be. Terraform's rows are left out when
``terraform`` is not on PATH. The goal of issue 28 is at most 0.3 CPU seconds for each svc command; figures only,
nothing is asserted (``tests/unit/test_cli_start.py`` keeps the heavy modules out of the start-up path).

    .venv/bin/python bench/cli_start.py           # 11 runs of each
    .venv/bin/python bench/cli_start.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_agent import cli_server, server_cpu, start_fake_agent, stop_cli_server, workers_cpu  # noqa: E402

SVC = str(Path(sys.executable).parent / "svc")
GOAL_CPU_SECONDS = 0.3
TERRAFORM_CONFIG = 'resource "terraform_data" "example" {\n  input = "hello"\n}\n'
FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/test/item.pkl"

forma {
  new svc.Stack { label = "bench" }
  new svc.Target { label = "cloud"; config = new fake.Config { path = "%s" } }
  new item.Item { label = "one"; value = "v" }
}
"""


@dataclass(frozen=True)
class Timing:
    cpu: float  # median CPU seconds
    wall: float  # median wall seconds


def measure(argv: list[str], runs: int, env: dict[str, str], cwd: Path | None = None,
            server: Callable[[], int | None] = lambda: None) -> Timing:
    """The median CPU and wall seconds of ``runs`` runs of ``argv`` (which must succeed); ``server``: the CLI
    server's process id, whose reaped children's CPU (and its Pkl server's) is the command's too."""
    cpus, walls = [], []
    for _ in range(runs):
        serving = server()
        in_server = server_cpu(serving) if serving else 0.0
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
        # wait4's usage covers the process and every child it waited for (the Pkl server, for svc)
        _, status, usage = os.wait4(process.pid, 0)
        walls.append(time.perf_counter() - started)
        process.returncode = os.waitstatus_to_exitcode(status)
        errors = process.stderr.read().decode(errors="replace") if process.stderr else ""
        if process.stderr:
            process.stderr.close()
        if process.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}): {errors}")
        in_server = workers_cpu(serving) - in_server if serving else 0.0
        cpus.append(usage.ru_utime + usage.ru_stime + in_server)
    return Timing(statistics.median(cpus), statistics.median(walls))


def terraform_state(directory: Path, terraform: str, env: dict[str, str]) -> None:
    """A Terraform working directory whose state holds one ``terraform_data`` resource (built in: no provider
    to download)."""
    (directory / "main.tf").write_text(TERRAFORM_CONFIG)
    for step in (["init", "-input=false", "-no-color"], ["apply", "-auto-approve", "-input=false", "-no-color"]):
        subprocess.run([terraform, *step], cwd=directory, env=env, check=True, capture_output=True, timeout=300)


def svc_world(directory: Path, env: dict[str, str]) -> Path:
    """Applies a one-resource forma through the agent, so that the inventory and the command list hold
    something; returns the agent's config (its ``cli`` block points at the agent)."""
    agent = start_fake_agent(directory, healthy_within=120)
    forma = directory / "main.pkl"
    forma.write_text(FORMA % (directory / "cloud.db"))
    subprocess.run([SVC, "apply", str(forma), "--config", str(agent.config), "--yes", "--wait"], env=env,
                   check=True, capture_output=True, timeout=300)
    return agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=11, help="runs of each command (the median is printed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="svc-cli-start-") as temp:
        root = Path(temp)
        home = root / "home"
        (home / ".config" / "svc").mkdir(parents=True)
        # Python writes its bytecode cache as for a user: with PYTHONDONTWRITEBYTECODE every command would compile
        # svc's modules again (a checkout that never wrote its .pyc files looks ~50 ms slower).
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "HOME": str(home),
               "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / "data"), "COLUMNS": "120",
               "CHECKPOINT_DISABLE": "1", "TF_CLI_CONFIG_FILE": str(root / "terraformrc"),
               "XDG_RUNTIME_DIR": str(root / "run")}
        (root / "run").mkdir(mode=0o700)
        (root / "terraformrc").write_text("")
        agent = svc_world(root, env)
        try:
            # the user's CLI config, read by every svc command below as it is by default
            shutil.copy(agent.config, home / ".config" / "svc" / "svc.conf.pkl")
            terraform = shutil.which("terraform")
            terraform_dir = root / "terraform"
            if terraform:
                terraform_dir.mkdir()
                terraform_state(terraform_dir, terraform, env)
            rows = [(["--version"], ["version"]), (["--help"], ["-help"]), (["inventory"], ["state", "list"]),
                    (["command", "list"], ["show"])]
            print(f"CPU seconds (user + system), median of {args.runs} runs; wall seconds in brackets. "
                  f"Goal for svc: at most {GOAL_CPU_SECONDS} s CPU.")
            print(f"{'svc command':<20} {'own process':>14} {'svc':>14}   {'terraform command':<24} "
                  f"{'terraform':>14} {'ratio':>6}")
            alone = {**env, "SVC_CLI_SERVER": "off"}
            for svc_args, terraform_args in rows:
                own = measure([SVC, *svc_args], args.runs, alone)
                mine = measure([SVC, *svc_args], args.runs, env, server=lambda: cli_server(root / "run"))
                line = (f"{'svc ' + ' '.join(svc_args):<20} {own.cpu:6.3f} [{own.wall:5.3f}] "
                        f"{mine.cpu:6.3f} [{mine.wall:5.3f}]")
                if terraform:
                    theirs = measure([terraform, *terraform_args], args.runs, env, cwd=terraform_dir)
                    ratio = mine.cpu / theirs.cpu if theirs.cpu else float("inf")
                    line += (f"   {'terraform ' + ' '.join(terraform_args):<24} {theirs.cpu:6.3f} [{theirs.wall:5.3f}]"
                             f" {ratio:6.2f}")
                flag = "" if mine.cpu <= GOAL_CPU_SECONDS else "   over the goal"
                print(line + flag, flush=True)
            if not terraform:
                print("terraform is not on PATH: its rows are left out")
        finally:
            agent.stop()
            stop_cli_server(root / "run")


if __name__ == "__main__":
    main()
