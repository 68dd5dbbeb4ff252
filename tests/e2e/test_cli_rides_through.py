"""The real CLI rides through an agent replacement (issue 29 item 5): a command started while no agent listens, or
while a load balancer has no healthy agent, succeeds once one is there, saying once on stderr that it waits; a
command followed across an agent's stop and start ends as it would have; ``SVC_RETRY_FOR=0`` fails at once as
before; a submission the agent may have taken is never sent twice. The retry policy: ``tests/unit/test_cli_retry.py``;
the client against scripted servers: ``tests/integration/test_cli_retries.py``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from svc_plugin_fake.cloud import FakeCloud

from support.balancer import Balancer
from support.fake_world import ENV, World, chain
from support.processes import SVC, on_demand_agent, run_svc, run_svc_on_terminal
from support.tiny_http import Answer, Request, TinyHttp
from svc import __version__

RETRYING = re.compile(r"^svc: the agent at (\S+) is unavailable \((.+)\); retrying for up to 60s "
                      r"\(cli\.api\.retryFor\)$", re.MULTILINE)
LATE = 2.0  # seconds between the command's start and the agent's


@pytest.fixture
def world(home: Path, tmp_path: Path) -> Iterator[World]:
    """An agent configured (FAKE on SQLite, the CLI's config pointing at it) but not started: each test starts it."""
    cloud_path = tmp_path / "cloud.db"
    agent = on_demand_agent(tmp_path, "new FAKE.PluginConfig {}")
    yield World(agent, FakeCloud(cloud_path), cloud_path, tmp_path)
    if agent.process is not None:
        agent.stop()


def environment(**more: str) -> dict[str, str]:
    base = {name: value for name, value in os.environ.items() if name != "SVC_RETRY_FOR"}
    return {**base, **ENV, **more}


def start_svc(world: World, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([SVC, *args, "--config", str(world.agent.config)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environment(**env))


def start_agent_later(world: World, delay: float = LATE) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(delay), world.agent.start()))
    thread.start()
    return thread


def test_an_inventory_asked_before_the_agent_starts_is_answered_once_it_does(world: World) -> None:
    started = time.monotonic()
    inventory = start_svc(world, "inventory", "resources")
    starting = start_agent_later(world)
    out, err = inventory.communicate(timeout=120)
    starting.join()
    assert inventory.returncode == 0, out + err
    assert time.monotonic() - started > LATE
    assert [match.groups() for match in RETRYING.finditer(err)] == [
        (f"http://localhost:{world.agent.port}", "connection refused")], err
    assert err.count("\n") == 1 and out.strip(), out  # the one line on stderr; the answer on stdout


def test_an_apply_waited_for_before_the_agent_starts_succeeds(world: World) -> None:
    forma = world.forma(chain("a", "b", "c"))
    apply = start_svc(world, "apply", "--mode", "reconcile", str(forma), "--yes", "--wait")
    starting = start_agent_later(world)
    out, err = apply.communicate(timeout=120)
    starting.join()
    assert apply.returncode == 0, out + err
    assert out.count("Success: create FAKE::Test::Item") == 3, out
    assert len(RETRYING.findall(err)) == 1 and err.count("\n") == 1, err
    assert sorted(r["Label"] for r in world.inventory().values()) == ["a", "b", "c"]


def test_with_svc_retry_for_0_it_fails_at_once_as_before(world: World) -> None:
    started = time.monotonic()
    result = run_svc("inventory", "resources", "--config", str(world.agent.config),
                     env={"SVC_RETRY_FOR": "0"})
    assert time.monotonic() - started < 15  # the CLI's own start and its config's evaluation, no waiting
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"Error: the agent at http://localhost:{world.agent.port} is not running "
                                    "(connection refused); start it with: svc agent start")
    assert len(result.stderr.strip().splitlines()) == 1 and "retrying" not in result.stderr


def test_a_load_balancer_with_no_healthy_agent_yet_is_waited_out(world: World) -> None:
    world.agent.start()
    with Balancer(health_check=True) as balancer:
        first_answered = threading.Event()

        def register_later() -> None:  # LATE after the CLI's first request, however long its start took
            deadline = time.monotonic() + 60
            while balancer.answered[503] == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            first_answered.set()
            time.sleep(LATE)
            balancer.register(world.agent.port)

        registering = threading.Thread(target=register_later)
        registering.start()
        result = run_svc("--api-url", balancer.url, "inventory", "resources", "--config",
                         str(world.agent.config), env=environment())
        registering.join()
        assert first_answered.is_set() and result.returncode == 0, result.stdout + result.stderr
        assert [match.groups() for match in RETRYING.finditer(result.stderr)] == [
            (balancer.url, "503 Service Unavailable: Service Unavailable (test load balancer)")], result.stderr
        assert balancer.answered[503] >= 2


