"""Pure mapping logic of the AWS plugin's IAM and data types: policy documents, tags, error codes, rollback."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from botocore.exceptions import ClientError
from svc_plugin_aws.errors import code_of
from svc_plugin_aws.iam import document_object, document_text, send
from svc_plugin_aws.rollback import undone_on_failure
from svc_plugin_aws.tags import listed, retag

from svc.plugins.sdk import ErrorCode

DOCUMENT = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}
COMPACT = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}'


@pytest.mark.parametrize("given", [
    DOCUMENT,  # boto3 answers parsed documents
    json.dumps(DOCUMENT, indent=2),  # the forma's text, any spacing
    urllib.parse.quote(json.dumps(DOCUMENT)),  # IAM's raw answer: URL-encoded
])
def test_policy_documents_read_back_as_compact_json_text(given: object) -> None:
    assert document_text(given) == COMPACT
    assert document_object(given) == DOCUMENT


def test_documents_are_sent_as_given_text_or_compact_json() -> None:
    spaced = json.dumps(DOCUMENT, indent=2)
    assert send(spaced) == spaced
    assert send(DOCUMENT) == COMPACT


def test_tags_for_create_calls_are_sorted_and_never_none() -> None:
    assert listed({"Tags": [{"Key": "b", "Value": "2"}, {"Key": "a", "Value": "1"}]}) == [
        {"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]
    assert listed({}) == []


def test_retag_sets_changed_tags_and_removes_gone_ones_but_never_aws_tags() -> None:
    calls: list[tuple[str, object]] = []
    current = [{"Key": "keep", "Value": "1"}, {"Key": "change", "Value": "old"}, {"Key": "drop", "Value": "x"},
               {"Key": "aws:cloudformation:stack-name", "Value": "theirs"}]
    wanted = [{"Key": "keep", "Value": "1"}, {"Key": "change", "Value": "new"}, {"Key": "add", "Value": "y"}]
    retag(current, wanted, lambda tags: calls.append(("tag", tags)), lambda keys: calls.append(("untag", keys)))
    assert calls == [("tag", [{"Key": "add", "Value": "y"}, {"Key": "change", "Value": "new"}]),
                     ("untag", ["drop"])]
    calls.clear()
    retag(wanted, wanted, lambda tags: calls.append(("tag", tags)), lambda keys: calls.append(("untag", keys)))
    assert calls == []  # nothing to do: no calls (some services refuse empty lists)


def _error(code: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                       "Operation")


@pytest.mark.parametrize(("code", "expected"), [
    ("NoSuchEntity", ErrorCode.NOT_FOUND),  # IAM
    ("EntityAlreadyExists", ErrorCode.ALREADY_EXISTS),
    ("DeleteConflict", ErrorCode.RESOURCE_CONFLICT),
    ("EntityTemporarilyUnmodifiable", ErrorCode.RESOURCE_CONFLICT),
    ("UnmodifiableEntity", ErrorCode.NOT_UPDATABLE),
    ("MalformedPolicyDocument", ErrorCode.INVALID_REQUEST),
    ("LimitExceeded", ErrorCode.SERVICE_LIMIT_EXCEEDED),
    ("ServiceFailure", ErrorCode.SERVICE_INTERNAL_ERROR),
    ("AccessDenied", ErrorCode.ACCESS_DENIED),
    ("ResourceNotFoundException", ErrorCode.NOT_FOUND),  # Secrets Manager, DynamoDB
    ("ResourceExistsException", ErrorCode.ALREADY_EXISTS),
    ("ResourceInUseException", ErrorCode.RESOURCE_CONFLICT),
    ("ClusterNotFoundException", ErrorCode.NOT_FOUND),  # ECS
    ("ClusterContainsServicesException", ErrorCode.RESOURCE_CONFLICT),
    ("ClusterContainsTasksException", ErrorCode.RESOURCE_CONFLICT),
    ("NoSuchHostedZone", ErrorCode.NOT_FOUND),  # Route 53
    ("HostedZoneNotEmpty", ErrorCode.RESOURCE_CONFLICT),
    ("ConflictingDomainExists", ErrorCode.ALREADY_EXISTS),
    ("NoSuchCloudWatchLogsLogGroup", ErrorCode.INVALID_REQUEST),
    ("PriorRequestNotComplete", ErrorCode.RESOURCE_CONFLICT),
])
def test_service_error_codes(code: str, expected: ErrorCode) -> None:
    assert code_of(_error(code)) is expected


def test_a_failed_creation_is_undone_and_the_error_goes_on() -> None:
    undone: list[str] = []
    with pytest.raises(ValueError, match="second call"), undone_on_failure("thing", lambda: undone.append("x")):
        raise ValueError("second call failed")
    assert undone == ["x"]
    with undone_on_failure("thing", lambda: undone.append("y")):
        pass
    assert undone == ["x"]  # nothing undone when the creation went through


def test_a_failing_undo_does_not_hide_the_creation_error(caplog: pytest.LogCaptureFixture) -> None:
    def undo() -> None:
        raise RuntimeError("cannot delete")

    with pytest.raises(ValueError, match="original"), undone_on_failure("role r", undo):
        raise ValueError("original")
    assert "could not delete role r again" in caplog.text
