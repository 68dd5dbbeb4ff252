"""The plugin host: a ``PluginRunner`` whose plugin runs in its own process, restarted when it dies.

Each call is one JSON-RPC request (``svc.plugins.protocol``); many are in flight at once. When the process
dies, the host restarts it (at most ``max_restarts`` times in ``restart_window`` seconds, with exponential
backoff) and re-drives every call that was waiting:

* reads, lists and status polls are simply sent again;
* a create, update or delete may have reached the provider before the process died, so the host first asks
  the new process ``status`` of the call's request token (the engine gives every mutating call one). An
  answer other than "unknown token" (``NotFound``) *is* the call's answer; only a call the plugin never saw
  is sent again, with the same token, so it cannot happen twice. A mutating call without a token is
  never re-sent: it fails, saying it may have happened.

Results go through the same deadline and exception mapping as the in-process runner (``runner.guard``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from svc.paths import data_dir
from svc.plugins import protocol
from svc.plugins.process import PluginProcess, ProcessDied, RemoteError, SpawnError
from svc.plugins.runner import Call, PluginLoadError, checked_progress, guard
from svc.plugins.sdk import ErrorCode, Json, ListResult, Operation, PluginError, Progress, ReadResult, Status

log = logging.getLogger("svc.plugins")
STATE_DIR_VARIABLE = "SVC_PLUGIN_STATE_DIR"
HOSTED_VARIABLE = "SVC_PLUGIN_HOSTED"
# The plugin's own deadline (the serve loop's guard) answers first; this margin covers the pipe and a restart.
_GRACE = 5.0
_MUTATING = frozenset({Operation.CREATE, Operation.UPDATE, Operation.DELETE})
_AGENT_ONLY_VARIABLES = frozenset({"SVC_CONFIG"})


class PluginUnavailable(PluginError):
    """The plugin process is gone for good (it crashed too often) or the agent is stopping."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.UNFORESEEN_ERROR, message)


def plugin_state_dir(namespace: str) -> str:
    """Where a plugin may keep files of its own (idempotency journals), one directory per namespace."""
    return str(data_dir() / "plugins" / namespace)


