"""What the agent benches share: a real agent on SQLite in a temp dir with the FAKE plugin, its peak RSS, and the CPU
seconds of a live process and its children (read from /proc)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import psycopg  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402

from support.processes import (  # noqa: E402
    Agent,
    is_cli_spare,
    is_pkl_server,
    on_demand_agent,
    postgres_datastore_block,
)


def start_fake_agent(directory: Path, *, plugin_config: str = "", max_retries: int | None = 5,
                     healthy_within: float = 30, executable: str | None = None,
                     datastore: str | None = None) -> Agent:
    """Starts an agent whose background jobs are off (benches time the passes they ask for); it has its own
    PID file and data dir, so another agent may run on this machine. ``max_retries`` None: the default retry
    settings; ``healthy_within``: seconds it may take to answer (longer on a busy machine); ``executable``: the
    ``svc`` console script of another checkout's environment (default: this one's); ``datastore``: the config's
    ``datastore { … }`` block (default: SQLite in ``directory``)."""
    env = {"SVC_PID_FILE": str(directory / "agent.pid"), "XDG_DATA_HOME": str(directory / "data")}
    agent = on_demand_agent(directory, f"new FAKE.PluginConfig {{ {plugin_config} }}", max_retries=max_retries,
                            env=env, datastore=datastore)
    if executable is not None:
        agent.executable = executable
    agent.start(wait=False)
    try:
        agent.wait_healthy(timeout=healthy_within)
    except BaseException:
        agent.stop()
        raise
    return agent


def postgres_datastore(url: str, schema: str) -> str:
    """An agent config's ``datastore`` block for the PostgreSQL at ``url`` (``postgresql://user@host:port/db``), in
    ``schema`` (the agent creates it)."""
    params = conninfo_to_dict(url)
    return postgres_datastore_block({
        "host": params.get("host", "127.0.0.1"), "port": int(params.get("port", 5432)),
        "user": params.get("user", "postgres"), "password": params.get("password", ""),
        "database": params.get("dbname", "postgres"), "schema": schema})


def drop_postgres_schema(url: str, schema: str) -> None:
    """Drops what ``postgres_datastore(url, schema)`` gave an agent."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int, thread: int | None = None, *, reaped: bool = False) -> float:
    """User + system seconds of a live process, or of one of its threads (0 when it is gone); ``reaped``: with
    those of the children it has waited for (the CLI server's workers)."""
    try:
        stat = Path(f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat")
        fields = stat.read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return sum(int(field) for field in fields[11:15 if reaped else 13]) / _TICK


def workers_cpu(server: int, *, within: float = 10.0) -> float:
    """``server_cpu`` once the CLI server ``server`` has reaped every worker: a worker tells its client the exit code
    before it exits, so the client can end before the server has waited for it. The spare the server keeps for the
    next command is not waited for (a worker's CPU includes what it spent as a spare: the faults it took ahead,
    ``svc.cli.prefault``), nor its Pkl server, which lives on (stopped) between commands."""
    deadline = time.monotonic() + within
    while any(not (is_cli_spare(child) or is_pkl_server(child)) for child in children(server)) \
            and time.monotonic() < deadline:
        time.sleep(0.001)
    return server_cpu(server)


def server_cpu(server: int) -> float:
    """The CPU seconds of the workers the CLI server ``server`` has reaped and of the Pkl server it lends them."""
    return process_cpu(server, reaped=True) + sum(process_cpu(child) for child in children(server)
                                                  if is_pkl_server(child))


def cli_server(runtime: Path) -> int | None:
    """The process id of svc's CLI server in ``runtime`` (an ``XDG_RUNTIME_DIR``), once one listens there."""
    for lock in (runtime / "svc").glob("cli-*.lock"):
        try:
            pid = int(lock.read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            continue
        if any((runtime / "svc").glob("cli-*.sock")):
            return pid
    return None


def stop_cli_server(runtime: Path) -> None:
    """Ends svc's CLI server in ``runtime``, if one runs there (it leaves once its workers have ended)."""
    server = cli_server(runtime)
    if server is not None:
        os.kill(server, signal.SIGTERM)


def children(pid: int) -> list[int]:
    """The ids of a live process's children (none when it is gone)."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # it exited (a sampler thread races the process's end)
        return found
    for task in tasks:
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found
