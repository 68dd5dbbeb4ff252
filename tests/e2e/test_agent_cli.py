"""A real agent process driven by the real ``svc`` CLI: health, stats, status, stop, version lock-step."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import httpx
import yaml

from support.processes import run_svc
from svc import __version__


def test_health_stats_and_openapi(agent_factory) -> None:
    agent = agent_factory().start()
    health = httpx.get(f"{agent.url}/api/v1/health")
    assert health.status_code == 200
    body = health.json()  # an agent alone on its SQLite datastore leads
    assert body["Role"] == "leader" and body["Leader"] == body["AgentId"] and body["Version"] == __version__
    stats = httpx.get(f"{agent.url}/api/v1/stats").json()
    assert stats["Version"] == __version__
    assert len(stats["AgentId"]) == 27
    openapi = httpx.get(f"{agent.url}/api/v1/openapi.json").json()
    assert {"/api/v1/health", "/api/v1/stats"} <= set(openapi["paths"])


def test_agent_id_survives_restarts(agent_factory) -> None:
    agent = agent_factory().start()
    first = httpx.get(f"{agent.url}/api/v1/stats").json()["AgentId"]
    agent.stop()
    agent.start()
    assert httpx.get(f"{agent.url}/api/v1/stats").json()["AgentId"] == first


def test_status_agent_prints_the_version(agent_factory) -> None:
    agent = agent_factory().start()
    for command in (["status", "agent"], ["agent", "status"]):
        result = run_svc(*command, "--config", str(agent.config))
        assert result.returncode == 0, result.stderr
        assert __version__ in result.stdout
        assert "running" in result.stdout


def test_cli_reaches_the_agent_by_bare_hostname(agent_factory, tmp_path: Path) -> None:
    # Seed 000 §2: cli.api.url is the agent's hostname, or https://<service_host> when TLS is used.
    agent = agent_factory().start()
    config = tmp_path / "bare.pkl"
    config.write_text(f'amends "svc:/Config.pkl"\ncli {{ api {{ url = "localhost"; port = {agent.port} }} }}\n')
    result = run_svc("status", "agent", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert __version__ in result.stdout and f"http://localhost:{agent.port}" in result.stdout


def test_the_environment_and_api_url_point_the_cli_at_another_agent(agent_factory, tmp_path: Path) -> None:
    agent = agent_factory().start()
    elsewhere = tmp_path / "elsewhere.pkl"  # a config that names no running agent
    elsewhere.write_text('amends "svc:/Config.pkl"\ncli { api { url = "localhost"; port = 1 } }\n')

    def status(**env: str) -> str:
        result = run_svc("status", "agent", "--config", str(elsewhere), env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert f"http://localhost:{agent.port}" in status(SVC_API_PORT=str(agent.port))
    assert f"http://127.0.0.1:{agent.port}" in status(SVC_API_URL=f"http://127.0.0.1:{agent.port}")
    assert f"http://127.0.0.1:{agent.port}" in status(SVC_API_URL="127.0.0.1", SVC_API_PORT=str(agent.port))
    # --api-url comes first, then the environment, then the config file.
    flag_first = run_svc("--api-url", f"http://localhost:{agent.port}", "status", "agent", "--config",
                         str(elsewhere), env={"SVC_API_URL": "http://127.0.0.1:1"})
    assert flag_first.returncode == 0 and f"http://localhost:{agent.port}" in flag_first.stdout, flag_first.stderr

    unreachable = run_svc("status", "agent", "--config", str(agent.config), env={"SVC_API_PORT": "1"})
    assert unreachable.returncode == 1 and "http://localhost:1 is not running" in unreachable.stderr
    for name, value in (("SVC_API_PORT", "49684x"), ("SVC_API_URL", "ftp://agent"), ("SVC_API_URL", "h:99999")):
        wrong = run_svc("status", "agent", "--config", str(agent.config), env={name: value})
        assert wrong.returncode == 1 and wrong.stderr.startswith(f"Error: {name} must be"), wrong.stderr
        assert len(wrong.stderr.strip().splitlines()) == 1


def test_status_agent_machine_output(agent_factory) -> None:
    agent = agent_factory().start()
    as_json = run_svc("status", "agent", "--config", str(agent.config), "--output-consumer", "machine")
    assert as_json.returncode == 0
    assert json.loads(as_json.stdout)["Version"] == __version__
    assert as_json.stdout.count("\n") == 1  # one document, nothing else
    as_yaml = run_svc("status", "agent", "--config", str(agent.config),
                      "--output-consumer", "machine", "--output-schema", "yaml")
    assert yaml.safe_load(as_yaml.stdout)["Version"] == __version__


def test_status_agent_when_the_agent_is_stopped(agent_factory) -> None:
    agent = agent_factory()  # configured, never started
    result = run_svc("status", "agent", "--config", str(agent.config))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"Error: the agent at http://localhost:{agent.port} is not running")
    assert "connection refused" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_refuses_an_agent_of_another_version(agent_factory) -> None:
    agent = agent_factory(env={"SVC_TESTING_AGENT_VERSION": "9.9.9"}).start()
    result = run_svc("status", "agent", "--config", str(agent.config))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"Error: CLI version {__version__} does not match agent version 9.9.9; run: svc upgrade --version 9.9.9")


def test_agent_stop_uses_the_pid_file(agent_factory, tmp_path: Path) -> None:
    agent = agent_factory().start()
    pid_file = tmp_path / "agent.pid"
    assert int(pid_file.read_text()) == agent.process.pid
    result = run_svc("agent", "stop")
    assert result.returncode == 0, result.stderr
    assert f"PID {agent.process.pid}" in result.stdout
    assert agent.wait_exit() == 0
    assert not pid_file.exists()
    again = run_svc("agent", "stop")
    assert again.returncode == 1 and again.stderr.startswith("Error: the agent is not running")


def test_sigint_and_sigterm_stop_cleanly_and_logs_reach_the_file(agent_factory, home: Path) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        agent = agent_factory().start()
        agent.process.send_signal(sig)
        assert agent.wait_exit() == 0
        assert "svc agent stopped" in agent.output()  # console
    log_file = home / ".local" / "share" / "svc" / "log" / "svc.log"
    assert "listening on http://127.0.0.1" in log_file.read_text()


def test_log_file_and_levels_follow_the_config(agent_factory, tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "agent.log"
    agent = agent_factory(f'logging {{ filePath = "{log_file}"; consoleLogLevel = "warn" }}').start()
    agent.stop()
    assert "svc agent stopped" in log_file.read_text()
    assert "svc agent stopped" not in agent.output()  # info is below the console's warn


def test_a_second_agent_is_refused(agent_factory) -> None:
    first = agent_factory().start()
    second = agent_factory()
    result = run_svc("agent", "start", "--config", str(second.config))
    assert result.returncode == 1
    assert f"an agent is already running (PID {first.process.pid})" in result.stderr


def test_port_in_use_is_a_clear_error(agent_factory) -> None:
    agent = agent_factory()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", agent.port))
        taken.listen()
        result = run_svc("agent", "start", "--config", str(agent.config))
    assert result.returncode == 1
    assert result.stderr.strip() == (f"Error: port {agent.port} is already in use; "
                                     "stop what listens there or set agent.server.port")


def test_agent_start_with_an_invalid_config(write_pkl, home: Path) -> None:
    config = write_pkl("bad.pkl", 'amends "svc:/Config.pkl"\nagent { datastore { datastoreType = "mysql" } }\n')
    result = run_svc("agent", "start", "--config", str(config))
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: invalid config {config}")
    assert "datastoreType" in result.stderr


def test_agent_start_without_config_is_a_usage_error(home: Path) -> None:
    result = run_svc("agent", "start")
    assert result.returncode == 1
    assert "Missing option '--config'" in result.stderr


def test_version_flag() -> None:
    result = run_svc("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"svc version {__version__}"