def test_a_submission_the_agent_may_have_taken_is_not_sent_again(world: World) -> None:
    """The agent reads the POST and closes the connection without answering (it stopped mid-request): the CLI
    cannot know whether the command was stored, so it says how to find out instead of sending it again."""
    health = {"Version": __version__, "Role": "leader", "AgentId": "stand-in"}

    def respond(request: Request) -> Answer | None:
        return Answer(200, health) if request.method == "GET" and request.path == "/api/v1/health" else None

    forma = world.forma(chain("a"))
    with TinyHttp(respond) as agent:
        result = run_svc("--api-url", agent.url, "apply", "--mode", "reconcile", str(forma), "--yes",
                         "--config", str(world.agent.config), env=environment())
    assert result.returncode == 1
    assert [(request.method, request.path) for request in agent.seen] == [
        ("GET", "/api/v1/health"), ("POST", "/api/v1/commands")]
    assert result.stderr.startswith(f"Error: the agent at {agent.url} did not answer with HTTP")
    assert result.stderr.rstrip().endswith("check with svc command status whether it was taken")
    assert len(result.stderr.strip().splitlines()) == 1


def restart_during(world: World, command_running: threading.Event, pause: float = 1.0) -> threading.Thread:
    """Once the command is under way, stops the agent (SIGTERM: it stops the command where it is) and starts it
    again ``pause`` seconds later, on the same port and database: it resumes the command."""
    def restart() -> None:
        assert command_running.wait(timeout=60)
        assert world.agent.process is not None
        world.agent.process.send_signal(signal.SIGTERM)
        world.agent.wait_exit()
        time.sleep(pause)
        world.agent.start()

    thread = threading.Thread(target=restart)
    thread.start()
    return thread


def when_running(world: World, count: int) -> threading.Event:
    """Set once the cloud has seen ``count`` creates."""
    event = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + 60
        while len(world.cloud.calls("create")) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        event.set()

    threading.Thread(target=watch, daemon=True).start()
    return event


ITEMS = [f"i{n}" for n in range(12)]


def test_following_an_apply_rides_through_a_restart_of_the_agent(world: World) -> None:
    world.agent.start()
    world.cloud.set_knob("latency", {"create": 0.3})
    forma = world.forma(chain(*ITEMS))  # one at a time: the restart lands in the middle
    apply = start_svc(world, "apply", "--mode", "reconcile", str(forma), "--yes", "--wait")
    restarting = restart_during(world, when_running(world, 3))
    out, err = apply.communicate(timeout=180)
    restarting.join()
    assert apply.returncode == 0, out + err
    # One line per resource, however the follower's polls fell around the restart: none repeated, none torn.
    finished = [line for line in out.splitlines() if line.startswith("Success: create")]
    assert sorted(finished) == sorted(f"Success: create FAKE::Test::Item {label} (stack app)" for label in ITEMS), out
    assert f"apply {_command_id(out)} succeeded." in out.splitlines(), out
    assert len(RETRYING.findall(err)) == 1 and err.count("\n") == 1, err  # stdout stays the command's own


def _command_id(out: str) -> str:
    found = re.search(r"^Command (\S+) started on the agent\.$", out, re.MULTILINE)
    assert found, out
    return found.group(1)


def test_the_live_view_rides_through_a_restart_of_the_agent(world: World) -> None:
    world.agent.start()
    world.cloud.set_knob("latency", {"create": 0.3})
    forma = world.forma(chain(*ITEMS))
    restarting = restart_during(world, when_running(world, 3))
    code, screen = run_svc_on_terminal("apply", "--mode", "reconcile", str(forma), "--yes", "--config",
                                       str(world.agent.config), answer="", env=environment(), timeout=180)
    restarting.join()
    assert code == 0, screen
    # Said once, on a line of its own above the live view (which redraws below it), not inside the table.
    assert screen.count("svc: the agent at") == 1, screen
    # Refused by the stopped agent, or closed by the stopping one: a poll may be under way as it stops.
    assert re.search(r"\x1b\[2Ksvc: the agent at \S+ is unavailable \(connection (refused|closed)\); retrying for "
                     r"up to 60s \(cli\.api\.retryFor\)\r?\n", screen), screen
    assert "Traceback" not in screen and "Error" not in screen, screen
    assert "Success: 12 of 12 resource updates finished (12 Success)" in screen, screen
