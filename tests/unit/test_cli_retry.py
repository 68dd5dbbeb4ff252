"""Which failures the CLI sends a request again after (``svc.cli.retry``), for which methods, how long it pauses, and
how long it keeps trying. ``tests/integration/test_cli_retries.py`` runs the client against real servers, and
``tests/e2e/test_cli_rides_through.py`` the real CLI against an agent that starts late."""

from __future__ import annotations

import json
import socket
import ssl
from datetime import timedelta
from email.utils import format_datetime, parsedate_to_datetime

import pytest

from svc.cli import http
from svc.cli.retry import CONNECTION_CLOSED, Backoff, Budget, Retrying, failed_try, retry_after, unavailable_answer
from svc.config.loader import ConfigError, api_from_environment, retry_for_from_environment
from svc.config.model import ApiConfig


def caused_by(kind: type[http.TransportError], cause: BaseException | None, text: str = "failed") -> http.TransportError:
    """``kind`` raised from ``cause``, as ``svc.cli.http`` raises them from the socket's errors."""
    try:
        try:
            if cause is not None:
                raise cause
            raise kind(text)
        except BaseException as inner:
            raise kind(text) from inner
    except http.TransportError as outer:
        return outer


REFUSED = caused_by(http.ConnectError, ConnectionRefusedError(111, "Connection refused"))


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST"])
def test_a_request_that_never_left_is_sent_again_whatever_its_method(method: str) -> None:
    assert failed_try(method, REFUSED) == "connection refused"
    assert failed_try(method, caused_by(http.ConnectTimeout, None)) == "connect timeout"
    unreachable = caused_by(http.ConnectError, OSError(113, "No route to host"))
    assert failed_try(method, unreachable) == "cannot connect"


@pytest.mark.parametrize("error", [
    caused_by(http.ReadError, ConnectionResetError(104, "Connection reset by peer")),
    caused_by(http.RemoteProtocolError, None, "Server disconnected without sending a response."),
    caused_by(http.ReadTimeout, TimeoutError("timed out")),
    caused_by(http.WriteError, BrokenPipeError(32, "Broken pipe")),
], ids=["read error", "closed without an answer", "read timeout", "write error"])
def test_a_broken_exchange_is_sent_again_only_when_it_changes_nothing(error: http.TransportError) -> None:
    assert failed_try("GET", error) is not None
    assert failed_try("get", error) is not None
    # The agent may have taken a POST (a submission, a cancel): sending it again could run it twice.
    assert failed_try("POST", error) is None


def test_what_another_try_cannot_fix_fails_at_once() -> None:
    certificate = ssl.SSLCertVerificationError(1, "certificate verify failed")
    assert failed_try("GET", caused_by(http.ConnectError, certificate)) is None
    assert failed_try("GET", caused_by(http.ConnectError, ssl.SSLError(1, "wrong version number"))) is None
    unknown_host = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert failed_try("GET", caused_by(http.ConnectError, unknown_host)) is None
    # A resolver that is down for a moment is another matter.
    busy_resolver = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    assert failed_try("GET", caused_by(http.ConnectError, busy_resolver)) == "cannot connect"
    assert failed_try("GET", caused_by(http.UnsupportedProtocol, None)) is None


def answer(status: int, body: object = None, **headers: str) -> http.Response:
    if body is None:
        return http.Response(status, headers)
    return http.Response(status, {"Content-Type": "application/json", **headers}, json.dumps(body).encode())


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_503_is_tried_again_whatever_the_method_since_the_agent_did_nothing(method: str) -> None:
    assert unavailable_answer(method, answer(503)) == "503 Service Unavailable"
    no_leader = answer(503, {"message": "no agent leads yet; retry in a second"})
    assert unavailable_answer(method, no_leader) == "503 Service Unavailable: no agent leads yet; retry in a second"
    long = unavailable_answer(method, answer(503, {"message": "x" * 500}))
    assert long is not None and len(long) < 160 and long.endswith("…")


def test_a_load_balancer_s_502_and_504_are_tried_again_for_reads_only() -> None:
    assert unavailable_answer("GET", answer(502)) == "502 Bad Gateway"
    assert unavailable_answer("HEAD", answer(504)) == "504 Gateway Timeout"
    # The balancer may have passed the POST on before its target went away.
    assert unavailable_answer("POST", answer(502)) is None
    assert unavailable_answer("POST", answer(504)) is None


