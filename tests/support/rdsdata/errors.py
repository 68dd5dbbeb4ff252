"""Error answers of the RDS Data API, as botocore's rest-json parser expects them.

Shapes and HTTP status codes come from botocore's model ``rds-data/2018-08-01/service-2.json``.
Messages come from AWS's Data API troubleshooting page and from error texts users have quoted in
public bug reports (e.g. "Transaction <id> is not found", "Database returned more than the allowed
response size limit"). Where AWS documents no wording (request too large) the message is ours.

Two error *styles* exist because the service changed: the Aurora Serverless v1 Data API answered
almost everything with ``BadRequestException`` (now marked deprecated in the model); the Data API for
Serverless v2 and provisioned clusters has specific exceptions (``DatabaseErrorException``,
``TransactionNotFoundException``, ...). The agent has to cope with both, so the stand-in can speak both.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ErrorStyle(enum.Enum):
    """Which generation of the service's error vocabulary to answer with."""

    LEGACY = "legacy"  # Serverless v1: BadRequestException for SQL, transaction and secret errors
    CURRENT = "current"  # Serverless v2 / provisioned: the specific exceptions of today's model


class NotReadyKind(enum.Enum):
    """How a database that is not (yet) able to run statements answers."""

    RESUMING = "resuming"  # DatabaseResumingException: auto-paused Serverless cluster waking up
    COMMUNICATIONS = "communications"  # BadRequestException "Communications link failure" (v1 cold start)
    UNAVAILABLE = "unavailable"  # DatabaseUnavailableException (504): writer instance not available


# HTTP status per error code, from the model's ``error.httpStatusCode``.
_STATUS: dict[str, int] = {
    "AccessDeniedException": 403,
    "BadRequestException": 400,
    "DatabaseErrorException": 400,
    "DatabaseNotFoundException": 404,
    "DatabaseResumingException": 400,
    "DatabaseUnavailableException": 504,
    "ForbiddenException": 403,
    "HttpEndpointNotEnabledException": 400,
    "InternalServerErrorException": 500,
    "InvalidResourceStateException": 400,
    "InvalidSecretException": 400,
    "NotFoundException": 404,
    "SecretsErrorException": 400,
    "ServiceUnavailableError": 503,
    "StatementTimeoutException": 400,
    "TransactionNotFoundException": 404,
    "UnsupportedResultException": 400,
    # Not in the rds-data model, but common to every AWS JSON service front end.
    "SerializationException": 400,
    "UnknownOperationException": 404,
}

COMMUNICATIONS_LINK_FAILURE = (
    "Communications link failure\n\nThe last packet sent successfully to the server was 0 milliseconds ago. "
    "The driver has not received any packets from the server."
)


@dataclass
class DataApiError(Exception):
    """An error answer: ``code`` becomes the ``x-amzn-ErrorType`` header, ``message`` the body."""

    code: str
    message: str

    def __post_init__(self) -> None:
        super().__init__(f"{self.code}: {self.message}")

    @property
    def status(self) -> int:
        return _STATUS.get(self.code, 400)

    def body(self) -> dict[str, object]:
        return {"message": self.message}


class Errors:
    """Builds the right error for a situation, in the configured style."""

    def __init__(self, style: ErrorStyle) -> None:
        self.style = style

    def _pick(self, legacy: str, current: str) -> str:
        return legacy if self.style is ErrorStyle.LEGACY else current

    def bad_request(self, message: str) -> DataApiError:
        return DataApiError("BadRequestException", message)

    def database(self, message: str) -> DataApiError:
        """A statement failed in PostgreSQL."""
        return DataApiError(self._pick("BadRequestException", "DatabaseErrorException"), message)

    def transaction_not_found(self, transaction_id: str) -> DataApiError:
        return DataApiError(self._pick("BadRequestException", "TransactionNotFoundException"),
                            f"Transaction {transaction_id} is not found")

    def bad_secret(self, secret_arn: str) -> DataApiError:
        return DataApiError(self._pick("BadRequestException", "SecretsErrorException"),
                            f"Error fetching secret {secret_arn} : Secrets Manager can't find the specified secret.")

    def request_too_large(self, size: int, limit: int) -> DataApiError:
        # AWS documents the limit but not the wording; the status and code match its other validation errors.
        return DataApiError("BadRequestException",
                            f"Request payload size exceeded: {size} bytes is over the limit of {limit} bytes")

    def response_too_large(self, operation: str) -> DataApiError:
        # The model documents UnsupportedResultException ("the size was too large") for ExecuteStatement
        # only; the v1 service (and BatchExecuteStatement) answer BadRequestException with this text.
        code = "BadRequestException"
        if self.style is ErrorStyle.CURRENT and operation == "ExecuteStatement":
            code = "UnsupportedResultException"
        return DataApiError(code, "Database returned more than the allowed response size limit")

    def row_too_large(self, operation: str, size: int, limit: int) -> DataApiError:
        code = "BadRequestException"
        if self.style is ErrorStyle.CURRENT and operation == "ExecuteStatement":
            code = "UnsupportedResultException"
        return DataApiError(code, f"Packet for query is too large ({size} > {limit}). "
                                  "A row of the result set is larger than the Data API allows.")

    def not_ready(self, kind: NotReadyKind, resource_arn: str) -> DataApiError:
        if kind is NotReadyKind.RESUMING:
            return DataApiError("DatabaseResumingException",
                                f"The Aurora DB instance {resource_arn} is resuming after being auto-paused. "
                                "Please wait a few seconds and try again.")
        if kind is NotReadyKind.COMMUNICATIONS:
            return DataApiError("BadRequestException", COMMUNICATIONS_LINK_FAILURE)
        return DataApiError("DatabaseUnavailableException", "The writer instance in the DB cluster isn't available.")

    def unreachable(self) -> DataApiError:
        """PostgreSQL itself cannot be reached (stopped, restarting)."""
        if self.style is ErrorStyle.LEGACY:
            return DataApiError("BadRequestException", COMMUNICATIONS_LINK_FAILURE)
        return DataApiError("DatabaseUnavailableException", "The writer instance in the DB cluster isn't available.")
