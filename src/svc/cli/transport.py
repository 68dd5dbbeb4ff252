"""The CLI's connection to the agent: httpx's client over the standard library's ``http.client``.

httpx's default transport is httpcore, with h11, anyio and certifi behind it: importing and setting them up cost
a short command more CPU than its requests, for what the CLI needs of it, one keep-alive connection to one agent.
This transport keeps everything else of httpx (auth, headers, parameters, multipart bodies, timeouts, decoding,
``httpx.Response``) and sends each request over one ``http.client`` connection. Failures are httpx's exceptions,
raised from the socket's error as httpcore raises them (``svc.cli.retry`` and ``svc.cli.client`` read both):
``ConnectTimeout``/``ConnectError`` while connecting (TLS included), ``WriteTimeout``/``WriteError`` while
sending, ``ReadTimeout``/``ReadError`` while reading, ``RemoteProtocolError`` for an answer that is no HTTP or
a connection closed before it. A kept connection that the agent closed meanwhile (its keep-alive timeout, a
restart) is noticed before it is used, as httpcore does, and a new one made.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

_DROPPED_HEADERS = (b"transfer-encoding", b"connection")  # the body is sent whole; http.client keeps the connection


class StdlibTransport(httpx.BaseTransport):
    """One connection at a time, kept alive between requests; ``tls``: the context for https URLs."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls
        self._connection: http.client.HTTPConnection | None = None
        self._origin: tuple[str, str, int] | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        connection = self._connected(request.url, timeouts.get("connect"))
        try:
            self._send(connection, request, timeouts.get("write"))
            return self._receive(connection, timeouts.get("read"))
        except BaseException:
            self.close()  # a connection in an unknown state is not used again
            raise

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connected(self, url: httpx.URL, timeout: float | None) -> http.client.HTTPConnection:
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.")
        origin = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        if self._connection is not None and (origin != self._origin or _closed(self._connection.sock)):
            self.close()
        if self._connection is None:
            connection = _connection(origin, self._tls, timeout)
            with _mapped(httpx.ConnectTimeout, httpx.ConnectError):
                connection.connect()
            self._connection, self._origin = connection, origin
        return self._connection

    @staticmethod
    def _send(connection: http.client.HTTPConnection, request: httpx.Request, timeout: float | None) -> None:
        body = request.read()
        with _mapped(httpx.WriteTimeout, httpx.WriteError):
            connection.sock.settimeout(timeout)
            connection.putrequest(request.method, request.url.raw_path.decode("ascii"), skip_host=True,
                                  skip_accept_encoding=True)  # httpx's own Host and Accept-Encoding are sent
            headers = [(name, value) for name, value in request.headers.raw if name.lower() not in _DROPPED_HEADERS]
            if body and not any(name.lower() == b"content-length" for name, _ in headers):
                headers.append((b"Content-Length", str(len(body)).encode()))
            for name, value in headers:
                connection.putheader(name, value)
            connection.endheaders(body or None)  # headers and a bytes body leave in one send

    def _receive(self, connection: http.client.HTTPConnection, timeout: float | None) -> httpx.Response:
        with _mapped(httpx.ReadTimeout, httpx.ReadError):
            connection.sock.settimeout(timeout)
            answer = connection.getresponse()
            content = answer.read()
        if answer.will_close:
            self.close()
        headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.getheaders()]
        return httpx.Response(answer.status, headers=headers, stream=httpx.ByteStream(content),
                              extensions={"http_version": b"HTTP/1.1" if answer.version == 11 else b"HTTP/1.0",
                                          "reason_phrase": answer.reason.encode("latin-1")})


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
def _mapped(timeout: type[httpx.TransportError], failure: type[httpx.TransportError]) -> Iterator[None]:
    """The socket's and http.client's errors as httpx's, the original as the cause."""
    try:
        yield
    except http.client.RemoteDisconnected as exc:  # also a ConnectionResetError: HTTP's reading of it first
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.") from exc
    except http.client.HTTPException as exc:  # a status line or headers that are no HTTP, a cut-off body
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__) from exc
    except TimeoutError as exc:  # socket.timeout
        raise timeout(str(exc) or "timed out") from exc
    except OSError as exc:  # ssl.SSLError included
        raise failure(str(exc)) from exc
