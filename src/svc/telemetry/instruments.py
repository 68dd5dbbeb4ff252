"""What the agent records while telemetry is on: command traces, operation spans, metric instruments.

Names and attributes are the public contract (README "Observability"). Attributes carry ids, labels,
types, states and error codes only: never properties, messages or exception text, which may quote a
secret. Exceptions are recorded by type name.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from svc.model.schema_cache import opaque_fields_of
from svc.plugins.sdk import ErrorCode
from svc.telemetry.redaction import Redactor, opaque_strings

if TYPE_CHECKING:
    from svc.model.records import CommandRecord, DatastoreCounts
    from svc.telemetry.hooks import ObservedChange

log = logging.getLogger("svc.telemetry")
T = TypeVar("T")

COMMANDS = "svc.commands"
OPERATION_DURATION = "svc.resource.operation.duration"
RESOURCES = "svc.resources"
_ERROR_CODES = frozenset(code.value for code in ErrorCode)
# Seconds: cloud operations take from milliseconds (a read) to many minutes (a database cluster).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
                    1800.0, 3600.0)
# The command whose run this is (child tasks inherit it), so that each resource span names it too.
_COMMAND_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("svc_command_id", default=None)
_COUNTS_TTL_SECONDS = 1.0  # a burst of scrapes (or two readers) costs one set of GROUP BY queries


def error_code(state: str, message: str) -> str | None:
    """The plugin error code a failed change's message starts with (``"AccessDenied: …"``), if any."""
    if state not in ("Failed", "Rejected"):
        return None
    head = message.split(":", 1)[0].strip()
    return head if head in _ERROR_CODES else None


def namespace_of(resource_type: str) -> str:
    return resource_type.split("::", 1)[0]


class _CachedCounts:
    """The datastore's resource counts, read at most every few seconds (metric collection runs on the
    exporter's thread, or on a ``/metrics`` scrape)."""

    def __init__(self, read: Callable[[], DatastoreCounts]) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._at = float("-inf")
        self._value: DatastoreCounts | None = None

    def get(self) -> DatastoreCounts | None:
        with self._lock:
            if time.monotonic() - self._at >= _COUNTS_TTL_SECONDS:
                try:
                    self._value = self._read()
                except Exception as error:  # noqa: BLE001 - a datastore outage must not break collection
                    log.debug("resource counts unavailable: %s", type(error).__name__)
                self._at = time.monotonic()
            return self._value


