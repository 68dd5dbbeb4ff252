"""OpenTelemetry export (issue 8): a real agent with the FAKE plugin exports to a local OTLP collector.

One apply of five resources (two holding secrets, one failing with AccessDenied) against an agent whose
``oTel`` block points at an OTLP/HTTP collector in this process; the collector decodes the protobuf
requests. Then: one trace for the command with one span per resource operation, the metrics, the log
records, and neither secret anywhere in the bytes received. A second agent exports over gRPC.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.fake_world import World, fake_world
from support.otlp import OtlpGrpcCollector, OtlpHttpCollector, Received, attributes, spans_by_trace

API_KEY = "otel-api-key-5b1e9c4d"  # FAKE::Storage::Bucket.apiKey (opaque by its type)
ADMIN_PASSWORD = "otel-admin-pw-77d2f0aa"  # FAKE::Compute::Server.adminPassword, as svc.value(…).opaque
NESTED_PASSWORD = "otel-nested-pw-3c9e1b70"  # FAKE::App::Vault database.password: in a sub-resource, a plain string
SECRETS = (API_KEY, ADMIN_PASSWORD, NESTED_PASSWORD)
FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/net/network.pkl"
import "@fake/net/subnet.pkl"
import "@fake/storage/bucket.pkl"
import "@fake/compute/server.pkl"
import "@fake/test/item.pkl"
import "@fake/app/vault.pkl"

local net = new network.Network { label = "net"; cidr = "10.0.0.0/16" }
local sub = new subnet.Subnet { label = "sub"; networkId = net.res.networkId; cidr = "10.0.1.0/24" }

forma {
  new svc.Stack { label = "app" }
  new svc.Target { label = "cloud"; config = new fake.Config { path = "%(cloud)s" } }
  net
  sub
  new bucket.Bucket { label = "vault"; name = "vault-otel"; apiKey = "%(api_key)s" }
  new server.Server { label = "web"; subnetId = sub.res.subnetId; image = "img-1"
                      adminPassword = svc.value("%(password)s").opaque }
  new item.Item { label = "broken"; value = "x" }
  new vault.Vault { label = "creds"; name = "creds"; database { host = "db"; password = "%(nested)s" } }
}
"""
LABELS = {"net", "sub", "vault", "web", "broken", "creds"}


def otel_block(endpoint: str, protocol: str) -> str:
    return (f'oTel {{ enabled = true; serviceName = "svc-under-test"; metricsInterval = 300.ms; '
            f'otlp {{ endpoint = "{endpoint}"; protocol = "{protocol}"; temporality = "cumulative" }} }}')


@dataclass
class Export:
    received: Received
    command: dict[str, Any]
    metrics_page: str
    agent_id: str


def isolated_env(root: Path) -> pytest.MonkeyPatch:
    monkeypatch = pytest.MonkeyPatch()
    for name, value in {"HOME": root / "home", "XDG_DATA_HOME": root / "home" / "data",
                        "XDG_CONFIG_HOME": root / "home" / "config", "SVC_PID_FILE": root / "agent.pid",
                        # Batches leave within 100 ms, so the trace arrives while the agent runs.
                        "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BLRP_SCHEDULE_DELAY": "100"}.items():
        monkeypatch.setenv(name, str(value))
    return monkeypatch


def apply_forma(world: World) -> dict[str, Any]:
    world.cloud.set_knob("fail", {"code": "AccessDenied", "ops": ["create"], "labels": ["broken"]})
    path = world.directory / "main.pkl"
    path.write_text(FORMA % {"cloud": world.cloud_path, "api_key": API_KEY, "password": ADMIN_PASSWORD,
                                 "nested": NESTED_PASSWORD})
    result = world.apply(path)
    assert result.returncode == 1, result.stdout + result.stderr  # "broken" failed, the rest succeeded
    status = world.svc("command", "status", "--output-consumer", "machine")
    return json.loads(status.stdout)["Commands"][0]


def command_span_received(command_id: str) -> Any:
    return lambda received: any(span.name == "command apply" and attributes(span.attributes).get(
        "svc.command.id") == command_id for _, span in received.spans())


def resources_gauge(received: Received) -> dict[tuple[str, bool], int]:
    points = {}
    for metric in received.metrics().get("svc.resources", []):
        for point in metric.gauge.data_points:
            labels = attributes(point.attributes)
            points[(labels["svc.namespace"], labels["svc.managed"])] = point.as_int
    return points


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Export]:
    root = tmp_path_factory.mktemp("otel")
    monkeypatch = isolated_env(root)
    try:
        with OtlpHttpCollector() as collector:
            with fake_world(root, otel_block(collector.endpoint, "http")) as world:
                command = apply_forma(world)
                collector.received.wait_for(command_span_received(command["CommandId"]))
                collector.received.wait_for(lambda r: resources_gauge(r).get(("FAKE", True)) == 5)
                metrics_page = httpx.get(f"{world.agent.url}/metrics").text
                agent_id = httpx.get(f"{world.api}/stats").json()["AgentId"]
            yield Export(collector.received, command, metrics_page, agent_id)  # the agent stopped: all flushed
    finally:
        monkeypatch.undo()


