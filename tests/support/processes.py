"""Real processes for tests: the ``svc`` console script and ``svc agent start``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

SVC = str(Path(sys.executable).parent / "svc")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
