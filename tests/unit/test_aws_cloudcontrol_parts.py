"""The pure parts of the AWS plugin's Cloud Control path: the handler-choice table, the patch fitted to Cloud
Control's model, ClientTokens from the agent's tokens, progress events and Cloud Control's error codes."""

from __future__ import annotations

import pkgutil

import pytest
from botocore.exceptions import ClientError
from svc_plugin_aws import handlers
from svc_plugin_aws.cloudcontrol.events import started
from svc_plugin_aws.cloudcontrol.handler import CloudControlHandler, resource_model
from svc_plugin_aws.cloudcontrol.patch import fit_patch
from svc_plugin_aws.cloudcontrol.tokens import client_token
from svc_plugin_aws.errors import code_of
from svc_plugin_aws.handler import RequestFailed, Started
from svc_plugin_aws.routing import FORCE_CLOUD_CONTROL_VARIABLE, NATIVE, Routes, forced_to_cloud_control

from svc.plugins.sdk import ErrorCode, is_recoverable

# -- the handler-choice table ------------------------------------------------------------------------------------


def test_every_native_handler_module_is_in_the_table_once() -> None:
    modules = {module.name for module in pkgutil.iter_modules(handlers.__path__)}
    in_table = {handler.__module__.rsplit(".", 1)[1] for handler in NATIVE.values()}
    assert in_table == modules
    assert len(NATIVE) == 20
    assert all(name == handler.type_name for name, handler in NATIVE.items())


def test_a_type_in_the_table_is_native_and_any_other_goes_through_cloud_control() -> None:
    routes = Routes(frozenset())
    assert isinstance(routes.handler("AWS::S3::Bucket"), NATIVE["AWS::S3::Bucket"])
    assert isinstance(routes.handler("AWS::SQS::Queue"), NATIVE["AWS::SQS::Queue"])
    key = routes.handler("AWS::KMS::Key")
    assert isinstance(key, CloudControlHandler) and key.resource_type == "AWS::KMS::Key"
    assert routes.handler("AWS::KMS::Key") is key  # one handler per type, shared
    assert isinstance(routes.handler("AWS::Lambda::Function"), CloudControlHandler)


def test_the_environment_sends_native_types_through_cloud_control() -> None:
    forced = forced_to_cloud_control({FORCE_CLOUD_CONTROL_VARIABLE: " AWS::SQS::Queue ,AWS::S3::Bucket"})
    assert forced == {"AWS::SQS::Queue", "AWS::S3::Bucket"}
    routes = Routes(forced)
    assert isinstance(routes.handler("AWS::SQS::Queue"), CloudControlHandler)
    assert isinstance(routes.handler("AWS::SNS::Topic"), NATIVE["AWS::SNS::Topic"])
    assert forced_to_cloud_control({FORCE_CLOUD_CONTROL_VARIABLE: "*"}) == set(NATIVE)
    assert forced_to_cloud_control({}) == frozenset()


# -- the patch ---------------------------------------------------------------------------------------------------


def test_the_planners_patch_is_sent_as_it_is_where_it_fits_the_model() -> None:
    current = {"Description": "old", "Tags": [{"Key": "a", "Value": "1"}], "Size": 1}
    ops = [{"op": "replace", "path": "/Description", "value": "new"},
           {"op": "add", "path": "/Tags/1", "value": {"Key": "b", "Value": "2"}},
           {"op": "remove", "path": "/Size"}]
    assert fit_patch(ops, current, {}) == ops


def test_a_replace_of_what_the_model_lacks_is_an_add_and_its_remove_is_dropped() -> None:
    current = {"Name": "n"}  # a write-only Password is never read back
    ops = [{"op": "replace", "path": "/Password", "value": "s3cret"}, {"op": "remove", "path": "/Timeout"}]
    assert fit_patch(ops, current, {"Password": "s3cret"}) == [{"op": "add", "path": "/Password", "value": "s3cret"}]


def test_a_change_below_a_missing_level_adds_that_level_whole_once() -> None:
    desired = {"Config": {"Logging": {"Level": "INFO", "Bucket": "b"}}}
    ops = [{"op": "replace", "path": "/Config/Logging/Level", "value": "INFO"},
           {"op": "add", "path": "/Config/Logging/Bucket", "value": "b"},
           {"op": "remove", "path": "/Config/Logging/Old"}]
    assert fit_patch(ops, {"Config": {}}, desired) == [
        {"op": "add", "path": "/Config/Logging", "value": {"Level": "INFO", "Bucket": "b"}}]
    assert fit_patch(ops, {}, desired) == [{"op": "add", "path": "/Config", "value": desired["Config"]}]


