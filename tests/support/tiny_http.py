"""A tiny HTTP/1.1 server on a loopback port, answering each request as a test says: for tests of the CLI's client
(what it does with a 503, a closed connection) and of the load balancer stand-in (``support.balancer``).

``TinyHttp(respond)`` calls ``respond(request)`` for every request it reads and sends back the ``Answer`` it
returns; ``None`` reads the request and closes the connection without a word (an agent stopping mid-request). Every
request is kept in ``seen``. One request per connection (each answer says ``Connection: close``).
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_REASONS = {200: "OK", 404: "Not Found", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout"}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: Any = b""  # bytes, str, or anything JSON (sent as application/json)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering: a slow agent, a connection held open

    def encoded(self) -> bytes:
        if isinstance(self.body, bytes):
            body, kind = self.body, "application/octet-stream"
        elif isinstance(self.body, str):
            body, kind = self.body.encode(), "text/plain"
        else:
            body, kind = json.dumps(self.body).encode(), "application/json"
        headers = {"Content-Type": kind, **self.headers, "Content-Length": str(len(body)), "Connection": "close"}
        head = f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Status')}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        return (head + "\r\n").encode() + body


Respond = Callable[[Request], "Answer | None"]


def _read_request(stream: Any) -> Request | None:
    line = stream.readline(65537).decode("latin-1").strip()
    if not line:
        return None
    method, path, _ = line.split(" ", 2)
    headers: dict[str, str] = {}
    while (header := stream.readline(65537).decode("latin-1").strip()):
        name, _, value = header.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = stream.read(int(headers.get("content-length", "0") or 0))
    return Request(method, path, headers, body)


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True  # started again on its port right after a stop
    daemon_threads = True


class TinyHttp:
    """Serves on 127.0.0.1:``port`` (0: a free one) from ``start()`` (or ``with``) until ``stop()``."""

    def __init__(self, respond: Respond, port: int = 0) -> None:
        self.respond = respond
        self.seen: list[Request] = []
        self._port = port
        self._server: _Server | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> TinyHttp:
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                request = _read_request(self.rfile)
                if request is None:
                    return
                owner.seen.append(request)
                answer = owner.respond(request)
                if answer is None:
                    self.connection.shutdown(socket.SHUT_RDWR)  # no answer at all: the client reads an end
                    return
                time.sleep(answer.delay)
                self.wfile.write(answer.encoded())

        self._server = _Server(("127.0.0.1", self._port), Handler)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._port = self.port  # start() again listens on the same port
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> TinyHttp:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
