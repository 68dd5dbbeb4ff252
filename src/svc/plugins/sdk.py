"""The plugin author's contract: six operations, progress results, error codes.

A resource plugin is a class with ``create``, ``read``, ``update``, ``delete``, ``status`` and ``list``
(plain or ``async def``). Plugins are stateless; everything the agent knows (retries, backoff, status
polling, rate limits, deadlines) lives in the agent. Strings of every enum are identical to the
reference's so that results cross any transport unchanged.

Every request and result converts to and from plain JSON (``to_json``/``from_json``): the in-process
runner and the subprocess host (JSON-RPC over stdio) carry exactly the same documents.
"""

from __future__ import annotations

import enum
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

Json = dict[str, Any]


class Status(enum.StrEnum):
    SUCCESS = "Success"
    FAILURE = "Failure"
    IN_PROGRESS = "InProgress"
    PENDING = "Pending"
    CANCELED = "Canceled"


class Operation(enum.StrEnum):
    CREATE = "Create"
    READ = "Read"
    UPDATE = "Update"
    DELETE = "Delete"
    STATUS = "Status"
    LIST = "List"


class ErrorCode(enum.StrEnum):
    NOT_UPDATABLE = "NotUpdatable"
    INVALID_REQUEST = "InvalidRequest"
    ACCESS_DENIED = "AccessDenied"
    UNAUTHORIZED_TAGGING_OPERATION = "UnauthorizedTaggingOperation"
    INVALID_CREDENTIALS = "InvalidCredentials"
    ALREADY_EXISTS = "AlreadyExists"
    NOT_FOUND = "NotFound"
    RESOURCE_CONFLICT = "ResourceConflict"
    THROTTLING = "Throttling"
    SERVICE_LIMIT_EXCEEDED = "ServiceLimitExceeded"
    NOT_STABILIZED = "NotStabilized"
    GENERAL_SERVICE_EXCEPTION = "GeneralServiceException"
    SERVICE_INTERNAL_ERROR = "ServiceInternalError"
    SERVICE_TIMEOUT = "ServiceTimeout"
    NETWORK_FAILURE = "NetworkFailure"
    INTERNAL_FAILURE = "InternalFailure"
    DEPENDENCY_FAILURE = "DependencyFailure"
    UNFORESEEN_ERROR = "UnforeseenError"
    PLUGIN_NOT_FOUND = "PluginNotFound"


RECOVERABLE: frozenset[ErrorCode] = frozenset({
    ErrorCode.THROTTLING, ErrorCode.NOT_STABILIZED, ErrorCode.SERVICE_INTERNAL_ERROR, ErrorCode.SERVICE_TIMEOUT,
    ErrorCode.NETWORK_FAILURE, ErrorCode.INTERNAL_FAILURE, ErrorCode.NOT_FOUND, ErrorCode.RESOURCE_CONFLICT,
})

_THROTTLING_TEXT = re.compile(r"Throttling|Rate exceeded|TooManyRequests|RequestLimitExceeded", re.IGNORECASE)


def looks_like_throttling(message: str) -> bool:
    """Whether an error text is a provider's way of saying "slow down" (botocore and friends)."""
    return bool(_THROTTLING_TEXT.search(message))


def is_recoverable(code: ErrorCode | str | None) -> bool:
    return code is not None and code in RECOVERABLE