class HostedPlugin:
    """Runs plugin ``namespace`` as ``python -m svc.plugins.serve <namespace>`` and supervises it."""

    def __init__(self, namespace: str, version: str = "", plugin_config: Json | None = None, *,
                 argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None, max_restarts: int = 5,
                 restart_window: float = 600.0, backoff: float = 0.2, max_backoff: float = 10.0) -> None:
        self.namespace = namespace
        self.version = version
        self.plugin_config = dict(plugin_config or {})
        self.argv = list(argv or [sys.executable, "-m", "svc.plugins.serve", namespace])
        # The plugin inherits the agent's environment (the cloud credential chain lives there), except the
        # agent's own config, which holds the datastore password and is none of a plugin's business.
        inherited = {k: v for k, v in os.environ.items() if k not in _AGENT_ONLY_VARIABLES}
        self.env = {**inherited, STATE_DIR_VARIABLE: plugin_state_dir(namespace), HOSTED_VARIABLE: "1",
                    "PYTHONUNBUFFERED": "1", **(env or {})}
        self.max_restarts = max_restarts
        self.restart_window = restart_window
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.restarts = 0
        self.started_at: float | None = None
        self._process: PluginProcess | None = None
        self._ready = asyncio.Event()
        self._crashes: deque[float] = deque()
        self._failure: str | None = None
        self._closing = False
        self._supervisor: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()

    # -- lifecycle ----------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Starts the process; ``PluginLoadError`` (one line, with the plugin's last words) if it cannot."""
        async with self._start_lock:
            if self._process is not None:
                return
            try:
                await self._spawn()
            except SpawnError as error:
                raise PluginLoadError(str(error)) from error

    async def _spawn(self) -> None:
        process = await PluginProcess.spawn(self.namespace, self.argv, self.env, self.plugin_config)
        if self.version and process.hello is not None and process.hello.version not in (self.version, "0.0.0"):
            log.warning("plugin %s: the process reports version %s, the installed distribution is %s",
                        self.namespace, process.hello.version, self.version)
        self._process = process
        self.started_at = time.time()
        self._ready.set()
        self._supervisor = asyncio.create_task(self._supervise(process))
        log.info("plugin %s %s running as process %d", self.namespace, self.version, process.pid)

    async def _supervise(self, process: PluginProcess) -> None:
        await process.exited.wait()
        if self._closing or self._process is not process:
            return
        self._ready.clear()
        self._crashes.append(time.monotonic())
        log.error("plugin %s (process %d) exited with code %s with %d call(s) in flight; restarting it",
                  self.namespace, process.pid, process.process.returncode, process.lost)
        await self._restart()

    async def _restart(self) -> None:
        while not self._closing:
            now = time.monotonic()
            while self._crashes and now - self._crashes[0] > self.restart_window:
                self._crashes.popleft()
            if len(self._crashes) > self.max_restarts:
                self._failure = (f"plugin {self.namespace} crashed {len(self._crashes)} times in "
                                 f"{self.restart_window:g}s and is not restarted; see its lines in the agent log")
                log.error("%s", self._failure)
                self._ready.set()  # wake the waiting calls: they fail now
                return
            await asyncio.sleep(min(self.backoff * 2 ** (len(self._crashes) - 1), self.max_backoff))
            if self._closing:
                return
            try:
                await self._spawn()
            except SpawnError as error:
                log.error("cannot restart %s", error)
                self._crashes.append(time.monotonic())
                continue
            self.restarts += 1
            return

    def _running(self) -> PluginProcess | None:
        """The process, if it is up and ready for calls now."""
        process = self._process
        if self._closing or not self._ready.is_set() or process is None or process.exited.is_set():
            return None
        return process

    async def _live(self) -> PluginProcess:
        """The running process, waiting while it restarts."""
        while True:
            if self._closing:
                raise PluginUnavailable(f"plugin {self.namespace} is stopping with the agent")
            if (running := self._running()) is not None:
                return running
            process = self._process
            if self._failure is not None:
                if self._crashes and time.monotonic() - self._crashes[-1] > self.restart_window:
                    # Quiet for a whole window: try again rather than stay down for the agent's lifetime.
                    self._failure = None
                    self._crashes.clear()
                    self._ready.clear()
                    self._supervisor = asyncio.create_task(self._restart())
                else:
                    raise PluginUnavailable(self._failure)
            if self._process is None and self._supervisor is None:
                try:
                    await self.start()  # the engine was not started (tools, tests): start on first use
                except PluginLoadError as error:
                    raise PluginUnavailable(str(error)) from None
                continue
            await self._ready.wait()
            if self._process is process and process is not None and process.exited.is_set():
                await asyncio.sleep(0.01)  # the supervisor has not noticed the exit yet

    async def close(self) -> None:
        self._closing = True
        self._ready.set()
        process = self._process
        if process is not None:
            await process.stop()
        if self._supervisor is not None and not self._supervisor.done():
            self._supervisor.cancel()
            await asyncio.gather(self._supervisor, return_exceptions=True)

    def describe(self) -> Json:
        """What ``GET /api/v1/plugins`` shows about the process."""
        process = self._process
        alive = process is not None and not process.exited.is_set()
        if self._closing:
            state = "stopped"
        elif self._failure is not None:
            state = "failed"
        else:
            state = "running" if alive and self._ready.is_set() else "restarting"
        info: Json = {"state": state, "restarts": self.restarts, "inFlight": process.in_flight if alive else 0}
        if self.version:
            info["version"] = self.version
        if alive and process is not None:
            info["pid"] = process.pid
        if self.started_at is not None:
            info["startedAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started_at))
        if self._failure is not None:
            info["error"] = self._failure
        return info

    # -- calls --------------------------------------------------------------------------------------------------

    async def _call(self, operation: Operation, params: Json, timeout: float) -> Any:
        """One operation's answer, re-driven across restarts until the deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        redriving = False
        while True:
            process = self._running()
            if process is None:
                async with asyncio.timeout_at(deadline):
                    process = await self._live()
            remaining = max(deadline - loop.time(), 0.001)
            try:
                if redriving and operation in _MUTATING:
                    answer = await self._status_of(process, operation, params, remaining)
                    if answer is not None:
                        return answer
                return await process.request(protocol.METHODS[operation], params, remaining)
            except ProcessDied:
                if self._closing:  # the agent stops: whoever leads next re-drives it (its token is stored)
                    raise PluginUnavailable(f"plugin {self.namespace} is stopping with the agent") from None
                if operation in _MUTATING and not params.get("requestToken"):
                    raise PluginError(ErrorCode.UNFORESEEN_ERROR, f"plugin {self.namespace} died during {operation} "
                                      "and the call had no request token; it may have reached the provider") from None
                if not redriving:
                    log.warning("plugin %s died with %s in flight; re-driving it", self.namespace, operation)
                redriving = True

    async def _status_of(self, process: PluginProcess, operation: Operation, params: Json, timeout: float) -> Any:
        """What became of a mutating call by its token: its answer, or None if the plugin never saw it."""
        token = params["requestToken"]
        status = {key: params[key] for key in ("resourceType", "targetConfig", "timeout", "requestToken")
                  if key in params}
        answer = await process.request("status", {**status, "requestId": token,
                                                  "nativeId": params.get("nativeId", "")}, timeout)
        progress = Progress.from_json(answer)
        if progress.status is Status.FAILURE and progress.error_code is ErrorCode.NOT_FOUND:
            log.info("plugin %s: %s %s never arrived; sending it again with the same token", self.namespace,
                     operation, token)
            return None
        log.info("plugin %s: %s %s had arrived (%s); not sending it again", self.namespace, operation, token,
                 progress.status)
        if progress.operation is None:
            progress.operation = operation
        return progress.to_json()

    async def _answer(self, operation: Operation, call: Call, params: Json) -> Any:
        async def run() -> Any:
            try:
                return await self._call(operation, params, call.timeout + _GRACE)
            except RemoteError as error:
                data = error.data if isinstance(error.data, dict) else {}
                code = data.get("ErrorCode")
                if error.code == protocol.OPERATION_FAILED and code:
                    raise PluginError(ErrorCode(code), str(data.get("StatusMessage") or error.message)) from None
                raise PluginError(ErrorCode.UNFORESEEN_ERROR, f"plugin {self.namespace}: {error.message}") from None

        return await guard(operation, call.timeout + _GRACE, run, timed=False)  # ``_call`` keeps the deadline

    async def _progress(self, operation: Operation, call: Call, params: Json) -> Progress:
        answer = await self._answer(operation, call, params)
        return checked_progress(operation, answer if isinstance(answer, Progress) else _progress_of(answer))

    async def create(self, call: Call, label: str, properties: Json) -> Progress:
        return await self._progress(Operation.CREATE, call, protocol.create_params(call, label, properties))

    async def read(self, call: Call, native_id: str, prior: Json | None) -> ReadResult:
        answer = await self._answer(Operation.READ, call, protocol.read_params(call, native_id, prior))
        if isinstance(answer, ReadResult):
            return answer
        if not isinstance(answer, dict):
            return ReadResult(error_code=ErrorCode.UNFORESEEN_ERROR, message="the plugin's Read answer is not an "
                                                                             "object")
        return ReadResult.from_json(answer)

    async def update(self, call: Call, native_id: str, prior: Json, desired: Json, patch: list[Json]) -> Progress:
        return await self._progress(Operation.UPDATE, call,
                                    protocol.update_params(call, native_id, prior, desired, patch))

    async def delete(self, call: Call, native_id: str) -> Progress:
        return await self._progress(Operation.DELETE, call, protocol.delete_params(call, native_id))

    async def status(self, call: Call, request_id: str, native_id: str) -> Progress:
        return await self._progress(Operation.STATUS, call, protocol.status_params(call, request_id, native_id))

    async def list(self, call: Call, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult:
        answer = await self._answer(Operation.LIST, call, protocol.list_params(call, page_size, page_token, filters))
        return ListResult.from_json(answer if isinstance(answer, dict) else {})


def _progress_of(answer: Any) -> Any:
    """The Progress of an answer, or the answer itself when it is not one (``checked_progress`` says so)."""
    if isinstance(answer, dict):
        try:
            return Progress.from_json(answer)
        except (KeyError, ValueError):
            return answer
    return answer
