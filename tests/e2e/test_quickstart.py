"""The README's first command: install, start an agent on the embedded default, check it."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from support.processes import run_svc

REPO = Path(__file__).resolve().parents[2]


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.slow
def test_quickstart_script(home: Path) -> None:
    if not port_is_free(49684):
        pytest.skip("port 49684 is taken on this machine; the quick start uses the default port")
    result = subprocess.run(["bash", str(REPO / "scripts" / "quickstart.sh")], capture_output=True, text=True,
                            timeout=600, env=dict(os.environ))
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        assert "The agent is running." in result.stdout
        assert "http://localhost:49684" in result.stdout
        status = run_svc("status", "agent", "--config", str(REPO / "examples" / "quickstart" / "svc.conf.pkl"),
                         "--output-consumer", "machine")
        assert status.returncode == 0, status.stderr
    finally:
        run_svc("agent", "stop")
    assert port_is_free(49684)
