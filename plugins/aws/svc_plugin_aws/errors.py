"""From botocore's exceptions to the contract's error codes, so the agent retries and reports as designed.

AWS services spell the same condition many ways (``NoSuchBucket``, ``InvalidVpcID.NotFound``,
``ResourceNotFoundException``, …); the mapping goes by the exact code first, then by its shape, then by
the HTTP status.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from svc.plugins.sdk import ErrorCode, PluginError, looks_like_throttling

_EXACT: dict[str, ErrorCode] = {
    # throttling that does not say so in words (the rest is found by ``looks_like_throttling``)
    "SlowDown": ErrorCode.THROTTLING,
    "RequestThrottled": ErrorCode.THROTTLING,
    "ProvisionedThroughputExceededException": ErrorCode.THROTTLING,
    # access
    "AccessDenied": ErrorCode.ACCESS_DENIED,
    "AccessDeniedException": ErrorCode.ACCESS_DENIED,
    "UnauthorizedOperation": ErrorCode.ACCESS_DENIED,
    "AuthorizationError": ErrorCode.ACCESS_DENIED,
    "AuthorizationErrorException": ErrorCode.ACCESS_DENIED,
    "Forbidden": ErrorCode.ACCESS_DENIED,
    "AllAccessDisabled": ErrorCode.ACCESS_DENIED,
    "UnauthorizedTaggingOperation": ErrorCode.UNAUTHORIZED_TAGGING_OPERATION,
    # credentials
    "InvalidClientTokenId": ErrorCode.INVALID_CREDENTIALS,
    "UnrecognizedClientException": ErrorCode.INVALID_CREDENTIALS,
    "InvalidAccessKeyId": ErrorCode.INVALID_CREDENTIALS,
    "SignatureDoesNotMatch": ErrorCode.INVALID_CREDENTIALS,
    "ExpiredToken": ErrorCode.INVALID_CREDENTIALS,
    "ExpiredTokenException": ErrorCode.INVALID_CREDENTIALS,
    "AuthFailure": ErrorCode.INVALID_CREDENTIALS,
    "InvalidToken": ErrorCode.INVALID_CREDENTIALS,
    # not found
    "NoSuchBucket": ErrorCode.NOT_FOUND,
    "NoSuchEntity": ErrorCode.NOT_FOUND,
    "NotFound": ErrorCode.NOT_FOUND,
    "NotFoundException": ErrorCode.NOT_FOUND,
    "ResourceNotFoundException": ErrorCode.NOT_FOUND,
    "AWS.SimpleQueueService.NonExistentQueue": ErrorCode.NOT_FOUND,
    "QueueDoesNotExist": ErrorCode.NOT_FOUND,
    "NoSuchHostedZone": ErrorCode.NOT_FOUND,
    "ClusterNotFoundException": ErrorCode.NOT_FOUND,
    "404": ErrorCode.NOT_FOUND,
    # already exists
    "BucketAlreadyExists": ErrorCode.ALREADY_EXISTS,
    "BucketAlreadyOwnedByYou": ErrorCode.ALREADY_EXISTS,
    "EntityAlreadyExists": ErrorCode.ALREADY_EXISTS,
    "ResourceAlreadyExistsException": ErrorCode.ALREADY_EXISTS,
    "ResourceExistsException": ErrorCode.ALREADY_EXISTS,
    "QueueAlreadyExists": ErrorCode.ALREADY_EXISTS,
    "QueueNameExists": ErrorCode.ALREADY_EXISTS,
    "InvalidGroup.Duplicate": ErrorCode.ALREADY_EXISTS,
    "InvalidPermission.Duplicate": ErrorCode.ALREADY_EXISTS,
    "HostedZoneAlreadyExists": ErrorCode.ALREADY_EXISTS,
    "TableAlreadyExistsException": ErrorCode.ALREADY_EXISTS,
    # conflicts: another change in flight, or a dependency still in place; recoverable
    "DependencyViolation": ErrorCode.RESOURCE_CONFLICT,
    "DeleteConflict": ErrorCode.RESOURCE_CONFLICT,
    "ConcurrentModification": ErrorCode.RESOURCE_CONFLICT,
    "ConcurrentModificationException": ErrorCode.RESOURCE_CONFLICT,
    "OperationAborted": ErrorCode.RESOURCE_CONFLICT,
    "ResourceInUseException": ErrorCode.RESOURCE_CONFLICT,
    "ResourceInUse": ErrorCode.RESOURCE_CONFLICT,
    "ConflictException": ErrorCode.RESOURCE_CONFLICT,
    "InvalidChangeBatch": ErrorCode.INVALID_REQUEST,
    "HostedZoneNotEmpty": ErrorCode.RESOURCE_CONFLICT,
    "PriorRequestNotComplete": ErrorCode.RESOURCE_CONFLICT,
    "BucketNotEmpty": ErrorCode.RESOURCE_CONFLICT,
    "AWS.SimpleQueueService.QueueDeletedRecently": ErrorCode.RESOURCE_CONFLICT,
    "QueueDeletedRecently": ErrorCode.RESOURCE_CONFLICT,
    "IncorrectState": ErrorCode.RESOURCE_CONFLICT,
    "EntityTemporarilyUnmodifiable": ErrorCode.RESOURCE_CONFLICT,  # IAM (part B types from here)
    "ClusterContainsServicesException": ErrorCode.RESOURCE_CONFLICT,  # ECS
    "ClusterContainsTasksException": ErrorCode.RESOURCE_CONFLICT,
    "ClusterContainsContainerInstancesException": ErrorCode.RESOURCE_CONFLICT,
    "UpdateInProgressException": ErrorCode.RESOURCE_CONFLICT,
    "ConflictingDomainExists": ErrorCode.ALREADY_EXISTS,  # Route 53
    "UnmodifiableEntity": ErrorCode.NOT_UPDATABLE,  # IAM: service-linked roles
    "PolicyNotAttachable": ErrorCode.INVALID_REQUEST,
    "PublicZoneVPCAssociation": ErrorCode.INVALID_REQUEST,
    "LastVPCAssociation": ErrorCode.INVALID_REQUEST,
    "NoSuchCloudWatchLogsLogGroup": ErrorCode.INVALID_REQUEST,  # a missing dependency, not the resource itself
    "InsufficientCloudWatchLogsResourcePolicy": ErrorCode.INVALID_REQUEST,
    "PreconditionNotMetException": ErrorCode.INVALID_REQUEST,  # Secrets Manager
    "ServiceFailure": ErrorCode.SERVICE_INTERNAL_ERROR,  # IAM
    "ServerException": ErrorCode.SERVICE_INTERNAL_ERROR,  # ECS
    # limits
    "LimitExceeded": ErrorCode.SERVICE_LIMIT_EXCEEDED,
    "LimitExceededException": ErrorCode.SERVICE_LIMIT_EXCEEDED,
    "TooManyBuckets": ErrorCode.SERVICE_LIMIT_EXCEEDED,
    "ServiceQuotaExceededException": ErrorCode.SERVICE_LIMIT_EXCEEDED,
    "VpcLimitExceeded": ErrorCode.SERVICE_LIMIT_EXCEEDED,
    "RulesPerSecurityGroupLimitExceeded": ErrorCode.SERVICE_LIMIT_EXCEEDED,
    "SecurityGroupLimitExceeded": ErrorCode.SERVICE_LIMIT_EXCEEDED,
    "TooManyHostedZones": ErrorCode.SERVICE_LIMIT_EXCEEDED,
    # bad input
    "ValidationError": ErrorCode.INVALID_REQUEST,
    "ValidationException": ErrorCode.INVALID_REQUEST,
    "InvalidParameterValue": ErrorCode.INVALID_REQUEST,
    "InvalidParameterValueException": ErrorCode.INVALID_REQUEST,
    "InvalidParameterCombination": ErrorCode.INVALID_REQUEST,
    "InvalidParameter": ErrorCode.INVALID_REQUEST,
    "InvalidParameterException": ErrorCode.INVALID_REQUEST,
    "MissingParameter": ErrorCode.INVALID_REQUEST,
    "MalformedPolicyDocument": ErrorCode.INVALID_REQUEST,
    "InvalidInput": ErrorCode.INVALID_REQUEST,
    "InvalidBucketName": ErrorCode.INVALID_REQUEST,
    "InvalidAttributeName": ErrorCode.INVALID_REQUEST,
    "InvalidAttributeValue": ErrorCode.INVALID_REQUEST,
    "InvalidRequest": ErrorCode.INVALID_REQUEST,
    "IllegalLocationConstraintException": ErrorCode.INVALID_REQUEST,
    "InvalidLocationConstraint": ErrorCode.INVALID_REQUEST,
    # the service's own trouble: recoverable
    "InternalError": ErrorCode.SERVICE_INTERNAL_ERROR,
    "InternalFailure": ErrorCode.SERVICE_INTERNAL_ERROR,
    "InternalServerError": ErrorCode.SERVICE_INTERNAL_ERROR,
    "InternalServiceError": ErrorCode.SERVICE_INTERNAL_ERROR,
    "ServiceUnavailable": ErrorCode.SERVICE_INTERNAL_ERROR,
    "ServiceUnavailableException": ErrorCode.SERVICE_INTERNAL_ERROR,
    "Unavailable": ErrorCode.SERVICE_INTERNAL_ERROR,
    "RequestTimeout": ErrorCode.SERVICE_TIMEOUT,
    "RequestTimeoutException": ErrorCode.SERVICE_TIMEOUT,
    # Cloud Control: its exceptions are the handler error codes' names with "Exception"; the shapes above would
    # take TypeNotFound for a missing resource and UnsupportedAction for nothing at all
    "TypeNotFoundException": ErrorCode.INVALID_REQUEST,  # no such registry type: the forma names it wrongly
    "UnsupportedActionException": ErrorCode.INVALID_REQUEST,  # e.g. a type without an update or list handler
    "PrivateTypeException": ErrorCode.INVALID_REQUEST,
    "ClientTokenConflictException": ErrorCode.INVALID_REQUEST,  # the token was used for another request
    "ConcurrentOperationException": ErrorCode.RESOURCE_CONFLICT,
    "ResourceConflictException": ErrorCode.RESOURCE_CONFLICT,
    "NotUpdatableException": ErrorCode.NOT_UPDATABLE,
    "NotStabilizedException": ErrorCode.NOT_STABILIZED,
    "NetworkFailureException": ErrorCode.NETWORK_FAILURE,
    "InvalidCredentialsException": ErrorCode.INVALID_CREDENTIALS,
    "GeneralServiceException": ErrorCode.GENERAL_SERVICE_EXCEPTION,
    "HandlerFailureException": ErrorCode.GENERAL_SERVICE_EXCEPTION,
    "HandlerInternalFailureException": ErrorCode.SERVICE_INTERNAL_ERROR,
    "ServiceInternalErrorException": ErrorCode.SERVICE_INTERNAL_ERROR,
    "RequestTokenNotFoundException": ErrorCode.NOT_FOUND,
}


def _info(error: ClientError) -> dict[str, Any]:
    """The error's code and message; some XML services nest them where botocore does not look."""
    response = error.response if isinstance(error.response, dict) else {}
    info = response.get("Error") or {}
    if not info.get("Code"):
        nested = (response.get("Errors") or {}).get("Error")
        if isinstance(nested, dict) and nested.get("Code"):
            return nested
    return info


