"""The CLI's HTTP client for the agent API: TLS, basic auth, clear connection errors, version check, and riding
through a short unavailability of the agent (``svc.cli.retry``)."""

from __future__ import annotations

import os
import ssl
import sys
import threading
import time
from concurrent.futures import Future
from datetime import timedelta
from pathlib import Path
from typing import Any

from svc import __version__
from svc.cli.agent_errors import AgentUnavailable, describe
from svc.cli.answers import decode
from svc.cli.errors import CliError
from svc.cli.http import (
    ConnectError,
    ConnectTimeout,
    HttpClient,
    ReadError,
    RemoteProtocolError,
    Response,
    Timeout,
    TimeoutException,
    TransportError,
    WriteError,
)
from svc.cli.identity import client_id
from svc.cli.retry import (
    CLOSED_IN_A_ROW,
    IDEMPOTENT_METHODS,
    Retrying,
    failed_try,
    retry_after,
    seconds_text,
    unavailable_answer,
)
from svc.config.cli_model import CliConfig
from svc.config.loader import RETRY_FOR_VARIABLE, cli_config
from svc.model.wire import StatsView

API_PREFIX = "/api/v1"
_TIMEOUT = Timeout(30.0, connect=5.0)
_CHECK_ADDRESS = "check the agent's address (--api-url, SVC_API_URL, SVC_API_PORT, or cli.api in the config)"


def describe_connect_error(exc: Exception, base_url: str) -> str:
    text = str(exc)
    cause = exc.__cause__ or exc.__context__
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return (f"TLS verification of the agent at {base_url} failed: {cause.verify_message}; "
                    "if the agent's certificate comes from a private CA, set SSL_CERT_FILE to that CA's bundle")
        if isinstance(cause, ssl.SSLError):
            return (f"TLS handshake with the agent at {base_url} failed ({getattr(cause, 'reason', None) or cause}); "
                    "check that the agent serves HTTPS on this port, or use http:// in cli.api.url")
        text = f"{text} {cause}"
        cause = cause.__cause__ or cause.__context__
    if "refused" in text.lower():
        return (f"the agent at {base_url} is not running (connection refused); "
                f"start it with: svc agent start --config <file>, or {_CHECK_ADDRESS}")
    reason = text.strip() or type(exc).__name__
    return f"cannot reach the agent at {base_url} ({reason}); {_CHECK_ADDRESS}"


