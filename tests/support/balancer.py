"""A load balancer stand-in for tests of agent replacement: a TCP proxy on a loopback port in front of agents, as
an ALB listener and its target group are in front of ECS tasks.

What it does as an ALB does:
- round-robin over the registered backends that are healthy and not draining (per connection: a TCP proxy does
  not parse requests, so one keep-alive connection stays with one backend);
- health checks (``health_check=True``): ``GET /api/v1/health`` every ``interval`` seconds; only a backend whose
  last check answered 200 gets new connections, and a newly registered one waits for its first (made at once);
- ``deregister(port, drain=True)``: no new connections to it, then waits until its open ones close (or
  ``timeout``); ``drain=False`` closes them at once, as a deregistration delay of 0 does;
- no backend to send to: it answers ``503 Service Unavailable`` itself; a backend that closes the connection with
  a request unanswered: ``502 Bad Gateway``.
Where an ALB would send to a target that refuses, then deregister it when checks fail, this one marks a refusing
backend unhealthy at once (until a health check passes again; without health checks, for that connection only)
and tries the next.

Runs an asyncio loop in a thread of the test process: ``with Balancer() as balancer: balancer.register(port)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
HEALTH_PATH = "/api/v1/health"
_CHUNK = 65536


def _answer(status: int, reason: str) -> bytes:
    body = f'{{"message": "{reason} (test load balancer)"}}'.encode()
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


NO_BACKEND = _answer(503, "Service Unavailable")
BAD_GATEWAY = _answer(502, "Bad Gateway")


@dataclass
class _Backend:
    port: int
    healthy: bool
    draining: bool = False
    connections: set[asyncio.Task[None]] = field(default_factory=set)


class Balancer:
    """Listens on 127.0.0.1:``port`` (0: a free one) from ``start()`` (or ``with``) until ``stop()``."""

    def __init__(self, *, port: int = 0, health_check: bool = False, interval: float = 0.2,
                 check_timeout: float = 1.0) -> None:
        self._port = port
        self.health_check = health_check
        self.interval = interval
        self.check_timeout = check_timeout
        self._backends: dict[int, _Backend] = {}
        self._turn = itertools.count()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="balancer", daemon=True)
        self._server: asyncio.Server | None = None
        self._checker: asyncio.Task[None] | None = None
        self.answered: dict[int, int] = {503: 0, 502: 0}  # what it answered itself

    # -- from the test's thread -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Balancer:
        self._thread.start()
        self._server = self._run(asyncio.start_server(self._serve, "127.0.0.1", self._port))
        if self.health_check:
            self._checker = self._run(self._spawn(self._check_forever()))
        return self

    def stop(self) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            tasks = [task for backend in self._backends.values() for task in backend.connections]
            tasks += [self._checker] if self._checker is not None else []
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self._run(close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def __enter__(self) -> Balancer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def register(self, port: int) -> None:
        """Adds a backend; with health checks it gets connections once a check passes (the first one starts at
        once)."""
        async def add() -> None:
            backend = self._backends[port] = _Backend(port, healthy=not self.health_check)
            if self.health_check:
                asyncio.get_running_loop().create_task(self._check(backend))

        self._run(add())

    def deregister(self, port: int, *, drain: bool = True, timeout: float = 30.0) -> bool:
        """Takes the backend out of the rotation at once; then waits for its open connections to close (``drain``)
        for up to ``timeout`` seconds, or closes them. True when none was left open (drained in time)."""
        async def remove() -> bool:
            backend = self._backends.get(port)
            if backend is None:
                return True
            backend.draining = True
            if drain and backend.connections:
                _, pending = await asyncio.wait(set(backend.connections), timeout=timeout)
                drained = not pending
            else:
                drained = not backend.connections
            for task in set(backend.connections):
                task.cancel()
            self._backends.pop(port, None)
            return drained

        return self._run(remove())

    def healthy(self, port: int) -> bool:
        async def look() -> bool:
            backend = self._backends.get(port)
            return backend is not None and backend.healthy

        return self._run(look())

    def draining(self, port: int) -> bool:
        """Deregistered, its open connections not all closed yet."""
        async def look() -> bool:
            backend = self._backends.get(port)
            return backend is not None and backend.draining

        return self._run(look())

    def open_connections(self, port: int) -> int:
        async def count() -> int:
            backend = self._backends.get(port)
            return len(backend.connections) if backend else 0

        return self._run(count())

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=120)

    @staticmethod
    async def _spawn(coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(coroutine)

    # -- on the loop ------------------------------------------------------------------------------------------

    def _candidates(self) -> list[_Backend]:
        """The backends to try for a new connection, the round-robin's next one first."""
        ready = [b for b in self._backends.values() if b.healthy and not b.draining]
        if not ready:
            return []
        start = next(self._turn) % len(ready)
        return ready[start:] + ready[:start]

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            for backend in self._candidates():
                try:
                    backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", backend.port)
                except OSError:
                    if self.health_check:
                        backend.healthy = False  # out until a check passes again
                    continue
                task = asyncio.current_task()
                assert task is not None
                backend.connections.add(task)
                try:
                    await self._pipe(client_reader, client_writer, backend_reader, backend_writer)
                finally:
                    backend.connections.discard(task)
                    backend_writer.close()
                return
            await self._answer_alone(client_reader, client_writer, NO_BACKEND, 503)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            client_writer.close()

    async def _answer_alone(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: bytes,
                            status: int) -> None:
        """Reads the request (closing on an unread one would reset the connection under the answer) and answers."""
        with contextlib.suppress(asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await asyncio.wait_for(reader.readexactly(length), timeout=5)
        self.answered[status] += 1
        writer.write(answer)
        await writer.drain()

    async def _pipe(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter,
                    backend_reader: asyncio.StreamReader, backend_writer: asyncio.StreamWriter) -> None:
        """Copies both ways until either side closes; a backend gone with a request unanswered gets the client a
        502, as a load balancer answers when its target drops the connection."""
        unanswered = False  # bytes went to the backend since it last sent any

        async def upstream() -> None:
            nonlocal unanswered
            while chunk := await client_reader.read(_CHUNK):
                unanswered = True
                backend_writer.write(chunk)
                await backend_writer.drain()
            with contextlib.suppress(OSError):
                backend_writer.write_eof()

        async def downstream() -> None:
            nonlocal unanswered
            try:
                while chunk := await backend_reader.read(_CHUNK):
                    unanswered = False
                    client_writer.write(chunk)
                    await client_writer.drain()
            except ConnectionError:
                pass
            if unanswered:
                self.answered[502] += 1
                client_writer.write(BAD_GATEWAY)
                await client_writer.drain()

        up = asyncio.create_task(upstream())
        try:
            await downstream()  # the backend's end (or its reset) ends the exchange
        finally:
            up.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await up

    async def _check_forever(self) -> None:
        while True:
            await asyncio.gather(*(self._check(backend) for backend in list(self._backends.values())))
            await asyncio.sleep(self.interval)

    async def _check(self, backend: _Backend) -> None:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", backend.port),
                                                    timeout=self.check_timeout)
        except (TimeoutError, OSError):
            backend.healthy = False
            return
        try:
            writer.write(f"GET {HEALTH_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{backend.port}\r\n"
                         "User-Agent: svc-test-balancer\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            status_line = await asyncio.wait_for(reader.readline(), timeout=self.check_timeout)
            parts = status_line.split()
            backend.healthy = len(parts) >= 2 and parts[1] == b"200"
        except (TimeoutError, OSError):
            backend.healthy = False
        finally:
            writer.close()
