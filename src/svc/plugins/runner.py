"""How the executor calls a plugin: the ``PluginRunner`` protocol and the in-process runner.

The executor only sees ``PluginRunner``: async operations that take and return JSON-serialisable values
(``sdk.Progress``, ``sdk.ReadResult``, ``sdk.ListResult`` all have ``to_json``/``from_json``). The
subprocess host (JSON-RPC over stdio) implements the same protocol, so swapping runners changes nothing
else. Both apply the same exception mapping (``guard``), so a plugin behaves identically in either.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, TypeVar

from svc.plugins.installed import PLUGIN_ENTRY_POINT_GROUP
from svc.plugins.sdk import (
    Ctx,
    ErrorCode,
    Json,
    ListResult,
    Operation,
    PluginError,
    Progress,
    ReadResult,
    Status,
    looks_like_throttling,
)

log = logging.getLogger("svc.plugins")
T = TypeVar("T")
DEFAULT_CALL_TIMEOUT = 60.0


class PluginLoadError(Exception):
    """An enabled plugin is not installed or its entry point does not load."""


class PluginCallError(Exception):
    """A ``list`` call failed (the only operation whose result has no error field)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Call:
    """What the agent says about one call besides its arguments (JSON-serialisable)."""

    resource_type: str
    target_config: Json
    timeout: float = DEFAULT_CALL_TIMEOUT
    request_token: str | None = None

    def to_json(self) -> Json:
        return {"resourceType": self.resource_type, "targetConfig": self.target_config, "timeout": self.timeout,
                "requestToken": self.request_token}


