"""The plugin side of the process protocol: ``python -m svc.plugins.serve <NAMESPACE | module:Class>``.

The agent starts one such process per enabled plugin. It says ``hello``, then answers requests
concurrently: each request is a task, and the plugin's methods run exactly as in the in-process runner
(sync ones on its thread pool, under the same deadline and exception mapping), so a plugin behaves the
same in unit tests and in the agent. Plugin authors need nothing but a class with the six operations
(``svc.plugins.sdk``) and an entry point; ``run(plugin, namespace)`` serves an object directly.

The loop is ``timers.punctual_loop``: a plugin's sleeps (a FAKE call's latency) end when they are due, not at
the next whole millisecond.

Stdout is the protocol channel: it is moved to a private descriptor and fd 1 is pointed at stderr, so a
stray ``print`` in plugin code lands in the agent log instead of corrupting the stream.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import os
import sys
from importlib.metadata import PackageNotFoundError, entry_points
from importlib.metadata import version as distribution_version
from typing import Any

from svc.plugins import protocol
from svc.plugins.installed import PLUGIN_ENTRY_POINT_GROUP
from svc.plugins.lines import LineWriter
from svc.plugins.runner import InProcessRunner, PluginCallError, PluginLoadError, load_plugin_class
from svc.plugins.sdk import Json, Operation
from svc.plugins.timers import punctual_loop

log = logging.getLogger("svc.plugin.serve")
LOG_LEVEL_VARIABLE = "SVC_PLUGIN_LOG_LEVEL"


class _Server:
    """Answers the requests of one agent connection."""

    def __init__(self, plugin: Any, namespace: str, writer: asyncio.StreamWriter) -> None:
        self.plugin = plugin
        self.namespace = namespace
        self.lines = LineWriter(writer)
        self.runner: InProcessRunner | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    def _runner(self, plugin_config: Json | None = None) -> InProcessRunner:
        if self.runner is None or plugin_config is not None:
            config = dict(plugin_config or {})
            threads = max(32, int(config.get("maxInFlight", 0) or 0))
            self.runner = InProcessRunner(self.namespace, self.plugin, config, threads)
        return self.runner

    async def send(self, message: Json) -> None:
        await self.lines.send(protocol.encode(message))

    async def handle(self, message: Json) -> bool:
        """Answers one message; False when the agent asked to shut down."""
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params") or {}
        if not isinstance(method, str) or not isinstance(params, dict):
            if request_id is not None:
                await self.send(protocol.error(request_id, protocol.INVALID_REQUEST, "a request needs a method "
                                                                                     "and object params"))
            return True
        if method == "shutdown":
            await self.send(protocol.result(request_id, {}))
            return False
        if method == "configure":
            try:
                self._runner(params.get("pluginConfig") or {})
            except Exception as error:  # noqa: BLE001 - a plugin's configure bug is an answer, not a crash
                await self.send(protocol.error(request_id, protocol.INTERNAL_ERROR,
                                               f"configure failed: {type(error).__name__}: {error}"))
                return True
            await self.send(protocol.result(request_id, {}))
            return True
        operation = protocol.OPERATIONS.get(method)
        if operation is None:
            await self.send(protocol.error(request_id, protocol.METHOD_NOT_FOUND, f"unknown method {method!r}"))
            return True
        task = asyncio.create_task(self._operation(request_id, operation, params))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    async def _operation(self, request_id: Any, operation: Operation, params: Json) -> None:
        try:
            answer = await dispatch(self._runner(), operation, params)
        except PluginCallError as failure:
            await self.send(protocol.error(request_id, protocol.OPERATION_FAILED, failure.message,
                                           {"ErrorCode": str(failure.code), "StatusMessage": failure.message}))
            return
        except (KeyError, TypeError, ValueError) as error:
            await self.send(protocol.error(request_id, protocol.INVALID_PARAMS, f"bad {operation} params: {error}"))
            return
        await self.send(protocol.result(request_id, answer))


async def dispatch(runner: InProcessRunner, operation: Operation, params: Json) -> Json:
    """Runs one operation through the in-process runner (its deadline and exception mapping)."""
    call = protocol.call_of(params)
    if operation is Operation.CREATE:
        return (await runner.create(call, params["label"], params.get("properties") or {})).to_json()
    if operation is Operation.READ:
        return (await runner.read(call, params["nativeId"], params.get("priorProperties"))).to_json()
    if operation is Operation.UPDATE:
        return (await runner.update(call, params["nativeId"], params.get("priorProperties") or {},
                                    params.get("desiredProperties") or {},
                                    list(params.get("patchDocument") or []))).to_json()
    if operation is Operation.DELETE:
        return (await runner.delete(call, params["nativeId"])).to_json()
    if operation is Operation.STATUS:
        return (await runner.status(call, params["requestId"], params.get("nativeId") or "")).to_json()
    filters = {str(k): str(v) for k, v in (params.get("additionalProperties") or {}).items()}
    return (await runner.list(call, int(params.get("pageSize") or 100), params.get("pageToken"), filters)).to_json()


async def _pipes(input_fd: int, output_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=protocol.MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(input_fd, "rb", 0))
    transport, stream_protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                               os.fdopen(output_fd, "wb", 0))
    writer = asyncio.StreamWriter(transport, stream_protocol, None, loop)  # type: ignore[arg-type]
    return reader, writer


async def serve(plugin: Any, namespace: str, version: str, *, name: str | None = None, input_fd: int = 0,
                output_fd: int = 1) -> None:
    """Serves ``plugin`` until ``shutdown`` or until the agent closes stdin."""
    reader, writer = await _pipes(input_fd, output_fd)
    server = _Server(plugin, namespace, writer)
    await server.send(protocol.hello(name or namespace.lower(), version, namespace, os.getpid()))
    try:
        await _answer_requests(reader, server)
    finally:
        server.lines.flush()  # the last answers (``shutdown``'s) before the process exits


async def _answer_requests(reader: asyncio.StreamReader, server: _Server) -> None:
    while True:
        try:
            line = await reader.readline()
        except ValueError:  # a line over the limit: the stream cannot be resynchronised
            log.error("a request exceeded %d bytes; exiting", protocol.MAX_LINE_BYTES)
            return
        if not line:
            return  # the agent is gone
        try:
            message = protocol.decode(line)
        except protocol.ProtocolError as error:
            await server.send(protocol.error(None, protocol.PARSE_ERROR, str(error)))
            continue
        if not await server.handle(message):
            return


def _plugin_class(target: str) -> type:
    if ":" not in target:
        return load_plugin_class(target)
    module_name, _, attribute = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise PluginLoadError(f"cannot load {target}: {error}") from error
    if not inspect.isclass(found):
        raise PluginLoadError(f"{target} is not a class")
    return found


def _version(namespace: str) -> str:
    for entry in entry_points(group=PLUGIN_ENTRY_POINT_GROUP):
        if entry.name.upper() == namespace.upper() and entry.dist is not None:
            return entry.dist.version
    try:
        return distribution_version(f"svc-plugin-{namespace.lower()}")
    except PackageNotFoundError:
        return "0.0.0"


def _claim_stdout() -> int:
    """The protocol's own descriptor (the original stdout); fd 1 becomes a copy of stderr."""
    sys.stdout.flush()
    channel = os.dup(1)
    os.dup2(2, 1)
    return channel


