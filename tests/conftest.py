"""Shared fixtures: an isolated home, free ports, config files, a real agent process, the real CLI."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

SVC = str(Path(sys.executable).parent / "svc")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME (and XDG dirs, PID file) so tests never touch the user's files."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("SVC_PID_FILE", str(tmp_path / "agent.pid"))
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR", "SVC_TESTING_AGENT_VERSION"):
        monkeypatch.delenv(variable, raising=False)
    return home


@pytest.fixture
def write_pkl(tmp_path: Path):
    """Writes a Pkl file (dedented) and returns its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write


def run_svc(*args: str, env: Mapping[str, str] | None = None, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Runs the real ``svc`` console script."""
    return subprocess.run([SVC, *args], capture_output=True, text=True, timeout=timeout, input=input,
                          env={**os.environ, **(env or {})})


@dataclass
class Agent:
    """A real ``svc agent start`` process."""

    config: Path
    port: int
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    scheme: str = "http"
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://localhost:{self.port}"

    def start(self, wait: bool = True, verify: object = False) -> Agent:
        self.process = subprocess.Popen(
            [SVC, "agent", "start", "--config", str(self.config)],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, env={**os.environ, **self.env},
        )
        if wait:
            self.wait_healthy(verify)
        return self

    def wait_healthy(self, verify: object = False, timeout: float = 30) -> None:
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
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture
def agent_factory(home: Path, tmp_path: Path, write_pkl) -> Iterator:
    """Makes agents from an ``agent { … }`` body; each gets a free port and is stopped afterwards.

    The config file also carries a matching ``cli`` block, so ``--config`` works for both sides;
    ``server`` adds members to ``agent.server`` (Pkl allows one ``server {}`` block per object).
    """
    agents: list[Agent] = []

    def make(agent_body: str = "", cli_body: str = "", scheme: str = "http", name: str | None = None,
             env: Mapping[str, str] | None = None, server: str = "") -> Agent:
        port = free_port()
        name = name or f"agent-{len(agents)}"
        config = write_pkl(f"{name}.pkl", f"""
            amends "svc:/Config.pkl"
            agent {{
              server {{ bindAddress = "127.0.0.1"; port = {port}; {server} }}
            {textwrap.indent(textwrap.dedent(agent_body), "  ")}
            }}
            cli {{
              api {{ url = "{scheme}://localhost"; port = {port} }}
            {textwrap.indent(textwrap.dedent(cli_body), "  ")}
            }}
        """)
        agent = Agent(config=config, port=port, log=tmp_path / f"{name}.log", env=dict(env or {}), scheme=scheme)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.stop()
