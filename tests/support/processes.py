"""Real processes for tests: the ``svc`` console script and ``svc agent start``."""

from __future__ import annotations

import os
import pty
import select
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from svc.cli.worker import SPARE_NAME
from svc.plugins.conformance.bench import stop_agent

SVC = str(Path(sys.executable).parent / "svc")
# Whether ``svc`` is the native launcher (``scripts/build_launcher.py``) rather than pip's console script.
NATIVE_LAUNCHER = Path(SVC).read_bytes()[:4] == b"\x7fELF"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def isolated_home(base: Path) -> Iterator[Path]:
    """HOME, the XDG dirs and the agent's PID file under ``base``, for a module's fixtures (pytest's
    ``monkeypatch`` fixture is per test); yields the home directory."""
    monkeypatch = pytest.MonkeyPatch()
    home = base / "home"
    for name, value in {"HOME": home, "XDG_DATA_HOME": home / "data", "XDG_CONFIG_HOME": home / "config",
                        "SVC_PID_FILE": base / "agent.pid"}.items():
        monkeypatch.setenv(name, str(value))
    try:
        yield home
    finally:
        monkeypatch.undo()


def postgres_datastore_block(fields: Mapping[str, object]) -> str:
    """An agent config's ``datastore`` block for PostgreSQL with these ``postgres`` fields (ints bare, the rest as
    Pkl strings), for ``on_demand_agent``'s ``datastore``."""
    body = "; ".join(f"{key} = {value}" if isinstance(value, int) else f"{key} = {_pkl_string(str(value))}"
                     for key, value in fields.items())
    return f'datastore {{ datastoreType = "postgres"; postgres {{ {body} }} }}'


def _pkl_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def on_demand_agent(directory: Path, plugins: str, *, imports: Sequence[str] = ("FAKE",), max_retries: int | None = 5,
                    members: str = "", env: Mapping[str, str] | None = None, datastore: str | None = None) -> Agent:
    """An agent (not started) on SQLite in ``directory`` (``svc.db``; config ``agent.pkl``, log ``agent.log``)
    whose synchronization and discovery run only when asked, so that tests and benches decide when.

    ``plugins`` is the body of its ``resourcePlugins``, naming the plugin modules ``imports``; ``max_retries``
    with fast retry delays (None: the default retry settings); ``members`` more members of its ``agent`` block;
    ``datastore`` its ``datastore { … }`` block instead of that SQLite file (e.g. ``PgCluster.pkl_postgres_block``).
    The config's ``cli`` block points at it, so ``--config`` serves both sides."""
    port = free_port()
    retry = ("" if max_retries is None else
             f"retry {{ retryDelay = 50.ms; statusCheckInterval = 100.ms; maxRetries = {max_retries} }}")
    lines = ['amends "svc:/Config.pkl"', *(f'import "plugins:/{name}.pkl"' for name in imports),
             "agent {",
             f'  server {{ bindAddress = "127.0.0.1"; port = {port} }}',
             "  " + (datastore or f'datastore {{ sqlite {{ filePath = "{directory / "svc.db"}" }} }}'),
             "  resourcePlugins {", textwrap.indent(plugins, "    "), "  }",
             f"  {retry}",
             "  synchronization { enabled = false }",
             "  discovery { enabled = false }",
             textwrap.indent(members, "  "),
             "}",
             f'cli {{ api {{ url = "http://localhost"; port = {port} }} }}']
    config = directory / "agent.pkl"
    config.write_text("\n".join(lines) + "\n")
    return Agent(config=config, port=port, log=directory / "agent.log", env=dict(env or {}))


def child_command_lines(pid: int) -> list[str]:
    """The command lines of a live process's children (Linux: read from /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                found.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip())
            except OSError:
                continue  # it exited meanwhile
    return found


def is_cli_spare(pid: int) -> bool:
    """Whether a live process is the spare worker a CLI server keeps for the next command (by its process name)."""
    return _name(pid) == SPARE_NAME


def is_pkl_server(pid: int) -> bool:
    """Whether a live process is a ``pkl server`` (of a command, or the one a CLI server lends its spares)."""
    return _name(pid) == b"pkl"


def process_state(pid: int) -> str | None:
    """A process's state letter (R, S, T: stopped, Z: exited, not reaped, …), or None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None


def stopped_within(pid: int, within: float = 10) -> bool:
    """Whether the process is stopped (SIGSTOP), within ``within`` seconds: a signal is delivered after ``kill``
    returns."""
    deadline = time.monotonic() + within
    while process_state(pid) != "T":
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _name(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/comm").read_bytes().strip()
    except OSError:
        return b""


def run_svc(*args: str, env: Mapping[str, str] | None = None, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Runs the real ``svc`` console script."""
    return subprocess.run([SVC, *args], capture_output=True, text=True, timeout=timeout, input=input,
                          env={**os.environ, **(env or {})})


def run_svc_on_terminal(*args: str, answer: str, env: Mapping[str, str] | None = None, timeout: float = 120,
                        before_answer: Callable[[], object] | None = None) -> tuple[int, str]:
    """Runs the real ``svc`` console script on a pseudo-terminal, as a person would, typing ``answer`` and Enter
    at its first question (after ``before_answer``, if given: what happens while a person reads the plan). Its
    exit code and everything it wrote to the terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([SVC, *args], stdin=follower, stdout=follower, stderr=follower,
                               env={**os.environ, "COLUMNS": "200", **(env or {})}, close_fds=True)
    os.close(follower)
    output, asked, deadline = b"", False, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closes once the process has exited
                break
            if not chunk:
                break
            output += chunk
            if not asked and b"?" in output and b"[y/N]" in output:
                if before_answer is not None:
                    before_answer()
                os.write(leader, answer.encode() + b"\r")
                asked = True
        return process.wait(timeout=max(deadline - time.monotonic(), 1)), output.decode(errors="replace")
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()


@dataclass
class Agent:
    """A real ``svc agent start`` process."""

    config: Path
    port: int
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    scheme: str = "http"
    process: subprocess.Popen[bytes] | None = None
    executable: str = SVC  # the svc console script of the environment the agent runs in

    @property
    def url(self) -> str:
        return f"{self.scheme}://localhost:{self.port}"

    def start(self, wait: bool = True, verify: object = False) -> Agent:
        self.process = subprocess.Popen(
            [self.executable, "agent", "start", "--config", str(self.config)],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, env={**os.environ, **self.env},
        )
        if wait:
            self.wait_healthy(verify)
        return self

    def wait_healthy(self, verify: object = False, timeout: float = 120) -> None:
        # Generous: a loaded CI machine runs three times slower, and an agent with the full AWS package reads
        # ~1,700 cached schemas before it answers. A healthy agent returns at once; only a broken one waits.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"agent exited with {self.process.returncode}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/api/v1/health", verify=verify, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"agent not healthy after {timeout}s:\n{self.output()}")

    def wait_exit(self, timeout: float = 30) -> int:
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        stop_agent(self.process)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
