"""Local OTLP collectors for tests: OTLP/HTTP (protobuf bodies) and OTLP/gRPC on loopback ports.

Both keep every request body as received (decompressed), to search for what must never be exported,
and decode it with the ``opentelemetry-proto`` messages to check what must be.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

_REQUESTS: dict[str, tuple[type[Message], type[Message]]] = {
    "traces": (trace_service_pb2.ExportTraceServiceRequest, trace_service_pb2.ExportTraceServiceResponse),
    "metrics": (metrics_service_pb2.ExportMetricsServiceRequest, metrics_service_pb2.ExportMetricsServiceResponse),
    "logs": (logs_service_pb2.ExportLogsServiceRequest, logs_service_pb2.ExportLogsServiceResponse),
}


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` pairs as a dict."""
    return {pair.key: value_of(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@dataclass
class Received:
    """Everything a collector got, by signal (``traces``, ``metrics``, ``logs``)."""

    raw: list[bytes] = field(default_factory=list)
    requests: dict[str, list[Any]] = field(default_factory=lambda: {signal: [] for signal in _REQUESTS})
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, signal: str, body: bytes) -> Message:
        request_type, response_type = _REQUESTS[signal]
        request = request_type.FromString(body)
        with self.lock:
            self.raw.append(body)
            self.requests[signal].append(request)
        return response_type()

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """(resource attributes, span) of every span received."""
        with self.lock:
            return [(attributes(rs.resource.attributes), span) for request in self.requests["traces"]
                    for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]

    def metrics(self) -> dict[str, list[Any]]:
        """Every metric received, by name (one entry per export)."""
        found: dict[str, list[Any]] = {}
        with self.lock:
            for request in self.requests["metrics"]:
                for rm in request.resource_metrics:
                    for sm in rm.scope_metrics:
                        for metric in sm.metrics:
                            found.setdefault(metric.name, []).append(metric)
        return found

    def log_records(self) -> list[tuple[dict[str, Any], Any]]:
        """(resource attributes, log record) of every log record received."""
        with self.lock:
            return [(attributes(rl.resource.attributes), record) for request in self.requests["logs"]
                    for rl in request.resource_logs for sl in rl.scope_logs for record in sl.log_records]

    def wait_for(self, condition: Callable[[Received], bool], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not condition(self):
            if time.monotonic() > deadline:
                raise AssertionError(f"the collector did not receive the expected telemetry in {timeout}s")
            time.sleep(0.1)


class _Handler(BaseHTTPRequestHandler):
    received: Received

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        signal = self.path.rstrip("/").rsplit("/", 1)[-1]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        if not self.path.startswith("/v1/") or signal not in _REQUESTS:
            self.send_error(404)
            return
        if self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_error(415)
            return
        reply = self.received.add(signal, body).SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


class OtlpHttpCollector:
    """``with OtlpHttpCollector() as collector:`` serves OTLP/HTTP at ``collector.endpoint``."""

    def __init__(self) -> None:
        self.received = Received()
        handler = type("Handler", (_Handler,), {"received": self.received})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpHttpCollector:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class OtlpGrpcCollector:
    """``with OtlpGrpcCollector() as collector:`` serves OTLP/gRPC (plain text) at ``collector.endpoint``."""

    def __init__(self) -> None:
        import grpc

        self.received = Received()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        received = self.received

        def servicer(base: type, signal: str) -> Any:
            return type(f"{signal}Servicer", (base,), {
                "Export": lambda self, request, context: received.add(signal, request.SerializeToString())})

        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(
            servicer(trace_service_pb2_grpc.TraceServiceServicer, "traces")(), self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(
            servicer(metrics_service_pb2_grpc.MetricsServiceServicer, "metrics")(), self._server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(
            servicer(logs_service_pb2_grpc.LogsServiceServicer, "logs")(), self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"

    def __enter__(self) -> OtlpGrpcCollector:
        self._server.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.stop(grace=None)


def spans_by_trace(received: Received) -> Iterator[tuple[bytes, list[Any]]]:
    """The spans received, grouped by trace id."""
    traces: dict[bytes, list[Any]] = {}
    for _, span in received.spans():
        traces.setdefault(span.trace_id, []).append(span)
    yield from traces.items()
