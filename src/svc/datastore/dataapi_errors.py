"""PEP 249 exceptions of the Data API driver, and the mapping of the service's answers onto them.

The service has two vocabularies: the Serverless v1 Data API answered nearly everything with
``BadRequestException`` (the PostgreSQL error, the missing transaction, the secret problem all in its
message); today's Data API has specific exceptions (``DatabaseErrorException``,
``TransactionNotFoundException``, ``SecretsErrorException``, …). Both map onto the same classes here, so
SQLAlchemy (and our datastore's error translation) see what a PostgreSQL driver would raise:
``IntegrityError`` for constraint violations, ``OperationalError`` with ``sqlstate`` 40001/40P01 for the
conflicts a writer retries, ``OperationalError`` for "not reachable / not ready".
"""

from __future__ import annotations

import re


class Warning(Exception):  # noqa: A001 (PEP 249 name)
    pass


class Error(Exception):
    """Base of the driver's errors. ``code`` is the service's error code when it answered with one."""

    def __init__(self, message: str, *, code: str | None = None, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.sqlstate = sqlstate


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


class NotReadyError(OperationalError):
    """The database did not become ready (resuming, writer unavailable) within the retry budget."""


class TransactionLostError(OperationalError):
    """The service no longer knows the transaction (it failed, timed out, or was ended)."""


class AccessError(ProgrammingError):
    """The service refused the caller or its settings: secret, permissions, cluster, database, endpoint.
    ``setting`` is the config field (``clusterArn``, ``secretArn``, ``database``, …) to look at, if any."""

    def __init__(self, message: str, *, setting: str | None, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.setting = setting


class RequestTooLargeError(DataError):
    """A single statement (or one row of a batch) is larger than the service accepts in one request."""


# Answers that mean "the statement did not run because the database is not ready yet": retried.
NOT_READY_CODES = frozenset({"DatabaseResumingException", "DatabaseUnavailableException", "ServiceUnavailableError",
                             "ThrottlingException", "TooManyRequestsException"})
_NOT_READY_WORDS = ("communications link failure", "is resuming after being auto-paused",
                    "database is not ready", "the database is starting")

_SQLSTATE = re.compile(r"SQLState:\s*([0-9A-Z]{5})")
_SECRET_WORDS = ("secret", "secrets manager")
_AUTH_WORDS = ("password authentication failed", "no password supplied")


def is_not_ready(code: str, message: str) -> bool:
    lowered = message.lower()
    return code in NOT_READY_CODES or (code in ("BadRequestException", "DatabaseErrorException")
                                       and any(word in lowered for word in _NOT_READY_WORDS))


def _first_line(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[0] if lines else message.strip()


def from_service(code: str, message: str) -> Error:
    """The driver exception for an error answer of the service (any style)."""
    line = _first_line(message)
    lowered = message.lower()
    if code == "TransactionNotFoundException" or ("transaction" in lowered and "not found" in lowered
                                                  and code == "BadRequestException"):
        return TransactionLostError(f"the Data API transaction ended early: {line}", code=code)
    if code in ("SecretsErrorException", "InvalidSecretException") or (
            code == "BadRequestException" and any(word in lowered for word in _SECRET_WORDS)):
        return AccessError(f"the credentials secret cannot be used: {line}", setting="secretArn", code=code)
    if any(word in lowered for word in _AUTH_WORDS):
        return AccessError(f"the database refused the credentials in the secret: {line}", setting="secretArn",
                           code=code)
    if code == "HttpEndpointNotEnabledException":
        return AccessError(f"the Data API is not enabled on the cluster: {line}", setting="clusterArn", code=code)
    if code == "DatabaseNotFoundException" or re.search(r'database "[^"]*" does not exist', message):
        return AccessError(f"the database does not exist: {line}", setting="database", code=code)
    if code in ("AccessDeniedException", "ForbiddenException", "UnrecognizedClientException",
                "InvalidSignatureException", "ExpiredTokenException"):
        return AccessError(f"AWS refused the request ({code}): {line}", setting="clusterArn", code=code)
    if code in ("NotFoundException", "InvalidResourceStateException"):
        return AccessError(f"the cluster cannot be used ({code}): {line}", setting="clusterArn", code=code)
    if code == "StatementTimeoutException":
        return OperationalError(f"the statement timed out: {line}", code=code)
    if code == "UnsupportedResultException" or "response size limit" in lowered or "packet for query" in lowered:
        return DatabaseError(f"the Data API refused the result as too large: {line}", code=code)
    if "payload size exceeded" in lowered:
        return RequestTooLargeError(f"the Data API refused the request as too large: {line}", code=code)
    if code in ("DatabaseErrorException", "BadRequestException"):
        return _sql_error(code, message, line)
    return OperationalError(f"Data API error {code}: {line}", code=code)


def _sql_error(code: str, message: str, line: str) -> Error:
    """A PostgreSQL error relayed by the service; its SQLSTATE picks the class, as psycopg's would."""
    match = _SQLSTATE.search(message)
    sqlstate = match.group(1) if match else None
    # The relayed text looks like "ERROR: duplicate key …\n  Detail: …; SQLState: 23505": keep the first line.
    text = re.sub(r";\s*SQLState:\s*\S+$", "", line)
    cls: type[Error] = DatabaseError
    if sqlstate is not None:
        if sqlstate.startswith("23"):
            cls = IntegrityError
        elif sqlstate in ("40001", "40P01", "25P03") or sqlstate.startswith(("08", "53", "57")):
            # 25P03: the server ended a session left idle in its transaction (a fenced write's timeout, see
            # ``write_fence``), which rolled the transaction back: transient, as a lost connection is.
            cls = OperationalError
        elif sqlstate.startswith("42"):
            cls = ProgrammingError
        elif sqlstate.startswith("22"):
            cls = DataError
        elif sqlstate.startswith("XX"):
            cls = InternalError
    return cls(text, code=code, sqlstate=sqlstate)
