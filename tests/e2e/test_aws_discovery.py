"""AWS discovery against moto with IAM enforced: the plugin's default filters leave out what carries the
agent's tag (``svc:agent``) or the system tag (``AmazonECSManaged``), subnets are found under their VPCs,
and an identity that may not read IAM gets one warning per IAM type while everything else is discovered.

moto checks every request against IAM once its first few (the setup below) are done: the agent runs with
the keys of a user whose policy allows everything but ``iam:*``. Discovery lists the native types, the ones
moto serves (the registry's other types go through Cloud Control, which moto does not have).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from support.aws import AWS_TEST_REGION, NATIVE_DISCOVERY, aws_agent, isolated_aws_home, target_pkl
from support.moto import moto_server
from support.processes import Agent, run_svc

SETUP_CALLS = 3  # create_user, create_access_key, put_user_policy: unauthenticated, then IAM is enforced
AGENT_TAG = {"Key": "svc:agent", "Value": "true"}
SYSTEM_TAG = {"Key": "AmazonECSManaged", "Value": "true"}


@dataclass
class World:
    url: str
    directory: Path
    agent: Agent
    keys: dict[str, str]

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=AWS_TEST_REGION, endpoint_url=self.url, **self.keys)

    def svc(self, *args: str) -> Any:
        return run_svc(*args, "--config", str(self.agent.config))


def _restricted_user(url: str) -> dict[str, str]:
    iam = boto3.client("iam", region_name=AWS_TEST_REGION, endpoint_url=url, aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    iam.create_user(UserName="svc-agent")
    key = iam.create_access_key(UserName="svc-agent")["AccessKey"]
    iam.put_user_policy(UserName="svc-agent", PolicyName="everything-but-identity", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"},
                                               {"Effect": "Deny", "Action": "iam:*", "Resource": "*"}]}))
    return {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("aws-discovery")
    with moto_server(directory / "moto.log", {"INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_CALLS)}) as url:
        keys = _restricted_user(url)
        credentials = {"AWS_ACCESS_KEY_ID": keys["aws_access_key_id"],
                       "AWS_SECRET_ACCESS_KEY": keys["aws_secret_access_key"]}
        with isolated_aws_home(directory, credentials), aws_agent(directory, plugin=NATIVE_DISCOVERY) as agent:
            world = World(url, directory, agent, keys)
            forma = directory / "target.pkl"  # discovery lists the targets the agent knows
            forma.write_text('amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\nimport "@aws/aws.pkl"\n'
                             f'forma {{\n  new svc.Target {{ label = "moto"; config = {target_pkl(url)} }}\n}}\n')
            registered = world.svc("apply", "--mode", "patch", str(forma), "--yes", "--wait")
            assert registered.returncode == 0, registered.stdout + registered.stderr
            yield world


@pytest.fixture(scope="module")
def discovered(world: World) -> dict[str, Any]:
    """Resources made behind svc's back, some carrying the filtered tags; then one discovery run."""
    ec2, s3, sqs = world.client("ec2"), world.client("s3"), world.client("sqs")
    ours = ec2.create_vpc(CidrBlock="10.50.0.0/16", TagSpecifications=[
        {"ResourceType": "vpc", "Tags": [AGENT_TAG]}])["Vpc"]["VpcId"]
    theirs = ec2.create_vpc(CidrBlock="10.60.0.0/16", TagSpecifications=[
        {"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": "shop"}]}])["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=theirs, CidrBlock=f"10.60.{i}.0/24")["Subnet"]["SubnetId"] for i in (1, 2)]
    system = ec2.create_subnet(VpcId=theirs, CidrBlock="10.60.3.0/24", TagSpecifications=[
        {"ResourceType": "subnet", "Tags": [SYSTEM_TAG]}])["Subnet"]["SubnetId"]
    s3.create_bucket(Bucket="svc-agent-state")
    s3.put_bucket_tagging(Bucket="svc-agent-state", Tagging={"TagSet": [AGENT_TAG]})
    s3.create_bucket(Bucket="shop-assets")
    queue = sqs.create_queue(QueueName="shop-orders")["QueueUrl"]
    # Express mode's shared default cluster carries the system tag too, and stays discoverable.
    world.client("ecs").create_cluster(clusterName="default", tags=[{"key": "AmazonECSManaged", "value": "true"}])
    response = httpx.post(f"{world.agent.url}/api/v1/admin/discover", timeout=300)
    assert response.status_code == 200, response.text
    listed = world.svc("inventory", "resources", "--query", "managed:false", "--output-consumer", "machine")
    assert listed.returncode == 0, listed.stderr
    return {"report": response.json(), "resources": json.loads(listed.stdout)["Resources"], "ours": ours,
            "theirs": theirs, "subnets": subnets, "system": system, "queue": queue}


def _ids(found: dict[str, Any], resource_type: str) -> set[str]:
    return {r["NativeID"] for r in found["resources"] if r["Type"] == resource_type}


def test_tag_filters_leave_out_the_agents_own_infrastructure(discovered: dict[str, Any]) -> None:
    vpcs = _ids(discovered, "AWS::EC2::VPC")
    assert discovered["theirs"] in vpcs
    assert discovered["ours"] not in vpcs, "a VPC with the agent's tag was discovered"
    buckets = _ids(discovered, "AWS::S3::Bucket")
    assert "shop-assets" in buckets and "svc-agent-state" not in buckets
    assert discovered["system"] not in _ids(discovered, "AWS::EC2::Subnet"), "the system-tagged subnet was kept"
    assert discovered["queue"] in _ids(discovered, "AWS::SQS::Queue")
    assert "default" in _ids(discovered, "AWS::ECS::Cluster"), "the shared default cluster was filtered out"
    assert discovered["report"]["Filtered"] >= 3, discovered["report"]


def test_subnets_are_found_under_their_vpcs(discovered: dict[str, Any]) -> None:
    subnets = {r["NativeID"]: r for r in discovered["resources"] if r["Type"] == "AWS::EC2::Subnet"}
    for subnet_id in discovered["subnets"]:
        assert subnet_id in subnets, f"{subnet_id} not discovered"
        vpc = subnets[subnet_id]["Properties"]["VpcId"]
        # A child refers to its parent (as the reference stores it), so it orders and cascades after it.
        assert (vpc.get("$value") if isinstance(vpc, dict) else vpc) == discovered["theirs"], vpc
    labelled = {r["Label"] for r in discovered["resources"] if r["NativeID"] == discovered["theirs"]}
    assert labelled == {"shop"}, labelled  # the Name tag labels it


def test_identity_types_denied_are_logged_once_each(world: World, discovered: dict[str, Any]) -> None:
    denied = discovered["report"]["Denied"]
    identity = {"AWS::IAM::Role", "AWS::IAM::ManagedPolicy", "AWS::IAM::Group", "AWS::IAM::OIDCProvider",
                "AWS::IAM::SAMLProvider", "AWS::IAM::ServerCertificate"}
    assert {entry.split(" ", 1)[0] for entry in denied} >= identity, denied
    # moto checks signatures of its global Route 53 endpoint wrongly (SignatureDoesNotMatch): not a real denial.
    assert all(entry.startswith(("AWS::IAM::", "AWS::Route53::")) for entry in denied), denied
    log = world.agent.output()
    for entry in denied:
        resource_type = entry.split(" ", 1)[0]
        lines = [line for line in log.splitlines() if "discovery:" in line and f"{resource_type} on target" in line]
        assert len(lines) == 1, f"{resource_type}: {lines}"
        assert "AccessDenied" in lines[0] or "InvalidCredentials" in lines[0], lines[0]
    assert "Traceback" not in log
    assert not discovered["report"]["Errors"], discovered["report"]


def test_the_agent_keeps_no_credential(world: World) -> None:
    secret = world.keys["aws_secret_access_key"]
    assert secret not in world.agent.output()
    assert all(secret.encode() not in path.read_bytes() for path in world.directory.glob("svc.db*"))
    assert re.search(re.escape(world.keys["aws_access_key_id"]), (world.directory / "agent.pkl").read_text()) is None
