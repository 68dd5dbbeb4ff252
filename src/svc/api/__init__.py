"""The agent's HTTP API."""

from svc.api.app import API_PREFIX, AgentInfo, create_app

__all__ = ["API_PREFIX", "AgentInfo", "create_app"]
