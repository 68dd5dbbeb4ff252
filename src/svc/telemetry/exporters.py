"""OTLP exporters for ``agent.oTel.otlp`` (checked by ``endpoint.check_otlp``): protocol, endpoint,
transport security and temporality. TLS is verified against the system's trust store (or
``OTEL_EXPORTER_OTLP_CERTIFICATE``); ``insecure`` only allows plain text.
"""

from __future__ import annotations

from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.metrics import (
    Counter,
    Histogram,
    ObservableCounter,
    ObservableGauge,
    ObservableUpDownCounter,
    UpDownCounter,
)
from opentelemetry.sdk.metrics.export import AggregationTemporality, MetricExporter
from opentelemetry.sdk.trace.export import SpanExporter

from svc.config.model import OtlpConfig
from svc.telemetry.endpoint import signal_url

EXPORT_TIMEOUT_SECONDS = 5.0  # a missing collector must not hold up the agent's stop for long


def _grpc_insecure(config: OtlpConfig) -> bool:
    return config.insecure and not config.endpoint.startswith("https://")


def span_exporter(config: OtlpConfig) -> SpanExporter:
    if config.protocol == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=signal_url(config, "traces"), timeout=EXPORT_TIMEOUT_SECONDS)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

    return GrpcSpanExporter(endpoint=config.endpoint, insecure=_grpc_insecure(config),
                            timeout=EXPORT_TIMEOUT_SECONDS)


def temporality(config: OtlpConfig) -> dict[type, AggregationTemporality]:
    """``delta`` or ``cumulative`` for counters and histograms; up-down counters and gauges stay
    cumulative (a delta of a level means nothing)."""
    chosen = AggregationTemporality.DELTA if config.temporality == "delta" else AggregationTemporality.CUMULATIVE
    return {Counter: chosen, Histogram: chosen, ObservableCounter: chosen,
            UpDownCounter: AggregationTemporality.CUMULATIVE,
            ObservableUpDownCounter: AggregationTemporality.CUMULATIVE,
            ObservableGauge: AggregationTemporality.CUMULATIVE}


def metric_exporter(config: OtlpConfig) -> MetricExporter:
    if config.protocol == "http":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter(endpoint=signal_url(config, "metrics"), timeout=EXPORT_TIMEOUT_SECONDS,
                                  preferred_temporality=temporality(config))
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter

    return GrpcMetricExporter(endpoint=config.endpoint, insecure=_grpc_insecure(config),
                              timeout=EXPORT_TIMEOUT_SECONDS, preferred_temporality=temporality(config))


def log_exporter(config: OtlpConfig) -> LogRecordExporter:
    if config.protocol == "http":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        return OTLPLogExporter(endpoint=signal_url(config, "logs"), timeout=EXPORT_TIMEOUT_SECONDS)
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter

    return GrpcLogExporter(endpoint=config.endpoint, insecure=_grpc_insecure(config), timeout=EXPORT_TIMEOUT_SECONDS)
