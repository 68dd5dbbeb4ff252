"""A forma through the real CLI and agent with its AWS types handled by Cloud Control (the stand-in), and the same
forma planned identically whichever path handles its types (issue 26, acceptance 3).

The types are native ones sent through Cloud Control by ``SVC_AWS_CLOUD_CONTROL_TYPES=*`` (routing.py): their Pkl
modules are in the plugin's schema package, and the native path (on moto) is there to compare with.

Discovery lists a deterministic sample of the registry's types in the suite; every type with
``SVC_CLOUDCONTROL_SWEEP=all .venv/bin/pytest tests/e2e/test_aws_cloudcontrol_forma.py -p no:xdist -q``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.aws import NATIVE, aws_agent, isolated_aws_home, target_pkl
from support.cloudcontrol.client import StandIn
from support.moto import moto_server
from support.processes import Agent, free_port, run_svc

FORMA = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@aws/aws.pkl"
import "@aws/logs/loggroup.pkl"
import "@aws/sqs/queue.pkl"
import "@aws/sns/topic.pkl"

local dead = new queue.Queue {{ label = "dead"; queueName = "shop-dead" }}
local orders = new queue.Queue {{
  label = "orders"; queueName = "shop-orders"; visibilityTimeout = {timeout}
  redrivePolicy = new Dynamic {{ deadLetterTargetArn = dead.res.arn; maxReceiveCount = 3 }}
}}

forma {{
  new svc.Stack {{ label = "shop" }}
  new svc.Target {{ label = "aws"; config = {target} }}
  new loggroup.LogGroup {{ label = "logs"; logGroupName = "shop-logs"; retentionInDays = {retention} }}
  dead
  orders
  new topic.Topic {{
    label = "events"; topicName = "shop-events"
    subscription {{ new {{ protocol = "sqs"; endpoint = orders.res.arn }} }}
  }}
}}
"""


@dataclass
class Path_:
    """One way of handling the forma's types: an agent, and the target its forma names."""

    agent: Agent
    target: str
    directory: Path

    def forma(self, *, timeout: int = 30, retention: int = 7) -> Path:
        path = self.directory / f"shop-{timeout}-{retention}.pkl"
        path.write_text(FORMA.format(target=self.target, timeout=timeout, retention=retention))
        return path

    def svc(self, *args: str) -> Any:
        return run_svc(*args, "--config", str(self.agent.config), env={"COLUMNS": "200"})

    def apply(self, forma: Path) -> Any:
        return self.svc("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")

    def plan(self, forma: Path) -> list[tuple[str, str, str, Any]]:
        """The plan's changes, without what differs by agent (ids, times, the target's config)."""
        simulated = self.svc("apply", "--mode", "reconcile", str(forma), "--simulate", "--output-consumer", "machine")
        assert simulated.returncode == 0, simulated.stdout + simulated.stderr
        updates = (json.loads(simulated.stdout).get("Command") or {}).get("ResourceUpdates") or []
        return sorted((u["Operation"], u["ResourceType"], u["ResourceLabel"],
                       json.dumps([u.get("PatchDocument"), u.get("CreateOnlyPatch")], sort_keys=True))
                      for u in updates)


def discovery_sample() -> str:
    """The types the module's agent discovers: every discoverable type with ``SVC_CLOUDCONTROL_SWEEP=all``; in the
    suite, every 8th (by name, from the plugin's own ``AWS.discoverableTypes``) and the native ones, ~215 of ~1,560:
    listing them all through the stand-in takes minutes and adds nothing a sample does not show."""
    if os.environ.get("SVC_CLOUDCONTROL_SWEEP") == "all":
        return ""
    native = " ".join(f'"{t}"' for t in sorted(NATIVE))
    return ("resourceTypesToDiscover = AWS.discoverableTypes.toList()"
            f".filterIndexed((i, t) -> i % 8 == 0 || List({native.replace(' ', ', ')}).contains(t)).toListing()")


@pytest.fixture(scope="module")
def cloud_control(tmp_path_factory: pytest.TempPathFactory,
                  cloudcontrol_server: StandIn) -> Iterator[tuple[Path_, StandIn]]:
    directory = tmp_path_factory.mktemp("aws-cloudcontrol")
    # Everything through Cloud Control, and any other AWS call to a closed port: nothing leaves this machine.
    env = {"SVC_AWS_CLOUD_CONTROL_TYPES": "*", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
           **cloudcontrol_server.environment()}
    with isolated_aws_home(directory), aws_agent(directory, env, plugin=discovery_sample()) as agent:
        yield Path_(agent, 'new aws.Config { region = "us-east-1" }', directory), cloudcontrol_server


