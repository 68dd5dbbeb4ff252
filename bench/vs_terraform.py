"""svc against Terraform, side by side (issue 30): the same work through each tool's CLI, from the invocation to
its exit, and the ratio svc ÷ Terraform per phase and size.

The work: 1 root resource and N−1 resources that reference it. svc applies a forma of ``FAKE::Test::Item``s
(the FAKE plugin at zero latency, its in-flight limit 64) through the real ``svc`` console script and a real agent
(SQLite in a temp dir, or with ``--postgres URL`` a schema of its own in that PostgreSQL; its background
synchronization and discovery off, as Terraform has none); the CLI reads a
config file from its user config dir, as a user's would be. Terraform applies ``terraform_data`` resources (built
in: no provider, no network) whose ``input`` references the root's ``output``, with ``-parallelism=64``, in two
layouts: one ``resource`` block per resource (``blocks``) and one block with ``count`` (``count``); each phase is
compared against Terraform's quickest layout for it. Phases, in order, each tool taking its turn after the other
(who goes first alternates from run to run):

    apply          svc apply F --yes --wait            terraform apply -auto-approve
    no-op plan     svc plan F --detailed-exitcode      terraform plan -detailed-exitcode   (both must exit 0)
    no-op apply    svc apply F --yes --wait            terraform apply -auto-approve
    update 10%     the same, after N/10 of the referencing resources changed their value
    destroy        svc destroy F --yes --wait          terraform destroy -auto-approve

Each run starts from nothing (a new stack and cloud for svc, a new working directory for Terraform; svc's agent and
CLI have run every phase once before, untimed, and Python writes svc's bytecode cache as usual); the table
holds the median of ``--runs`` wall seconds, with the CPU seconds (user + system) of the command and what it waited
for (for svc: the CLI, and the worker of svc's CLI server that ran the command, with its Pkl server; the agent's
own CPU meanwhile in its column), then the goals of issue 30. svc's CLI server (``svc.launcher``) runs in a runtime
directory of the run's own: the warm-up starts it, as a user's first command does. The CLI's peak RSS is the
high-water mark (VmHWM, sampled while it runs) of the svc process or of the server's worker that ran the command;
its Pkl server's is listed apart. A Terraform command that runs longer than ``--terraform-timeout`` is stopped and
shown as ``>T`` (the ratio then reads ``<``, against that limit); that layout sits out the rest of that run
(``not run``).

``--compare OTHER_CHECKOUT`` puts another checkout's svc (its ``.venv``: CLI, agent, FAKE plugin) in Terraform's
place: a paired A/B of the same phases, this checkout ÷ the other, for a change's commit message. The svc timed
is the one next to the Python that runs this file: another checkout's ``.venv/bin/python bench/vs_terraform.py``
times that checkout's svc (this file and ``tests/support`` serve both).

Expected run time on a 2-CPU machine, three runs: sizes 10 and 100 under a minute; 1,000 4 to 10 minutes, most of
it Terraform's. At 10,000 Terraform's apply runs for tens of minutes in either layout (in one block each it had not
finished after 25): each run then takes about ``--terraform-timeout`` per layout, plus a minute of svc's
(``--layouts blocks`` times one layout).
Figures only; nothing is asserted. Skips (exit 0) where ``terraform`` is not on PATH.

    .venv/bin/python bench/vs_terraform.py --sizes 10 100 1000
    .venv/bin/python bench/vs_terraform.py --sizes 10000 --runs 1 --layouts blocks --terraform-timeout 1500
    .venv/bin/python bench/vs_terraform.py --sizes 10 100 --compare /work/wt/base
    .venv/bin/python bench/vs_terraform.py --sizes 10 100 --postgres postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_agent import (  # noqa: E402
    children,
    cli_server,
    drop_postgres_schema,
    postgres_datastore,
    process_cpu,
    server_cpu,
    start_fake_agent,
    stop_cli_server,
    workers_cpu,
)
from svc_plugin_fake import FakeCloud  # noqa: E402

from support.processes import is_pkl_server  # noqa: E402

IN_FLIGHT = 64  # the FAKE plugin's default maxInFlight (plugins/fake/…/Config.pkl): Terraform's -parallelism
PHASES = ("apply", "no-op plan", "no-op apply", "update 10%", "destroy")
LAYOUTS = ("blocks", "count")
RATIO_GOALS = {10: 0.5, 100: 0.5, 1000: 0.2, 10000: 0.2}  # svc ÷ Terraform's quickest, every phase
SECONDS_GOALS = {(10, "no-op plan"): 0.4, (10, "apply"): 0.6}
CLI_RSS_GOAL_MIB, CLI_RSS_GOAL_SIZE = 250, 10000

FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/test/item.pkl"

local root = new item.Item {{ label = "root"; value = "root" }}

forma {{
  new svc.Stack {{ label = "{stack}" }}
  new svc.Target {{ label = "{stack}"; config = new fake.Config {{ path = "{cloud}" }} }}
  root
  for (i in IntSeq(1, {last})) {{
    new item.Item {{ label = "r\\(i)"; value = "\\(if (i <= {changed}) "w" else "v")\\(i)"; ref = root.res.id }}
  }}
}}
"""


