"""Cloud Control API error answers, as botocore's JSON-protocol parser reads them.

An AWS JSON 1.0 error is an HTTP 400 (500 for the service's own faults) whose body names the exception in
``__type`` (``com.amazonaws.cloudcontrolapi#ThrottlingException``; botocore keeps the part after ``#``) and
carries ``Message``. The exception names are the ``exception`` shapes of botocore's
``cloudcontrol/2021-09-30/service-2.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

_NAMESPACE = "com.amazonaws.cloudcontrolapi"
_SERVER_FAULTS = frozenset({"ServiceInternalErrorException", "HandlerInternalFailureException"})

# The exceptions of the model, for the control API to check an injected failure against.
EXCEPTIONS = frozenset({
    "AlreadyExistsException", "ClientTokenConflictException", "ConcurrentModificationException",
    "ConcurrentOperationException", "GeneralServiceException", "HandlerFailureException",
    "HandlerInternalFailureException", "InvalidCredentialsException", "InvalidRequestException",
    "NetworkFailureException", "NotStabilizedException", "NotUpdatableException", "PrivateTypeException",
    "RequestTokenNotFoundException", "ResourceConflictException", "ResourceNotFoundException",
    "ServiceInternalErrorException", "ServiceLimitExceededException", "ThrottlingException",
    "TypeNotFoundException", "UnsupportedActionException",
})

# A failed request's ErrorCode (the model's HandlerErrorCode enum).
HANDLER_ERROR_CODES = frozenset({
    "NotUpdatable", "InvalidRequest", "AccessDenied", "UnauthorizedTaggingOperation", "InvalidCredentials",
    "AlreadyExists", "NotFound", "ResourceConflict", "Throttling", "ServiceLimitExceeded", "NotStabilized",
    "GeneralServiceException", "ServiceInternalError", "ServiceTimeout", "NetworkFailure", "InternalFailure",
})


@dataclass
class CloudControlError(Exception):
    """An error answer of the API: ``code`` is the exception's name."""

    code: str
    message: str

    def __post_init__(self) -> None:
        super().__init__(f"{self.code}: {self.message}")

    @property
    def status(self) -> int:
        return 500 if self.code in _SERVER_FAULTS else 400

    def body(self) -> dict[str, str]:
        return {"__type": f"{_NAMESPACE}#{self.code}", "Message": self.message}


def invalid_request(message: str) -> CloudControlError:
    return CloudControlError("InvalidRequestException", message)


def type_not_found(type_name: str) -> CloudControlError:
    return CloudControlError("TypeNotFoundException",
                             f"The type '{type_name}' cannot be found in the CloudFormation registry.")


def unsupported_action(type_name: str, action: str) -> CloudControlError:
    return CloudControlError("UnsupportedActionException",
                             f"Resource type {type_name} does not support {action} action")


def not_found(type_name: str, identifier: str) -> CloudControlError:
    return CloudControlError("ResourceNotFoundException",
                             f"{type_name} Handler returned status FAILED: Resource of type '{type_name}' with "
                             f"identifier '{identifier}' was not found. (HandlerErrorCode: NotFound)")
