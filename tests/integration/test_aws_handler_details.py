"""What the conformance suite does not reach in the AWS plugin's IAM, Secrets Manager, DynamoDB, ECS and
Route 53 types: attachments, versions, clean-up before delete, rollback of a failed create, generated
secrets, table indexes, private zones. The real plugin (in process) against one real moto server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.aws import boto_client, dummy_aws_credentials, target_config
from support.moto import moto_server
from svc.plugins.runner import Call, InProcessRunner
from svc.plugins.sdk import ErrorCode, Json, Progress, Status

TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                            "Principal": {"Service": "ec2.amazonaws.com"}}]})


def _document(action: str) -> Json:
    return {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action, "Resource": "*"}]}


class Aws:
    """The AWS plugin in this process, called synchronously, and boto3 clients on the same moto server."""

    def __init__(self, url: str, state: Path) -> None:
        self.url = url
        self.state = state
        self.runner = InProcessRunner.load("AWS")

    def client(self, service: str) -> Any:
        return boto_client(self.url, service)

    def _call(self, resource_type: str) -> Call:
        return Call(resource_type, target_config(self.url))

    def create(self, resource_type: str, properties: Json, label: str = "subject") -> Progress:
        return asyncio.run(self.runner.create(self._call(resource_type), label, properties))

    def created(self, resource_type: str, properties: Json, label: str = "subject") -> Progress:
        progress = self.create(resource_type, properties, label)
        assert progress.status is Status.SUCCESS, progress
        return progress

    def read(self, resource_type: str, native_id: str) -> Json | None:
        result = asyncio.run(self.runner.read(self._call(resource_type), native_id, None))
        assert result.error_code in (None, ErrorCode.NOT_FOUND), result
        return result.properties

    def update(self, resource_type: str, native_id: str, desired: Json, *touched: str) -> Progress:
        patch = [{"op": "replace", "path": f"/{key}", "value": desired.get(key)} for key in touched]
        return asyncio.run(self.runner.update(self._call(resource_type), native_id, {}, desired, patch))

    def updated(self, resource_type: str, native_id: str, desired: Json, *touched: str) -> Json:
        progress = self.update(resource_type, native_id, desired, *touched)
        assert progress.status is Status.SUCCESS, progress
        assert progress.properties is not None
        return progress.properties

    def delete(self, resource_type: str, native_id: str) -> Progress:
        return asyncio.run(self.runner.delete(self._call(resource_type), native_id))

    def listed(self, resource_type: str) -> list[str]:
        page = asyncio.run(self.runner.list(self._call(resource_type), 1000, None, {}))
        return page.native_ids


@pytest.fixture(scope="module")
def aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aws]:
    directory = tmp_path_factory.mktemp("aws-handlers")
    with dummy_aws_credentials(), pytest.MonkeyPatch.context() as patch, \
            moto_server(directory / "moto.log") as url:
        patch.setenv("SVC_PLUGIN_STATE_DIR", str(directory / "state"))  # the request-token journal
        yield Aws(url, directory / "state")


# -- IAM ------------------------------------------------------------------------------------------------------

def test_a_role_whose_attachment_fails_is_not_left_behind(aws: Aws) -> None:
    missing = "arn:aws:iam::123456789012:policy/does-not-exist"
    progress = aws.create("AWS::IAM::Role", {"RoleName": "half-made", "AssumeRolePolicyDocument": TRUST,
                                             "ManagedPolicyArns": [missing]})
    assert progress.status is Status.FAILURE and progress.error_code is ErrorCode.INVALID_REQUEST, progress
    assert missing in progress.message
    assert aws.read("AWS::IAM::Role", "half-made") is None  # deleted again: the next attempt can create it


def test_a_role_with_attachments_and_a_boundary_is_stripped_before_deletion(aws: Aws) -> None:
    iam = aws.client("iam")
    arns = [iam.create_policy(PolicyName=f"attach-{n}", PolicyDocument=json.dumps(_document("s3:*")))["Policy"]["Arn"]
            for n in (1, 2)]
    role = aws.created("AWS::IAM::Role", {
        "RoleName": "worker", "AssumeRolePolicyDocument": TRUST, "ManagedPolicyArns": arns[:1],
        "PermissionsBoundary": arns[1], "Policies": [{"PolicyName": "logs", "PolicyDocument": _document("logs:*")}],
    })
    assert role.properties is not None
    assert role.properties["ManagedPolicyArns"] == arns[:1] and role.properties["PermissionsBoundary"] == arns[1]
    assert role.properties["Policies"] == [{"PolicyName": "logs", "PolicyDocument": _document("logs:*")}]

    after = aws.updated("AWS::IAM::Role", "worker", {"AssumeRolePolicyDocument": TRUST, "ManagedPolicyArns": arns},
                        "ManagedPolicyArns", "PermissionsBoundary", "Policies")
    assert after["ManagedPolicyArns"] == sorted(arns)
    assert "PermissionsBoundary" not in after and "Policies" not in after

    assert aws.delete("AWS::IAM::Role", "worker").status is Status.SUCCESS  # IAM refuses while policies are on
    assert aws.read("AWS::IAM::Role", "worker") is None


def test_aws_owned_roles_are_not_listed(aws: Aws) -> None:
    iam = aws.client("iam")
    iam.create_role(RoleName="AWSServiceRoleForThing", Path="/aws-service-role/thing.amazonaws.com/",
                    AssumeRolePolicyDocument=TRUST)
    iam.create_role(RoleName="ours", AssumeRolePolicyDocument=TRUST)
    listed = aws.listed("AWS::IAM::Role")
    assert "ours" in listed and "AWSServiceRoleForThing" not in listed


def test_a_managed_policy_keeps_at_most_five_versions_and_is_detached_before_deletion(aws: Aws) -> None:
    iam = aws.client("iam")
    iam.create_role(RoleName="reader", AssumeRolePolicyDocument=TRUST)
    iam.create_group(GroupName="readers")
    iam.create_user(UserName="someone")
    created = aws.created("AWS::IAM::ManagedPolicy", {
        "ManagedPolicyName": "reading", "PolicyDocument": json.dumps(_document("s3:GetObject")),
        "Roles": ["reader"], "Groups": ["readers"], "Users": ["someone"]})
    arn = created.native_id
    assert created.properties is not None
    assert (created.properties["Roles"], created.properties["Groups"], created.properties["Users"]) == (
        ["reader"], ["readers"], ["someone"])

    for n in range(7):  # IAM holds five versions: the oldest non-default one makes room each time
        document = json.dumps(_document(f"s3:Action{n}"))
        after = aws.updated("AWS::IAM::ManagedPolicy", arn, {"PolicyDocument": document, "Roles": ["reader"]},
                            "PolicyDocument", "Groups", "Users")
        assert json.loads(after["PolicyDocument"]) == _document(f"s3:Action{n}")
    assert len(iam.list_policy_versions(PolicyArn=arn)["Versions"]) == 5
    assert after["Roles"] == ["reader"] and "Groups" not in after and "Users" not in after

    assert aws.delete("AWS::IAM::ManagedPolicy", arn).status is Status.SUCCESS
    assert aws.read("AWS::IAM::ManagedPolicy", arn) is None
    assert iam.list_attached_role_policies(RoleName="reader")["AttachedPolicies"] == []


def test_attaching_a_policy_to_a_missing_role_is_a_mistake_in_the_forma(aws: Aws) -> None:
    progress = aws.create("AWS::IAM::ManagedPolicy", {"ManagedPolicyName": "orphan", "Roles": ["nobody"],
                                                      "PolicyDocument": json.dumps(_document("s3:*"))})
    assert progress.error_code is ErrorCode.INVALID_REQUEST, progress
    assert "arn:aws:iam::123456789012:policy/orphan" not in aws.listed("AWS::IAM::ManagedPolicy")


def test_a_group_with_members_and_policies_is_emptied_before_deletion(aws: Aws) -> None:
    iam = aws.client("iam")
    aws.created("AWS::IAM::Group", {"GroupName": "crew", "Policies": [{"PolicyName": "p",
                                                                       "PolicyDocument": _document("ec2:*")}]})
    iam.create_user(UserName="member")
    iam.add_user_to_group(GroupName="crew", UserName="member")
    assert aws.delete("AWS::IAM::Group", "crew").status is Status.SUCCESS
    assert aws.read("AWS::IAM::Group", "crew") is None
    assert iam.get_user(UserName="member")["User"]["UserName"] == "member"  # the users stay


def test_an_oidc_provider_reads_its_issuer_with_the_scheme(aws: Aws) -> None:
    created = aws.created("AWS::IAM::OIDCProvider", {"Url": "https://issuer.example.org/tenant",
                                                     "ClientIdList": ["b", "a"]})
    assert created.properties is not None
    assert created.properties["Url"] == "https://issuer.example.org/tenant"
    assert created.properties["ClientIdList"] == ["a", "b"]
    assert created.native_id in aws.listed("AWS::IAM::OIDCProvider")


# -- Secrets Manager ------------------------------------------------------------------------------------------

def test_a_generated_secret_follows_its_template_and_is_never_read_back(aws: Aws) -> None:
    created = aws.created("AWS::SecretsManager::Secret", {"Name": "app/db", "GenerateSecretString": {
        "PasswordLength": 24, "ExcludePunctuation": True, "SecretStringTemplate": '{"username": "app"}',
        "GenerateStringKey": "password"}})
    value = json.loads(aws.client("secretsmanager").get_secret_value(SecretId=created.native_id)["SecretString"])
    assert value["username"] == "app" and len(value["password"]) == 24 and value["password"].isalnum()
    assert created.properties == {"Id": created.native_id, "Name": "app/db"}
    journal = b"".join(path.read_bytes() for path in aws.state.rglob("*") if path.is_file())
    assert journal and value["password"].encode() not in journal


def test_a_secret_value_that_is_not_a_string_is_refused(aws: Aws) -> None:
    progress = aws.create("AWS::SecretsManager::Secret", {"Name": "odd", "SecretString": {"$value": "x"}})
    assert progress.error_code is ErrorCode.INVALID_REQUEST, progress


def test_a_secret_scheduled_for_deletion_is_gone(aws: Aws) -> None:
    created = aws.created("AWS::SecretsManager::Secret", {"Name": "leaving", "SecretString": "s"})
    aws.client("secretsmanager").delete_secret(SecretId=created.native_id, RecoveryWindowInDays=7)
    assert aws.read("AWS::SecretsManager::Secret", created.native_id) is None
    assert created.native_id not in aws.listed("AWS::SecretsManager::Secret")


# -- DynamoDB -------------------------------------------------------------------------------------------------

def test_a_table_changes_capacity_indexes_and_recovery_in_place(aws: Aws) -> None:
    keys = {"AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}
    created = aws.created("AWS::DynamoDB::Table", {**keys, "TableName": "orders", "BillingMode": "PROVISIONED",
                                                   "ProvisionedThroughput": {"ReadCapacityUnits": 2,
                                                                             "WriteCapacityUnits": 3}})
    assert created.properties is not None
    assert created.properties["ProvisionedThroughput"] == {"ReadCapacityUnits": 2, "WriteCapacityUnits": 3}
    assert created.properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": False}

    index = {"IndexName": "by-customer", "KeySchema": [{"AttributeName": "customer", "KeyType": "HASH"}],
             "Projection": {"ProjectionType": "KEYS_ONLY"}}
    desired = {"AttributeDefinitions": [*keys["AttributeDefinitions"],
                                        {"AttributeName": "customer", "AttributeType": "S"}],
               "KeySchema": keys["KeySchema"], "BillingMode": "PAY_PER_REQUEST", "GlobalSecondaryIndexes": [index],
               "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
               "DeletionProtectionEnabled": True}
    after = aws.updated("AWS::DynamoDB::Table", "orders", desired, "BillingMode", "ProvisionedThroughput",
                        "AttributeDefinitions", "GlobalSecondaryIndexes", "PointInTimeRecoverySpecification",
                        "DeletionProtectionEnabled")
    assert after["BillingMode"] == "PAY_PER_REQUEST" and "ProvisionedThroughput" not in after
    assert after["GlobalSecondaryIndexes"] == [index]
    assert after["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}

    refused = aws.delete("AWS::DynamoDB::Table", "orders")  # deletion protection holds, even against svc
    assert refused.status is Status.FAILURE and refused.error_code is ErrorCode.INVALID_REQUEST, refused
    after = aws.updated("AWS::DynamoDB::Table", "orders", {**desired, "GlobalSecondaryIndexes": None,
                                                           "DeletionProtectionEnabled": False},
                        "GlobalSecondaryIndexes", "DeletionProtectionEnabled")
    assert "GlobalSecondaryIndexes" not in after
    assert aws.delete("AWS::DynamoDB::Table", "orders").status is Status.SUCCESS
    assert aws.read("AWS::DynamoDB::Table", "orders") is None


def test_a_table_name_in_use_already_exists(aws: Aws) -> None:
    properties = {"TableName": "twice", "BillingMode": "PAY_PER_REQUEST",
                  "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                  "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}
    aws.created("AWS::DynamoDB::Table", properties)
    assert aws.create("AWS::DynamoDB::Table", properties).error_code is ErrorCode.ALREADY_EXISTS


# -- ECS, Route 53 --------------------------------------------------------------------------------------------

def test_an_existing_cluster_is_not_taken_over_and_deleted_ones_are_not_listed(aws: Aws) -> None:
    aws.created("AWS::ECS::Cluster", {"ClusterName": "apps", "Tags": [{"Key": "team", "Value": "core"}]})
    again = aws.create("AWS::ECS::Cluster", {"ClusterName": "apps"})
    assert again.error_code is ErrorCode.ALREADY_EXISTS, again
    assert aws.read("AWS::ECS::Cluster", "apps") is not None  # untouched: ECS would have reconfigured it
    assert aws.delete("AWS::ECS::Cluster", "apps").status is Status.SUCCESS
    assert aws.read("AWS::ECS::Cluster", "apps") is None and "apps" not in aws.listed("AWS::ECS::Cluster")


def test_a_private_zone_moves_between_vpcs_without_losing_the_last(aws: Aws) -> None:
    ec2 = aws.client("ec2")
    first, second, third = (ec2.create_vpc(CidrBlock=f"10.{n}.0.0/16")["Vpc"]["VpcId"] for n in (51, 52, 53))
    vpcs = [{"VPCId": first, "VPCRegion": "us-east-1"}, {"VPCId": second, "VPCRegion": "us-east-1"}]
    created = aws.created("AWS::Route53::HostedZone", {"Name": "corp.internal", "VPCs": vpcs})
    assert created.properties is not None
    assert created.properties["Name"] == "corp.internal"  # without Route 53's final dot
    assert created.properties["VPCs"] == sorted(vpcs, key=lambda v: v["VPCId"])
    moved = [{"VPCId": third, "VPCRegion": "us-east-1"}]
    after = aws.updated("AWS::Route53::HostedZone", created.native_id, {"Name": "corp.internal", "VPCs": moved},
                        "VPCs")
    assert after["VPCs"] == moved
    assert aws.delete("AWS::Route53::HostedZone", created.native_id).status is Status.SUCCESS
