"""A real ``moto_server`` (AWS APIs on a loopback port) for tests and benches."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from support.processes import free_port

MOTO_ACCOUNT = "123456789012"  # moto's default account


class MotoStartError(RuntimeError):
    """moto_server exited or did not answer in time."""


@contextmanager
def moto_server(log: Path, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``moto_server`` on a free loopback port, its output in ``log``; yields its URL and stops it after.
    ``env`` adds variables to its environment (moto's own switches, such as ``INITIAL_NO_AUTH_ACTION_COUNT``)."""
    port = free_port()
    server = Path(sys.executable).parent / "moto_server"
    with log.open("wb") as output:
        process = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=output, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/moto-api/", timeout=1)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise MotoStartError(f"moto_server did not start:\n{log.read_text(errors='replace')}") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def reset(url: str) -> None:
    """Forgets every resource moto holds."""
    httpx.post(f"{url}/moto-api/reset", timeout=10).raise_for_status()
