"""The Cloud Control stand-in (tests/support/cloudcontrol) through boto3's own ``cloudcontrol`` client: the
protocol details the AWS plugin relies on (request tokens and polling, ClientToken idempotency, errors as
botocore raises them, paging, child types listed per parent) and the control API's fault injection."""

from __future__ import annotations

import json
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
    assert model["Arn"] == "arn:aws:iam:us-east-1:123456789012:role/app"
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
