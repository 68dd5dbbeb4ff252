"""The ``agent.oTel`` block evaluated by the real Pkl, and what the agent refuses before starting."""

from __future__ import annotations

from datetime import timedelta

import pytest

from svc.agent.errors import AgentError
from svc.agent.lifecycle import check_agent_config
from svc.config import ConfigError, load_config, load_defaults


def test_defaults() -> None:
    otel = load_defaults().agent.o_tel
    assert otel.enabled is False and otel.service_name == "svc-agent"
    assert otel.traces and otel.metrics and otel.logs
    assert otel.metrics_interval == timedelta(seconds=60)
    assert otel.otlp.enabled and otel.otlp.endpoint == "http://localhost:4317"
    assert otel.otlp.protocol == "grpc" and otel.otlp.insecure and otel.otlp.temporality == "delta"
    assert otel.prometheus.enabled


def test_every_field(write_pkl) -> None:
    config = load_config(write_pkl("otel.pkl", """
        amends "svc:/Config.pkl"
        agent {
          oTel {
            enabled = true
            serviceName = "svc-prod"
            traces = false
            logs = false
            metricsInterval = 15.s
            otlp { endpoint = "https://otel.example.com:4318"; protocol = "http"; insecure = false
                   temporality = "cumulative" }
            prometheus { enabled = false }
          }
        }
    """)).agent
    otel = config.o_tel
    assert (otel.enabled, otel.service_name, otel.traces, otel.metrics, otel.logs) == (True, "svc-prod", False, True,
                                                                                        False)
    assert otel.metrics_interval == timedelta(seconds=15)
    assert (otel.otlp.endpoint, otel.otlp.protocol, otel.otlp.insecure, otel.otlp.temporality) == (
        "https://otel.example.com:4318", "http", False, "cumulative")
    assert otel.prometheus.enabled is False
    check_agent_config(config)  # usable as it is


@pytest.mark.parametrize(("body", "expected"), [
    ('protocol = "udp"', 'oTel.otlp.protocol'),
    ('temporality = "monthly"', 'temporality'),
])
def test_bad_values_fail_naming_the_field(write_pkl, body: str, expected: str) -> None:
    path = write_pkl("bad.pkl", f'amends "svc:/Config.pkl"\nagent {{ oTel {{ otlp {{ {body} }} }} }}\n')
    with pytest.raises(ConfigError, match=expected):
        load_config(path)


def test_plain_text_without_insecure_is_refused_before_the_agent_starts(write_pkl) -> None:
    config = load_config(write_pkl("plain.pkl", """
        amends "svc:/Config.pkl"
        agent { oTel { enabled = true; otlp { endpoint = "http://collector:4317"; insecure = false } } }
    """)).agent
    with pytest.raises(AgentError, match="agent.oTel.otlp.insecure is false; use https:// or set insecure = true"):
        check_agent_config(config)


def test_a_disabled_block_is_not_checked(write_pkl) -> None:
    config = load_config(write_pkl("off.pkl", """
        amends "svc:/Config.pkl"
        agent { oTel { otlp { endpoint = "http://collector:4317"; insecure = false } } }
    """)).agent
    check_agent_config(config)