class PluginRunner(Protocol):
    namespace: str

    async def start(self) -> None: ...

    async def create(self, call: Call, label: str, properties: Json) -> Progress: ...

    async def read(self, call: Call, native_id: str, prior: Json | None) -> ReadResult: ...

    async def update(self, call: Call, native_id: str, prior: Json, desired: Json, patch: list[Json]) -> Progress: ...

    async def delete(self, call: Call, native_id: str) -> Progress: ...

    async def status(self, call: Call, request_id: str, native_id: str) -> Progress: ...

    async def list(self, call: Call, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult: ...

    async def close(self) -> None: ...


# -- the exception mapping shared by every runner ------------------------------------------------------------

_MUTATING = (Operation.CREATE, Operation.UPDATE, Operation.DELETE)


def failure_for(operation: Operation, error: BaseException, timeout: float) -> tuple[ErrorCode, str]:
    """The code and message an exception from ``operation`` turns into.

    A mutating call that raised or timed out may have reached the provider, so it is terminal
    (``UnforeseenError``) and never re-sent blindly; a read-only call that timed out is a recoverable
    ``ServiceTimeout``, and one that raised is ``Throttling`` when the text says so.
    """
    if isinstance(error, PluginError):
        return error.code, error.message
    if isinstance(error, TimeoutError):
        if operation in _MUTATING:
            return ErrorCode.UNFORESEEN_ERROR, (f"the plugin did not answer {operation} within {timeout:g}s; "
                                                "the call may have reached the provider")
        return ErrorCode.SERVICE_TIMEOUT, f"the plugin did not answer {operation} within {timeout:g}s"
    text = f"{type(error).__name__}: {error}"
    if operation not in _MUTATING and looks_like_throttling(text):
        return ErrorCode.THROTTLING, text
    return ErrorCode.UNFORESEEN_ERROR, text


def checked_progress(operation: Operation, result: Any) -> Progress:
    """A plugin's answer, or a terminal failure saying why it is not a valid one."""
    if not isinstance(result, Progress):
        return Progress.failure(ErrorCode.UNFORESEEN_ERROR, f"the plugin's {operation} returned "
                                f"{type(result).__name__}, not Progress", operation=operation)
    if result.operation is None:
        result.operation = operation
    # A create may name its resource only in the properties it returns (the schema's identifier): the engine
    # looks there, and fails the create if neither names one.
    if result.status is Status.SUCCESS and result.operation is Operation.UPDATE and not result.native_id:
        return Progress.failure(ErrorCode.UNFORESEEN_ERROR, f"the plugin's {operation} succeeded without a native id",
                                operation=operation)
    return result


async def guard(operation: Operation, timeout: float, run: Callable[[], Awaitable[T]], *,
                timed: bool = True) -> T | Progress | ReadResult:
    """Runs one plugin call under its deadline, mapping exceptions per ``failure_for``. ``timed`` False: ``run``
    raises TimeoutError itself once ``timeout`` has passed (a hosted call's request carries its deadline), so
    the call needs no second timer."""
    try:
        if not timed:
            return await run()
        async with asyncio.timeout(timeout):  # no task per call, unlike wait_for
            return await run()
    except asyncio.CancelledError:
        raise
    except BaseException as error:  # noqa: BLE001 - any plugin bug becomes a result, never an agent crash
        code, message = failure_for(operation, error, timeout)
        if not isinstance(error, (PluginError, TimeoutError)):
            log.warning("plugin %s raised %s", operation, type(error).__name__, exc_info=error)
        if operation is Operation.READ:
            return ReadResult(error_code=code, message=message)
        if operation is Operation.LIST:
            raise PluginCallError(code, message) from error
        return Progress.failure(code, message, operation=operation)


# -- in-process runner ---------------------------------------------------------------------------------------

def load_plugin_class(namespace: str) -> type:
    """The plugin class of the installed plugin ``namespace``: the entry point's ``module:attr``, or the
    module's ``Plugin`` when the entry point names only the package (the manifest's ``runtime.entrypoint``)."""
    for entry in entry_points(group=PLUGIN_ENTRY_POINT_GROUP):
        if entry.name.upper() != namespace.upper():
            continue
        try:
            module = importlib.import_module(entry.module)
            target = getattr(module, entry.attr) if entry.attr else module.Plugin
        except (ImportError, AttributeError) as error:
            raise PluginLoadError(f"plugin {namespace}: cannot load {entry.value}: {error}") from error
        if not inspect.isclass(target):
            raise PluginLoadError(f"plugin {namespace}: {entry.value} is not a class")
        return target
    raise PluginLoadError(f"plugin {namespace} is not installed (no entry point in group {PLUGIN_ENTRY_POINT_GROUP})")


def _rendezvous(barrier: threading.Barrier) -> None:
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass  # a slow start only means the pool keeps starting threads lazily


@dataclass
class InProcessRunner:
    """Calls a plugin object in this process: sync methods on a thread pool, async ones on the loop."""

    namespace: str
    plugin: Any
    plugin_config: Json = field(default_factory=dict)
    max_threads: int = 32

    def __post_init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=self.max_threads, thread_name_prefix=f"plugin-{self.namespace}")
        methods = [getattr(self.plugin, operation.value.lower(), None) for operation in Operation]
        if any(callable(method) and not inspect.iscoroutinefunction(method) for method in methods):
            # Start every worker now: the pool otherwise starts one per call while none is idle, and each start
            # blocks the event loop until the new thread runs (~1 ms under load), in the middle of a command. A
            # plugin whose operations are all coroutines never uses the pool.
            barrier = threading.Barrier(self.max_threads + 1, timeout=10)
            for _ in range(self.max_threads):
                self._pool.submit(_rendezvous, barrier)
            _rendezvous(barrier)
        configure = getattr(self.plugin, "configure", None)
        if callable(configure):
            configure(dict(self.plugin_config))
        # Looked up once: every call of a busy plugin paid for the logger's lookup and for ``inspect``.
        self._log = logging.getLogger(f"svc.plugin.{self.namespace}")
        self._coroutines = {operation.value.lower(): inspect.iscoroutinefunction(method)
                            for operation, method in zip(Operation, methods, strict=True)}

    @classmethod
    def load(cls, namespace: str, plugin_config: Json | None = None, *, max_threads: int = 32) -> InProcessRunner:
        plugin_class = load_plugin_class(namespace)
        return cls(namespace, plugin_class(), dict(plugin_config or {}), max_threads)

    async def start(self) -> None:
        """Nothing to start: the plugin object lives in this process."""

    def _ctx(self, call: Call) -> Ctx:
        return Ctx(resource_type=call.resource_type, target=dict(call.target_config),
                   plugin_config=self.plugin_config, deadline=time.monotonic() + call.timeout,
                   request_token=call.request_token, log=self._log)

    async def _invoke(self, name: str, *args: Any) -> Any:
        method = getattr(self.plugin, name)
        if self._coroutines[name]:
            return await method(*args)
        return await asyncio.get_running_loop().run_in_executor(self._pool, lambda: method(*args))

    async def _progress(self, operation: Operation, call: Call, name: str, *args: Any) -> Progress:
        result = await guard(operation, call.timeout, lambda: self._invoke(name, self._ctx(call), *args))
        return checked_progress(operation, result)

    async def create(self, call: Call, label: str, properties: Json) -> Progress:
        return await self._progress(Operation.CREATE, call, "create", label, properties)

    async def read(self, call: Call, native_id: str, prior: Json | None) -> ReadResult:
        result = await guard(Operation.READ, call.timeout,
                             lambda: self._invoke("read", self._ctx(call), native_id, prior))
        if not isinstance(result, ReadResult):
            return ReadResult(error_code=ErrorCode.UNFORESEEN_ERROR,
                              message=f"the plugin's Read returned {type(result).__name__}, not ReadResult")
        return result

    async def update(self, call: Call, native_id: str, prior: Json, desired: Json, patch: list[Json]) -> Progress:
        return await self._progress(Operation.UPDATE, call, "update", native_id, prior, desired, patch)

    async def delete(self, call: Call, native_id: str) -> Progress:
        return await self._progress(Operation.DELETE, call, "delete", native_id)

    async def status(self, call: Call, request_id: str, native_id: str) -> Progress:
        return await self._progress(Operation.STATUS, call, "status", request_id, native_id)

    async def list(self, call: Call, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult:
        result = await guard(Operation.LIST, call.timeout,
                             lambda: self._invoke("list", self._ctx(call), page_size, page_token, dict(filters)))
        if not isinstance(result, ListResult):
            raise PluginCallError(ErrorCode.UNFORESEEN_ERROR, "the plugin's List did not return a ListResult")
        return result

    async def close(self) -> None:
        # A hung plugin thread cannot be interrupted; do not wait for it.
        self._pool.shutdown(wait=False, cancel_futures=True)