def test_escaped_pointer_tokens_are_found_in_the_model() -> None:
    current = {"Attributes": {"a/b": "1", "c~d": "2"}}
    ops = [{"op": "replace", "path": "/Attributes/a~1b", "value": "3"}, {"op": "remove", "path": "/Attributes/c~0d"}]
    assert fit_patch(ops, current, {}) == ops


# -- tokens, list models, events -----------------------------------------------------------------------------


def test_client_tokens_are_the_agents_token_when_it_fits_and_a_stable_hash_otherwise() -> None:
    assert client_token("2cX-2cY-Create") == "2cX-2cY-Create"
    dotted = client_token("2cX-2cY-Create.2")
    assert dotted == client_token("2cX-2cY-Create.2") != client_token("2cX-2cY-Create.3")
    assert dotted.startswith("svc-") and len(dotted) <= 128 and "." not in dotted
    assert client_token("x" * 129) != client_token("x" * 130)


def test_a_child_types_list_model_carries_the_parents_values() -> None:
    assert resource_model({}) is None
    assert resource_model({"LoadBalancerArn": "arn:lb"}) == '{"LoadBalancerArn": "arn:lb"}'


def test_progress_events_become_requests_to_follow_or_answers() -> None:
    assert started({"OperationStatus": "IN_PROGRESS", "RequestToken": "r1"}) == Started("", "r1")
    assert started({"OperationStatus": "PENDING", "RequestToken": "r1", "Identifier": "id"}) == Started("id", "r1")
    assert started({"OperationStatus": "SUCCESS", "RequestToken": "r1", "Identifier": "a|b"}) == Started("a|b")


def test_a_failed_event_carries_its_code_and_message_with_the_type() -> None:
    with pytest.raises(RequestFailed) as failed:
        started({"OperationStatus": "FAILED", "RequestToken": "r", "TypeName": "AWS::Lambda::Function",
                 "Operation": "CREATE", "ErrorCode": "InvalidRequest", "StatusMessage": "Role is invalid"})
    assert failed.value.code is ErrorCode.INVALID_REQUEST
    assert "AWS::Lambda::Function" in failed.value.message and "Role is invalid" in failed.value.message
    with pytest.raises(RequestFailed) as odd:
        started({"OperationStatus": "FAILED", "ErrorCode": "SomethingNew"})
    assert odd.value.code is ErrorCode.GENERAL_SERVICE_EXCEPTION
    with pytest.raises(RequestFailed):
        started({"OperationStatus": "CANCEL_COMPLETE"})


def _error(code: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                       "CreateResource")


@pytest.mark.parametrize(("code", "expected"), [
    ("ThrottlingException", ErrorCode.THROTTLING),
    ("AlreadyExistsException", ErrorCode.ALREADY_EXISTS),
    ("ResourceNotFoundException", ErrorCode.NOT_FOUND),
    ("InvalidRequestException", ErrorCode.INVALID_REQUEST),
    ("UnsupportedActionException", ErrorCode.INVALID_REQUEST),
    ("TypeNotFoundException", ErrorCode.INVALID_REQUEST),
    ("ClientTokenConflictException", ErrorCode.INVALID_REQUEST),
    ("ConcurrentOperationException", ErrorCode.RESOURCE_CONFLICT),
    ("NotUpdatableException", ErrorCode.NOT_UPDATABLE),
    ("HandlerInternalFailureException", ErrorCode.SERVICE_INTERNAL_ERROR),
    ("InvalidCredentialsException", ErrorCode.INVALID_CREDENTIALS),
])
def test_cloud_control_errors_map_to_the_contracts_codes(code: str, expected: ErrorCode) -> None:
    assert code_of(_error(code)) is expected


def test_what_the_user_must_fix_is_not_retried_and_throttling_is() -> None:
    for code in ("AlreadyExistsException", "InvalidRequestException", "UnsupportedActionException",
                 "TypeNotFoundException"):
        assert not is_recoverable(code_of(_error(code)))
    assert not is_recoverable(code_of(_error("AccessDeniedException", 403)))
    assert is_recoverable(code_of(_error("ThrottlingException")))
