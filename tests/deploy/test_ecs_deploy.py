"""``svc deploy update`` / ``rollback`` against moto's ECS on a loopback port, on a service built from
the deploy/ecs/ files exactly as a user applies them (placeholders filled with moto's resources)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import yaml
from deploy_support import ACCOUNT, REGION, aws_environment, fill, load_deploy_json, moto_server

from support.processes import SVC, free_port, run_svc
from svc import __version__

# What ECS adds to a description and RegisterTaskDefinition does not take.
READ_ONLY = {"taskDefinitionArn", "revision", "status", "registeredAt", "registeredBy", "deregisteredAt",
             "compatibilities", "requiresAttributes"}
# The full-control shape runs the -rds-ca variant (its config names the CA bundle); an update keeps the variant.
NEW_IMAGE = "registry.example.com/svc:1.2.3-rds-ca"
PLAIN_IMAGE = "registry.example.com/svc:1.2.3"


@dataclass
class Aws:
    url: str
    env: dict[str, str]

    def client(self, name: str) -> Any:
        return boto3.client(name, region_name=REGION, endpoint_url=self.url,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    @property
    def ecs(self) -> Any:
        return self.client("ecs")


@pytest.fixture(scope="module")
def moto_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with moto_server(tmp_path_factory.mktemp("moto") / "moto.log") as url:
        yield url


@pytest.fixture
def aws(moto_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Aws:
    httpx.post(f"{moto_url}/moto-api/reset", timeout=10).raise_for_status()
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL", "AWS_MAX_ATTEMPTS"):
        monkeypatch.delenv(name, raising=False)
    return Aws(moto_url, aws_environment(tmp_path))


def apply_full_control(aws: Aws, stable: bool = True) -> dict[str, str]:
    """Creates the full-control shape in moto from deploy/ecs/*.json; returns the placeholder values."""
    ec2, discovery = aws.client("ec2"), aws.client("servicediscovery")
    vpc = ec2.create_vpc(CidrBlock="10.40.0.0/16")["Vpc"]["VpcId"]
    subnet_a = ec2.create_subnet(VpcId=vpc, CidrBlock="10.40.1.0/24", AvailabilityZone=f"{REGION}a")
    subnet_b = ec2.create_subnet(VpcId=vpc, CidrBlock="10.40.2.0/24", AvailabilityZone=f"{REGION}b")

    def group(name: str) -> str:
        return ec2.create_security_group(GroupName=name, Description=name, VpcId=vpc)["GroupId"]

    operation = discovery.create_private_dns_namespace(Name="svc.internal", Vpc=vpc)["OperationId"]
    namespace = discovery.get_operation(OperationId=operation)["Operation"]["Targets"]["NAMESPACE"]
    role = f"arn:aws:iam::{ACCOUNT}:role"
    secret = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret"
    values = {
        "PRIVATE_SUBNET_A": subnet_a["Subnet"]["SubnetId"], "PRIVATE_SUBNET_B": subnet_b["Subnet"]["SubnetId"],
        "AGENT_SECURITY_GROUP": group("svc-agent"), "CLIENT_TUNNEL_SECURITY_GROUP": group("svc-tunnel"),
        "DATABASE_SECURITY_GROUP": group("svc-db"), "DISCOVERY_NAMESPACE_ID": namespace,
        "EXECUTION_ROLE_ARN": f"{role}/svc-agent-execution", "TASK_ROLE_ARN": f"{role}/svc-agent-task",
        "IMAGE_REPOSITORY": "registry.example.com/svc", "CONFIG_SECRET_ARN": f"{secret}:svc/agent-config-AbCdEf",
        "DB_SECRET_ARN": f"{secret}:svc/db-XyZ123", "REGION": REGION, "TAG_KEY": "svc:agent", "TAG_VALUE": "true",
    }
    for ingress in ("ecs/agent-ingress.json", "ecs/database-ingress.json"):
        ec2.authorize_security_group_ingress(**fill(load_deploy_json(ingress), values))
    values["DISCOVERY_SERVICE_ARN"] = discovery.create_service(
        **fill(load_deploy_json("ecs/discovery-service.json"), values))["Service"]["Arn"]
    service = fill(load_deploy_json("ecs/service.json"), values)
    aws.ecs.create_cluster(clusterName=service["cluster"],  # tagged as docs/deployment.md's command does
                           tags=[{"key": values["TAG_KEY"], "value": values["TAG_VALUE"]}])
    aws.ecs.register_task_definition(**fill(load_deploy_json("ecs/task-definition.json"), values))
    aws.ecs.create_service(**service)
    if stable:
        make_stable(aws, "svc", "svc-agent")
    return values


def make_stable(aws: Aws, cluster: str | None, service: str) -> None:
    """Moto runs every desired task once the desired count is set: the service is then stable."""
    aws.ecs.update_service(service=service, desiredCount=1, **({"cluster": cluster} if cluster else {}))


def deploy(aws: Aws, *args: str) -> subprocess.CompletedProcess[str]:
    return run_svc("deploy", *args, "--region", REGION, "--endpoint-url", aws.url, "--poll-interval", "0.05",
                   env=aws.env, timeout=120)


def described(aws: Aws, reference: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    answer = aws.ecs.describe_task_definition(taskDefinition=reference, include=["TAGS"])
    return answer["taskDefinition"], answer.get("tags", [])


def service_of(aws: Aws, cluster: str | None = "svc", name: str = "svc-agent") -> dict[str, Any]:
    return aws.ecs.describe_services(services=[name], **({"cluster": cluster} if cluster else {}))["services"][0]


def registrable(task_definition: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in task_definition.items() if key not in READ_ONLY}


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), result.stderr
    return errors[0]


def test_update_registers_a_revision_that_differs_only_in_the_image_and_moves_the_service(aws: Aws) -> None:
    apply_full_control(aws)
    before, before_tags = described(aws, "svc-agent:1")
    deployment = service_of(aws)["deployments"][0]["id"]

    result = deploy(aws, "update", "--image", NEW_IMAGE, "--cluster", "svc", "--service", "svc-agent")

    assert result.returncode == 0, result.stderr
    after, after_tags = described(aws, "svc-agent")  # the family's latest revision
    assert after["revision"] == 2
    assert after["containerDefinitions"][0]["image"] == NEW_IMAGE
    # Put the old image back: everything else (roles, secrets, health check, sizing, …) must be equal.
    after["containerDefinitions"][0]["image"] = before["containerDefinitions"][0]["image"]
    assert registrable(after) == registrable(before)
    assert after_tags == before_tags == [{"key": "svc:agent", "value": "true"}]
    assert service_of(aws)["taskDefinition"] == after["taskDefinitionArn"]
    assert service_of(aws)["deployments"][0]["id"] != deployment  # a forced new deployment
    # Waited until stable, with progress, then told the client what to install.
    assert "svc-agent:2: 1/1 running, 0 pending, 1 deployment" in result.stderr
    assert "svc upgrade --version 1.2.3" in result.stdout


@pytest.mark.parametrize("schema", ["json", "yaml"])
def test_update_machine_output_is_one_document(aws: Aws, schema: str) -> None:
    apply_full_control(aws)
    result = deploy(aws, "update", "--image", NEW_IMAGE, "--cluster", "svc", "--service", "svc-agent",
                    "--output-consumer", "machine", "--output-schema", schema)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout) if schema == "json" else yaml.safe_load(result.stdout)
    arn = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/svc-agent"
    assert document == {
        "Action": "update", "Cluster": "svc", "Service": "svc-agent", "Container": "svc-agent",
        "PreviousTaskDefinition": f"{arn}:1", "TaskDefinition": f"{arn}:2", "Image": NEW_IMAGE,
        "Stable": True, "Version": "1.2.3", "UpgradeCommand": "svc upgrade --version 1.2.3",
    }


def test_rollback_returns_to_the_previous_active_revision(aws: Aws) -> None:
    apply_full_control(aws)
    assert deploy(aws, "update", "--image", NEW_IMAGE, "--cluster", "svc", "--service", "svc-agent").returncode == 0
    assert deploy(aws, "update", "--image", "registry.example.com/svc:1.3.0-rds-ca", "--cluster", "svc",
                  "--service", "svc-agent").returncode == 0
    assert service_of(aws)["taskDefinition"].endswith("svc-agent:3")
    deployment = service_of(aws)["deployments"][0]["id"]

    result = deploy(aws, "rollback", "--cluster", "svc", "--service", "svc-agent",
                    "--output-consumer", "machine")

    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert service_of(aws)["taskDefinition"] == document["TaskDefinition"]
    assert service_of(aws)["deployments"][0]["id"] != deployment  # a forced new deployment
    assert document["TaskDefinition"].endswith("svc-agent:2")
    assert document["PreviousTaskDefinition"].endswith("svc-agent:3")
    assert document["RecentRevisions"] == [3, 2]  # newest first
    assert (document["Image"], document["UpgradeCommand"]) == (NEW_IMAGE, "svc upgrade --version 1.2.3")
    assert "rolling back from 3 to 2" in result.stderr and "svc-agent:2: 1/1 running" in result.stderr

    # Again: from 2 back to 1, the image the deploy file pins.
    again = deploy(aws, "rollback", "--cluster", "svc", "--service", "svc-agent")
    assert again.returncode == 0, again.stderr
    assert service_of(aws)["taskDefinition"].endswith("svc-agent:1")
    assert f"svc upgrade --version {__version__}" in again.stdout


def test_rollback_skips_deregistered_revisions_and_stops_at_the_oldest(aws: Aws) -> None:
    apply_full_control(aws)
    for tag in ("1.2.3", "1.3.0"):
        assert deploy(aws, "update", "--image", f"registry.example.com/svc:{tag}-rds-ca", "--cluster", "svc",
                      "--service", "svc-agent").returncode == 0
    aws.ecs.deregister_task_definition(taskDefinition="svc-agent:2")  # inactive: no longer deployable

    assert deploy(aws, "rollback", "--cluster", "svc", "--service", "svc-agent").returncode == 0
    assert service_of(aws)["taskDefinition"].endswith("svc-agent:1")

    error = one_error_line(deploy(aws, "rollback", "--cluster", "svc", "--service", "svc-agent"))
    assert error == "Error: svc-agent:1 is the oldest active revision of svc-agent; there is nothing to roll back to"


def wait_for_unstable_report(process: subprocess.Popen[str]) -> str:
    """Reads stderr until the command reports the service as not yet running; returns what it read."""
    assert process.stderr is not None
    seen = ""
    while "0/1 running" not in (line := process.stderr.readline()):
        assert line, f"exited before waiting:\n{seen}"
        seen += line
    return seen + line


def start_deploy(aws: Aws, *args: str) -> subprocess.Popen[str]:
    command = [SVC, "deploy", *args, "--region", REGION, "--endpoint-url", aws.url, "--poll-interval", "0.05"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **aws.env})


@pytest.mark.parametrize("action", ["update", "rollback"])
def test_update_and_rollback_wait_until_the_service_is_stable(aws: Aws, action: str) -> None:
    apply_full_control(aws)
    if action == "rollback":
        assert deploy(aws, "update", "--image", NEW_IMAGE, "--cluster", "svc", "--service", "svc-agent").returncode == 0
    # A fresh service on the newest revision: desired 1, running 0 until the test scales it.
    aws.ecs.create_service(cluster="svc", serviceName="fresh", taskDefinition="svc-agent", desiredCount=1)
    args = ["update", "--image", NEW_IMAGE] if action == "update" else ["rollback"]
    target = "svc-agent:2" if action == "update" else "svc-agent:1"

    process = start_deploy(aws, *args, "--cluster", "svc", "--service", "fresh")
    progress = wait_for_unstable_report(process)
    assert process.poll() is None  # still waiting
    make_stable(aws, "svc", "fresh")
    stdout, rest = process.communicate(timeout=60)

    assert process.returncode == 0, progress + rest
    assert f"{target}: 0/1 running, 1 pending" in progress and f"{target}: 1/1 running, 0 pending" in rest
    assert service_of(aws, name="fresh")["taskDefinition"].endswith(target)
    assert "svc upgrade --version" in stdout


def test_waiting_gives_up_after_the_timeout_with_one_clear_error(aws: Aws) -> None:
    apply_full_control(aws, stable=False)
    result = deploy(aws, "update", "--image", NEW_IMAGE, "--cluster", "svc", "--service", "svc-agent",
                    "--timeout", "1")
    assert one_error_line(result) == ("Error: the service was not stable after 1s (0/1 running, 1 pending, "
                                      "1 deployment, rollout IN_PROGRESS); it may still converge: check its "
                                      "events with aws ecs describe-services")
    # The deployment itself was made; only the wait gave up.
    assert service_of(aws)["taskDefinition"].endswith("svc-agent:2")


def test_wait_fails_when_the_service_is_rolled_back_underneath(aws: Aws) -> None:
    apply_full_control(aws, stable=False)
    process = start_deploy(aws, "update", "--image", NEW_IMAGE, "--cluster", "svc", "--service", "svc-agent")
    wait_for_unstable_report(process)
    # What a circuit breaker does: the service ends stable, but on the old revision.
    aws.ecs.update_service(cluster="svc", service="svc-agent", taskDefinition="svc-agent:1", desiredCount=1)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    assert stderr.strip().splitlines()[-1].startswith(
        "Error: the service now runs svc-agent:1 instead of svc-agent:2: the deployment was rolled back or replaced")


@pytest.mark.parametrize(("args", "expected"), [
    (["--cluster", "svc", "--service", "nope"],
     f"Error: service nope not found in cluster svc ({REGION}); check --service and --cluster"),
    (["--cluster", "nope", "--service", "svc-agent"],
     f"Error: cluster nope not found in {REGION}; check --cluster and --region"),
    (["--service", "svc-agent"],
     f"Error: the default cluster does not exist in {REGION}; pass --cluster with the cluster that runs "
     "the service (or --region)"),
])
@pytest.mark.parametrize("command", [["update", "--image", NEW_IMAGE], ["rollback"]])
def test_a_missing_service_or_cluster_is_one_clear_error_and_changes_nothing(
        aws: Aws, command: list[str], args: list[str], expected: str) -> None:
    apply_full_control(aws)
    assert one_error_line(deploy(aws, *command, *args)) == expected
    assert aws.ecs.list_task_definitions(familyPrefix="svc-agent")["taskDefinitionArns"] == [
        f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/svc-agent:1"]


def test_express_shape_uses_the_default_cluster_without_a_cluster_argument(aws: Aws) -> None:
    aws.ecs.create_cluster(clusterName="default")
    aws.ecs.register_task_definition(family="svc-express", containerDefinitions=[
        {"name": "Main", "image": f"registry.example.com/svc:{__version__}", "essential": True,
         "portMappings": [{"containerPort": 49684}]}], cpu="1024", memory="2048",
        networkMode="awsvpc", requiresCompatibilities=["FARGATE"])
    aws.ecs.create_service(serviceName="svc-agent", taskDefinition="svc-express", desiredCount=1)
    make_stable(aws, None, "svc-agent")

    update = deploy(aws, "update", "--image", PLAIN_IMAGE, "--service", "svc-agent", "--output-consumer", "machine")
    assert update.returncode == 0, update.stderr
    assert json.loads(update.stdout)["Cluster"] == "default"
    assert service_of(aws, cluster=None)["taskDefinition"].endswith("svc-express:2")

    rollback = deploy(aws, "rollback", "--service", "svc-agent")
    assert rollback.returncode == 0, rollback.stderr
    assert service_of(aws, cluster=None)["taskDefinition"].endswith("svc-express:1")


def test_update_changes_only_the_agent_container_of_a_task_with_a_sidecar(aws: Aws) -> None:
    values = apply_full_control(aws)
    definition = fill(load_deploy_json("ecs/task-definition.json"), values)
    sidecar = {"name": "mesh", "image": "mesh/agent:1.80.0", "essential": True, "memoryReservation": 64}
    definition["containerDefinitions"].append(sidecar)
    aws.ecs.register_task_definition(**definition)  # revision 2
    aws.ecs.update_service(cluster="svc", service="svc-agent", taskDefinition="svc-agent:2")

    wrong = deploy(aws, "update", "--image", NEW_IMAGE, "--cluster", "svc", "--service", "svc-agent",
                   "--container", "nope")
    assert one_error_line(wrong) == ("Error: task definition svc-agent:2 has no container nope; "
                                     "its containers: svc-agent, mesh")

    result = deploy(aws, "update", "--image", NEW_IMAGE, "--cluster", "svc", "--service", "svc-agent")
    assert result.returncode == 0, result.stderr
    images = {c["name"]: c["image"] for c in described(aws, "svc-agent:3")[0]["containerDefinitions"]}
    assert images == {"svc-agent": NEW_IMAGE, "mesh": "mesh/agent:1.80.0"}


@pytest.mark.parametrize(("image", "expected"), [
    ("registry.example.com/svc:latest", "Error: image registry.example.com/svc:latest does not pin a version; "
                                        "use a version tag such as registry.example.com/svc:1.2.3 (never latest)"),
    ("registry.example.com/svc", "Error: image registry.example.com/svc does not pin a version; "
                                 "use a version tag such as registry.example.com/svc:1.2.3 (never latest)"),
    (f"registry.example.com/svc:{__version__}-rds-ca", f"Error: service svc-agent already runs "
                                                       f"registry.example.com/svc:{__version__}-rds-ca (svc-agent:1); "
                                                       "nothing to update"),
])
def test_update_refuses_an_unpinned_or_unchanged_image(aws: Aws, image: str, expected: str) -> None:
    apply_full_control(aws)
    assert one_error_line(deploy(aws, "update", "--image", image, "--cluster", "svc", "--service", "svc-agent")) == expected
    assert len(aws.ecs.list_task_definitions(familyPrefix="svc-agent")["taskDefinitionArns"]) == 1


def test_update_keeps_the_image_variant_unless_told_to_change_it(aws: Aws) -> None:
    apply_full_control(aws)  # runs …:<version>-rds-ca: its config reads the CA bundle only that image holds
    refused = one_error_line(deploy(aws, "update", "--image", PLAIN_IMAGE, "--cluster", "svc", "--service", "svc-agent"))
    assert refused == (f"Error: the service runs the -rds-ca variant (registry.example.com/svc:{__version__}-rds-ca) "
                       f"and {PLAIN_IMAGE} is the plain variant; its config may need what the variant holds. Use "
                       f"{NEW_IMAGE}, or pass --change-variant once the config no longer needs it")
    assert len(aws.ecs.list_task_definitions(familyPrefix="svc-agent")["taskDefinitionArns"]) == 1  # nothing made

    moved = deploy(aws, "update", "--image", PLAIN_IMAGE, "--cluster", "svc", "--service", "svc-agent",
                   "--change-variant")
    assert moved.returncode == 0, moved.stderr
    assert described(aws, "svc-agent")[0]["containerDefinitions"][0]["image"] == PLAIN_IMAGE


def test_credentials_come_from_the_standard_chain_and_their_absence_is_one_clear_error(aws: Aws) -> None:
    apply_full_control(aws)
    env = {**aws.env, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    error = one_error_line(deploy(aws.__class__(aws.url, env), "update", "--image", NEW_IMAGE,
                                  "--cluster", "svc", "--service", "svc-agent"))
    assert error.startswith("Error: no AWS credentials found in the standard chain")


def test_an_unreachable_endpoint_is_one_clear_error(aws: Aws) -> None:
    env = {**aws.env, "AWS_MAX_ATTEMPTS": "1"}
    closed = f"http://127.0.0.1:{free_port()}"
    result = run_svc("deploy", "rollback", "--service", "svc-agent", "--region", REGION, "--endpoint-url", closed,
                     env=env)
    assert one_error_line(result) == (f"Error: cannot reach ECS at {closed}/: check --region, --endpoint-url "
                                      "and the network")


def test_missing_region_and_malformed_endpoint_are_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    env = {**aws_environment(tmp_path)}
    env.pop("AWS_DEFAULT_REGION")
    no_region = run_svc("deploy", "rollback", "--service", "svc-agent", env=env)
    assert one_error_line(no_region) == "Error: no AWS region is configured; pass --region or set AWS_REGION"
    malformed = run_svc("deploy", "rollback", "--service", "svc-agent", "--region", REGION,
                        "--endpoint-url", "not a url", env=env)
    assert one_error_line(malformed) == "Error: invalid --endpoint-url 'not a url': Invalid endpoint: not a url"
