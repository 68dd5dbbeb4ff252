"""Changes made to AWS resources behind svc's back (with boto3, on moto) are found by synchronization and
shown as drift: a tag added to a VPC, a queue attribute changed, a bucket deleted. A reconcile is then
refused with the drift listed, and ``--force`` puts the forma back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.aws import aws_agent, boto_client, isolated_aws_home, target_pkl
from support.moto import moto_server
from support.processes import Agent, run_svc

FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@aws/aws.pkl"
import "@aws/ec2/vpc.pkl"
import "@aws/sqs/queue.pkl"
import "@aws/s3/bucket.pkl"

forma {{
  new svc.Stack {{ label = "shop" }}
  new svc.Target {{ label = "moto"; config = {target} }}
  new vpc.VPC {{ label = "net"; cidrBlock = "10.70.0.0/16"; tags {{ new {{ key = "Name"; value = "shop" }} }} }}
  new queue.Queue {{ label = "orders"; queueName = "shop-orders"; visibilityTimeout = 45 }}
  new bucket.Bucket {{ label = "assets"; bucketName = "shop-assets-drift" }}
}}
"""


@dataclass
class World:
    url: str
    agent: Agent
    forma: Path

    def svc(self, *args: str) -> Any:
        return run_svc(*args, "--config", str(self.agent.config), env={"COLUMNS": "200"})

    def resources(self) -> dict[str, dict[str, Any]]:
        response = httpx.get(f"{self.agent.url}/api/v1/resources", params={"query": "stack:shop"}, timeout=30)
        assert response.status_code == 200, response.text
        return {resource["Label"]: resource for resource in response.json()["Resources"]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("aws-drift")
    with isolated_aws_home(directory), moto_server(directory / "moto.log") as url, aws_agent(directory) as agent:
        forma = directory / "shop.pkl"
        forma.write_text(FORMA.format(target=target_pkl(url)))
        world = World(url, agent, forma)
        applied = world.svc("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        yield world


@pytest.fixture(scope="module")
def drifted(world: World) -> dict[str, dict[str, Any]]:
    """The three changes behind svc's back, one synchronization, and the stack's drift."""
    stored = world.resources()
    boto_client(world.url, "ec2").create_tags(Resources=[stored["net"]["NativeID"]],
                                              Tags=[{"Key": "owner", "Value": "ops"}])
    boto_client(world.url, "sqs").set_queue_attributes(QueueUrl=stored["orders"]["NativeID"],
                                                       Attributes={"VisibilityTimeout": "120"})
    boto_client(world.url, "s3").delete_bucket(Bucket="shop-assets-drift")
    synchronized = httpx.post(f"{world.agent.url}/api/v1/admin/synchronize", timeout=120)
    assert synchronized.status_code == 200, synchronized.text
    response = httpx.get(f"{world.agent.url}/api/v1/stacks/shop/drift", timeout=30)
    assert response.status_code == 200, response.text
    return {entry["Label"]: entry for entry in response.json()["ModifiedResources"]}


def test_synchronization_stores_what_changed(world: World, drifted: dict[str, dict[str, Any]]) -> None:
    stored = world.resources()
    assert {"Key": "owner", "Value": "ops"} in stored["net"]["Properties"]["Tags"]
    assert stored["orders"]["Properties"]["VisibilityTimeout"] == 120
    assert "assets" not in stored, "the deleted bucket is still in the inventory"


def test_drift_shows_each_change(drifted: dict[str, dict[str, Any]]) -> None:
    assert set(drifted) == {"net", "orders", "assets"}, drifted
    assert drifted["assets"]["Operation"] == "delete"
    tag_ops = [op for op in drifted["net"]["PatchDocument"] if op["path"].startswith("/Tags")]
    assert any(op.get("value") in ({"Key": "owner", "Value": "ops"}, [{"Key": "Name", "Value": "shop"},
                                   {"Key": "owner", "Value": "ops"}]) for op in tag_ops), drifted["net"]
    assert {"op": "replace", "path": "/VisibilityTimeout", "value": 120} in drifted["orders"]["PatchDocument"]


def test_reconcile_is_refused_then_forced_back(world: World, drifted: dict[str, dict[str, Any]]) -> None:
    refused = world.svc("apply", "--mode", "reconcile", str(world.forma), "--yes", "--wait")
    assert refused.returncode == 1
    for line in ("update  net (AWS::EC2::VPC)", "update  orders (AWS::SQS::Queue)", "delete  assets (AWS::S3::Bucket)"):
        assert line in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    forced = world.svc("apply", "--mode", "reconcile", "--force", str(world.forma), "--yes", "--wait")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    sqs = boto_client(world.url, "sqs")
    queue_url = world.resources()["orders"]["NativeID"]
    assert sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])["Attributes"] == {
        "VisibilityTimeout": "45"}
    boto_client(world.url, "s3").head_bucket(Bucket="shop-assets-drift")  # back
    vpc = boto_client(world.url, "ec2").describe_vpcs(VpcIds=[world.resources()["net"]["NativeID"]])["Vpcs"][0]
    assert vpc["Tags"] == [{"Key": "Name", "Value": "shop"}], vpc["Tags"]
    assert json.loads(httpx.get(f"{world.agent.url}/api/v1/stacks/shop/drift", timeout=30).text) == {
        "ModifiedResources": []}
