"""Running the agent process: start (foreground), stop (PID file)."""

from svc.agent.lifecycle import AgentError, start_agent, stop_agent

__all__ = ["AgentError", "start_agent", "stop_agent"]