def test_a_forma_is_applied_reapplied_changed_and_destroyed_through_cloud_control(
        cloud_control: tuple[Path_, StandIn]) -> None:
    path, standin = cloud_control

    def models(resource_type: str) -> list[dict[str, Any]]:
        return list(standin.state()["resources"].get(resource_type, {}).values())

    applied = path.apply(path.forma())
    assert applied.returncode == 0, applied.stdout + applied.stderr
    [dead] = [q for q in models("AWS::SQS::Queue") if q["QueueName"] == "shop-dead"]
    [orders] = [q for q in models("AWS::SQS::Queue") if q["QueueName"] == "shop-orders"]
    assert json.loads(orders["RedrivePolicy"])["deadLetterTargetArn"] == dead["Arn"]  # references resolved
    [topic] = models("AWS::SNS::Topic")
    assert topic["Subscription"] == [{"Protocol": "sqs", "Endpoint": orders["Arn"]}]
    assert [group["RetentionInDays"] for group in models("AWS::Logs::LogGroup")] == [7]
    created = standin.state()["calls"]["CreateResource"]

    assert path.plan(path.forma()) == []  # what Cloud Control reads back is what the forma says
    again = path.apply(path.forma())
    assert again.returncode == 0, again.stdout + again.stderr
    assert standin.state()["calls"]["CreateResource"] == created
    assert "UpdateResource" not in standin.state()["calls"]

    changed = path.apply(path.forma(timeout=60, retention=14))
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert [group["RetentionInDays"] for group in models("AWS::Logs::LogGroup")] == [14]
    [orders_after] = [q for q in models("AWS::SQS::Queue") if q["QueueName"] == "shop-orders"]
    assert orders_after["VisibilityTimeout"] == 60 and orders_after["QueueUrl"] == orders["QueueUrl"]  # in place
    assert standin.state()["calls"]["CreateResource"] == created

    destroyed = path.svc("destroy", str(path.forma(timeout=60, retention=14)), "--yes", "--wait")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert {name: found for name, found in standin.state()["resources"].items() if found} == {}


def test_a_forma_valid_for_both_paths_plans_identically(cloud_control: tuple[Path_, StandIn],
                                                       tmp_path_factory: pytest.TempPathFactory) -> None:
    through_cloud_control, _ = cloud_control
    directory = tmp_path_factory.mktemp("aws-native")
    with moto_server(directory / "moto.log") as url, \
            aws_agent(directory, {"SVC_PID_FILE": str(directory / "agent.pid")}) as agent:  # a second agent
        native = Path_(agent, target_pkl(url), directory)
        for path in (native, through_cloud_control):
            applied = path.apply(path.forma())
            assert applied.returncode == 0, applied.stdout + applied.stderr
        plans = [path.plan(path.forma(timeout=45, retention=30)) for path in (native, through_cloud_control)]
        for path in (native, through_cloud_control):
            path.svc("destroy", str(path.forma()), "--yes", "--wait")
    assert plans[0] == plans[1]
    assert {(operation, label) for operation, _, label, _ in plans[0]} == {("update", "logs"), ("update", "orders")}


def test_discovery_lists_every_type_through_cloud_control_retrying_its_throttling(
        cloud_control: tuple[Path_, StandIn]) -> None:
    """Every listing Cloud Control throttles is retried with backoff, so a fifth of them throttled loses none."""
    path, standin = cloud_control
    target = path.directory / "target.pkl"  # discovery lists the targets the agent knows
    target.write_text('amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\nimport "@aws/aws.pkl"\n'
                      f'forma {{\n  new svc.Target {{ label = "aws"; config = {path.target} }}\n}}\n')
    registered = path.svc("apply", "--mode", "patch", str(target), "--yes", "--wait")
    assert registered.returncode == 0, registered.stdout + registered.stderr
    queue = standin.put_resource("AWS::SQS::Queue", {"QueueName": "found"})["Identifier"]
    standin.put_resource("AWS::Logs::LogGroup", {"LogGroupName": "agent-logs",
                                                 "Tags": [{"Key": "svc:agent", "Value": "true"}]})
    vpc = standin.put_resource("AWS::EC2::VPC", {"CidrBlock": "10.8.0.0/16"})["Identifier"]
    subnet = standin.put_resource("AWS::EC2::Subnet", {"VpcId": vpc, "CidrBlock": "10.8.1.0/24"})["Identifier"]
    standin.answer_error("ListResources", "AccessDeniedException", type_name="AWS::IAM::Role",
                         message="not authorized to perform cloudformation:ListResources")
    standin.throttle(rate=0.2, operations=["ListResources"])  # Cloud Control's ThrottlingException: retried

    try:
        response = httpx.post(f"{path.agent.url}/api/v1/admin/discover", timeout=300)
    finally:
        standin.throttle()
    assert response.status_code == 200, response.text
    assert standin.state()["throttled"]["ListResources"] > 0
    report = response.json()
    listed = path.svc("inventory", "resources", "--query", "managed:false", "--output-consumer", "machine")
    assert listed.returncode == 0, listed.stderr
    found = {(r["Type"], r["NativeID"]): r for r in json.loads(listed.stdout)["Resources"]}

    assert ("AWS::SQS::Queue", queue) in found and ("AWS::EC2::VPC", vpc) in found
    assert not any(native_id == "agent-logs" for _, native_id in found), "the agent's own log group was kept"
    parent = found[("AWS::EC2::Subnet", subnet)]["Properties"]["VpcId"]
    assert (parent.get("$value") if isinstance(parent, dict) else parent) == vpc  # a child under its parent
    assert [entry.split(" ", 1)[0] for entry in report["Denied"]] == ["AWS::IAM::Role"], report
    lines = [line for line in path.agent.output().splitlines()
             if "discovery:" in line and "AWS::IAM::Role on target" in line]
    assert len(lines) == 1 and "AccessDenied" in lines[0], lines
    assert not report["Errors"], report
