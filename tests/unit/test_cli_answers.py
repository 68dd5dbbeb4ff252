"""The CLI decodes the agent's answers once, into the model's wire shapes (``svc.cli.answers``): an answer with a
field this CLI does not know (a newer agent's) still parses and renders; one that lacks a field the CLI needs is
a one-line ``Error:``, not a traceback.

The agent answering here is a stand-in for one that cannot run in this checkout: an agent of the CLI's version
that has grown fields. It serves canned JSON over real HTTP to the real client."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from svc import __version__
from svc.cli.client import Connecting
from svc.cli.errors import CliError
from svc.cli.main import main

COMMAND = {"CommandId": "2Yc0mmand", "Command": "apply", "Mode": "reconcile", "State": "Success",
           "StartTs": "2026-01-02T03:04:05.678901Z", "EndTs": "2026-01-02T03:04:06Z",
           "ResourceUpdates": [{"ResourceId": "r1", "ResourceType": "FAKE::Test::Item", "ResourceLabel": "web",
                                "StackName": "prod", "Operation": "create", "State": "Success", "Duration": 1500}]}
STATS = {"Version": __version__, "AgentId": "agent-1", "Clients": 1}


class Answers:
    """What the agent answers, by request path (without the query)."""

    def __init__(self) -> None:
        self.by_path: dict[str, Any] = {"/api/v1/stats": STATS}
        self.asked: list[str] = []  # the paths requested, in order
        self.queries: list[str] = []  # and their query strings


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[tuple[Answers, Path]]:
    """A running HTTP agent stand-in, and a CLI config file pointing at it."""
    answers = Answers()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the base class's name
            path, _, query = self.path.partition("?")
            answers.asked.append(path)
            answers.queries.append(query)
            found = answers.by_path.get(answers.asked[-1])
            body = json.dumps(found if found is not None else {"error": "no such path"}).encode()
            self.send_response(200 if found is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    config = tmp_path / "cli.pkl"
    config.write_text('amends "svc:/Config.pkl"\n'
                      f'cli {{ api {{ url = "http://127.0.0.1"; port = {server.server_address[1]} }} }}\n')
    try:
        yield answers, config
    finally:
        server.shutdown()
        server.server_close()


def _newer(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as a newer agent might send it: a field this CLI has never heard of, at the top and in each
    resource update."""
    updates = [{**update, "Region": "eu-west-1"} for update in document.get("ResourceUpdates", [])]
    return {**document, "Priority": 3, **({"ResourceUpdates": updates} if updates else {})}


