"""When the CLI sends a request again: the agent is unavailable for a while (being replaced, restarting, between a
leader's exit and a follower's takeover, behind a load balancer switching targets), and sending again is safe.

Safe means the agent did nothing with the first try. That is certain when the connection was never made (refused,
connect timeout) and when the agent answered 503 (it serves nothing now, by contract). For GET and HEAD, which
change nothing, a connection that broke before the answer (a keep-alive connection closed by a stopping agent, a
read timeout) and a load balancer's 502/504 are retried too; for a POST they are not, because the agent may have
taken it. Pure decisions here; ``svc.cli.client.AgentClient.request`` runs the loop.
"""

from __future__ import annotations

import random
import socket
import ssl
import time
from collections.abc import Callable
from datetime import timedelta

from svc.cli.http import (
    ConnectError,
    ConnectTimeout,
    ReadError,
    ReadTimeout,
    RemoteProtocolError,
    Response,
    TransportError,
    WriteError,
    WriteTimeout,
)

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD"})
FIRST_PAUSE = 0.2  # seconds; doubles after each try up to LONGEST_PAUSE, each one jittered by ±25%
LONGEST_PAUSE = 2.0
CONNECTION_CLOSED = "connection closed"
# A stopping agent closes a connection once; the next try opens a new one, refused or answered. A new connection
# closed again and again is a server that does not speak HTTP there (an HTTPS agent reached with http://): a
# mistake to report within a second, not an outage to wait out.
CLOSED_IN_A_ROW = 3
_GATEWAY_STATUSES = {502: "502 Bad Gateway", 504: "504 Gateway Timeout"}
_MESSAGE_CHARS = 120


def failed_try(method: str, error: TransportError) -> str | None:
    """Why a request that raised ``error`` may be sent again (a few words for the user), or None when it must not
    be: the agent may have acted on it, or trying again cannot help (TLS, an unknown host name)."""
    if isinstance(error, ConnectTimeout):
        return "connect timeout"  # the request never left
    if isinstance(error, ConnectError):
        if _permanent_connect_failure(error):
            return None
        return "connection refused" if _refused(error) else "cannot connect"
    if method.upper() not in IDEMPOTENT_METHODS:
        return None  # from here on the request may have reached the agent
    if isinstance(error, ReadTimeout):
        return "no answer in time"
    if isinstance(error, (RemoteProtocolError, ReadError, WriteError, WriteTimeout)):
        return CONNECTION_CLOSED
    return None


def unavailable_answer(method: str, response: Response) -> str | None:
    """Why an answer says "try again" (with the agent's message, shortened), or None for an answer to keep."""
    status = response.status_code
    if status in _GATEWAY_STATUSES:  # a load balancer's own page: nothing in it worth quoting
        return _GATEWAY_STATUSES[status] if method.upper() in IDEMPOTENT_METHODS else None
    if status != 503:
        return None
    message = _message(response)
    return f"503 Service Unavailable: {message}" if message else "503 Service Unavailable"


def retry_after(response: Response, now: Callable[[], float] = time.time) -> float | None:
    """The pause the answer asks for (``Retry-After``: seconds or an HTTP date), None when it names none."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime  # rare (agents send seconds); off the start-up path

        try:
            seconds = parsedate_to_datetime(value).timestamp() - now()
        except (TypeError, ValueError):
            return None
    return max(seconds, 0.0) if seconds == seconds else None  # nan is no pause


class Backoff:
    """The pauses between tries: ``FIRST_PAUSE``, doubling up to ``LONGEST_PAUSE``, each jittered so that many
    clients cut off by one replacement do not all come back in step."""

    def __init__(self, jitter: Callable[[], float] = random.random) -> None:
        self._next = FIRST_PAUSE
        self._jitter = jitter

    def pause(self) -> float:
        pause = self._next * (0.75 + 0.5 * self._jitter())
        self._next = min(self._next * 2, LONGEST_PAUSE)
        return pause


class Budget:
    """How long one request may keep trying, from its first try."""

    def __init__(self, retry_for: timedelta, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = retry_for.total_seconds()
        self._clock = clock
        self._deadline = clock() + self.seconds

    def pause(self, wanted: float) -> float | None:
        """``wanted``, shortened to what is left; None once nothing is left (give up)."""
        left = self._deadline - self._clock()
        return None if left <= 0 else min(wanted, left)


class Retrying:
    """One request's tries after the first: the pause before the next one, or None to give up (the budget spent,
    or the connection closed ``CLOSED_IN_A_ROW`` times in a row)."""

    def __init__(self, retry_for: timedelta, clock: Callable[[], float] = time.monotonic,
                 jitter: Callable[[], float] = random.random) -> None:
        self.budget = Budget(retry_for, clock)
        self._backoff = Backoff(jitter)
        self._closed_in_a_row = 0

    def pause(self, reason: str, asked: float | None = None) -> float | None:
        """After a try that failed for ``reason``; ``asked``: the answer's ``Retry-After``, if any."""
        self._closed_in_a_row = self._closed_in_a_row + 1 if reason == CONNECTION_CLOSED else 0
        if self.closed_too_often:
            return None
        return self.budget.pause(asked if asked else self._backoff.pause())

    @property
    def closed_too_often(self) -> bool:
        return self._closed_in_a_row >= CLOSED_IN_A_ROW


def seconds_text(seconds: float) -> str:
    """``60s``, ``1.5s``: a budget in the message."""
    return f"{seconds:g}s"


def _causes(error: BaseException) -> list[BaseException]:
    chain, cause = [], error.__cause__ or error.__context__
    while cause is not None and len(chain) < 10:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    return chain


def _permanent_connect_failure(error: ConnectError) -> bool:
    """A TLS failure or a host name that does not resolve: the same on the next try (a temporary resolver failure
    is not)."""
    for cause in _causes(error):
        if isinstance(cause, ssl.SSLError):
            return True
        if isinstance(cause, socket.gaierror):
            return cause.errno != socket.EAI_AGAIN
    return "name or service not known" in str(error).lower()


def _refused(error: ConnectError) -> bool:
    return any(isinstance(cause, ConnectionRefusedError) for cause in _causes(error)) or \
        "refused" in str(error).lower()


def _message(response: Response) -> str:
    """The agent's ``message`` (or typed error's type), else nothing: an HTML page is no reason to quote."""
    if "json" not in response.headers.get("content-type", ""):
        return ""
    try:
        body = response.json()
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    text = body.get("message") or body.get("error") or ""
    text = " ".join(str(text).split())
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS - 1] + "…"