def code_of(error: ClientError) -> ErrorCode:
    """The contract's code for one AWS error answer."""
    info = _info(error)
    code = str(info.get("Code") or "")
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    if code in _EXACT:
        return _EXACT[code]
    if looks_like_throttling(code) or looks_like_throttling(str(info.get("Message") or "")) or status == 429:
        return ErrorCode.THROTTLING
    if code.endswith(".NotFound") or code.startswith("NoSuch") or code.endswith("NotFoundException") \
            or code.endswith("NotFound"):
        return ErrorCode.NOT_FOUND
    if code.endswith(".Duplicate") or "AlreadyExists" in code:
        return ErrorCode.ALREADY_EXISTS
    if code.endswith("LimitExceeded") or code.endswith("LimitExceededException"):
        return ErrorCode.SERVICE_LIMIT_EXCEEDED
    if code.startswith("Invalid") or code.startswith("Malformed"):
        return ErrorCode.INVALID_REQUEST
    if status in (401, 403):
        return ErrorCode.ACCESS_DENIED
    if status == 404:
        return ErrorCode.NOT_FOUND
    if status == 409:
        return ErrorCode.RESOURCE_CONFLICT
    if status >= 500:
        return ErrorCode.SERVICE_INTERNAL_ERROR
    return ErrorCode.GENERAL_SERVICE_EXCEPTION


