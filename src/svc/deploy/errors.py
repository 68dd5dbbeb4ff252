"""The one error type of the deployment operations."""


class DeployError(Exception):
    """A deployment operation failed; the message is one line that says what to do."""