def test_an_answer_with_fields_this_cli_does_not_know_still_renders(
        agent: tuple[Answers, Path], capsys: pytest.CaptureFixture[str]) -> None:
    answers, config = agent
    answers.by_path["/api/v1/stats"] = {**STATS, "Regions": {"eu-west-1": 2}}
    answers.by_path["/api/v1/commands/2Yc0mmand/status"] = {"Commands": [_newer(COMMAND)], "NextPage": "x"}
    assert main(["command", "status", "2Yc0mmand", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "apply (reconcile) 2Yc0mmand Success: 1 of 1 resource updates finished (1 Success)" in out
    assert "FAKE::Test::Item" in out and "web" in out and "1.5s" in out


def test_machine_output_is_the_agents_document(agent: tuple[Answers, Path],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """What the CLI prints for machines is what an agent of its version sent, decoded and written again."""
    answers, config = agent
    answers.by_path["/api/v1/commands/2Yc0mmand/status"] = {"Commands": [COMMAND]}
    assert main(["command", "status", "2Yc0mmand", "--config", str(config), "--output-consumer", "machine"]) == 0
    assert json.loads(capsys.readouterr().out) == {"Commands": [COMMAND]}


def test_the_command_table_asks_the_agent_to_count_the_updates_not_to_list_them(
        agent: tuple[Answers, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """``svc command list`` shows each command's updates counted by state: it asks for the counts (``counts=true``);
    the machine document lists every update, as the agent's API does."""
    answers, config = agent
    answers.by_path["/api/v1/commands/status"] = {"Commands": [{**COMMAND, "ResourceUpdates": [],
                                                                "UpdateCounts": {"Success": 3}}]}
    assert main(["command", "list", "--config", str(config)]) == 0
    assert "3 Success" in capsys.readouterr().out
    assert main(["command", "list", "--config", str(config), "--output-consumer", "machine"]) == 0
    asked = [query for path, query in zip(answers.asked, answers.queries, strict=True)
             if path == "/api/v1/commands/status"]
    assert ["counts=true" in query.split("&") for query in asked] == [True, False]


def test_following_the_latest_command_asks_for_its_id_without_its_updates(
        agent: tuple[Answers, Path], capsys: pytest.CaptureFixture[str]) -> None:
    answers, config = agent
    answers.by_path["/api/v1/commands/status"] = {"Commands": [{**COMMAND, "ResourceUpdates": [],
                                                                "UpdateCounts": {"Success": 1}}]}
    answers.by_path["/api/v1/commands/2Yc0mmand/status"] = {"Commands": [COMMAND]}
    assert main(["command", "status", "--follow", "--config", str(config)]) == 0
    assert "succeeded" in capsys.readouterr().out
    [latest] = [query for path, query in zip(answers.asked, answers.queries, strict=True)
                if path == "/api/v1/commands/status"]
    assert "counts=true" in latest.split("&")


def test_an_answer_missing_a_field_the_cli_needs_is_one_line_error(
        agent: tuple[Answers, Path], capsys: pytest.CaptureFixture[str]) -> None:
    answers, config = agent
    stateless = {**COMMAND, "ResourceUpdates": [{k: v for k, v in COMMAND["ResourceUpdates"][0].items()
                                                 if k != "State"}]}
    answers.by_path["/api/v1/commands/status"] = {"Commands": [stateless]}
    assert main(["command", "list", "--config", str(config)]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert captured.err.startswith("Error: the agent's answer to GET /commands/status is not what this CLI "
                                   "understands: Commands[0].ResourceUpdates[0].State: missing")


def test_stats_of_another_version_still_name_the_version_to_upgrade_to(
        agent: tuple[Answers, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The version check reads the bare document: an older agent's stats may lack what this CLI's shape needs."""
    answers, config = agent
    answers.by_path["/api/v1/stats"] = {"Version": "0.0.1"}
    assert main(["agent", "status", "--config", str(config)]) == 1
    assert capsys.readouterr().err == (f"Error: CLI version {__version__} does not match agent version 0.0.1; "
                                       "run: svc upgrade --version 0.0.1\n")


def test_an_agent_whose_health_names_this_version_is_not_asked_for_its_stats(
        agent: tuple[Answers, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Every command checks the agent's version first: ``/health`` names it, so the counts behind ``/stats`` (a
    scan of the inventory) are not read for that."""
    answers, config = agent
    answers.by_path["/api/v1/health"] = {"Version": __version__, "Role": "leader", "AgentId": "agent-1"}
    answers.by_path["/api/v1/commands/2Yc0mmand/status"] = {"Commands": [COMMAND]}
    assert main(["command", "status", "2Yc0mmand", "--config", str(config)]) == 0
    assert answers.asked == ["/api/v1/health", "/api/v1/commands/2Yc0mmand/status"]


@pytest.mark.parametrize("health", [{"Version": "0.0.1", "Role": "leader"}, {"Role": "leader"}, None],
                         ids=["another version", "an older agent's health", "no health"])
def test_an_agent_whose_health_does_not_name_this_version_is_checked_by_its_stats(
        agent: tuple[Answers, Path], capsys: pytest.CaptureFixture[str], health: dict[str, Any] | None) -> None:
    """Whatever ``/health`` answers short of this CLI's version, ``/stats`` decides, and its error says what to do."""
    answers, config = agent
    if health is not None:
        answers.by_path["/api/v1/health"] = health
    answers.by_path["/api/v1/stats"] = {"Version": "0.0.1"}
    assert main(["command", "list", "--config", str(config)]) == 1
    assert capsys.readouterr().err == (f"Error: CLI version {__version__} does not match agent version 0.0.1; "
                                       "run: svc upgrade --version 0.0.1\n")
    assert answers.asked == ["/api/v1/health", "/api/v1/stats"]


def _asked_within(answers: Answers, count: int, seconds: float = 10.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while len(answers.asked) < count and time.monotonic() < deadline:
        time.sleep(0.005)
    return list(answers.asked)


def test_connecting_meanwhile_checks_the_agent_before_the_client_is_asked_for(agent: tuple[Answers, Path]) -> None:
    """A forma command connects while Pkl evaluates its forma: the agent's version is checked before the command
    asks for the client, which then needs no other request. Never started (a kept evaluation), it connects when
    asked."""
    answers, config = agent
    answers.by_path["/api/v1/health"] = {"Version": __version__, "Role": "leader", "AgentId": "agent-1"}
    connecting = Connecting(config)
    connecting.start()  # as Pkl starts evaluating the forma
    assert _asked_within(answers, 1) == ["/api/v1/health"]
    with connecting.client():
        assert answers.asked == ["/api/v1/health"]
    time.sleep(0.05)
    assert answers.asked == ["/api/v1/health"]
    with Connecting(config).client():
        assert answers.asked == ["/api/v1/health", "/api/v1/health"]


def test_connecting_meanwhile_leaves_any_other_answer_to_connect(
        agent: tuple[Answers, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """An agent of another version: the thread says nothing and asks no more; the command learns it when it asks
    for the client, with ``connect``'s own check and message."""
    answers, config = agent
    answers.by_path["/api/v1/health"] = {"Version": "0.0.1", "Role": "leader"}
    answers.by_path["/api/v1/stats"] = {"Version": "0.0.1"}
    connecting = Connecting(config)
    connecting.start()
    assert _asked_within(answers, 1) == ["/api/v1/health"]
    time.sleep(0.05)
    assert answers.asked == ["/api/v1/health"] and capsys.readouterr().err == ""
    with pytest.raises(CliError, match="run: svc upgrade --version 0.0.1"):
        connecting.client()
    assert answers.asked == ["/api/v1/health", "/api/v1/health", "/api/v1/stats"]


def test_connecting_meanwhile_to_no_agent_says_nothing_until_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """No agent: nothing is said while the forma evaluates (a forma error would then be the command's one line);
    asked for the client, the command retries and fails as ``connect`` does."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    config = tmp_path / "cli.pkl"
    config.write_text(f'amends "svc:/Config.pkl"\ncli {{ api {{ url = "http://127.0.0.1"; port = {port} }} }}\n')
    monkeypatch.setenv("SVC_RETRY_FOR", "0.3")
    connecting = Connecting(config)
    connecting.start()
    time.sleep(0.5)
    assert capsys.readouterr().err == ""
    with pytest.raises(CliError, match="is not running"):
        connecting.client()
    assert "retrying for up to" in capsys.readouterr().err