class Instruments:
    def __init__(self, tracer: Tracer, meter: Meter, redactor: Redactor, *,
                 counts: Callable[[], DatastoreCounts] | None, started: datetime) -> None:
        self.tracer = tracer
        self.redactor = redactor
        self._started = started
        self._commands = meter.create_counter(
            COMMANDS, unit="{command}", description="Commands entering a state (InProgress when they start "
                                                    "executing, then their final state), by command and state")
        self._duration = meter.create_histogram(
            OPERATION_DURATION, unit="s", description="Duration of resource operations (plugin calls with "
                                                      "retries and polling), by namespace, type, operation, outcome",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self._namespaces: set[tuple[str, bool]] = set()
        if counts is not None:
            self._counts = _CachedCounts(counts)
            meter.create_observable_gauge(RESOURCES, callbacks=[self._observe_resources], unit="{resource}",
                                          description="Resources in the inventory, by namespace and managed")

    # -- traces ---------------------------------------------------------------------------------------------

    async def command(self, work: Coroutine[Any, Any, str], command_id: str, command: CommandRecord | None) -> str:
        name = command.command if command is not None else "unknown"
        attributes: dict[str, Any] = {"svc.command.id": command_id, "svc.command.name": name,
                                      # A command this process did not submit was recovered after a restart:
                                      # its new trace joins the old one through svc.command.id.
                                      "svc.command.resumed": command is not None and _utc(command.start_ts)
                                      < self._started}
        if command is not None:
            attributes["svc.command.mode"] = command.mode or ""
            attributes["svc.command.source"] = command.source
            if command.client_id:
                attributes["svc.client.id"] = command.client_id
        self._commands.add(1, {"svc.command.name": name, "svc.command.state": "InProgress"})
        _COMMAND_ID.set(command_id)  # this coroutine runs as its own task: the value ends with it
        with self.tracer.start_as_current_span(f"command {name}", kind=SpanKind.INTERNAL, attributes=attributes,
                                               record_exception=False, set_status_on_exception=False) as span:
            state = "Interrupted"  # the agent stopped: a later start resumes it
            try:
                state = await work
                return state
            except asyncio.CancelledError:
                raise
            except Exception as error:
                state = "Error"
                _failed(span, type(error).__name__)
                raise
            finally:
                span.set_attribute("svc.command.state", state)
                if state == "Failed":
                    span.set_status(Status(StatusCode.ERROR, "Failed"))
                if state != "Interrupted":
                    self._commands.add(1, {"svc.command.name": name, "svc.command.state": state})

    async def operation(self, work: Awaitable[T], change: ObservedChange) -> T:
        if change.desired:
            self.redactor.remember(opaque_strings(change.desired, opaque_fields_of(change.schema)))
        namespace = change.namespace or namespace_of(change.type)
        attributes: dict[str, Any] = {
            "svc.resource.type": change.type, "svc.resource.label": change.label,
            "svc.resource.stack": change.stack, "svc.resource.target": change.target,
            "svc.resource.ksuid": change.ksuid, "svc.namespace": namespace, "svc.operation": change.operation,
            "svc.operation.replace": change.group_id is not None,
        }
        if (command_id := _COMMAND_ID.get()) is not None:
            attributes["svc.command.id"] = command_id
        outcome = "Interrupted"
        begun = time.perf_counter()
        with self.tracer.start_as_current_span(f"resource {change.operation}", kind=SpanKind.INTERNAL,
                                               attributes=attributes, record_exception=False,
                                               set_status_on_exception=False) as span:
            try:
                result = await work
                outcome = str(getattr(result, "state", "Success"))
                code = error_code(outcome, str(getattr(result, "message", "") or ""))
                if code is not None:
                    span.set_attribute("svc.error.code", code)
                if outcome in ("Failed", "Rejected"):
                    span.set_status(Status(StatusCode.ERROR, code or outcome))
                return result
            except asyncio.CancelledError:
                raise
            except Exception as error:
                outcome = "Error"
                _failed(span, type(error).__name__)
                raise
            finally:
                span.set_attribute("svc.outcome", outcome)
                self._duration.record(time.perf_counter() - begun, {
                    "svc.namespace": namespace, "svc.resource.type": change.type,
                    "svc.operation": change.operation, "svc.outcome": outcome})

    async def job(self, name: str, work: Coroutine[Any, Any, T]) -> T:
        with self.tracer.start_as_current_span(f"job {name}", kind=SpanKind.INTERNAL,
                                               attributes={"svc.job.name": name}, record_exception=False,
                                               set_status_on_exception=False) as span:
            try:
                result = await work
            except asyncio.CancelledError:
                raise
            except Exception as error:
                _failed(span, type(error).__name__)
                raise
            if isinstance(result, str):  # a background command's id
                span.set_attribute("svc.command.id", result)
            return result

    # -- metrics --------------------------------------------------------------------------------------------

    def _observe_resources(self, _: CallbackOptions) -> Iterable[Observation]:
        counts = self._counts.get()
        if counts is None:
            return []
        totals: dict[tuple[str, bool], int] = {}
        for managed, by_type in ((True, counts.managed_by_type), (False, counts.unmanaged_by_type)):
            for resource_type, count in by_type.items():
                key = (namespace_of(resource_type), managed)
                totals[key] = totals.get(key, 0) + count
        self._namespaces |= set(totals)  # a namespace emptied reports 0 rather than vanishing
        return [Observation(totals.get(key, 0), {"svc.namespace": key[0], "svc.managed": key[1]})
                for key in sorted(self._namespaces)]


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _failed(span: Span, error_type: str) -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, error_type))
