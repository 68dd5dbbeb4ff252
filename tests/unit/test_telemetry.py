"""Telemetry pieces in one process: the hooks' off switch, spans and metrics of the instruments (in-memory
exporters), the log bridge's redaction, exporter selection and endpoint checks."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, ObservableGauge
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from svc.config.model import OtlpConfig
from svc.engine.planner.changeset import ResourceChange
from svc.model.opaque import OpaqueFields
from svc.model.records import CommandRecord, DatastoreCounts
from svc.telemetry import hooks, traced_command, traced_job, traced_operation
from svc.telemetry.endpoint import TelemetryError, check_otlp, signal_url
from svc.telemetry.exporters import metric_exporter, span_exporter, temporality
from svc.telemetry.instruments import Instruments, error_code
from svc.telemetry.logs import OTelLogHandler
from svc.telemetry.redaction import REDACTED, Redactor, opaque_strings

SECRET = "hunter2-but-longer"
SCHEMA = {"Identifier": "$.Name", "Fields": ["Name", "ApiKey"], "Hints": {"ApiKey": {"Opaque": True}}}


@dataclass
class Outcome:
    """What ``Steps.run`` returns, as far as telemetry reads it."""

    state: str
    message: str = ""


def otlp(**overrides: Any) -> OtlpConfig:
    values = {"enabled": True, "endpoint": "http://127.0.0.1:4318", "protocol": "http", "insecure": True,
              "temporality": "delta", **overrides}
    return OtlpConfig(**values)


def change(label: str = "b", operation: str = "create", **extra: Any) -> ResourceChange:
    return ResourceChange(ksuid=f"k-{label}", operation=operation, type="FAKE::Storage::Bucket", label=label,  # type: ignore[arg-type]
                          stack="app", target="cloud", schema=SCHEMA, namespace="FAKE",
                          desired={"Name": label, "ApiKey": SECRET}, **extra)


class Recorded:
    def __init__(self, counts: DatastoreCounts | None = None) -> None:
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[self.metrics])
        self.redactor = Redactor()
        self.instruments = Instruments(tracer_provider.get_tracer("t"), meter_provider.get_meter("t"), self.redactor,
                                       counts=(lambda: counts) if counts else None, started=datetime.now(UTC))

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        data = self.metrics.get_metrics_data()
        return [(dict(point.attributes), point) for rm in data.resource_metrics for sm in rm.scope_metrics
                for metric in sm.metrics if metric.name == name for point in metric.data.data_points]


@pytest.fixture
def recorded() -> Any:
    recorded = Recorded(DatastoreCounts(clients=0, commands={}, command_states={}, stacks=1,
                                        managed_by_type={"FAKE::Net::Network": 2, "FAKE::Test::Item": 1},
                                        unmanaged_by_type={"AWS::S3::Bucket": 5}, targets_by_namespace={}))
    hooks.activate(recorded.instruments)
    yield recorded
    hooks.activate(None)


def test_hooks_hand_the_work_back_untouched_when_off() -> None:
    async def work() -> str:
        return "Success"

    coroutine = work()
    assert traced_command(coroutine, "c1") is coroutine
    assert traced_operation(coroutine, change()) is coroutine
    assert asyncio.run(coroutine) == "Success"


@pytest.mark.parametrize(("start", "resumed"), [(timedelta(0), False), (timedelta(hours=-1), True)])
def test_a_command_is_a_trace_and_each_operation_a_child_span(recorded: Recorded, start: timedelta,
                                                               resumed: bool) -> None:
    async def operate(c: ResourceChange, state: str, message: str = "") -> Outcome:
        return Outcome(state, message)

    async def run() -> str:
        ok = asyncio.create_task(traced_operation(operate(change("a"), "Success"), change("a")))
        bad = asyncio.create_task(traced_operation(operate(change("b"), "Failed", f"AccessDenied: {SECRET}"),
                                                   change("b")))
        await asyncio.gather(ok, bad)
        return "Failed"

    record = CommandRecord(id="c1", command="apply", state="NotStarted", mode="reconcile",
                           start_ts=datetime.now(UTC) + start)
    assert asyncio.run(traced_command(run(), "c1", record)) == "Failed"
    spans = {span.name if span.name.startswith("command") else span.attributes["svc.resource.label"]: span
             for span in recorded.spans.get_finished_spans()}
    root, a, b = spans["command apply"], spans["a"], spans["b"]
    assert root.attributes["svc.command.resumed"] is resumed
    assert dict(root.attributes) | {"svc.command.resumed": False} == {
        "svc.command.id": "c1", "svc.command.name": "apply", "svc.command.resumed": False,
        "svc.command.mode": "reconcile", "svc.command.source": "user", "svc.command.state": "Failed"}
    assert root.status.status_code is StatusCode.ERROR
    assert a.parent.span_id == b.parent.span_id == root.context.span_id
    assert a.context.trace_id == root.context.trace_id
    assert a.attributes["svc.command.id"] == "c1" and a.attributes["svc.outcome"] == "Success"
    assert b.attributes["svc.error.code"] == "AccessDenied" and b.status.description == "AccessDenied"
    assert all(SECRET not in str(value) for span in spans.values() for value in span.attributes.values())
    commands = {(p["svc.command.state"]): point.value for p, point in recorded.points("svc.commands")}
    assert commands == {"InProgress": 1, "Failed": 1}
    durations = {p["svc.outcome"]: point.count for p, point in recorded.points("svc.resource.operation.duration")}
    assert durations == {"Success": 1, "Failed": 1}


def test_an_exception_is_recorded_by_its_type_only(recorded: Recorded) -> None:
    async def explode() -> None:
        raise RuntimeError(f"plugin said {SECRET}")

    with pytest.raises(RuntimeError):
        asyncio.run(traced_operation(explode(), change()))  # type: ignore[arg-type]
    [span] = recorded.spans.get_finished_spans()
    assert span.attributes["error.type"] == "RuntimeError" and span.attributes["svc.outcome"] == "Error"
    assert span.events == () and SECRET not in (span.status.description or "")


def test_an_interrupted_command_ends_its_span_without_counting_an_end_state(recorded: Recorded) -> None:
    async def main() -> None:
        task = asyncio.create_task(traced_command(asyncio.sleep(60), "c2"))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    [span] = recorded.spans.get_finished_spans()
    assert span.attributes["svc.command.state"] == "Interrupted"
    assert {p["svc.command.state"] for p, _ in recorded.points("svc.commands")} == {"InProgress"}


def test_a_background_run_is_its_own_trace(recorded: Recorded) -> None:
    async def synchronize() -> str:
        return "sync-command-id"

    assert asyncio.run(traced_job("synchronization", synchronize())) == "sync-command-id"
    [span] = recorded.spans.get_finished_spans()
    assert span.name == "job synchronization" and span.parent is None
    assert dict(span.attributes) == {"svc.job.name": "synchronization", "svc.command.id": "sync-command-id"}


def test_resources_are_counted_by_namespace(recorded: Recorded) -> None:
    points = {(p["svc.namespace"], p["svc.managed"]): point.value for p, point in recorded.points("svc.resources")}
    assert points == {("FAKE", True): 3, ("AWS", False): 5}


def test_an_operation_remembers_its_secrets_for_log_redaction(recorded: Recorded) -> None:
    async def work() -> None:
        return None

    asyncio.run(traced_operation(work(), change()))
    assert recorded.redactor(f"the key is {SECRET}.") == f"the key is {REDACTED}."


def test_opaque_strings_of_fields_and_envelopes() -> None:
    desired = {"ApiKey": {"$value": "by-field-1"}, "Plain": "visible",
               "Nested": {"Token": {"$value": "by-envelope", "$visibility": "Opaque"}},
               "Hashed": {"$value": "abc123", "$visibility": "Opaque", "$hashed": True}}
    assert sorted(opaque_strings(desired, OpaqueFields.of_paths(["ApiKey"]))) == ["by-envelope", "by-field-1"]


def test_redactor() -> None:
    redactor = Redactor(["db-password", "abc"])  # too short to redact safely: kept
    redactor.remember(["s3cret-one", "s3cret-one-and-more"])
    text = redactor('db-password s3cret-one-and-more s3cret-one abc {"$value": "x\\"y", "k": 1} {\'$value\': \'z\'}')
    assert text == f'{REDACTED} {REDACTED} {REDACTED} abc {{"$value": "{REDACTED}", "k": 1}} {{\'$value\': \'{REDACTED}\'}}'


def test_the_log_bridge_redacts_and_skips_the_exporters_own_logs() -> None:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    handler = OTelLogHandler(provider, Redactor([SECRET]))
    logger = logging.getLogger("svc.test.telemetry")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug("below the handler's level")
        logger.info("connecting with %s", SECRET, extra={"password": SECRET})
        try:
            raise ValueError(SECRET)
        except ValueError:
            logger.exception("failed")
        logging.getLogger("opentelemetry.exporter").addHandler(handler)
        logging.getLogger("opentelemetry.exporter").error("export failed")
    finally:
        logger.removeHandler(handler)
        logging.getLogger("opentelemetry.exporter").removeHandler(handler)
    records = [finished.log_record for finished in exporter.get_finished_logs()]
    assert [record.body for record in records] == [f"connecting with {REDACTED}", "failed"]
    assert [record.severity_text for record in records] == ["INFO", "ERROR"]
    assert records[1].attributes["exception.type"] == "ValueError"
    assert "ValueError: " + REDACTED in records[1].attributes["exception.stacktrace"]
    assert all(SECRET not in str(value) for record in records for value in record.attributes.values())


def test_error_codes_come_only_from_failures() -> None:
    assert error_code("Failed", "Throttling: slow down") == "Throttling"
    assert error_code("Failed", "a reference could not be resolved: x") is None
    assert error_code("Success", "AccessDenied: no") is None


def test_exporters_follow_the_protocol() -> None:
    http = span_exporter(otlp(endpoint="http://127.0.0.1:4318/"))
    assert isinstance(http, HttpSpanExporter) and http._endpoint == "http://127.0.0.1:4318/v1/traces"
    grpc = span_exporter(otlp(protocol="grpc", endpoint="http://127.0.0.1:4317"))
    assert isinstance(grpc, GrpcSpanExporter) and grpc._insecure is True
    assert span_exporter(otlp(protocol="grpc", endpoint="https://collector:4317", insecure=True))._insecure is False
    assert signal_url(otlp(), "logs") == "http://127.0.0.1:4318/v1/logs"
    for exporter in (http, grpc):
        exporter.shutdown()


def test_temporality() -> None:
    delta, cumulative = AggregationTemporality.DELTA, AggregationTemporality.CUMULATIVE
    assert temporality(otlp())[Counter] is delta and temporality(otlp())[Histogram] is delta
    assert temporality(otlp(temporality="cumulative"))[Counter] is cumulative
    assert temporality(otlp())[ObservableGauge] is cumulative
    exporter = metric_exporter(otlp(temporality="cumulative"))
    assert isinstance(exporter, HttpMetricExporter)
    assert exporter._preferred_temporality[Histogram] is cumulative
    exporter.shutdown()


@pytest.mark.parametrize(("overrides", "message"), [
    ({"endpoint": "http://collector:4318", "insecure": False}, "insecure is false"),
    ({"endpoint": "collector:4318"}, 'needs http:// or https:// with protocol = "http"'),
    ({"endpoint": "ftp://collector"}, "is not a URL"),
])
def test_unusable_endpoints_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(TelemetryError, match=message):
        check_otlp(otlp(**overrides))


def test_usable_endpoints() -> None:
    check_otlp(otlp(endpoint="https://collector:4318", insecure=False))
    check_otlp(otlp(protocol="grpc", endpoint="collector:4317"))
