"""``svc.cli.http.HttpClient``: requests over ``http.client`` (query, auth, JSON and multipart bodies), failures as
one family of errors raised from the socket's, and one kept connection that is made again when the server closed
it."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from svc.cli.http import ConnectError, HttpClient, ReadTimeout, RemoteProtocolError, Timeout, UnsupportedProtocol
from svc.cli.retry import failed_try

Handler = Callable[[socket.socket, bytes], None]


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


@contextmanager
def server(handler: Handler) -> Iterator[tuple[str, list[socket.socket]]]:
    """A one-thread server on a free port: ``handler`` answers each request of each connection; the list holds
    the connections accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)
            try:
                while (request := _read_request(conn)):
                    handler(conn, request)
            except OSError:  # the test is over and closed it
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


def ok(conn: socket.socket, request: bytes) -> None:
    """Answers the request's body, or its request line when it has none, as a JSON string."""
    body = json.dumps((request.split(b"\r\n\r\n", 1)[1] or request.split(b"\r\n", 1)[0]).decode()).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Seen: yes\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body)


def client(url: str, **options: object) -> HttpClient:
    return HttpClient(url, **options)  # type: ignore[arg-type]


def test_requests_share_one_connection_and_read_their_answers() -> None:
    with server(ok) as (url, accepted), client(url, headers={"Client-ID": "c1"}, auth=("u", "p")) as http:
        first = http.get("/api/v1/stats", params={"a": "b c"})
        second = http.post("/api/v1/commands", data={"k": "v"},
                           files={"forma": ("f.json", b'{"x": 1}', "application/json"), "field": (None, b"w")})
        third = http.post("/api/v1/plugins/install", json={"packages": ["p"]})
        assert first.status_code == 200 and first.headers["X-Seen"] == "yes" and not first.is_error
        assert first.headers.get("x-seen") == "yes" and "X-SEEN" in first.headers
        assert first.json() == "GET /api/v1/stats?a=b+c HTTP/1.1"
        assert 'name="forma"; filename="f.json"' in second.json() and 'name="k"' in second.json()
        assert 'name="field"' in second.json()
        assert third.json() == '{"packages":["p"]}'
        assert len(accepted) == 1


def test_a_multipart_body_is_what_the_agents_form_parser_reads() -> None:
    """The agent reads a submission's form with Starlette (python-multipart): that parser reads this body."""
    from starlette.requests import Request

    seen: list[bytes] = []

    def keep(conn: socket.socket, request: bytes) -> None:
        seen.append(request)
        ok(conn, request)

    with server(keep) as (url, _), client(url) as http:
        http.post("/c", data={"command": "apply", "simulate": "false"},
                  files={"file": ("forma.json", b'{"Resources": []}\r\n--x', "application/json")})
    head, _, body = seen[0].partition(b"\r\n\r\n")
    headers = [tuple(part.strip().lower() if n == 0 else part.strip() for n, part in enumerate(line.split(b":", 1)))
               for line in head.split(b"\r\n")[1:]]

    async def read() -> tuple[str, str, str | None, str | None, bytes]:
        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": body, "more_body": False}

        form = await Request({"type": "http", "method": "POST", "headers": headers}, receive).form()
        upload = form["file"]
        return (form["command"], form["simulate"], upload.filename, upload.content_type,  # type: ignore[union-attr]
                await upload.read())  # type: ignore[union-attr]

    assert asyncio.run(read()) == ("apply", "false", "forma.json", "application/json", b'{"Resources": []}\r\n--x')


def test_each_request_says_who_and_which_host() -> None:
    seen: list[bytes] = []

    def keep(conn: socket.socket, request: bytes) -> None:
        seen.append(request)
        ok(conn, request)

    with server(keep) as (url, _), client(url, headers={"Client-ID": "c1"}, auth=("u", "p")) as http:
        http.get("/x")
    head = seen[0].lower()
    assert b"client-id: c1" in head and b"authorization: basic dtpw" in head
    assert head.count(b"host:") == 1 and b"accept-encoding: identity" in head and b"user-agent: svc/" in head


def test_a_connection_the_server_closed_is_made_again() -> None:
    closed = threading.Event()

    def answer_once(conn: socket.socket, request: bytes) -> None:
        ok(conn, request)
        conn.shutdown(socket.SHUT_RDWR)  # as an agent's keep-alive timeout does between two requests
        closed.set()

    with server(answer_once) as (url, accepted), client(url) as http:
        assert http.get("/1").status_code == 200
        assert closed.wait(10)
        assert http.get("/2").status_code == 200
        assert len(accepted) == 2


def test_refused_and_broken_exchanges_are_transport_errors_with_their_cause() -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with client(f"http://127.0.0.1:{port}") as http, pytest.raises(ConnectError) as refused:
        http.get("/")
    assert failed_try("POST", refused.value) == "connection refused"

    def hang_up(conn: socket.socket, request: bytes) -> None:
        conn.shutdown(socket.SHUT_RDWR)

    with server(hang_up) as (url, _), client(url) as http, pytest.raises(RemoteProtocolError) as closed:
        http.get("/")
    assert failed_try("GET", closed.value) == "connection closed" and failed_try("POST", closed.value) is None

    def garbage(conn: socket.socket, request: bytes) -> None:
        conn.sendall(b"\x15\x03\x01\x00\x02\x02\x50")  # a TLS alert: an HTTPS server reached with http://
        conn.shutdown(socket.SHUT_RDWR)

    with server(garbage) as (url, _), client(url) as http, pytest.raises(RemoteProtocolError):
        http.get("/")


def test_a_silent_server_is_a_read_timeout() -> None:
    def silent(conn: socket.socket, request: bytes) -> None:
        pass

    with server(silent) as (url, _), client(url, timeout=Timeout(0.2)) as http, \
            pytest.raises(ReadTimeout):
        http.get("/")


def test_an_unsupported_scheme_fails_the_request_not_the_client() -> None:
    with client("ftp://127.0.0.1:21") as http, pytest.raises(UnsupportedProtocol) as refused:
        http.get("/")
    assert failed_try("GET", refused.value) is None
