"""Running the agent process: ``lifecycle.start_agent`` (foreground) and ``lifecycle.stop_agent``.

Only the error type is imported here, so that CLI commands which never run the agent do not pay
for importing the HTTP server and the datastore.
"""

from svc.agent.errors import AgentError

__all__ = ["AgentError"]
