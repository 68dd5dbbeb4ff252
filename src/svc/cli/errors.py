"""The one error type the CLI reports: printed as ``Error: <message>`` with exit code 1."""


class CliError(Exception):
    """A failure the user can act on; the message says what to do."""