@dataclass(frozen=True)
class Measured:
    """One command: wall and CPU seconds (the process and the children it waited for), peak RSS in MiB (the
    process's own, sampled; and its children's, for svc its Pkl server), the agent's CPU seconds meanwhile."""

    wall: float
    cpu: float
    rss: float = float("nan")
    children_rss: float = float("nan")
    agent_cpu: float = float("nan")


class TimedOut(Exception):
    """The command ran longer than its limit and was stopped."""


# A phase that ran longer than the limit, and one not run because an earlier phase of that run had.
TIMED_OUT, SAT_OUT = "timed out", "sat out"
Run = Measured | str


def run_measured(argv: Sequence[str], *, cwd: Path | None, env: dict[str, str], timeout: float,
                 sample_rss: bool, ok: Callable[[int, str], bool] = lambda code, _: code == 0,
                 server: int | None = None) -> Measured:
    """Runs ``argv`` to its exit, output to a pipe (read as it comes, so a long listing never blocks it).
    ``server``: svc's CLI server, whose worker runs the command (its peak is the command's)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    output: list[bytes] = []
    reader = threading.Thread(target=lambda: output.append(process.stdout.read() if process.stdout else b""))
    reader.start()
    peaks = _PeakSampler(process.pid, server) if sample_rss else None
    timer = threading.Timer(timeout, os.killpg, (process.pid, signal.SIGKILL))
    timer.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        timer.cancel()
    wall = time.perf_counter() - started
    if peaks is not None:
        peaks.stop()
    reader.join()
    code = os.waitstatus_to_exitcode(status)
    process.returncode = code
    text = b"".join(output).decode(errors="replace")
    if code == -signal.SIGKILL and wall >= timeout:
        raise TimedOut(f"{argv[0]} {argv[1]} ran longer than {timeout:.0f} s")
    if not ok(code, text):
        raise SystemExit(f"{' '.join(argv)} failed ({code}):\n{text[-3000:]}")
    return Measured(wall, usage.ru_utime + usage.ru_stime,
                    peaks.own if peaks else usage.ru_maxrss / 1024, peaks.children if peaks else float("nan"))


class _PeakSampler:
    """The high-water marks (VmHWM) of a process and of its children, read every 20 ms while it runs: the mark
    only grows, so the last reading before the exit holds the peak (an exited process has none to read)."""

    def __init__(self, pid: int, server: int | None = None) -> None:
        self.pid = pid
        self.server = server
        self.own = self.children = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            workers = children(self.server) if self.server else []
            for process in (self.pid, *workers):
                if is_pkl_server(process):  # the one the CLI server lends: what it holds now, not its past peak
                    self.children = max(self.children, _status_mib(process, "VmRSS"))
                    continue
                self.own = max(self.own, _status_mib(process, "VmHWM"))
                for child in children(process):
                    self.children = max(self.children, _status_mib(child, "VmHWM"))

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _status_mib(pid: int, field: str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Tool:
    """One side of the comparison: runs a phase over a fresh world per run."""

    name: str

    def prepare(self, run: str, size: int) -> None:
        raise NotImplementedError

    def phase(self, phase: str) -> Measured:
        raise NotImplementedError

    def close(self) -> None:
        """Stops what the tool started."""


class Svc(Tool):
    """svc of one checkout: its agent (FAKE; SQLite, or a schema of its own in the PostgreSQL at ``postgres``)
    and its CLI, with a home of its own."""

    def __init__(self, name: str, svc: Path, directory: Path, timeout: float, postgres: str | None = None) -> None:
        self.name = name
        self.directory = directory
        self.timeout = timeout
        self.svc = str(svc)
        directory.mkdir(parents=True)
        self.postgres = postgres
        self.schema = f"svc_vs_terraform_{os.getpid()}_{directory.name}"
        datastore = postgres_datastore(postgres, self.schema) if postgres else None
        self.agent = start_fake_agent(directory, executable=self.svc, healthy_within=300, datastore=datastore)
        home = directory / "home"
        (home / ".config" / "svc").mkdir(parents=True)
        (home / ".config" / "svc" / "svc.conf.pkl").write_text(
            f'amends "svc:/Config.pkl"\ncli {{ api {{ url = "http://localhost"; port = {self.agent.port} }} }}\n')
        # Python caches bytecode as it does for a user (an environment that turns that off would compile every
        # module of svc's on every command, a fifth of a short one's CPU).
        # The CLI server (svc.launcher) of this checkout in a runtime directory of its own; kept through Terraform's
        # turns, which at 10,000 outlast its idle limit, as it would be between a user's commands.
        self.runtime = directory / "run"
        self.runtime.mkdir(mode=0o700)
        self.env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "HOME": str(home),
                    "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / "data"),
                    "XDG_CACHE_HOME": str(home / "cache"), "COLUMNS": "120", "XDG_RUNTIME_DIR": str(self.runtime),
                    "SVC_CLI_SERVER_IDLE": "7200"}
        self.forma = directory / "forma.pkl"
        self.cloud = directory / "cloud.db"
        self.size = 0
        self.stack = ""
        self._warm_up()

    def _warm_up(self) -> None:
        """Every phase once, untimed, on a stack of its own: the CLI's bytecode is written, and the agent has
        imported what its first command needs, as on a machine where svc is in use."""
        self.prepare("warm-up", 2)
        for phase in PHASES:
            self.phase(phase)

    def prepare(self, run: str, size: int) -> None:
        # A new stack and cloud each run: a destroyed stack's forma applied again would be refused as drift.
        self.size, self.stack = size, f"s{size}-{run}"
        self.cloud = self.directory / f"cloud-{self.stack}.db"
        self._write(changed=0)

    def _write(self, changed: int) -> None:
        self.forma.write_text(FORMA.format(stack=self.stack, cloud=self.cloud, last=self.size - 1, changed=changed))

    def phase(self, phase: str) -> Measured:
        if phase == "update 10%":
            self._write(changed=max(self.size // 10, 1))
        argv = {"apply": ["apply", str(self.forma), "--yes", "--wait"],
                "no-op plan": ["plan", str(self.forma), "--detailed-exitcode"],
                "no-op apply": ["apply", str(self.forma), "--yes", "--wait"],
                "update 10%": ["apply", str(self.forma), "--yes", "--wait"],
                "destroy": ["destroy", str(self.forma), "--yes", "--wait"]}[phase]
        assert self.agent.process is not None
        pid = self.agent.process.pid
        agent_before = process_cpu(pid) + sum(process_cpu(child) for child in children(pid))
        server = cli_server(self.runtime)
        server_before = server_cpu(server) if server else 0.0
        measured = run_measured([self.svc, *argv], cwd=self.directory, env=self.env, timeout=self.timeout,
                                sample_rss=True, server=server)
        agent = process_cpu(pid) + sum(process_cpu(child) for child in children(pid)) - agent_before
        # The worker that ran it (and its Pkl server), once the server has reaped it (the CLI may end before)
        in_server = workers_cpu(server) - server_before if server else 0.0
        self._check(phase)
        return Measured(measured.wall, measured.cpu + in_server, measured.rss, measured.children_rss, agent)

    def _check(self, phase: str) -> None:
        held = len(FakeCloud(self.cloud).resources())
        expected = 0 if phase == "destroy" else self.size
        if held != expected:
            raise SystemExit(f"{self.name}: after {phase} the FAKE cloud holds {held} resources, not {expected}")

    def close(self) -> None:
        self.agent.stop()
        stop_cli_server(self.runtime)
        if self.postgres:
            drop_postgres_schema(self.postgres, self.schema)


class Terraform(Tool):
    """Terraform in one layout, in a working directory of its own per run."""

    def __init__(self, layout: str, directory: Path, timeout: float) -> None:
        self.name = f"terraform {layout}"
        self.layout = layout
        self.root = directory
        self.timeout = timeout
        self.terraform = shutil.which("terraform") or "terraform"
        rc = directory / "terraformrc"
        directory.mkdir(parents=True)
        rc.write_text("")
        # No update check over the network, no user CLI config (and no warning that there is none).
        self.env = {**os.environ, "CHECKPOINT_DISABLE": "1", "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1"}
        self.work = directory
        self.size = 0

    def prepare(self, run: str, size: int) -> None:
        self.size = size
        self.work = self.root / f"{size}-{run}"
        self.work.mkdir()
        self._write(changed=0)
        subprocess.run([self.terraform, "init", "-input=false", "-no-color"], cwd=self.work, env=self.env,
                       check=True, capture_output=True, timeout=300)

    def _write(self, changed: int) -> None:
        root = 'resource "terraform_data" "root" {\n  input = "root"\n}\n'
        if self.layout == "count":
            body = (f'resource "terraform_data" "r" {{\n  count = {self.size - 1}\n'
                    f'  input = {{ ref = terraform_data.root.output, '
                    f'value = "${{count.index + 1 <= {changed} ? "w" : "v"}}${{count.index + 1}}" }}\n}}\n')
        else:
            body = "".join(f'resource "terraform_data" "r{i}" {{\n  input = {{ ref = terraform_data.root.output, '
                           f'value = "{"w" if i <= changed else "v"}{i}" }}\n}}\n' for i in range(1, self.size))
        (self.work / "main.tf").write_text(root + body)

    def phase(self, phase: str) -> Measured:
        if phase == "update 10%":
            self._write(changed=max(self.size // 10, 1))
        common = ["-input=false", "-no-color", f"-parallelism={IN_FLIGHT}"]
        argv = {"apply": ["apply", "-auto-approve", *common],
                "no-op plan": ["plan", "-detailed-exitcode", *common],
                "no-op apply": ["apply", "-auto-approve", *common],
                "update 10%": ["apply", "-auto-approve", *common],
                "destroy": ["destroy", "-auto-approve", *common]}[phase]
        measured = run_measured([self.terraform, *argv], cwd=self.work, env=self.env, timeout=self.timeout,
                                sample_rss=False)
        self._check(phase)
        return measured

    def _check(self, phase: str) -> None:
        state = json.loads((self.work / "terraform.tfstate").read_text())
        held = sum(len(resource["instances"]) for resource in state.get("resources", []))
        expected = 0 if phase == "destroy" else self.size
        if held != expected:
            raise SystemExit(f"{self.name}: after {phase} the state holds {held} resources, not {expected}")


def one_run(tools: Sequence[Tool], run: int, size: int, out: dict[tuple[str, int, str], list[Run]]) -> None:
    """Every phase, each tool in turn (the order turned around every other run); a tool that timed out sits out
    the rest of the run."""
    order = list(tools) if run % 2 == 0 else list(reversed(tools))
    out_of_run: set[str] = set()
    for tool in order:
        tool.prepare(str(run), size)
    for phase in PHASES:
        for tool in order:
            key = (tool.name, size, phase)
            if tool.name in out_of_run:
                out.setdefault(key, []).append(SAT_OUT)
                continue
            try:
                out.setdefault(key, []).append(tool.phase(phase))
            except TimedOut as stopped:
                print(f"    {tool.name}: {stopped}; it sits out the rest of run {run + 1}", flush=True)
                out.setdefault(key, []).append(TIMED_OUT)
                out_of_run.add(tool.name)


@dataclass(frozen=True)
class Summary:
    """The median of a tool's runs of one phase: a run that timed out counts as the limit (``timed_out``: the wall
    is then at least that); one that was not run counts as nothing (``ran``: how many runs count)."""

    wall: float
    cpu: float
    rss: float
    children_rss: float
    agent_cpu: float
    timed_out: bool
    ran: int

    @staticmethod
    def of(runs: Sequence[Run], limit: float) -> Summary:
        done = [run for run in runs if isinstance(run, Measured)]
        stopped = sum(1 for run in runs if run == TIMED_OUT)

        def median(values: list[float]) -> float:
            return statistics.median(values) if values else float("nan")

        return Summary(median([run.wall for run in done] + [limit] * stopped), median([r.cpu for r in done]),
                       max((r.rss for r in done), default=float("nan")),
                       max((r.children_rss for r in done), default=float("nan")),
                       median([r.agent_cpu for r in done]), stopped > 0, len(done) + stopped)

    def cell(self) -> str:
        if not self.ran:
            return "not run".rjust(15)
        if not self.cpu == self.cpu:  # no run finished
            return f">{self.wall:.0f}".rjust(15)
        # Below a second, milliseconds count: a 10-resource command takes a few dozen.
        wall = f"{'>' if self.timed_out else ''}{self.wall:.3f}" if self.wall < 1 else f"{self.wall:.2f}"
        return f"{wall:>7} [{self.cpu:5.2f}]"


def report(tools: Sequence[Tool], sizes: Sequence[int], results: dict[tuple[str, int, str], list[Run]],
           limit: float, compare: bool) -> None:
    mine, others = tools[0], tools[1:]
    print("\nWall seconds, median of the runs, [CPU seconds of the command and what it waited for]; "
          f"{mine.name}'s agent CPU apart.")
    header = (f"{'size':>6} {'phase':<12} {mine.name:>15} {'agent CPU':>9}"
              + "".join(f" {other.name:>18}" for other in others) + f" {'ratio':>6}  goal")
    print(header)
    verdicts: list[str] = []
    for size in sizes:
        for phase in PHASES:
            ours = Summary.of(results[(mine.name, size, phase)], limit)
            theirs = [Summary.of(results[(other.name, size, phase)], limit) for other in others]
            finished = [summary for summary in theirs if summary.ran and not summary.timed_out]
            stopped = [summary for summary in theirs if summary.timed_out]
            # Against the quickest that finished; when none did, against the limit they ran past: "below" that.
            quickest = min((s.wall for s in finished), default=None)
            bound = quickest or min((s.wall for s in stopped), default=None)
            ratio = ours.wall / bound if bound else float("nan")
            shown = f"{'<' if quickest is None and bound else ''}{ratio:.2f}"
            line = (f"{size:>6} {phase:<12} {ours.cell()} {ours.agent_cpu:9.2f}"
                    + "".join(f" {s.cell():>18}" for s in theirs) + f" {shown:>6}")
            if not compare:
                goal = RATIO_GOALS.get(size)
                marks = []
                if goal is not None and ratio == ratio:
                    marks.append(f"≤ {goal}: {'met' if ratio <= goal else 'NOT met'}")
                if (seconds := SECONDS_GOALS.get((size, phase))) is not None:
                    met = ours.wall <= seconds
                    marks.append(f"≤ {seconds} s: {'met' if met else 'NOT met'}")
                    verdicts.append(f"{phase} of {size}: {ours.wall:.2f} s (goal ≤ {seconds} s, "
                                    f"{'met' if met else 'NOT met'})")
                line += "  " + "; ".join(marks)
            print(line, flush=True)
        summaries = [Summary.of(results[(mine.name, size, phase)], limit) for phase in PHASES]
        peak, pkl = max(s.rss for s in summaries), max(s.children_rss for s in summaries)
        rss_line = f"{size:>6} {mine.name} CLI peak RSS {peak:.0f} MiB (its Pkl server {pkl:.0f} MiB)"
        if not compare and size == CLI_RSS_GOAL_SIZE:
            met = peak <= CLI_RSS_GOAL_MIB
            rss_line += f"  [goal ≤ {CLI_RSS_GOAL_MIB} MiB: {'met' if met else 'NOT met'}]"
            verdicts.append(f"CLI peak RSS at {size}: {peak:.0f} MiB (goal ≤ {CLI_RSS_GOAL_MIB} MiB, "
                            f"{'met' if met else 'NOT met'})")
        print(rss_line, flush=True)
    for verdict in verdicts:
        print(verdict)


def _load() -> str:
    return "load average " + " ".join(f"{n:.1f}" for n in os.getloadavg())


def _commit(directory: Path) -> str:
    return subprocess.run(["git", "-C", str(directory), "log", "-1", "--format=%h %s"], capture_output=True,
                          text=True).stdout.strip()[:80]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--runs", type=int, default=3, help="runs of every phase per tool (the median is shown)")
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS),
                        help="Terraform's layouts to time (the quickest counts)")
    parser.add_argument("--terraform-timeout", type=float, default=900, metavar="SECONDS",
                        help="stop a Terraform command after this long")
    parser.add_argument("--compare", type=Path, metavar="OTHER_CHECKOUT",
                        help="instead of Terraform: the svc of another checkout (with its own .venv)")
    parser.add_argument("--postgres", metavar="URL",
                        help="svc's agents on this PostgreSQL (postgresql://user@host:port/database), each in a "
                             "schema of its own dropped at the end, instead of SQLite")
    args = parser.parse_args()
    if min(args.sizes) < 2:
        parser.error("every size needs a root and at least one resource referencing it")
    # svc is the one installed next to the Python that runs this (another checkout's: run it with that .venv).
    here = Path(sys.executable).parent / "svc"
    if args.compare is None and shutil.which("terraform") is None:
        print("terraform is not on PATH: skipped")
        return
    limit = args.terraform_timeout
    with tempfile.TemporaryDirectory(prefix="svc-vs-terraform-") as tmp:
        directory = Path(tmp)
        tools: list[Tool] = []
        try:
            tools.append(Svc("svc", here, directory / "svc", limit, args.postgres))
            print(f"svc: {here} ({_commit(here.parent)}), on {'PostgreSQL' if args.postgres else 'SQLite'}")
            if args.compare is not None:
                other = args.compare.resolve() / ".venv" / "bin" / "svc"
                tools.append(Svc("other svc", other, directory / "other", limit, args.postgres))
                print(f"other svc: {other} ({_commit(other.parent)})")
            else:
                version = subprocess.run(["terraform", "version"], capture_output=True, text=True,
                                         env={**os.environ, "CHECKPOINT_DISABLE": "1"}).stdout.splitlines()[0]
                print(version)
                tools += [Terraform(layout, directory / f"tf-{layout}", limit) for layout in args.layouts]
            print(f"machine: {os.cpu_count()} CPUs, {_load()} at the start", flush=True)
            results: dict[tuple[str, int, str], list[Run]] = {}
            for size in args.sizes:
                for run in range(args.runs):
                    started = time.perf_counter()
                    one_run(tools, run, size, results)
                    print(f"  size {size}, run {run + 1}/{args.runs}: {time.perf_counter() - started:.0f} s",
                          flush=True)
            report(tools, args.sizes, results, limit, args.compare is not None)
            print(f"{_load()} at the end")
        finally:
            for tool in tools:
                tool.close()


if __name__ == "__main__":
    main()
