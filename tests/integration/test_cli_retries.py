"""``AgentClient.request`` against real servers on loopback ports: it rides through an agent that is not listening
yet, answers 503 or drops a read, for ``cli.api.retryFor`` at most, saying so once on stderr; it never sends a
POST again that the agent may have taken. The policy alone is ``tests/unit/test_cli_retry.py``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from support.processes import free_port
from support.tiny_http import Answer, Request, TinyHttp
from svc.cli.agent_errors import AgentUnavailable
from svc.cli.client import AgentClient
from svc.cli.errors import CliError
from svc.config.cli_model import decode_cli_block


def client(port: int, retry_for: float = 10.0, **options: bool) -> AgentClient:
    config = decode_cli_block({"api": {"url": "http://127.0.0.1", "port": port, "retryFor": retry_for * 1000},
                              "upgrade": {"findLinks": []}})
    return AgentClient(config, **options)


@pytest.fixture(autouse=True)
def _no_budget_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_RETRY_FOR", raising=False)


def ok(_: Request) -> Answer:
    return Answer(200, {"Resources": []})


def scripted(*first: Answer | None) -> TinyHttp:
    """A server giving ``first`` answers in turn (None: closes without one), then 200s."""
    answers = iter(first)
    return TinyHttp(lambda request: next(answers, ok(request)))


@pytest.fixture
def late_server() -> Iterator[TinyHttp]:
    server = TinyHttp(ok, port=free_port())
    yield server
    server.stop()


def test_an_agent_that_starts_late_is_waited_for_and_said_once(late_server: TinyHttp,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    threading.Timer(1.0, late_server.start).start()
    started = time.monotonic()
    with client(late_server.port) as agent:
        response = agent.request("GET", "/resources")
        again = agent.request("GET", "/resources")
    assert (response.status_code, again.status_code) == (200, 200)
    assert 0.9 < time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert err == (f"svc: the agent at http://127.0.0.1:{late_server.port} is unavailable (connection refused); "
                   "retrying for up to 10s (cli.api.retryFor)\n")


def test_a_submission_is_sent_again_while_nothing_listens(late_server: TinyHttp) -> None:
    """Refused: the POST never left, so sending it again cannot run it twice."""
    threading.Timer(0.5, late_server.start).start()
    with client(late_server.port) as agent:
        assert agent.request("POST", "/commands", files={"command": (None, b"apply")}).status_code == 200
    assert [request.method for request in late_server.seen] == ["POST"]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_503_with_retry_after_is_honoured(method: str, capsys: pytest.CaptureFixture[str]) -> None:
    busy = Answer(503, {"message": "no agent leads yet"}, {"Retry-After": "1"})
    with scripted(busy, busy) as server, client(server.port) as agent:
        started = time.monotonic()
        assert agent.request(method, "/commands/status").status_code == 200
        took = time.monotonic() - started
    assert len(server.seen) == 3 and 1.9 < took < 4, took  # two pauses of the second the agent asked for
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(503 Service Unavailable: no agent leads yet)" in err


def test_a_retry_after_longer_than_the_budget_is_cut_to_it() -> None:
    with TinyHttp(lambda _: Answer(503, headers={"Retry-After": "30"})) as server, \
            client(server.port, retry_for=1.0) as agent:
        started = time.monotonic()
        with pytest.raises(AgentUnavailable) as raised:
            agent.request("GET", "/resources")
        took = time.monotonic() - started
    assert 0.9 < took < 3 and len(server.seen) == 2, took  # the first try, and one at the end of the budget
    assert str(raised.value).endswith("; after retrying for 1s (cli.api.retryFor)")
    assert str(raised.value).startswith("GET /api/v1/resources: the agent answered 503")


def test_giving_up_says_how_long_it_tried_and_what_the_last_try_met(capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_RETRY_FOR", "1")  # named in the messages, as the budget's source
    port = free_port()  # nothing listens there
    started = time.monotonic()
    with client(port, retry_for=1.0) as agent, pytest.raises(CliError) as raised:
        agent.request("GET", "/stats")
    assert 0.9 < time.monotonic() - started < 3
    message = str(raised.value)
    assert message.startswith(f"the agent at http://127.0.0.1:{port} is not running (connection refused)")
    assert message.endswith("; after retrying for 1s (SVC_RETRY_FOR)")
    assert capsys.readouterr().err.endswith("retrying for up to 1s (SVC_RETRY_FOR)\n")


def test_a_zero_budget_fails_at_once_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    with client(port, retry_for=0) as agent, pytest.raises(CliError) as raised:
        agent.request("GET", "/stats")
    assert str(raised.value).startswith(f"the agent at http://127.0.0.1:{port} is not running (connection refused)")
    assert "retrying" not in str(raised.value) and capsys.readouterr().err == ""
    with TinyHttp(lambda _: Answer(503)) as server, client(server.port, retry_for=0) as agent:
        assert agent.request("GET", "/resources").status_code == 503  # the caller's own message, as before
        assert len(server.seen) == 1


def test_a_status_check_does_not_wait(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    started = time.monotonic()
    with client(port, retrying=False) as agent, pytest.raises(CliError, match="is not running"):
        agent.stats()
    assert time.monotonic() - started < 1 and capsys.readouterr().err == ""


def test_a_read_dropped_by_a_stopping_agent_is_read_again() -> None:
    with scripted(None, Answer(502)) as server, client(server.port) as agent:
        assert agent.request("GET", "/resources").status_code == 200
    assert [request.path for request in server.seen] == ["/api/v1/resources"] * 3


def test_a_submission_the_agent_may_have_taken_is_never_sent_twice(capsys: pytest.CaptureFixture[str]) -> None:
    with scripted(None) as server, client(server.port) as agent:
        started = time.monotonic()
        with pytest.raises(CliError) as raised:
            agent.request("POST", "/commands", files={"command": (None, b"apply")})
        assert time.monotonic() - started < 1
    assert [request.method for request in server.seen] == ["POST"]
    message = str(raised.value)
    assert message.startswith(f"the agent at http://127.0.0.1:{server.port} did not answer with HTTP")
    assert "check with svc command status whether it was taken" in message
    assert capsys.readouterr().err == ""


def test_a_load_balancer_s_502_to_a_post_is_the_caller_s_to_report() -> None:
    with scripted(Answer(502)) as server, client(server.port) as agent:
        assert agent.request("POST", "/commands/cancel").status_code == 502
    assert len(server.seen) == 1


def test_a_server_that_closes_every_connection_is_reported_within_seconds() -> None:
    """Not an outage but a server that does not speak HTTP there (an HTTPS agent reached with http://)."""
    with TinyHttp(lambda _: None) as server, client(server.port, retry_for=60) as agent:
        started = time.monotonic()
        with pytest.raises(CliError) as raised:
            agent.request("GET", "/resources")
        assert time.monotonic() - started < 3
    assert len(server.seen) == 3
    message = str(raised.value)
    assert message.startswith(f"the agent at http://127.0.0.1:{server.port} did not answer with HTTP")
    assert "if it serves HTTPS, set cli.api.url to https://" in message
    assert message.endswith("; 3 connections in a row closed without an answer")