@pytest.mark.parametrize("status", [200, 400, 401, 404, 409, 500])
def test_other_answers_are_kept(status: int) -> None:
    assert unavailable_answer("GET", answer(status)) is None


def test_retry_after_in_seconds_or_as_a_date() -> None:
    assert retry_after(answer(503, **{"Retry-After": "1"})) == 1.0
    assert retry_after(answer(503, **{"Retry-After": " 2.5 "})) == 2.5
    assert retry_after(answer(503)) is None
    assert retry_after(answer(503, **{"Retry-After": "soon"})) is None
    assert retry_after(answer(503, **{"Retry-After": "-3"})) == 0.0
    date = format_datetime(parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT"), usegmt=True)
    now = parsedate_to_datetime("Wed, 21 Oct 2015 07:27:57 GMT").timestamp()
    assert retry_after(answer(503, **{"Retry-After": date}), now=lambda: now) == pytest.approx(3.0)


def test_the_pauses_grow_from_a_fifth_of_a_second_to_two_seconds() -> None:
    steady = Backoff(jitter=lambda: 0.5)  # the middle of the jitter: the plain schedule
    assert [round(steady.pause(), 3) for _ in range(7)] == [0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0]
    low, high = Backoff(jitter=lambda: 0.0), Backoff(jitter=lambda: 1.0)
    assert (low.pause(), high.pause()) == (pytest.approx(0.15), pytest.approx(0.25))


def test_jittered_pauses_differ() -> None:
    assert len({round(Backoff().pause(), 6) for _ in range(20)}) > 1


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_shortens_the_last_pause_then_gives_up() -> None:
    clock = Clock()
    budget = Budget(timedelta(seconds=3), clock=clock)
    assert budget.seconds == 3.0
    assert budget.pause(2.0) == 2.0
    clock.now += 2.5
    assert budget.pause(2.0) == pytest.approx(0.5)  # a Retry-After longer than what is left is cut too
    clock.now += 0.5
    assert budget.pause(0.2) is None


def test_a_zero_budget_gives_up_at_once() -> None:
    assert Budget(timedelta(0), clock=Clock()).pause(0.2) is None


def test_a_retry_after_replaces_the_backoff_within_the_budget() -> None:
    clock = Clock()
    retrying = Retrying(timedelta(seconds=5), clock=clock, jitter=lambda: 0.5)
    assert retrying.pause("503 Service Unavailable", 1.0) == 1.0
    assert retrying.pause("503 Service Unavailable") == pytest.approx(0.2)  # none asked: the backoff's
    assert retrying.pause("503 Service Unavailable", 30.0) == 5.0  # cut to what is left
    clock.now += 5
    assert retrying.pause("connection refused") is None


def test_a_connection_closed_again_and_again_is_no_outage() -> None:
    """An HTTPS agent reached with http:// closes every new connection: reported after three, not a minute."""
    retrying = Retrying(timedelta(seconds=60), clock=Clock())
    assert retrying.pause(CONNECTION_CLOSED) is not None
    assert retrying.pause(CONNECTION_CLOSED) is not None
    assert retrying.pause(CONNECTION_CLOSED) is None and retrying.closed_too_often


def test_a_closed_connection_between_other_failures_is_an_outage() -> None:
    """A stopping agent closes the kept-alive connection, then refuses: that goes on for the whole budget."""
    retrying = Retrying(timedelta(seconds=60), clock=Clock())
    for _ in range(10):
        assert retrying.pause(CONNECTION_CLOSED) is not None
        assert retrying.pause("connection refused") is not None
    assert not retrying.closed_too_often


def test_svc_retry_for_overrides_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    api = ApiConfig(url="http://localhost", port=49684, retry_for=timedelta(seconds=60))
    monkeypatch.delenv("SVC_RETRY_FOR", raising=False)
    assert retry_for_from_environment() is None and api_from_environment(api) is api
    monkeypatch.setenv("SVC_RETRY_FOR", "0")
    assert api_from_environment(api).retry_for == timedelta(0)  # zero, not "unset"
    monkeypatch.setenv("SVC_RETRY_FOR", "2.5")
    assert api_from_environment(api).retry_for == timedelta(seconds=2.5)
    for wrong in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv("SVC_RETRY_FOR", wrong)
        with pytest.raises(ConfigError, match="SVC_RETRY_FOR must be a number of seconds"):
            api_from_environment(api)
