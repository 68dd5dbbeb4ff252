"""One-line messages through the real CLI for two mistakes a user makes: pointing the CLI at a server that is no
svc agent, and installing a plugin whose manifest is invalid."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.processes import free_port, run_svc

FIXTURE_PLUGIN = Path(__file__).parent.parent / "fixtures" / "plugin_pkg"


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[str]:
    """Python's own HTTP server on a free port: answers an HTML 404 to /api/v1/stats, as a web server would."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                "--directory", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None:
                    raise
                subprocess.run(["sleep", "0.1"], check=True)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_server_that_is_no_svc_agent_is_named_in_one_line(home: Path, web_server: str) -> None:
    result = run_svc("--api-url", web_server, "inventory")
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: the server at {web_server} is not a svc agent: it answered 404 (text/html) to GET /api/v1/stats; "
        "check the agent's address (--api-url, SVC_API_URL, SVC_API_PORT, or cli.api in the config)\n")


def test_a_plugin_whose_manifest_is_invalid_says_why(home: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin_pkg"
    shutil.copytree(FIXTURE_PLUGIN, plugin)
    manifest = plugin / "svc_fixture_plugin" / "manifest.pkl"
    manifest.write_text(manifest.read_text().replace("maxRequestsPerSecondForNamespace = 5",
                                                     'maxRequestsPerSecondForNamespace = "five"'))
    line = next(n for n, text in enumerate(manifest.read_text().splitlines(), 1) if '"five"' in text)
    listed = run_svc("plugin", "list", "--output-consumer", "machine", env={"PYTHONPATH": str(plugin)})
    assert listed.returncode == 0, listed.stderr
    fixture = next(p for p in json.loads(listed.stdout)["plugins"] if p["namespace"] == "FIXTURE")
    assert fixture["loadStatus"] == "invalid"
    assert fixture["error"] == (
        "the manifest of plugin FIXTURE is invalid: Expected value of type `Int`, but got type `String`. "
        f"({manifest}:{line}, rateLimit.maxRequestsPerSecondForNamespace)")
    human = run_svc("plugin", "list", env={"PYTHONPATH": str(plugin), "COLUMNS": "400"})
    # The table shows the same reason (wrapped in its column).
    assert "invalid: the manifest of plugin FIXTURE is invalid: Expected value of type `Int`" in human.stdout
    assert f"manifest.pkl:{line}, rateLimit.maxRequestsPerSecondForNamespace" in human.stdout, human.stdout
