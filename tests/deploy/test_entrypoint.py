"""The container's start: deploy/entrypoint.sh, deploy/healthcheck.py and the App Runner start command,
run directly (no Docker engine here) against a real agent."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deploy_support import DEPLOY

from support.processes import Agent, free_port
from support.tiny_http import Answer, TinyHttp

ENTRYPOINT = DEPLOY / "entrypoint.sh"
HEALTHCHECK = DEPLOY / "healthcheck.py"
VENV_BIN = str(Path(sys.executable).parent)  # where `svc` is, as /usr/local/bin is in the image


def agent_config(port: int) -> str:
    # Backslashes, quotes, `$` and no trailing newline: the file must hold the variable byte for byte.
    return (f'amends "svc:/Config.pkl"\n// written from $SVC_CONFIG: \\n stays "as is"\n'
            f'agent {{ server {{ bindAddress = "127.0.0.1"; port = {port} }} }}')


def container_env(home: Path, **variables: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "PATH": f"{VENV_BIN}:{os.environ['PATH']}", **variables}
    for name in ("SVC_CONFIG", "SVC_CONFIG_FILE"):
        if name not in variables:
            env.pop(name, None)
    return env


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[Agent]]:
    """Agents started through the entrypoint; stopped (SIGTERM, as a platform does) afterwards."""
    agents: list[Agent] = []
    yield agents
    for agent in agents:
        agent.stop()


def start(command: list[str], env: dict[str, str], port: int, log: Path, agents: list[Agent]) -> Agent:
    agent = Agent(config=Path("unused"), port=port, log=log)
    agent.process = subprocess.Popen(command, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env)
    agents.append(agent)
    agent.wait_healthy()
    return agent


def assert_private_copy(path: Path, content: str) -> None:
    assert path.read_bytes() == content.encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_entrypoint_writes_the_config_readable_only_by_its_user_and_starts_the_agent(
        home: Path, tmp_path: Path, started: list[Agent]) -> None:
    port = free_port()
    config = agent_config(port)

    agent = start([str(ENTRYPOINT)], container_env(home, SVC_CONFIG=config), port, tmp_path / "a.log", started)

    written = home / ".config" / "svc" / "agent.pkl"  # the default location
    assert_private_copy(written, config)
    # exec: the agent is the process the platform signals, not a shell in front of it.
    assert agent.process is not None
    cmdline = Path(f"/proc/{agent.process.pid}/cmdline").read_bytes().split(b"\0")
    assert b"agent" in cmdline and b"start" in cmdline and str(written).encode() in cmdline
    # The image's health probe agrees.
    probe = subprocess.run([sys.executable, str(HEALTHCHECK)], capture_output=True, text=True,
                           env={**os.environ, "SVC_HEALTH_URL": f"http://127.0.0.1:{port}/api/v1/health"})
    assert (probe.returncode, probe.stderr) == (0, "")
    agent.process.send_signal(signal.SIGTERM)
    assert agent.wait_exit() == 0


def test_entrypoint_replaces_an_older_file_at_the_overridden_location(
        home: Path, tmp_path: Path, started: list[Agent]) -> None:
    target = tmp_path / "run" / "agent.pkl"
    target.parent.mkdir()
    target.write_text("// an old, world-readable config")
    target.chmod(0o644)
    port = free_port()
    config = agent_config(port)

    start([str(ENTRYPOINT)], container_env(home, SVC_CONFIG=config, SVC_CONFIG_FILE=str(target)), port,
          tmp_path / "a.log", started)

    assert_private_copy(target, config)


@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_entrypoint_without_a_config_fails_with_one_clear_line(home: Path, tmp_path: Path, value: str | None) -> None:
    target = tmp_path / "agent.pkl"
    variables = {"SVC_CONFIG_FILE": str(target)} | ({} if value is None else {"SVC_CONFIG": value})
    result = subprocess.run([str(ENTRYPOINT)], capture_output=True, text=True, timeout=30,
                            env=container_env(home, **variables))
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "svc-entrypoint: SVC_CONFIG is unset or empty; store the agent config in the secrets store "
        "and inject it as SVC_CONFIG"]
    assert not target.exists()


def test_healthcheck_reports_an_unreachable_agent_in_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}/api/v1/health"
    probe = subprocess.run([str(HEALTHCHECK)], capture_output=True, text=True, env={**os.environ, "SVC_HEALTH_URL": url})
    assert probe.returncode == 1
    assert len(probe.stderr.splitlines()) == 1
    assert probe.stderr.startswith(f"svc-healthcheck: unhealthy: {url} is not reachable")


@pytest.mark.parametrize(("status", "code"), [(200, 0), (503, 1)])
def test_healthcheck_passes_a_follower_and_fails_a_503(status: int, code: int) -> None:
    """The probe reads the status only: a follower (200, ``Role`` follower) is healthy, so a rolling deployment's
    new task turns healthy while the old one still leads; a 503 (datastore down) is not."""
    body = {"Status": "ok", "Role": "follower", "Leader": "agent-1"}
    with TinyHttp(lambda _: Answer(status, body)) as agent:
        url = f"{agent.url}/api/v1/health"
        probe = subprocess.run([str(HEALTHCHECK)], capture_output=True, text=True,
                               env={**os.environ, "SVC_HEALTH_URL": url})
    assert probe.returncode == code, probe.stderr
    assert [request.path for request in agent.seen] == ["/api/v1/health"]
    if code:
        assert probe.stderr == f"svc-healthcheck: unhealthy: {url} answered HTTP 503\n"


def apprunner_start_command() -> list[str]:
    """The StartCommand as App Runner runs it: split on whitespace, nothing else."""
    service = json.loads((DEPLOY / "apprunner" / "service.json").read_text())
    return service["SourceConfiguration"]["ImageRepository"]["ImageConfiguration"]["StartCommand"].split()


def test_apprunner_start_command_is_one_sh_token_that_writes_the_config_and_starts_the_agent(
        home: Path, tmp_path: Path, started: list[Agent]) -> None:
    command = apprunner_start_command()
    assert command[:2] == ["sh", "-c"] and len(command) == 3 and "${IFS}" in command[2]
    port = free_port()
    config = agent_config(port)

    start(command, container_env(home, SVC_CONFIG=config), port, tmp_path / "a.log", started)

    assert_private_copy(home / "agent.pkl", config)


def test_apprunner_start_command_without_a_config_fails(home: Path) -> None:
    result = subprocess.run(apprunner_start_command(), capture_output=True, text=True, timeout=30,
                            env=container_env(home, SVC_CONFIG=""))
    assert result.returncode != 0
    assert len(result.stderr.splitlines()) == 1 and "SVC_CONFIG" in result.stderr
    assert not (home / "agent.pkl").exists()
