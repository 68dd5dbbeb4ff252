"""One running plugin process, seen from the agent: spawn, handshake, requests in flight, logs, exit.

A ``PluginProcess`` knows nothing about restarts; ``host.HostedPlugin`` supervises it. When the process
ends, every request still waiting fails with ``ProcessDied`` so that the host can re-drive it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from svc.plugins import protocol
from svc.plugins.lines import LineWriter
from svc.plugins.sdk import Json

log = logging.getLogger("svc.plugins")
HELLO_TIMEOUT = 60.0  # importing a large plugin (boto3 and friends) can take a while on a cold disk
_STDERR_TAIL = 20
_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING, "ERROR": logging.ERROR,
           "CRITICAL": logging.CRITICAL}


class SpawnError(Exception):
    """The process did not start, or did not say hello as the plugin it should be."""


class ProcessDied(Exception):
    """The process ended before it answered."""


class RemoteError(Exception):
    """The plugin answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True)
class Hello:
    name: str
    version: str
    namespace: str
    pid: int


class PluginProcess:
    """A live plugin process and the requests waiting for its answers."""

    def __init__(self, namespace: str, process: asyncio.subprocess.Process) -> None:
        self.namespace = namespace
        self.process = process
        self.hello: Hello | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._lines = LineWriter(process.stdin) if process.stdin is not None else None
        self._stderr_tail: deque[str] = deque(maxlen=_STDERR_TAIL)
        self._plugin_log = logging.getLogger(f"svc.plugin.{namespace}")
        self._tasks: list[asyncio.Task[None]] = []
        self.exited = asyncio.Event()
        self.lost = 0  # requests still waiting when the process ended

    @classmethod
    async def spawn(cls, namespace: str, argv: Sequence[str], env: Mapping[str, str], plugin_config: Json,
                    *, hello_timeout: float = HELLO_TIMEOUT) -> PluginProcess:
        """Starts the process, waits for its ``hello`` and configures it; ``SpawnError`` says why not."""
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=dict(env), limit=protocol.MAX_LINE_BYTES,
                # Its own session: a Ctrl-C at the agent's terminal reaches the agent, which then stops the
                # plugins in order, instead of killing them under requests in flight.
                start_new_session=True)
        except OSError as error:
            raise SpawnError(f"plugin {namespace}: cannot start {argv[0]}: {error.strerror or error}") from error
        self = cls(namespace, process)
        self._tasks.append(asyncio.create_task(self._pump_stderr()))
        try:
            self.hello = await asyncio.wait_for(self._read_hello(), hello_timeout)
            self._tasks.append(asyncio.create_task(self._pump_stdout()))
            await self.request("configure", {"pluginConfig": plugin_config}, hello_timeout)
        except (TimeoutError, ProcessDied, RemoteError, SpawnError) as error:
            await self.kill()
            raise SpawnError(self._why(error)) from error
        return self

    def _why(self, error: BaseException) -> str:
        if isinstance(error, TimeoutError):
            reason = "did not start in time"
        elif isinstance(error, RemoteError):
            reason = error.message
        elif isinstance(error, SpawnError):
            return str(error)
        else:
            reason = f"exited with code {self.process.returncode}"
        tail = [line for line in self._stderr_tail if line.strip()]
        detail = f": {tail[-1].strip()}" if tail else ""
        return f"plugin {self.namespace} {reason}{detail}"

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    # -- reading ------------------------------------------------------------------------------------------------

    async def _read_hello(self) -> Hello:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            await self.process.wait()
            raise ProcessDied()
        try:
            message = protocol.decode(line)
        except protocol.ProtocolError as error:
            raise SpawnError(f"plugin {self.namespace}: its first line is not a hello ({error})") from error
        params = message.get("params") or {}
        if message.get("method") != "hello" or not isinstance(params, dict):
            raise SpawnError(f"plugin {self.namespace}: its first message is not a hello")
        if params.get("sdk") != protocol.PROTOCOL_VERSION:
            raise SpawnError(f"plugin {self.namespace} speaks protocol {params.get('sdk')!r}; this agent speaks "
                             f"{protocol.PROTOCOL_VERSION!r}: install a matching version")
        hello = Hello(str(params.get("name", "")), str(params.get("version", "")), str(params.get("namespace", "")),
                      int(params.get("pid") or self.process.pid))
        if hello.namespace.upper() != self.namespace.upper():
            raise SpawnError(f"plugin {self.namespace}: the process says it is {hello.namespace!r}")
        return hello

    async def _pump_stdout(self) -> None:
        assert self.process.stdout is not None
        try:
            while line := await self.process.stdout.readline():
                self._answer(line)
        except (ValueError, ConnectionError) as error:  # an over-long line: the stream cannot be trusted
            log.error("plugin %s: unreadable output (%s); stopping it", self.namespace, error)
            self._signal(signal.SIGKILL)
        finally:
            await self.process.wait()
            self._fail_pending()
            self.exited.set()

    def _answer(self, line: bytes) -> None:
        try:
            message = protocol.decode(line)
        except protocol.ProtocolError as error:
            log.warning("plugin %s wrote a line that is not protocol (%s)", self.namespace, error)
            return
        if message.get("method") == "log" and isinstance(message.get("params"), dict):
            params = message["params"]  # the protocol's alternative to stderr: {level, msg, attrs}
            attrs = " ".join(f"{k}={v}" for k, v in (params.get("attrs") or {}).items())
            self._plugin_log.log(_LEVELS.get(str(params.get("level", "")).upper(), logging.INFO), "[%s] %s%s",
                                 self.namespace, params.get("msg", ""), f" {attrs}" if attrs else "")
            return
        future = self._pending.pop(message.get("id"), None) if isinstance(message.get("id"), int) else None
        if future is None:
            return  # another notification, or the answer to a request the agent stopped waiting for
        if future.done():
            return
        if "error" in message:
            body = message["error"] if isinstance(message["error"], dict) else {}
            future.set_exception(RemoteError(int(body.get("code", protocol.INTERNAL_ERROR)),
                                             str(body.get("message", "plugin error")), body.get("data")))
        else:
            future.set_result(message.get("result"))

    async def _pump_stderr(self) -> None:
        assert self.process.stderr is not None
        while True:
            try:
                raw = await self.process.stderr.readline()
            except ValueError:  # an endless line without a newline: drop it, keep reading
                continue
            if not raw:
                return
            line = raw.decode("utf-8", errors="replace").rstrip()
            self._stderr_tail.append(line)
            word, _, _ = line.partition(" ")
            # The serve loop logs "LEVEL logger: message"; anything else (a traceback, a print) is a warning.
            self._plugin_log.log(_LEVELS.get(word, logging.WARNING), "[%s] %s", self.namespace, line)

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        self.lost += sum(1 for future in pending.values() if not future.done())
        for future in pending.values():
            if not future.done():
                future.set_exception(ProcessDied())

    # -- writing ------------------------------------------------------------------------------------------------

    async def request(self, method: str, params: Json, timeout: float) -> Any:
        """Sends one request and waits for its answer; ``ProcessDied`` if the process ends first."""
        if self.exited.is_set() or self.process.returncode is not None:
            raise ProcessDied()
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            async with asyncio.timeout(timeout):  # a plugin that stopped reading blocks the write: it counts too
                await self._write(protocol.encode(protocol.request(request_id, method, params)))
                return await future
        finally:
            self._pending.pop(request_id, None)

    async def _write(self, data: bytes) -> None:
        assert self._lines is not None
        try:
            await self._lines.send(data)
        except (BrokenPipeError, ConnectionResetError) as error:
            raise ProcessDied() from error

    # -- ending -------------------------------------------------------------------------------------------------

    def _signal(self, sig: int) -> None:
        if self.process.returncode is None:
            try:
                os.kill(self.process.pid, sig)
            except ProcessLookupError:
                pass

    async def kill(self) -> None:
        self._signal(signal.SIGKILL)
        await self.process.wait()
        await self._drain_tasks()

    async def stop(self, grace: float = 5.0) -> None:
        """Asks the plugin to shut down; kills it when it does not exit within ``grace`` seconds."""
        try:
            await self.request("shutdown", {}, grace)
        except (TimeoutError, ProcessDied, RemoteError):
            pass
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            self._signal(signal.SIGKILL)
            await self.process.wait()
        await self._drain_tasks()

    async def _drain_tasks(self) -> None:
        for task in self._tasks:
            if not task.done():
                try:
                    await asyncio.wait_for(asyncio.shield(task), 2.0)
                except TimeoutError:
                    task.cancel()
        self._fail_pending()
        self.exited.set()
