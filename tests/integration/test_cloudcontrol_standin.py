"""The Cloud Control stand-in (tests/support/cloudcontrol) through boto3's own ``cloudcontrol`` client: the
protocol details the AWS plugin relies on (request tokens and polling, ClientToken idempotency, errors as
botocore raises them, paging, child types listed per parent) and the control API's fault injection."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from support.cloudcontrol.client import StandIn

ROLE = "AWS::IAM::Role"
POLICY = {"Version": "2012-10-17", "Statement": []}


def create(client: Any, type_name: str, properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return client.create_resource(TypeName=type_name, DesiredState=json.dumps(properties), **extra)["ProgressEvent"]


def wait(client: Any, token: str, polls: int = 10) -> dict[str, Any]:
    for _ in range(polls):
        event = client.get_resource_request_status(RequestToken=token)["ProgressEvent"]
        if event["OperationStatus"] not in ("PENDING", "IN_PROGRESS"):
            return event
    raise AssertionError(f"request {token} still in progress after {polls} polls")


def error_code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return error.value.response["Error"]["Code"]


def test_a_create_is_in_progress_for_the_set_polls_then_succeeds_with_read_only_values(cloudcontrol: StandIn):
    cloudcontrol.set_timing(polls=2)
    client = cloudcontrol.client()
    event = create(client, ROLE, {"RoleName": "app", "AssumeRolePolicyDocument": POLICY})
    assert (event["Operation"], event["OperationStatus"], event["Identifier"]) == ("CREATE", "IN_PROGRESS", "app")
    statuses = [client.get_resource_request_status(RequestToken=event["RequestToken"])["ProgressEvent"]
                for _ in range(3)]
    assert [status["OperationStatus"] for status in statuses] == ["IN_PROGRESS", "IN_PROGRESS", "SUCCESS"]
    with pytest.raises(ClientError) as error:  # nothing exists before the request succeeded
        cloudcontrol.client().get_resource(TypeName="AWS::IAM::Role", Identifier="missing")
    assert error_code(error) == "ResourceNotFoundException"
    model = json.loads(client.get_resource(TypeName=ROLE, Identifier="app")["ResourceDescription"]["Properties"])
    assert model["Arn"] == "arn:aws:iam::123456789012:role/app"  # IAM is global: its ARNs name no region
    assert model["RoleId"] and model["AssumeRolePolicyDocument"] == POLICY
    assert json.loads(statuses[-1]["ResourceModel"]) == model


def test_an_optional_name_identifier_left_out_is_made_up(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    first = wait(client, create(client, ROLE, {"AssumeRolePolicyDocument": POLICY})["RequestToken"])
    second = wait(client, create(client, ROLE, {"AssumeRolePolicyDocument": POLICY})["RequestToken"])
    assert first["OperationStatus"] == second["OperationStatus"] == "SUCCESS"
    assert first["Identifier"] != second["Identifier"]


def test_time_based_timing_completes_without_polls(cloudcontrol: StandIn):
    cloudcontrol.set_timing(polls=0, milliseconds=0)
    client = cloudcontrol.client()
    create(client, ROLE, {"RoleName": "quick", "AssumeRolePolicyDocument": POLICY})
    assert client.get_resource(TypeName=ROLE, Identifier="quick")["ResourceDescription"]["Identifier"] == "quick"


def test_a_request_stays_in_progress_until_its_milliseconds_are_up(cloudcontrol: StandIn):
    cloudcontrol.set_timing(polls=0, milliseconds=600_000)
    client = cloudcontrol.client()
    event = create(client, ROLE, {"RoleName": "slow", "AssumeRolePolicyDocument": POLICY})
    for _ in range(3):
        assert client.get_resource_request_status(RequestToken=event["RequestToken"])["ProgressEvent"][
            "OperationStatus"] == "IN_PROGRESS"
    cloudcontrol.set_timing(polls=0, milliseconds=0)  # its time is up: the next call of any kind sees it done
    assert client.get_resource(TypeName=ROLE, Identifier="slow")["ResourceDescription"]["Identifier"] == "slow"


def test_delete_then_get_is_not_found_and_a_second_delete_fails_not_found(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    wait(client, create(client, ROLE, {"RoleName": "gone", "AssumeRolePolicyDocument": POLICY})["RequestToken"])
    deleted = wait(client, client.delete_resource(TypeName=ROLE, Identifier="gone")["ProgressEvent"]["RequestToken"])
    assert (deleted["Operation"], deleted["OperationStatus"]) == ("DELETE", "SUCCESS")
    with pytest.raises(ClientError) as error:
        client.get_resource(TypeName=ROLE, Identifier="gone")
    assert error_code(error) == "ResourceNotFoundException"
    again = wait(client, client.delete_resource(TypeName=ROLE, Identifier="gone")["ProgressEvent"]["RequestToken"])
    assert (again["OperationStatus"], again["ErrorCode"]) == ("FAILED", "NotFound")


def test_list_pages_with_next_token(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    for index in range(5):
        wait(client, create(client, ROLE, {"RoleName": f"r{index}", "AssumeRolePolicyDocument": POLICY})
             ["RequestToken"])
    first = client.list_resources(TypeName=ROLE, MaxResults=2)
    assert [d["Identifier"] for d in first["ResourceDescriptions"]] == ["r0", "r1"]
    pages = client.get_paginator("list_resources").paginate(TypeName=ROLE, PaginationConfig={"PageSize": 2})
    assert [d["Identifier"] for page in pages for d in page["ResourceDescriptions"]] == [f"r{i}" for i in range(5)]


# -- idempotency and concurrency ------------------------------------------------------------------------------------

def test_the_same_client_token_returns_the_same_request_and_never_a_second_resource(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    desired = {"AssumeRolePolicyDocument": POLICY}  # no RoleName: a second create would make a second role
    first = create(client, ROLE, desired, ClientToken="crash-safe-1")
    retried = create(client, ROLE, desired, ClientToken="crash-safe-1")
    assert retried["RequestToken"] == first["RequestToken"]
    wait(client, first["RequestToken"])
    after_success = create(client, ROLE, desired, ClientToken="crash-safe-1")
    assert (after_success["RequestToken"], after_success["OperationStatus"]) == (first["RequestToken"], "SUCCESS")
    assert len(cloudcontrol.state()["resources"][ROLE]) == 1
    assert client.list_resources(TypeName=ROLE)["ResourceDescriptions"][0]["Identifier"] == first["Identifier"]


def test_a_client_token_reused_for_another_request_conflicts(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    create(client, ROLE, {"RoleName": "one", "AssumeRolePolicyDocument": POLICY}, ClientToken="token-a")
    with pytest.raises(ClientError) as error:
        create(client, ROLE, {"RoleName": "two", "AssumeRolePolicyDocument": POLICY}, ClientToken="token-a")
    assert error_code(error) == "ClientTokenConflictException"


def test_a_duplicate_identifier_fails_already_exists(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    wait(client, create(client, ROLE, {"RoleName": "taken", "AssumeRolePolicyDocument": POLICY})["RequestToken"])
    second = wait(client, create(client, ROLE, {"RoleName": "taken", "AssumeRolePolicyDocument": POLICY})
                  ["RequestToken"])
    assert (second["OperationStatus"], second["ErrorCode"]) == ("FAILED", "AlreadyExists")
    assert "taken" in second["StatusMessage"]


def test_a_second_request_on_a_resource_with_one_in_progress_is_refused(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    wait(client, create(client, ROLE, {"RoleName": "busy", "AssumeRolePolicyDocument": POLICY})["RequestToken"])
    patch = json.dumps([{"op": "add", "path": "/Description", "value": "first"}])
    client.update_resource(TypeName=ROLE, Identifier="busy", PatchDocument=patch)
    with pytest.raises(ClientError) as error:
        client.delete_resource(TypeName=ROLE, Identifier="busy")
    assert error_code(error) == "ConcurrentOperationException"


def test_a_cancelled_request_takes_no_effect(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    event = create(client, ROLE, {"RoleName": "never", "AssumeRolePolicyDocument": POLICY})
    cancelled = client.cancel_resource_request(RequestToken=event["RequestToken"])["ProgressEvent"]
    assert cancelled["OperationStatus"] == "CANCEL_IN_PROGRESS"
    assert wait(client, event["RequestToken"])["OperationStatus"] == "CANCEL_COMPLETE"
    with pytest.raises(ClientError) as error:
        client.get_resource(TypeName=ROLE, Identifier="never")
    assert error_code(error) == "ResourceNotFoundException"
    with pytest.raises(ClientError) as error:
        client.cancel_resource_request(RequestToken=event["RequestToken"])
    assert error_code(error) == "ConcurrentModificationException"


def test_requests_are_listed_by_operation_and_status_and_unknown_tokens_are_not_found(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    done = wait(client, create(client, ROLE, {"RoleName": "a", "AssumeRolePolicyDocument": POLICY})["RequestToken"])
    pending = create(client, ROLE, {"RoleName": "b", "AssumeRolePolicyDocument": POLICY})
    summaries = client.list_resource_requests(
        ResourceRequestStatusFilter={"Operations": ["CREATE"], "OperationStatuses": ["IN_PROGRESS"]}
    )["ResourceRequestStatusSummaries"]
    assert [summary["RequestToken"] for summary in summaries] == [pending["RequestToken"]]
    assert done["RequestToken"] not in [summary["RequestToken"] for summary in summaries]
    with pytest.raises(ClientError) as error:
        client.get_resource_request_status(RequestToken="no-such-token")
    assert error_code(error) == "RequestTokenNotFoundException"


# -- what the schemas say ---------------------------------------------------------------------------------------

def test_a_desired_state_that_breaks_the_schema_is_invalid_naming_the_property(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    cases = {
        "MaxSessionDuration": ({"AssumeRolePolicyDocument": POLICY, "MaxSessionDuration": "long"},
                               "#/MaxSessionDuration: expected type: Integer, found: String"),
        "AssumeRolePolicyDocument": ({"RoleName": "x"}, "required key [AssumeRolePolicyDocument] not found"),
        "Colour": ({"AssumeRolePolicyDocument": POLICY, "Colour": "red"}, "extraneous key [Colour]"),
        "RoleName": ({"AssumeRolePolicyDocument": POLICY, "RoleName": "no spaces allowed"},
                     "#/RoleName: failed validation constraint for keyword [pattern]"),
    }
    for desired, wording in cases.values():
        with pytest.raises(ClientError) as error:
            create(client, ROLE, desired)
        assert error_code(error) == "InvalidRequestException"
        assert wording in str(error.value)
    assert cloudcontrol.state()["resources"] == {}


def test_read_only_properties_cannot_be_set_or_patched_nor_create_only_ones_patched(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    with pytest.raises(ClientError) as error:
        create(client, ROLE, {"AssumeRolePolicyDocument": POLICY, "Arn": "arn:aws:iam::123456789012:role/x"})
    assert "readOnlyProperties ['/properties/Arn']" in str(error.value)
    wait(client, create(client, ROLE, {"RoleName": "fixed", "AssumeRolePolicyDocument": POLICY})["RequestToken"])
    for path, kind in (("/RoleName", "createOnlyProperties"), ("/Path", "createOnlyProperties"),
                       ("/Arn", "readOnlyProperties")):
        with pytest.raises(ClientError) as error:
            client.update_resource(TypeName=ROLE, Identifier="fixed",
                                   PatchDocument=json.dumps([{"op": "replace", "path": path, "value": "/x/"}]))
        assert error_code(error) == "InvalidRequestException"
        assert f"Invalid patch update: {kind} [/properties{path}] cannot be updated" in str(error.value)


def test_an_update_patches_in_place_and_keeps_the_read_only_values(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    wait(client, create(client, ROLE, {"RoleName": "patched", "AssumeRolePolicyDocument": POLICY})["RequestToken"])
    before = json.loads(client.get_resource(TypeName=ROLE, Identifier="patched")["ResourceDescription"]["Properties"])
    patch = [{"op": "add", "path": "/Description", "value": "now described"},
             {"op": "add", "path": "/MaxSessionDuration", "value": 7200}]
    event = client.update_resource(TypeName=ROLE, Identifier="patched", PatchDocument=json.dumps(patch),
                                   ClientToken="update-1")["ProgressEvent"]
    assert (event["Operation"], wait(client, event["RequestToken"])["OperationStatus"]) == ("UPDATE", "SUCCESS")
    after = json.loads(client.get_resource(TypeName=ROLE, Identifier="patched")["ResourceDescription"]["Properties"])
    assert after == {**before, "Description": "now described", "MaxSessionDuration": 7200}
    with pytest.raises(ClientError) as error:  # the patched model is checked against the schema too
        client.update_resource(TypeName=ROLE, Identifier="patched", PatchDocument=json.dumps(
            [{"op": "replace", "path": "/MaxSessionDuration", "value": "long"}]))
    assert "#/MaxSessionDuration: expected type: Integer" in str(error.value)


def test_write_only_properties_are_kept_but_never_read_back(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    done = wait(client, create(client, "AWS::SecretsManager::Secret", {"Name": "db", "SecretString": "hunter2"})
                ["RequestToken"])
    assert "hunter2" not in json.dumps(done, default=str)
    shown = client.get_resource(TypeName="AWS::SecretsManager::Secret", Identifier=done["Identifier"])
    assert "SecretString" not in json.loads(shown["ResourceDescription"]["Properties"])
    listed = client.list_resources(TypeName="AWS::SecretsManager::Secret")["ResourceDescriptions"]
    assert "hunter2" not in json.dumps(listed)
    stored = cloudcontrol.state()["resources"]["AWS::SecretsManager::Secret"][done["Identifier"]]
    assert stored["SecretString"] == "hunter2"  # the stand-in holds it, as the service would


def test_a_child_type_is_listed_only_with_its_parents_model(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    for group, stream in (("group-a", "s1"), ("group-a", "s2"), ("group-b", "s3")):
        wait(client, create(client, "AWS::Logs::LogStream", {"LogGroupName": group, "LogStreamName": stream})
             ["RequestToken"])
    with pytest.raises(ClientError) as error:
        client.list_resources(TypeName="AWS::Logs::LogStream")
    assert error_code(error) == "InvalidRequestException" and "LogGroupName" in str(error.value)
    listed = client.list_resources(TypeName="AWS::Logs::LogStream",
                                   ResourceModel=json.dumps({"LogGroupName": "group-a"}))["ResourceDescriptions"]
    assert [description["Identifier"] for description in listed] == ["group-a|s1", "group-a|s2"]
    by_json = client.get_resource(TypeName="AWS::Logs::LogStream",
                                  Identifier=json.dumps({"LogStreamName": "s3", "LogGroupName": "group-b"}))
    assert by_json["ResourceDescription"]["Identifier"] == "group-b|s3"


def test_a_handler_the_type_lacks_is_an_unsupported_action_and_an_unknown_type_is_not_found(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    with pytest.raises(ClientError) as error:
        client.update_resource(TypeName="AWS::Logs::LogStream", Identifier="g|s", PatchDocument="[]")
    assert error_code(error) == "UnsupportedActionException"
    with pytest.raises(ClientError) as error:
        client.list_resources(TypeName="AWS::ACMPCA::Certificate")
    assert error_code(error) == "UnsupportedActionException"
    with pytest.raises(ClientError) as error:
        client.get_resource(TypeName="AWS::Nothing::Here", Identifier="x")
    assert error_code(error) == "TypeNotFoundException"


# -- fault injection and the control API ----------------------------------------------------------------------------

def test_injected_throttling_surfaces_as_botocores_throttling_exception(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    cloudcontrol.throttle(next_calls=2, operations=["ListResources"])
    for _ in range(2):
        with pytest.raises(ClientError) as error:
            client.list_resources(TypeName=ROLE)
        assert error_code(error) == "ThrottlingException"
        assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert client.list_resources(TypeName=ROLE)["ResourceDescriptions"] == []
    retrying = cloudcontrol.client(max_attempts=3)  # botocore's own retries see it as throttling too
    cloudcontrol.throttle(next_calls=2)
    assert retrying.list_resources(TypeName=ROLE)["ResourceDescriptions"] == []
    assert cloudcontrol.state()["calls"]["ListResources"] == 6


def list_outcomes(client: Any, calls: int) -> list[str]:
    """``calls`` ListResources calls in a row: "ok" or the error code of each."""
    outcomes = []
    for _ in range(calls):
        try:
            client.list_resources(TypeName=ROLE)
            outcomes.append("ok")
        except ClientError as error:
            outcomes.append(error.response["Error"]["Code"])
    return outcomes


def test_a_throttling_rate_throttles_about_that_share_of_calls(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    cloudcontrol.throttle(rate=0.5)
    outcomes = list_outcomes(client, 40)
    assert set(outcomes) == {"ok", "ThrottlingException"}
    assert 8 <= outcomes.count("ThrottlingException") <= 32


def test_a_per_second_limit_throttles_each_operation_past_its_own_bucket(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    # One token, refilled every 10 s: of a burst, the first call passes and the rest are throttled, while
    # another operation draws from a bucket of its own (AWS meters each API action apart).
    cloudcontrol.throttle(per_second=0.1, operations=["ListResources", "GetResource"])
    outcomes = list_outcomes(client, 4)
    with pytest.raises(ClientError) as missing:
        client.get_resource(TypeName=ROLE, Identifier="nobody")
    assert error_code(missing) == "ResourceNotFoundException"  # its first call: through, and answered
    assert client.list_resource_requests()["ResourceRequestStatusSummaries"] == []  # not limited
    assert outcomes == ["ok"] + ["ThrottlingException"] * 3
    assert cloudcontrol.state()["throttled"] == {"ListResources": 3}


def test_injected_request_failures_end_requests_failed_with_the_error_code(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    cloudcontrol.fail_requests("CREATE", "ServiceLimitExceeded", type_name=ROLE, message="too many roles", count=1)
    failed = wait(client, create(client, ROLE, {"RoleName": "r1", "AssumeRolePolicyDocument": POLICY})["RequestToken"])
    assert (failed["OperationStatus"], failed["ErrorCode"], failed["StatusMessage"]) == (
        "FAILED", "ServiceLimitExceeded", "too many roles")
    assert cloudcontrol.state()["resources"].get(ROLE, {}) == {}
    then = wait(client, create(client, ROLE, {"RoleName": "r1", "AssumeRolePolicyDocument": POLICY})["RequestToken"])
    assert then["OperationStatus"] == "SUCCESS"


def test_injected_error_answers_such_as_access_denied(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    cloudcontrol.answer_error("ListResources", "AccessDeniedException", type_name=ROLE, message="not allowed")
    with pytest.raises(ClientError) as error:
        client.list_resources(TypeName=ROLE)
    assert (error_code(error), error.value.response["Error"]["Message"]) == ("AccessDeniedException", "not allowed")
    assert client.list_resources(TypeName="AWS::Logs::LogGroup")["ResourceDescriptions"] == []


def test_an_injected_delay_holds_the_answers_of_the_chosen_operations(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    cloudcontrol.delay(300, operations=["ListResources"])
    started = time.monotonic()
    client.list_resources(TypeName=ROLE)
    assert time.monotonic() - started >= 0.3  # a lower bound only: the stand-in slept that long before answering
    assert cloudcontrol.state()["calls"] == {"ListResources": 1}


def test_resources_made_and_removed_behind_the_apis_back(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    made = cloudcontrol.put_resource("AWS::Logs::LogGroup", {"LogGroupName": "/found/me"})
    assert made["Identifier"] == "/found/me" and made["Properties"]["Arn"].startswith("arn:aws:logs:")
    assert [d["Identifier"] for d in client.list_resources(TypeName="AWS::Logs::LogGroup")["ResourceDescriptions"]] \
        == ["/found/me"]
    assert cloudcontrol.delete_resource("AWS::Logs::LogGroup", "/found/me") is True
    assert client.list_resources(TypeName="AWS::Logs::LogGroup")["ResourceDescriptions"] == []
    with pytest.raises(RuntimeError, match="LogGroupClass"):  # the control API checks the schema too
        cloudcontrol.put_resource("AWS::Logs::LogGroup", {"LogGroupClass": "HOT"})


def test_the_endpoint_variable_points_a_default_client_at_the_stand_in(cloudcontrol: StandIn,
                                                                         monkeypatch: pytest.MonkeyPatch):
    import boto3

    for name, value in {**cloudcontrol.environment(), "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_CONFIG_FILE": "/dev/null",
                        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}.items():
        monkeypatch.setenv(name, value)
    client = boto3.session.Session(region_name="us-east-1").client("cloudcontrol")
    assert client.list_resources(TypeName=ROLE)["ResourceDescriptions"] == []
    assert cloudcontrol.state()["calls"] == {"ListResources": 1}


def test_nested_read_only_values_are_made_so_that_references_to_them_resolve(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    done = wait(client, create(client, "AWS::RDS::DBCluster", {
        "Engine": "aurora-postgresql", "DBClusterIdentifier": "orders", "MasterUserSecret": {"KmsKeyId": "key-1"},
    })["RequestToken"])
    model = json.loads(client.get_resource(TypeName="AWS::RDS::DBCluster", Identifier=done["Identifier"])
                       ["ResourceDescription"]["Properties"])
    assert model["Endpoint"]["Address"].endswith(".rds.us-east-1.amazonaws.com")
    assert model["Endpoint"]["Port"] == "443" and model["ReadEndpoint"]["Address"] != model["Endpoint"]["Address"]
    assert model["DBClusterArn"] == "arn:aws:rds:us-east-1:123456789012:dbcluster/orders"
    assert model["MasterUserSecret"]["KmsKeyId"] == "key-1" and model["MasterUserSecret"]["SecretArn"]
    patch = json.dumps([{"op": "add", "path": "/DeletionProtection", "value": True}])
    wait(client, client.update_resource(TypeName="AWS::RDS::DBCluster", Identifier=done["Identifier"],
                                        PatchDocument=patch)["ProgressEvent"]["RequestToken"])
    after = json.loads(client.get_resource(TypeName="AWS::RDS::DBCluster", Identifier=done["Identifier"])
                       ["ResourceDescription"]["Properties"])
    assert after == {**model, "DeletionProtection": True}  # an update keeps the service's values


def test_an_update_of_an_identifier_part_the_schema_lets_change_moves_the_resource(cloudcontrol: StandIn):
    client = cloudcontrol.client()
    record = {"HostedZoneId": "Z0123456789", "Name": "www.example.com", "Type": "A", "TTL": "60",
              "ResourceRecords": ["192.0.2.1"]}
    created = wait(client, create(client, "AWS::Route53::RecordSet", record)["RequestToken"])
    patch = json.dumps([{"op": "replace", "path": "/Name", "value": "api.example.com"}])
    updated = wait(client, client.update_resource(TypeName="AWS::Route53::RecordSet", Identifier=created["Identifier"],
                                                  PatchDocument=patch)["ProgressEvent"]["RequestToken"])
    assert updated["OperationStatus"] == "SUCCESS" and updated["Identifier"] != created["Identifier"]
    assert "api.example.com" in updated["Identifier"]
    assert list(cloudcontrol.state()["resources"]["AWS::Route53::RecordSet"]) == [updated["Identifier"]]