class AgentClient:
    """Talks to one agent. Every method raises :class:`CliError` with a user-facing message.

    ``retrying=False`` answers how the agent is right now (``svc agent status``, which scripts use as a probe);
    otherwise a request rides through an unavailable agent for up to ``cli.api.retryFor``."""

    def __init__(self, config: CliConfig, *, retrying: bool = True) -> None:
        self.base_url = config.api.base_url
        self._has_auth = config.auth is not None
        self._retry_for = config.api.retry_for if retrying else timedelta(0)
        self._announced = False  # the "retrying" line is said once per command, not at every outage
        auth = (config.auth.username, config.auth.password) if config.auth else None
        # HTTPS verifies against the system trust store (OpenSSL also honours SSL_CERT_FILE / SSL_CERT_DIR for a
        # private CA). Plain HTTP has no certificate to verify (redirects are not followed), so it skips loading
        # the store, a tenth of a short command's time.
        tls = ssl.create_default_context() if self.base_url.startswith("https:") else None
        self._http = HttpClient(self.base_url, auth=auth, tls=tls, timeout=_TIMEOUT,
                                headers={"Client-ID": client_id()})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def request(self, method: str, path: str, **kwargs: Any) -> Response:
        """The agent's answer. While the agent is unavailable and sending again is safe (``svc.cli.retry``), tries
        again for up to ``cli.api.retryFor``, saying so once on stderr (stdout may be a machine-readable
        document); then fails with the one-line error of the last try."""
        retrying: Retrying | None = None
        while True:
            try:
                response = self._http.request(method, API_PREFIX + path, **kwargs)
            except TransportError as exc:
                reason = failed_try(method, exc) if self._retry_for else None
                if reason is None:
                    raise self._transport_error(method, exc) from exc
                retrying = retrying or Retrying(self._retry_for)
                pause = retrying.pause(reason)
                if pause is None:
                    raise CliError(self._gave_up(str(self._transport_error(method, exc)), retrying)) from exc
            else:
                reason = unavailable_answer(method, response) if self._retry_for else None
                if reason is None:
                    return self._authorized(response)
                retrying = retrying or Retrying(self._retry_for)
                pause = retrying.pause(reason, retry_after(response))
                if pause is None:
                    kind = AgentUnavailable if response.status_code == 503 else CliError
                    raise kind(self._gave_up(describe(response, f"{method} {API_PREFIX}{path}"), retrying))
            self._announce(reason, retrying)
            time.sleep(pause)

    def _announce(self, reason: str, retrying: Retrying) -> None:
        if not self._announced:
            print(f"svc: the agent at {self.base_url} is unavailable ({reason}); retrying for up to "
                  f"{seconds_text(retrying.budget.seconds)} ({_budget_source()})", file=sys.stderr, flush=True)
            self._announced = True

    @staticmethod
    def _gave_up(message: str, retrying: Retrying) -> str:
        """The last try's one-line error, and why no more were made."""
        if retrying.closed_too_often:
            return f"{message}; {CLOSED_IN_A_ROW} connections in a row closed without an answer"
        return f"{message}; after retrying for {seconds_text(retrying.budget.seconds)} ({_budget_source()})"

    def _transport_error(self, method: str, exc: TransportError) -> CliError:
        """The one-line error of a request that failed without an answer."""
        if isinstance(exc, ConnectError):
            return CliError(describe_connect_error(exc, self.base_url))
        # The request may have reached the agent (a POST is then never sent again): say how to find out.
        never_left = isinstance(exc, ConnectTimeout)
        taken = "" if method.upper() in IDEMPOTENT_METHODS or never_left else \
            f"; the agent may have taken this {method}: check with svc command status whether it was taken"
        if isinstance(exc, TimeoutException):
            return CliError(f"the agent at {self.base_url} did not answer in time ({type(exc).__name__}); "
                            f"{_CHECK_ADDRESS}{taken}")
        if isinstance(exc, (RemoteProtocolError, ReadError, WriteError)):
            return CliError(f"the agent at {self.base_url} did not answer with HTTP ({exc}); "
                            f"if it serves HTTPS, set cli.api.url to https://…{taken}")
        return CliError(f"the request to the agent at {self.base_url} failed ({type(exc).__name__}: {exc}){taken}")

    def _authorized(self, response: Response) -> Response:
        if response.status_code == 401:
            if self._has_auth:
                raise CliError(f"the agent at {self.base_url} rejected the credentials (401 Unauthorized); "
                               "check that cli.auth matches a user in the agent's agent.auth")
            raise CliError(f"the agent at {self.base_url} requires authentication (401 Unauthorized); "
                           'add cli { auth { type = "basic"; username = "…"; password = "…" } } to your CLI config')
        return response

    def get_json(self, path: str) -> Any:
        response = self.request("GET", path)
        if response.is_error:
            raise CliError(
                f"the agent answered {response.status_code} to GET {API_PREFIX}{path}: {response.text[:200]}"
            )
        return response.json()

    def check_agent(self) -> None:
        """That a svc agent of exactly the CLI's version answers, as cheaply as it can be told: ``GET /health`` names
        the agent's version (0.7 ms, where ``GET /stats`` counts what the datastore holds: 5 to 6 ms, and a scan of
        the inventory). An answer that does not name this CLI's version (an agent of another version, one from
        before ``/health`` named it, a server that is no svc agent) is told apart by ``GET /stats``, whose check
        says what to do."""
        if not _names_this_version(self.request("GET", "/health")):
            self.stats()

    def answers_now(self) -> bool:
        """Whether a svc agent of exactly the CLI's version answers ``GET /health`` at the first try; nothing is
        retried or said (``check_agent``, which does both, is the way to learn what else answers)."""
        try:
            return _names_this_version(self._http.request("GET", API_PREFIX + "/health"))
        except TransportError:
            return False

    def stats(self) -> StatsView:
        """``GET /stats``, after the strict version check (on the bare document: an agent of another version may
        answer in another shape, and the CLI must still say which version to upgrade to)."""
        response = self.request("GET", "/stats")
        document = _json_document(response)
        # Another server on the port (a web server's HTML 404, some other JSON API) is not a svc agent; say so in
        # one line rather than quoting its page or asking to upgrade to version "None".
        if response.status_code == 404 or not isinstance(document, dict) or (
                not response.is_error and "Version" not in document):
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            raise CliError(f"the server at {self.base_url} is not a svc agent: it answered {response.status_code} "
                           f"({kind}) to GET {API_PREFIX}/stats; {_CHECK_ADDRESS}")
        if response.is_error:
            raise CliError(f"the agent answered {response.status_code} to GET {API_PREFIX}/stats: "
                           f"{response.text[:200]}")
        check_version(document.get("Version"))
        return decode(StatsView, document, "GET /stats")