class PluginError(Exception):
    """Raise from an operation to fail with a specific code; the message becomes the status message."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = ErrorCode(code)
        self.message = message or str(code)


@dataclass
class Progress:
    """The state of one operation: the reference's ``ProgressResult``."""

    status: Status
    native_id: str = ""
    operation: Operation | None = None
    request_id: str | None = None
    properties: Json | None = None
    error_code: ErrorCode | None = None
    message: str = ""

    @property
    def finished(self) -> bool:
        return self.status in (Status.SUCCESS, Status.FAILURE, Status.CANCELED)

    def to_json(self) -> Json:
        document: Json = {"OperationStatus": str(self.status), "NativeID": self.native_id}
        if self.operation is not None:
            document["Operation"] = str(self.operation)
        if self.request_id:
            document["RequestID"] = self.request_id
        if self.properties is not None:
            document["ResourceProperties"] = self.properties
        if self.error_code is not None:
            document["ErrorCode"] = str(self.error_code)
        if self.message:
            document["StatusMessage"] = self.message
        return document

    @classmethod
    def from_json(cls, document: Json) -> Progress:
        code = document.get("ErrorCode") or None
        operation = document.get("Operation") or None
        return cls(status=Status(document["OperationStatus"]), native_id=document.get("NativeID") or "",
                   operation=Operation(operation) if operation else None, request_id=document.get("RequestID"),
                   properties=document.get("ResourceProperties"),
                   error_code=_code(code), message=document.get("StatusMessage") or "")

    @classmethod
    def failure(cls, code: ErrorCode, message: str, *, native_id: str = "",
                operation: Operation | None = None) -> Progress:
        return cls(Status.FAILURE, native_id=native_id, operation=operation, error_code=code, message=message)


def _code(value: str | None) -> ErrorCode | None:
    if not value:
        return None
    try:
        return ErrorCode(value)
    except ValueError:  # a code this agent does not know: terminal, with the text kept
        return ErrorCode.GENERAL_SERVICE_EXCEPTION


@dataclass
class ReadResult:
    """``properties`` None with ``NOT_FOUND`` means the resource is gone."""

    properties: Json | None = None
    error_code: ErrorCode | None = None
    message: str = ""

    def to_json(self) -> Json:
        document: Json = {}
        if self.properties is not None:
            document["Properties"] = self.properties
        if self.error_code is not None:
            document["ErrorCode"] = str(self.error_code)
        if self.message:
            document["StatusMessage"] = self.message
        return document

    @classmethod
    def from_json(cls, document: Json) -> ReadResult:
        return cls(properties=document.get("Properties"), error_code=_code(document.get("ErrorCode")),
                   message=document.get("StatusMessage") or "")


@dataclass
class ListResult:
    native_ids: list[str]
    next_page_token: str | None = None

    def to_json(self) -> Json:
        document: Json = {"NativeIDs": list(self.native_ids)}
        if self.next_page_token:
            document["NextPageToken"] = self.next_page_token
        return document

    @classmethod
    def from_json(cls, document: Json) -> ListResult:
        return cls(native_ids=list(document.get("NativeIDs") or []), next_page_token=document.get("NextPageToken"))


@dataclass(frozen=True)
class Ctx:
    """Per-call context.

    ``request_token`` is the agent's idempotency key for mutating calls: the agent persists it before the
    call, re-sends it if it cannot know whether a call arrived (a crash), and asks ``status`` about it. A
    plugin that honours it answers a repeated token with the first call's operation instead of acting twice.
    """

    resource_type: str
    target: Json
    plugin_config: Json = field(default_factory=dict)
    deadline: float = 0.0
    request_token: str | None = None
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("svc.plugin"))

    def to_json(self) -> Json:
        return {"resourceType": self.resource_type, "targetConfig": self.target, "requestToken": self.request_token}


class ResourcePlugin(Protocol):
    """What a plugin author writes (methods may also be ``async def``)."""

    def create(self, ctx: Ctx, label: str, properties: Json) -> Progress:
        """A success names the new resource's native id, or returns properties that hold it at the type's
        ``identifier``."""

    def read(self, ctx: Ctx, native_id: str, prior: Json | None) -> ReadResult: ...

    def update(self, ctx: Ctx, native_id: str, prior: Json, desired: Json, patch: list[Json]) -> Progress: ...

    def delete(self, ctx: Ctx, native_id: str) -> Progress:
        """Deleting a resource that is already gone is a success."""

    def status(self, ctx: Ctx, request_id: str, native_id: str) -> Progress:
        """The state of an operation that answered InProgress/Pending, or of a ``ctx.request_token``;
        an unknown request id fails with ``NOT_FOUND``."""

    def list(self, ctx: Ctx, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult: ...