def test_the_command_is_one_trace_with_a_span_per_resource_operation(exported: Export) -> None:
    command_id = exported.command["CommandId"]
    [(_, spans)] = [(trace, spans) for trace, spans in spans_by_trace(exported.received)
                    if any(attributes(s.attributes).get("svc.command.id") == command_id for s in spans)]
    [root] = [span for span in spans if span.name == "command apply"]
    root_attributes = attributes(root.attributes)
    assert root_attributes["svc.command.mode"] == "reconcile"
    assert root_attributes["svc.command.state"] == "Failed" == exported.command["State"]
    assert root_attributes["svc.command.resumed"] is False
    assert not root.parent_span_id
    children = [span for span in spans if span is not root]
    assert all(span.parent_span_id == root.span_id for span in children)
    by_label = {attributes(span.attributes)["svc.resource.label"]: span for span in children}
    assert all(attributes(span.attributes)["svc.command.id"] == command_id for span in children)
    assert len(children) == len(by_label) == len(exported.command["ResourceUpdates"]) == len(LABELS)
    assert set(by_label) == LABELS
    for update in exported.command["ResourceUpdates"]:
        span = by_label[update["ResourceLabel"]]
        found = attributes(span.attributes)
        assert span.name == f"resource {update['Operation']}" == "resource create"
        assert found["svc.resource.type"] == update["ResourceType"]
        assert found["svc.resource.stack"] == "app" and found["svc.namespace"] == "FAKE"
        assert found["svc.outcome"] == update["State"]
    broken = attributes(by_label["broken"].attributes)
    assert broken["svc.outcome"] == "Failed" and broken["svc.error.code"] == "AccessDenied"
    assert "svc.error.code" not in attributes(by_label["vault"].attributes)
    # The subnet's span starts after the network's ended: the trace shows the dependency order.
    assert by_label["sub"].start_time_unix_nano >= by_label["net"].end_time_unix_nano


def test_resource_attributes_name_the_service_and_the_agent(exported: Export) -> None:
    [(resource, _), *_] = exported.received.spans()
    assert resource["service.name"] == "svc-under-test"
    assert resource["service.version"]
    assert resource["service.instance.id"] == exported.agent_id


def test_metrics_count_commands_time_operations_and_count_resources(exported: Export) -> None:
    metrics = exported.received.metrics()
    commands = {(labels["svc.command.name"], labels["svc.command.state"]): point.as_int
                for metric in metrics["svc.commands"] for point in metric.sum.data_points
                for labels in [attributes(point.attributes)]}
    assert commands[("apply", "InProgress")] == 1 and commands[("apply", "Failed")] == 1
    durations = {(labels["svc.resource.type"], labels["svc.operation"], labels["svc.outcome"]): point.count
                 for metric in metrics["svc.resource.operation.duration"] for point in metric.histogram.data_points
                 for labels in [attributes(point.attributes)]}
    assert durations[("FAKE::Net::Network", "create", "Success")] == 1
    assert durations[("FAKE::Test::Item", "create", "Failed")] == 1
    assert sum(durations.values()) >= len(LABELS)
    assert resources_gauge(exported.received)[("FAKE", True)] == 5  # everything but "broken"
    # The same instruments through the Prometheus reader at /metrics.
    assert 'svc_resources{' in exported.metrics_page and 'svc_namespace="FAKE"' in exported.metrics_page
    assert "svc_commands_total{" in exported.metrics_page


def test_log_records_are_exported(exported: Export) -> None:
    records = exported.received.log_records()
    bodies = [record.body.string_value for _, record in records]
    assert any("telemetry: exporting" in body for body in bodies)
    assert all(resource["service.name"] == "svc-under-test" for resource, _ in records)
    assert {record.severity_text for _, record in records} <= {"INFO", "WARN", "ERROR", "FATAL"}


def test_no_secret_is_exported(exported: Export) -> None:
    assert exported.received.raw
    for body in exported.received.raw:
        for secret in SECRETS:
            assert secret.encode() not in body
    assert all(secret not in exported.metrics_page for secret in SECRETS)


def test_grpc_export(tmp_path: Path) -> None:
    monkeypatch = isolated_env(tmp_path)
    try:
        with OtlpGrpcCollector() as collector:
            with fake_world(tmp_path, otel_block(collector.endpoint, "grpc")) as world:
                command = apply_forma(world)
                # The gauge reads the inventory at most every few seconds: wait for a reading after the apply.
                collector.received.wait_for(lambda r: resources_gauge(r).get(("FAKE", True)) == 5)
            received = collector.received
            spans = [span for _, span in received.spans()
                     if attributes(span.attributes).get("svc.command.id") == command["CommandId"]]
            assert sorted(span.name for span in spans) == ["command apply"] + ["resource create"] * len(LABELS)
            assert {"svc.commands", "svc.resource.operation.duration", "svc.resources"} <= set(received.metrics())
            assert received.log_records()
            assert not any(secret.encode() in body for body in received.raw for secret in SECRETS)
    finally:
        monkeypatch.undo()
