"""One call to the RDS Data API: the fixed request fields, the size guard, "not ready" retries, error mapping.

Retrying is limited to answers that say the statement did not run (the database is resuming or its
writer is unavailable, the request was throttled, or no connection could be opened): repeating those is
safe even for writes. A call that failed half-way (the connection dropped after sending) is not repeated,
because a write may have happened.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
)

from svc.datastore.dataapi_errors import (
    AccessError,
    Error,
    InterfaceError,
    NotReadyError,
    OperationalError,
    ProgrammingError,
    RequestTooLargeError,
    from_service,
    is_not_ready,
)
from svc.datastore.dataapi_values import body_bytes

log = logging.getLogger("svc.datastore")

MIB = 1_048_576
# The service counts the HTTP request line and headers against the request cap; botocore's (signature,
# user agent, invocation id…) take about 1 KiB. Reserving 4 KiB keeps every request clear of it.
HEADER_ALLOWANCE = 4096
CANNOT_CONNECT = "cannot-connect"  # NotReadyError.code when the endpoint never answered
_NO_DATABASE = frozenset({"commit_transaction", "rollback_transaction"})


@dataclass(frozen=True)
class Limits:
    """The service's caps (AWS documents 1 MiB per request and response, 64 KB per result row)."""

    max_request_bytes: int = MIB
    max_response_bytes: int = MIB
    max_row_bytes: int = 64_000
    max_records: int = 1000

    @property
    def request_budget(self) -> int:
        """Bytes a request body may take."""
        return self.max_request_bytes - HEADER_ALLOWANCE


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait for a database that is not ready (an auto-paused cluster resumes in ~15–30 s)."""

    deadline_seconds: float = 60.0
    first_delay: float = 0.5
    max_delay: float = 8.0


class Transport:
    def __init__(self, client: Any, *, resource_arn: str, secret_arn: str, database: str,
                 retry: RetryPolicy | None = None, limits: Limits | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.resource_arn = resource_arn
        self.secret_arn = secret_arn
        self.database = database
        self.retry = retry or RetryPolicy()
        self.limits = limits or Limits()
        self._sleep = sleep
        # Retries are under way for a database that is not ready: logged when the first starts, not at each one
        # of every call (a resuming cluster is retried by every call in flight, for up to the deadline each).
        self._waiting = False

    def base(self, *, with_database: bool = True) -> dict[str, Any]:
        """The fields every request carries (Commit/RollbackTransaction take no database)."""
        body = {"resourceArn": self.resource_arn, "secretArn": self.secret_arn}
        if self.database and with_database:
            body["database"] = self.database
        return body

    def call(self, operation: str, **request: Any) -> dict[str, Any]:
        """Runs ``operation`` (``execute_statement``, ``begin_transaction``, …) and returns its answer."""
        body = self.base(with_database=operation not in _NO_DATABASE) | request
        size = body_bytes(body)
        if size > self.limits.request_budget:
            # Callers split and check before; this guard keeps any path from sending an oversized request.
            raise RequestTooLargeError(f"a {size:,}-byte request is over the Data API's "
                                       f"{self.limits.max_request_bytes:,}-byte limit")
        method = getattr(self.client, operation)
        started = time.monotonic()
        delay = self.retry.first_delay
        attempts = 0
        while True:
            attempts += 1
            try:
                answer = method(**body)
            except ClientError as error:
                info = error.response.get("Error", {})
                code, message = str(info.get("Code", "Unknown")), str(info.get("Message", ""))
                if not is_not_ready(code, message):
                    raise from_service(code, message) from None
                reason = f"{code}: {_one_line(message)}"
            except (EndpointConnectionError, ConnectTimeoutError) as error:
                code, reason = CANNOT_CONNECT, f"cannot connect to the Data API endpoint ({type(error).__name__})"
            except (NoCredentialsError, PartialCredentialsError) as error:
                raise AccessError(f"no usable AWS credentials in the standard chain ({error})", setting=None) from None
            except NoRegionError:
                raise AccessError("no AWS region", setting="region") from None
            except ParamValidationError as error:
                raise ProgrammingError(f"invalid Data API request: {_one_line(str(error))}") from None
            except BotoCoreError as error:
                # The connection failed after the request went out: it may have run, so it is not repeated.
                raise OperationalError(f"the Data API call failed: {_one_line(str(error))}") from None
            else:
                if self._waiting:
                    self._waiting = False
                    log.info("Data API: the database answers again")
                return answer
            waited = time.monotonic() - started
            if waited + delay > self.retry.deadline_seconds:
                raise NotReadyError(f"no answer after {attempts} attempts over {waited:.0f} s (last: {reason})",
                                    code=code) from None
            if self._waiting:
                log.debug("Data API: database not ready (%s); retrying in %.1f s", reason, delay)
            else:
                self._waiting = True
                log.warning("Data API: database not ready (%s); calls retry for up to %.0f s each until it is",
                            reason, self.retry.deadline_seconds)
            self._sleep(delay)
            delay = min(delay * 2, self.retry.max_delay)


def _one_line(text: str) -> str:
    return " ".join(text.split())


__all__ = ["HEADER_ALLOWANCE", "MIB", "Error", "InterfaceError", "Limits", "RetryPolicy", "Transport"]
