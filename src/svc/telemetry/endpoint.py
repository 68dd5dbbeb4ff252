"""Checking ``agent.oTel.otlp`` before the agent starts (cheap: no OpenTelemetry import).

``insecure`` follows the OTLP convention: it allows a plain-text connection. With ``insecure = false``
an ``http://`` endpoint is refused rather than silently sent in the clear.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from svc.config.model import OTelConfig, OtlpConfig

Signal = Literal["traces", "metrics", "logs"]


class TelemetryError(Exception):
    """``agent.oTel`` cannot be used as configured (one line naming the field)."""


def check_otlp(config: OtlpConfig) -> None:
    """Refuses an endpoint the exporters could not use, before anything is started."""
    parts = urlsplit(config.endpoint if "://" in config.endpoint else f"//{config.endpoint}")
    if parts.scheme not in ("", "http", "https") or not parts.hostname:
        raise TelemetryError(f"agent.oTel.otlp.endpoint {config.endpoint!r} is not a URL such as "
                             "http://collector:4318 (http) or http://collector:4317 (grpc)")
    if config.protocol == "http" and not parts.scheme:
        raise TelemetryError(f"agent.oTel.otlp.endpoint {config.endpoint!r} needs http:// or https:// "
                             "with protocol = \"http\"")
    if parts.scheme == "http" and not config.insecure:
        raise TelemetryError(f"agent.oTel.otlp.endpoint {config.endpoint!r} is plain text but "
                             "agent.oTel.otlp.insecure is false; use https:// or set insecure = true")


def signal_url(config: OtlpConfig, signal: Signal) -> str:
    """The OTLP/HTTP URL of one signal: the base endpoint plus ``/v1/<signal>``."""
    return f"{config.endpoint.rstrip('/')}/v1/{signal}"


def telemetry_problem(config: OTelConfig) -> str | None:
    """Why the agent cannot export as configured (one line naming the field), or None."""
    if not (config.enabled and config.otlp.enabled):
        return None
    try:
        check_otlp(config.otlp)
    except TelemetryError as error:
        return str(error)
    return None