def handler_error_code(code: str | None) -> ErrorCode:
    """A CloudFormation handler error code (a failed Cloud Control request's ``ErrorCode``) as the contract's: they
    are spelled alike; one this plugin does not know is a general service error."""
    try:
        return ErrorCode(code or "")
    except ValueError:
        return ErrorCode.GENERAL_SERVICE_EXCEPTION


def message_of(error: ClientError) -> str:
    info = _info(error)
    operation = getattr(error, "operation_name", "") or "the call"
    return f"{operation}: {info.get('Code') or 'error'}: {info.get('Message') or error}"


def is_not_found(error: ClientError) -> bool:
    return code_of(error) is ErrorCode.NOT_FOUND


def plugin_error(error: BaseException) -> PluginError:
    """Any exception from boto3 as a ``PluginError`` with the right code."""
    if isinstance(error, PluginError):
        return error
    if isinstance(error, ClientError):
        return PluginError(code_of(error), message_of(error))
    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        return PluginError(ErrorCode.INVALID_CREDENTIALS, f"no usable AWS credentials in the standard chain: {error}")
    if isinstance(error, (ConnectTimeoutError, ReadTimeoutError)):
        return PluginError(ErrorCode.SERVICE_TIMEOUT, str(error))
    if isinstance(error, (EndpointConnectionError, ConnectionClosedError)):
        return PluginError(ErrorCode.NETWORK_FAILURE, str(error))
    if isinstance(error, BotoCoreError):
        return PluginError(ErrorCode.INTERNAL_FAILURE, f"{type(error).__name__}: {error}")
    raise error


@contextmanager
def mapped() -> Iterator[None]:
    """Turns boto3's exceptions raised inside into ``PluginError``s."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        raise plugin_error(error) from None
