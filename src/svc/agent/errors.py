"""The agent's own error type, importable without loading the server stack."""


class AgentError(Exception):
    """The agent cannot start or stop; the message says why and what to do."""
