"""Starting and stopping telemetry for ``agent.oTel``: providers, batch processors, exporters, hooks.

Disabled (the default), nothing is built and the engine's hooks stay no-ops. Enabled, each signal
(``traces``, ``metrics``, ``logs``) gets its provider with an OTLP exporter (``otlp.enabled``), and
metrics also a Prometheus reader served at ``/metrics`` (``prometheus.enabled``). ``shutdown`` flushes
everything: the agent calls it when it stops, after the engine and before the datastore closes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from opentelemetry.metrics import NoOpMeter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import NoOpTracer

from svc.config.model import AgentConfig
from svc.telemetry import hooks
from svc.telemetry.endpoint import check_otlp
from svc.telemetry.exporters import log_exporter, metric_exporter, span_exporter
from svc.telemetry.instruments import Instruments
from svc.telemetry.logs import OTelLogHandler
from svc.telemetry.redaction import Redactor

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from svc.model.records import DatastoreCounts

log = logging.getLogger("svc.telemetry")
SCOPE = "svc"
SHUTDOWN_SECONDS = 5.0  # the last flush of all signals; svc agent stop waits 10 s before it kills


@dataclass
class Telemetry:
    """What ``start_telemetry`` started; ``shutdown`` flushes and stops it (idempotent)."""

    providers: list[Any] = field(default_factory=list)
    log_handler: logging.Handler | None = None
    prometheus: CollectorRegistry | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.providers)

    def mount(self, app: Starlette) -> None:
        """Serves ``GET /metrics`` (Prometheus text format) when a Prometheus reader runs."""
        if self.prometheus is not None:
            app.add_route("/metrics", self._metrics, methods=["GET"], include_in_schema=False)

    def _metrics(self, _: Request) -> Response:
        # A plain function: Starlette runs it on a worker thread, where the resource gauge may read the datastore.
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
        from starlette.responses import Response

        assert self.prometheus is not None
        return Response(generate_latest(self.prometheus), media_type=CONTENT_TYPE_LATEST)

    def shutdown(self) -> None:
        """Flushes every signal at once, waiting at most ``SHUTDOWN_SECONDS`` in all: an unreachable
        collector must not make ``svc agent stop`` give up and kill the agent."""
        hooks.activate(None)
        if self.log_handler is not None:
            logging.getLogger().removeHandler(self.log_handler)
            self.log_handler = None
        providers, self.providers = self.providers, []
        threads = [threading.Thread(target=_shutdown, args=(provider,), name=type(provider).__name__,
                                    daemon=True) for provider in providers]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + SHUTDOWN_SECONDS
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if late := [thread.name for thread in threads if thread.is_alive()]:
            log.warning("telemetry: %s did not flush within %.0f s; the rest is dropped", ", ".join(late),
                        SHUTDOWN_SECONDS)


def _shutdown(provider: Any) -> None:
    try:
        provider.shutdown()
    except Exception:  # noqa: BLE001 - a collector gone must not stop the agent's shutdown
        log.warning("telemetry: %s did not shut down cleanly", type(provider).__name__, exc_info=True)


def config_secrets(config: AgentConfig) -> list[str]:
    """Secrets of the agent's own config, redacted from exported log records whatever logs them."""
    secrets = [config.datastore.postgres.password]
    if config.auth is not None:
        secrets.extend(user.password for user in config.auth.authorized_users)
    return [secret for secret in secrets if secret]


def start_telemetry(config: AgentConfig, *, agent_id: str, version: str,
                    counts: Callable[[], DatastoreCounts] | None = None) -> Telemetry:
    """Starts what ``config.o_tel`` asks for and turns the engine's hooks on; raises ``TelemetryError``
    for an unusable endpoint. ``counts`` feeds the resource gauge (``Datastore.counts``)."""
    otel = config.o_tel
    if not otel.enabled:
        return Telemetry()
    otlp = otel.otlp.enabled
    if otlp:
        check_otlp(otel.otlp)
    resource = Resource.create({"service.name": otel.service_name, "service.version": version,
                                "service.instance.id": agent_id})
    telemetry = Telemetry()
    redactor = Redactor(config_secrets(config))
    tracer: Any = NoOpTracer()
    if otel.traces and otlp:
        tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter(otel.otlp)))
        telemetry.providers.append(tracer_provider)
        tracer = tracer_provider.get_tracer(SCOPE, version)
    readers: list[MetricReader] = []
    if otel.metrics and otlp:
        readers.append(PeriodicExportingMetricReader(
            metric_exporter(otel.otlp), export_interval_millis=otel.metrics_interval.total_seconds() * 1000))
    if otel.metrics and otel.prometheus.enabled:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry

        telemetry.prometheus = CollectorRegistry()
        readers.append(PrometheusMetricReader(registry=telemetry.prometheus))
    meter: Any = NoOpMeter(SCOPE)
    if readers:
        meter_provider = MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
        telemetry.providers.append(meter_provider)
        meter = meter_provider.get_meter(SCOPE, version)
    if otel.logs and otlp:
        logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter(otel.otlp)))
        telemetry.providers.append(logger_provider)
        telemetry.log_handler = OTelLogHandler(logger_provider, redactor)
        logging.getLogger().addHandler(telemetry.log_handler)
    if telemetry.providers:
        hooks.activate(Instruments(tracer, meter, redactor, counts=counts if readers else None,
                                   started=datetime.now(UTC)))
    signals = [name for name, on in (("traces", otel.traces), ("metrics", otel.metrics), ("logs", otel.logs)) if on]
    log.info("telemetry: exporting %s %s%s", ", ".join(signals) or "nothing",
             f"over OTLP/{otel.otlp.protocol} to {otel.otlp.endpoint}" if otlp else "(OTLP is off)",
             "; Prometheus metrics at /metrics" if telemetry.prometheus is not None else "")
    return telemetry
