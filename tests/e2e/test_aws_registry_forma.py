"""The registry's types in real formas, through the real CLI and agent, on the Cloud Control stand-in (issue 26,
acceptance 2 and 4): ``examples/aws/platform.pkl`` (42 types of 21 services, wired by references) is applied,
re-applied as a no-op, changed in place and by a replacement, and destroyed in dependency order;
``examples/aws/full-control.pkl`` (the agent's own full-control deployment shape) is applied and destroyed.

Every type goes through Cloud Control (``SVC_AWS_CLOUD_CONTROL_TYPES=*``, routing.py), the native ones too: moto
has no Cloud Control, and one agent on one stand-in keeps the module's time modest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.aws import aws_agent, isolated_aws_home
from support.cloudcontrol.client import StandIn
from support.processes import Agent, free_port, run_svc

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "aws"
# An identifier a service makes up (vpc-0a1b…, an ARN), as opposed to a name the forma chose: a property
# holding one is a reference (names may repeat by chance: a tag value that is also a cluster's name).
_MADE_UP = re.compile(r"^(arn:.+|[a-z0-9]+-[0-9a-f]{8,})$")

Models = dict[str, dict[str, dict[str, Any]]]  # type → identifier → model


@dataclass
class Estate:
    agent: Agent
    standin: StandIn

    def svc(self, command: str, example: str, *flags: str) -> Any:
        return run_svc(command, *(("--mode", "reconcile") if command == "apply" else ()), str(EXAMPLES / example),
                       "--region", "us-east-1", *flags, "--yes", "--wait", "--config", str(self.agent.config),
                       env={"COLUMNS": "200"})

    def models(self) -> Models:
        return {name: found for name, found in self.standin.state()["resources"].items() if found}

    def one(self, type_name: str, **wanted: Any) -> dict[str, Any]:
        [model] = [model for model in self.models().get(type_name, {}).values()
                   if all(model.get(key) == value for key, value in wanted.items())]
        return model

    def requests(self, operation: str) -> list[dict[str, Any]]:
        """The stand-in's resource requests of one operation, in the order they were made (the real API's
        ListResourceRequests)."""
        pages = self.standin.client().get_paginator("list_resource_requests").paginate(
            ResourceRequestStatusFilter={"Operations": [operation]})
        return [summary for page in pages for summary in page["ResourceRequestStatusSummaries"]]


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory, cloudcontrol_server: StandIn) -> Iterator[Estate]:
    directory = tmp_path_factory.mktemp("aws-registry-forma")
    # Everything through Cloud Control, and any other AWS call to a closed port: nothing leaves this machine.
    env = {"SVC_AWS_CLOUD_CONTROL_TYPES": "*", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
           **cloudcontrol_server.environment()}
    with isolated_aws_home(directory), aws_agent(directory, env) as agent:
        yield Estate(agent, cloudcontrol_server)


def references(models: Models) -> set[tuple[tuple[str, str], tuple[str, str]]]:
    """(dependent, referenced) pairs of (type, identifier): a property of the dependent holds the referenced
    one's made-up identifier or ARN (anywhere in it: an ARN inside a policy document too)."""
    wanted: dict[str, tuple[str, str]] = {}
    for type_name, found in models.items():
        for identifier, model in found.items():
            for value in (identifier, model.get("Arn")):
                if isinstance(value, str) and _MADE_UP.match(value):
                    wanted[value] = (type_name, identifier)
    pairs = set()
    for type_name, found in models.items():
        for identifier, model in found.items():
            for text in _strings(model):
                for value, referenced in wanted.items():
                    if value in text and referenced != (type_name, identifier):
                        pairs.add(((type_name, identifier), referenced))
    return pairs


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for member in value.values():
            yield from _strings(member)
    elif isinstance(value, list):
        for member in value:
            yield from _strings(member)