def _names_this_version(health: Response) -> bool:
    """Whether an answer to ``GET /health`` names a svc agent of exactly the CLI's version."""
    document = _json_document(health) if health.status_code == 200 else None
    return isinstance(document, dict) and document.get("Version") == __version__


def _json_document(response: Response) -> Any:
    """The answer's JSON, or None when it is none (an HTML page, plain text)."""
    if "json" not in response.headers.get("content-type", ""):
        return None
    try:
        return response.json()
    except ValueError:
        return None


def check_version(agent_version: object, cli_version: str = __version__) -> None:
    """The strict version check: the CLI works only with an agent of exactly its own version."""
    if agent_version != cli_version:
        raise CliError(f"CLI version {cli_version} does not match agent version {agent_version}; "
                       f"run: svc upgrade --version {agent_version}")


def _budget_source() -> str:
    """Where the retry budget was set, for the user who wants another one."""
    return RETRY_FOR_VARIABLE if os.environ.get(RETRY_FOR_VARIABLE, "").strip() else "cli.api.retryFor"


def connect(config: CliConfig, *, retrying: bool = True) -> AgentClient:
    """An open client to a reachable agent of the CLI's version (``retrying``: as for :class:`AgentClient`)."""
    client = AgentClient(config, retrying=retrying)
    try:
        client.check_agent()
    except BaseException:
        client.close()
        raise
    return client


class Connecting:
    """``connect(cli_config(path))``, which a command that evaluates its forma may begin (``start``) on a thread of
    its own once Pkl starts working: the config is read and the agent's version checked while Pkl evaluates, not
    after (6 to 12 ms of an apply). Not started (a kept evaluation: nothing to wait for, and a thread would only
    take turns with the command), ``client()`` connects then. The thread takes only the quiet way, an agent of this
    version answering its first ``GET /health``; anything else (an agent down, of another version, a bad config) is
    left to ``client()``, which meets and says it as ``connect`` does, after the forma (whose own error, if any, is
    the one a command reports: it never asks). A daemon thread: it holds no process that ends first."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._ready: Future[tuple[CliConfig, AgentClient | None]] | None = None

    def start(self) -> None:
        if self._ready is None:
            self._ready = Future()
            threading.Thread(target=self._begin, args=(self._ready,), name="svc connects", daemon=True).start()

    def _begin(self, ready: Future[tuple[CliConfig, AgentClient | None]]) -> None:
        try:
            config = cli_config(self._path)
            client = AgentClient(config)
            answered = client.answers_now()
            if not answered:
                client.close()
            ready.set_result((config, client if answered else None))
        except BaseException as error:  # noqa: BLE001 - handed to whoever asks for the client
            ready.set_exception(error)

    def client(self) -> AgentClient:
        if self._ready is None:
            return connect(cli_config(self._path))
        config, client = self._ready.result()
        return client if client is not None else connect(config)
