"""The CLI's HTTP client for the agent: one keep-alive ``http.client`` connection, requests and answers.

httpx took ~25 ms of every command's CPU to import (its auth, cookies, URL and multipart modules, with
``urllib.request`` and email's parser behind them) for what the CLI needs of HTTP: one connection to one agent,
basic auth, query parameters, a JSON or multipart body, per-request timeouts, the answer's status, headers and
bytes. This module is that, over the standard library's ``http.client``.

Failures are one ``TransportError`` family whose names say where the exchange broke, each raised from the
socket's or ``http.client``'s own error (``svc.cli.retry`` and ``svc.cli.client`` read both): ``ConnectTimeout``
and ``ConnectError`` while connecting (TLS included), ``WriteTimeout``/``WriteError`` while sending,
``ReadTimeout``/``ReadError`` while reading, ``RemoteProtocolError`` for an answer that is no HTTP or a
connection closed before it. A kept connection that the agent closed meanwhile (its keep-alive timeout, a
restart) is noticed before it is used, and a new one made.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import select
import socket
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any
from urllib.parse import urlencode, urlsplit

from svc import __version__


class TransportError(Exception):
    """The exchange failed without an answer."""


class TimeoutException(TransportError):
    pass


class ConnectError(TransportError):
    pass


class ConnectTimeout(TimeoutException):
    pass


class WriteError(TransportError):
    pass


class WriteTimeout(TimeoutException):
    pass


class ReadError(TransportError):
    pass


class ReadTimeout(TimeoutException):
    pass


class RemoteProtocolError(TransportError):
    """An answer that is no HTTP, or a connection closed before the answer."""


class UnsupportedProtocol(TransportError):
    pass


@dataclass(frozen=True)
class Timeout:
    """Seconds for each part of an exchange (None: no limit): ``Timeout(30, connect=5)``."""

    seconds: float | None
    connect: float | None = None

    @property
    def connecting(self) -> float | None:
        return self.connect if self.connect is not None else self.seconds


class Headers(dict[str, str]):
    """Header names, compared as HTTP compares them: whatever their case."""

    def __init__(self, headers: Mapping[str, str] | None = None) -> None:
        super().__init__((name.lower(), value) for name, value in (headers or {}).items())

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name.lower(), default)


@dataclass(frozen=True)
class Response:
    """An answer: its status, its headers and its body."""

    status_code: int
    headers: Mapping[str, str] = field(default_factory=Headers)
    content: bytes = b""

    def __post_init__(self) -> None:
        if not isinstance(self.headers, Headers):
            object.__setattr__(self, "headers", Headers(self.headers))

    @property
    def is_error(self) -> bool:
        return self.status_code >= 400

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON (``ValueError`` if it is not)."""
        return json.loads(self.content)


Files = Mapping[str, tuple[str | None, bytes] | tuple[str | None, bytes, str]]
_NO_TIMEOUT = Timeout(None)


