"""The AWS plugin's error mapping: AWS's many spellings of one condition become one contract code, so the
agent retries what can succeed later (throttling, conflicts, AWS's own failures) and reports the rest."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, ReadTimeoutError
from svc_plugin_aws.errors import code_of, mapped, plugin_error

from svc.plugins.sdk import ErrorCode, PluginError, is_recoverable


def client_error(code: str, status: int = 400, message: str = "it failed", nested: bool = False) -> ClientError:
    error = {"Code": code, "Message": message}
    response = {"Errors": {"Error": error}, "Error": {"Code": "", "Message": ""}} if nested else {"Error": error}
    return ClientError({**response, "ResponseMetadata": {"HTTPStatusCode": status}}, "DoSomething")


@pytest.mark.parametrize(("code", "status", "expected"), [
    ("Throttling", 400, ErrorCode.THROTTLING),
    ("ThrottlingException", 400, ErrorCode.THROTTLING),
    ("RequestLimitExceeded", 503, ErrorCode.THROTTLING),
    ("TooManyRequestsException", 429, ErrorCode.THROTTLING),
    ("SlowDown", 503, ErrorCode.THROTTLING),
    ("AccessDenied", 403, ErrorCode.ACCESS_DENIED),
    ("UnauthorizedOperation", 403, ErrorCode.ACCESS_DENIED),
    ("AuthFailure", 401, ErrorCode.INVALID_CREDENTIALS),
    ("InvalidClientTokenId", 403, ErrorCode.INVALID_CREDENTIALS),
    ("NoSuchBucket", 404, ErrorCode.NOT_FOUND),
    ("InvalidVpcID.NotFound", 400, ErrorCode.NOT_FOUND),
    ("InvalidSubnetID.NotFound", 400, ErrorCode.NOT_FOUND),
    ("AWS.SimpleQueueService.NonExistentQueue", 400, ErrorCode.NOT_FOUND),
    ("NoSuchEntity", 404, ErrorCode.NOT_FOUND),
    ("BucketAlreadyOwnedByYou", 409, ErrorCode.ALREADY_EXISTS),
    ("InvalidGroup.Duplicate", 400, ErrorCode.ALREADY_EXISTS),
    ("EntityAlreadyExists", 409, ErrorCode.ALREADY_EXISTS),
    ("DependencyViolation", 400, ErrorCode.RESOURCE_CONFLICT),
    ("BucketNotEmpty", 409, ErrorCode.RESOURCE_CONFLICT),
    ("DeleteConflict", 409, ErrorCode.RESOURCE_CONFLICT),
    ("VpcLimitExceeded", 400, ErrorCode.SERVICE_LIMIT_EXCEEDED),
    ("LimitExceededException", 400, ErrorCode.SERVICE_LIMIT_EXCEEDED),
    ("InvalidParameterValue", 400, ErrorCode.INVALID_REQUEST),
    ("MalformedPolicyDocument", 400, ErrorCode.INVALID_REQUEST),
    ("InternalError", 500, ErrorCode.SERVICE_INTERNAL_ERROR),
    ("ServiceUnavailable", 503, ErrorCode.SERVICE_INTERNAL_ERROR),
    ("SomethingNew", 502, ErrorCode.SERVICE_INTERNAL_ERROR),
    ("SomethingNew", 400, ErrorCode.GENERAL_SERVICE_EXCEPTION),
])
def test_codes(code: str, status: int, expected: ErrorCode) -> None:
    assert code_of(client_error(code, status)) is expected


def test_throttling_said_only_in_the_message() -> None:
    assert code_of(client_error("400", 400, "Rate exceeded")) is ErrorCode.THROTTLING


def test_a_code_nested_where_botocore_does_not_look() -> None:
    error = plugin_error(client_error("SignatureDoesNotMatch", 403, "bad signature", nested=True))
    assert error.code is ErrorCode.INVALID_CREDENTIALS
    assert "SignatureDoesNotMatch" in error.message and "DoSomething" in error.message


def test_what_is_retried() -> None:
    retried = {code for code in ErrorCode if is_recoverable(code)}
    assert {ErrorCode.THROTTLING, ErrorCode.RESOURCE_CONFLICT, ErrorCode.SERVICE_INTERNAL_ERROR,
            ErrorCode.NOT_FOUND} <= retried
    assert not {ErrorCode.ACCESS_DENIED, ErrorCode.INVALID_CREDENTIALS, ErrorCode.ALREADY_EXISTS,
                ErrorCode.INVALID_REQUEST, ErrorCode.SERVICE_LIMIT_EXCEEDED} & retried


def test_transport_failures() -> None:
    assert plugin_error(NoCredentialsError()).code is ErrorCode.INVALID_CREDENTIALS
    assert plugin_error(EndpointConnectionError(endpoint_url="http://x")).code is ErrorCode.NETWORK_FAILURE
    assert plugin_error(ReadTimeoutError(endpoint_url="http://x")).code is ErrorCode.SERVICE_TIMEOUT


def test_mapped_raises_plugin_errors_and_lets_others_through() -> None:
    with pytest.raises(PluginError) as raised, mapped():
        raise client_error("NoSuchBucket", 404)
    assert raised.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(KeyError), mapped():
        raise KeyError("a bug stays a bug")
