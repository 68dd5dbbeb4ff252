"""OpenTelemetry export (``agent.oTel``): a trace per command, metrics, and the agent's logs over OTLP.

The engine only calls the ``hooks`` (no-ops until telemetry starts); ``start_telemetry`` imports the
OpenTelemetry SDK only when the config enables it. Attributes carry ids, labels, types and states,
never properties.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from svc.telemetry.endpoint import TelemetryError, telemetry_problem
from svc.telemetry.hooks import traced_command, traced_job, traced_operation

if TYPE_CHECKING:
    from svc.config.model import AgentConfig

__all__ = ["TelemetryError", "TelemetryHandle", "start_telemetry", "telemetry_problem", "traced_command",
           "traced_job", "traced_operation"]


class TelemetryHandle(Protocol):
    def mount(self, app: Any) -> None:
        """Adds ``GET /metrics`` to the app when Prometheus export is on."""

    def shutdown(self) -> None:
        """Flushes and stops every exporter (the agent's last act before closing the datastore)."""


class _Off:
    def mount(self, app: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass


def start_telemetry(config: AgentConfig, *, agent_id: str, version: str,
                    counts: Callable[[], Any] | None = None) -> TelemetryHandle:
    """Starts what ``config.o_tel`` asks for (``setup.start_telemetry``); nothing at all when disabled."""
    if not config.o_tel.enabled:
        return _Off()
    from svc.telemetry.setup import start_telemetry as start

    return start(config, agent_id=agent_id, version=version, counts=counts)