def _configure_logging() -> None:
    level = os.environ.get(LOG_LEVEL_VARIABLE, "INFO").upper()
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level, logging.INFO),
                        format="%(levelname)s %(name)s: %(message)s")


def _serve_then_exit(plugin: Any, namespace: str, version: str, channel: int) -> None:
    code = 0
    try:
        with asyncio.Runner(loop_factory=punctual_loop) as runner:
            runner.run(serve(plugin, namespace, version, output_fd=channel))
    except Exception as error:  # noqa: BLE001 - said on stderr (the agent log) before the hard exit below
        log.error("plugin %s stopped serving: %s: %s", namespace, type(error).__name__, error)
        code = 1
    finally:
        sys.stderr.flush()
    # A plugin thread stuck in a call must not keep the process alive after the agent let go of it.
    os._exit(code)


def run(plugin: Any, namespace: str, version: str = "0.0.0") -> None:
    """Serves ``plugin`` on this process's stdio, then exits (for plugins that ship their own ``__main__``)."""
    channel = _claim_stdout()
    _configure_logging()
    _serve_then_exit(plugin, namespace, version, channel)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m svc.plugins.serve", description=__doc__.splitlines()[0])
    parser.add_argument("plugin", help="the plugin's namespace (its svc.plugins entry point) or module:Class")
    parser.add_argument("--namespace", help="the namespace when the plugin is given as module:Class")
    args = parser.parse_args(argv)
    namespace = args.namespace or (args.plugin if ":" not in args.plugin else "")
    if not namespace:
        parser.error("--namespace is required when the plugin is given as module:Class")
    channel = _claim_stdout()  # before any plugin code runs: its prints must not reach the protocol
    _configure_logging()
    try:
        plugin = _plugin_class(args.plugin)()
    except Exception as error:  # noqa: BLE001 - reported on stderr for the agent log, then exit 1
        print(f"Error: plugin {namespace}: {error}", file=sys.stderr, flush=True)
        os._exit(1)
    _serve_then_exit(plugin, namespace, _version(namespace), channel)


if __name__ == "__main__":
    main()