class HttpClient:
    """Requests to one server (``base_url``), one connection at a time, kept alive between them; ``tls``: the
    context for an https URL (None: the system's)."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str] | None = None,
                 auth: tuple[str, str] | None = None, timeout: Timeout = _NO_TIMEOUT,
                 tls: ssl.SSLContext | None = None) -> None:
        url = urlsplit(base_url)
        self._origin = (url.scheme, url.hostname or "", url.port or (443 if url.scheme == "https" else 80))
        self._prefix = url.path.rstrip("/")
        self._headers = {"User-Agent": f"svc/{__version__}", "Accept": "*/*", **(headers or {})}
        if auth is not None:
            credentials = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {credentials}"
        self._timeout = timeout
        self._tls = tls
        self._connection: http.client.HTTPConnection | None = None

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def get(self, path: str, **options: Any) -> Response:
        return self.request("GET", path, **options)

    def post(self, path: str, **options: Any) -> Response:
        return self.request("POST", path, **options)

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
                data: Mapping[str, str] | None = None, files: Files | None = None,
                timeout: Timeout | None | EllipsisType = ...) -> Response:
        """``method`` on ``path`` (with ``params`` as its query); the body ``json``, or a form of ``data`` (and
        ``files``: multipart). ``timeout``: this request's (None: no limit), else the client's."""
        limits = self._timeout if timeout is ... else timeout or _NO_TIMEOUT
        target = self._prefix + path + (f"?{urlencode(params, doseq=True)}" if params else "")
        body, content_type = _body(json, data, files)
        headers = {**self._headers, **({"Content-Type": content_type} if content_type else {})}
        connection = self._connected(limits.connecting)
        try:
            _send(connection, method, target, headers, body, limits.seconds)
            return self._receive(connection, limits.seconds)
        except BaseException:
            self.close()  # a connection in an unknown state is not used again
            raise

    def _connected(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._origin[0] not in ("http", "https"):  # a request fails, as any other that cannot be sent
            raise UnsupportedProtocol(f"Request URL has an unsupported protocol '{self._origin[0]}://'.")
        if self._connection is not None and _closed(self._connection.sock):
            self.close()
        if self._connection is None:
            connection = _connection(self._origin, self._tls, timeout)
            with _mapped(ConnectTimeout, ConnectError):
                connection.connect()
            self._connection = connection
        return self._connection

    def _receive(self, connection: http.client.HTTPConnection, timeout: float | None) -> Response:
        with _mapped(ReadTimeout, ReadError):
            connection.sock.settimeout(timeout)
            answer = connection.getresponse()
            content = answer.read()
        if answer.will_close:
            self.close()
        return Response(answer.status, Headers(dict(answer.getheaders())), content)


def _body(document: Any, data: Mapping[str, str] | None, files: Files | None) -> tuple[bytes, str | None]:
    if document is not None:
        return json.dumps(document, separators=(",", ":")).encode(), "application/json"
    if files:
        return _multipart(data or {}, files)
    if data:
        return urlencode(data).encode(), "application/x-www-form-urlencoded"
    return b"", None


def _multipart(data: Mapping[str, str], files: Files) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body (RFC 7578): each field, then each file (``(filename, bytes[, type])``; a
    None filename makes it a field)."""
    boundary = os.urandom(16).hex()
    parts = []
    for name, value in data.items():
        parts.append(_part(name, None, None, str(value).encode()))
    for name, (filename, content, *kind) in files.items():
        parts.append(_part(name, filename, kind[0] if kind else None, content))
    return b"".join(f"--{boundary}\r\n".encode() + part for part in parts) + f"--{boundary}--\r\n".encode(), \
        f"multipart/form-data; boundary={boundary}"


def _part(name: str, filename: str | None, content_type: str | None, content: bytes) -> bytes:
    disposition = f'form-data; name="{_quoted(name)}"' + (f'; filename="{_quoted(filename)}"' if filename else "")
    head = f"Content-Disposition: {disposition}\r\n"
    if filename:
        head += f"Content-Type: {content_type or 'application/octet-stream'}\r\n"
    return head.encode() + b"\r\n" + content + b"\r\n"


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _send(connection: http.client.HTTPConnection, method: str, target: str, headers: Mapping[str, str],
          body: bytes, timeout: float | None) -> None:
    with _mapped(WriteTimeout, WriteError):
        connection.sock.settimeout(timeout)
        connection.putrequest(method, target)  # with Host, and Accept-Encoding: identity
        for name, value in headers.items():
            connection.putheader(name, value)
        if body or method in ("POST", "PUT", "PATCH"):
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body or None)  # headers and the body leave in one send


def _connection(origin: tuple[str, str, int], tls: ssl.SSLContext | None,
                timeout: float | None) -> http.client.HTTPConnection:
    scheme, host, port = origin
    if scheme == "http":
        return http.client.HTTPConnection(host, port, timeout=timeout)
    context = tls or ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)


def _closed(sock: socket.socket | None) -> bool:
    """Whether a kept connection can no longer be used: gone, or readable while no answer is due (the agent
    closed it, or sent what no request asked for)."""
    if sock is None or sock.fileno() < 0:
        return True
    if not hasattr(select, "poll"):  # Windows
        return bool(select.select([sock], [], [], 0)[0])
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


@contextmanager
def _mapped(timeout: type[TransportError], failure: type[TransportError]) -> Iterator[None]:
    """The socket's and http.client's errors as this module's, the original as the cause."""
    try:
        yield
    except http.client.RemoteDisconnected as exc:  # also a ConnectionResetError: HTTP's reading of it first
        raise RemoteProtocolError("Server disconnected without sending a response.") from exc
    except http.client.HTTPException as exc:  # a status line or headers that are no HTTP, a cut-off body
        raise RemoteProtocolError(str(exc) or type(exc).__name__) from exc
    except TimeoutError as exc:  # socket.timeout
        raise timeout(str(exc) or "timed out") from exc
    except OSError as exc:  # ssl.SSLError included
        raise failure(str(exc)) from exc