def test_a_platform_of_forty_types_is_applied_reapplied_changed_and_destroyed_in_order(estate: Estate) -> None:
    applied = estate.svc("apply", "platform.pkl")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    models = estate.models()
    assert len(models) >= 40 and len({name.split("::")[1] for name in models}) >= 15, sorted(models)
    # The references the issue names, resolved to what the stand-in made up.
    subnets = sorted(estate.one("AWS::EC2::Subnet", CidrBlock=cidr)["SubnetId"]
                     for cidr in ("10.20.1.0/24", "10.20.2.0/24"))
    template = estate.one("AWS::EC2::LaunchTemplate", LaunchTemplateName="platform-web")
    web = estate.one("AWS::EC2::SecurityGroup", GroupDescription="HTTP to the platform load balancer and instances")
    assert estate.one("AWS::EC2::Subnet", CidrBlock="10.20.1.0/24")["VpcId"] == \
        estate.one("AWS::EC2::VPC", CidrBlock="10.20.0.0/16")["VpcId"]
    assert template["LaunchTemplateData"]["SecurityGroupIds"] == [web["GroupId"]]
    group = estate.one("AWS::AutoScaling::AutoScalingGroup", AutoScalingGroupName="platform-web")
    assert sorted(group["VPCZoneIdentifier"]) == subnets
    assert group["LaunchTemplate"]["LaunchTemplateId"] == template["LaunchTemplateId"]
    service = estate.one("AWS::ECS::Service", ServiceName="platform-app")
    assert service["TaskDefinition"] == estate.one("AWS::ECS::TaskDefinition", Family="platform-app")["TaskDefinitionArn"]
    assert sorted(service["NetworkConfiguration"]["AwsvpcConfiguration"]["Subnets"]) == subnets
    function = estate.one("AWS::Lambda::Function", FunctionName="platform-nightly")
    assert function["Role"] == estate.one("AWS::IAM::Role", RoleName="platform-functions")["Arn"]
    assert estate.one("AWS::Events::Rule", Name="platform-nightly")["Targets"][0]["Arn"] == function["Arn"]
    [rule] = estate.one("AWS::S3::Bucket", BucketName="platform-assets-us-east-1")["BucketEncryption"][
        "ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == estate.one("AWS::KMS::Key")["Arn"]
    created = estate.standin.state()["calls"]["CreateResource"]

    again = estate.svc("apply", "platform.pkl")
    assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr
    assert estate.standin.state()["calls"]["CreateResource"] == created
    assert "UpdateResource" not in estate.standin.state()["calls"]

    changed = estate.svc("apply", "platform.pkl", "--retention", "14", "--table", "orders-v2")
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert estate.one("AWS::Logs::LogGroup", LogGroupName="/platform/app")["RetentionInDays"] == 14  # in place
    assert [r["TypeName"] for r in estate.requests("UPDATE")] and \
        {r["TypeName"] for r in estate.requests("UPDATE")} <= {"AWS::Logs::LogGroup", "AWS::SSM::Parameter"}
    assert set(estate.models()["AWS::DynamoDB::Table"]) == {"orders-v2"}  # the create-only name: replaced
    assert estate.one("AWS::SSM::Parameter", Name="/platform/orders-table")["Value"] == "orders-v2"

    before = estate.models()
    dependencies = references(before)
    assert len(dependencies) >= 40, dependencies
    destroyed = estate.svc("destroy", "platform.pkl", "--retention", "14", "--table", "orders-v2")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert estate.models() == {}
    order = {(r["TypeName"], r["Identifier"]): index
             for index, r in enumerate(estate.requests("DELETE")) if r["OperationStatus"] == "SUCCESS"}
    late = sorted((dependent, referenced) for dependent, referenced in dependencies
                  if dependent in order and referenced in order and order[dependent] > order[referenced])
    assert not late, f"deleted before what refers to it: {late}"


def test_the_agent_s_full_control_shape_is_applied_and_destroyed(estate: Estate) -> None:
    applied = estate.svc("apply", "full-control.pkl", "--image", "registry.example/svc")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    rules = {(r["FromPort"], r["SourceSecurityGroupId"], r["GroupId"])
             for r in estate.models()["AWS::EC2::SecurityGroupIngress"].values()}
    groups = {name: estate.one("AWS::EC2::SecurityGroup", GroupName=name)["GroupId"]
              for name in ("svc-client-tunnel", "svc-agent", "svc-database")}
    assert rules == {(49684, groups["svc-client-tunnel"], groups["svc-agent"]),
                     (5432, groups["svc-agent"], groups["svc-database"])}
    zones = {subnet["AvailabilityZone"] for subnet in estate.models()["AWS::EC2::Subnet"].values()}
    assert zones == {"us-east-1a", "us-east-1b"}
    service = estate.one("AWS::ECS::Service", ServiceName="svc-agent")
    assert service["DeploymentConfiguration"]["DeploymentCircuitBreaker"] == {"Enable": True, "Rollback": True}
    name = estate.one("AWS::ServiceDiscovery::Service", Name="agent")
    assert service["ServiceRegistries"] == [{"RegistryArn": name["Arn"]}]
    assert name["NamespaceId"] == estate.one("AWS::ServiceDiscovery::PrivateDnsNamespace", Name="svc.internal")["Id"]
    definition = estate.one("AWS::ECS::TaskDefinition", Family="svc-agent")
    assert definition["ExecutionRoleArn"] == estate.one("AWS::IAM::Role", RoleName="svc-agent-execution")["Arn"]
    assert definition["TaskRoleArn"] == estate.one("AWS::IAM::Role", RoleName="svc-agent-task")["Arn"]
    [container] = definition["ContainerDefinitions"]
    config = estate.one("AWS::SecretsManager::Secret", Name="svc/agent-config")
    assert {"Name": "SVC_CONFIG", "ValueFrom": config["Id"]} in container["Secrets"]
    assert container["LogConfiguration"]["Options"]["awslogs-group"] == "/svc/agent"
    assert container["PortMappings"][0]["ContainerPort"] == 49684

    again = estate.svc("apply", "full-control.pkl", "--image", "registry.example/svc")
    assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr
    destroyed = estate.svc("destroy", "full-control.pkl", "--image", "registry.example/svc")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert estate.models() == {}


def test_a_security_group_description_ec2_would_refuse_is_refused_before_anything_is_sent(
        home: Path, tmp_path: Path) -> None:
    forma = tmp_path / "group.pkl"
    forma.write_text('amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\nimport "@aws/aws.pkl"\n'
                     'import "@aws/ec2/securitygroup.pkl"\nforma {\n  new svc.Stack { label = "s" }\n'
                     '  new svc.Target { label = "aws"; config = new aws.Config { region = "us-east-1" } }\n'
                     '  new securitygroup.SecurityGroup { label = "web"; groupDescription = "the shop\'s web" }\n}\n')
    result = run_svc("eval", str(forma))
    assert result.returncode != 0 and "groupDescription" in result.stderr, result.stdout + result.stderr
    forma.write_text(forma.read_text().replace("shop's", "shop"))
    assert run_svc("eval", str(forma)).returncode == 0
