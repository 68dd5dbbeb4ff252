"""The deployment shapes under deploy/: valid API requests, and every number and rule of the contract."""

from __future__ import annotations

import re
from pathlib import Path

import boto3
import pytest
from botocore.validate import ParamValidator
from deploy_support import ACCOUNT, DEPLOY, PLACEHOLDER, REGION, REPO, fill, load_deploy_json

from svc import __version__
from svc.config import load_config

# Each file is the request of one API operation: (service, operation).
OPERATIONS = {
    "ecs/task-definition.json": ("ecs", "RegisterTaskDefinition"),
    "ecs/service.json": ("ecs", "CreateService"),
    "ecs/discovery-service.json": ("servicediscovery", "CreateService"),
    "ecs/agent-ingress.json": ("ec2", "AuthorizeSecurityGroupIngress"),
    "ecs/database-ingress.json": ("ec2", "AuthorizeSecurityGroupIngress"),
    "express/service.json": ("ecs", "CreateExpressGatewayService"),
    "apprunner/auto-scaling.json": ("apprunner", "CreateAutoScalingConfiguration"),
    "apprunner/service.json": ("apprunner", "CreateService"),
}
ARN = f"arn:aws:iam::{ACCOUNT}:role/svc"
SAMPLE_VALUES = {
    "REGION": REGION, "IMAGE_REPOSITORY": "registry.example.com/svc", "TAG_KEY": "svc:agent", "TAG_VALUE": "true",
    "ECR_REPOSITORY": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/svc",
    "CONFIG_SECRET_ARN": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:svc-config-AbCdEf",
    "DB_SECRET_ARN": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:svc-db-AbCdEf",
    "EXECUTION_ROLE_ARN": ARN, "TASK_ROLE_ARN": ARN, "INFRASTRUCTURE_ROLE_ARN": ARN,
    "APPRUNNER_ACCESS_ROLE_ARN": ARN, "APPRUNNER_INSTANCE_ROLE_ARN": ARN,
    "AUTO_SCALING_CONFIGURATION_ARN": f"arn:aws:apprunner:{REGION}:{ACCOUNT}:autoscalingconfiguration/svc/1/abc",
    "PRIVATE_SUBNET_A": "subnet-0a", "PRIVATE_SUBNET_B": "subnet-0b", "AGENT_SECURITY_GROUP": "sg-0agent",
    "CLIENT_TUNNEL_SECURITY_GROUP": "sg-0tunnel", "DATABASE_SECURITY_GROUP": "sg-0db",
    "DISCOVERY_NAMESPACE_ID": "ns-abc", "DISCOVERY_SERVICE_ARN": f"arn:aws:servicediscovery:{REGION}:{ACCOUNT}:service/srv-1",
}


def image_tag(image: str) -> str:
    return image.rsplit(":", 1)[1]


def test_every_deploy_file_is_a_valid_request_of_its_operation() -> None:
    files = {str(path.relative_to(DEPLOY)) for path in DEPLOY.rglob("*.json")}
    assert files == set(OPERATIONS)
    for name, (service, operation) in OPERATIONS.items():
        shape = boto3.client(service, region_name=REGION).meta.service_model.operation_model(operation).input_shape
        report = ParamValidator().validate(fill(load_deploy_json(name), SAMPLE_VALUES), shape)
        assert not report.has_errors(), f"{name}: {report.generate_report()}"


def test_every_placeholder_is_explained_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Deployment"):]
    used = {match for path in DEPLOY.rglob("*") if path.is_file() for match in PLACEHOLDER.findall(path.read_text())}
    assert used, "no placeholders found"
    assert sorted(name for name in used if f"`{name}`" not in section) == []


def test_full_control_task_definition() -> None:
    task = load_deploy_json("ecs/task-definition.json")
    assert (task["cpu"], task["memory"]) == ("1024", "2048")
    assert task["requiresCompatibilities"] == ["FARGATE"] and task["networkMode"] == "awsvpc"
    assert task["executionRoleArn"] == "<EXECUTION_ROLE_ARN>" and task["taskRoleArn"] == "<TASK_ROLE_ARN>"
    [container] = task["containerDefinitions"]
    assert container["essential"] is True
    assert image_tag(container["image"]) == __version__  # pinned to this release, never latest
    assert container["portMappings"] == [{"name": "svc-api", "containerPort": 49684, "protocol": "tcp"}]
    # The health probe the image ships, which GETs /api/v1/health and wants 200 (tests/deploy/test_entrypoint.py).
    assert container["healthCheck"]["command"] == ["CMD", "/usr/local/bin/svc-healthcheck"]
    assert "COPY --chmod=0755 deploy/healthcheck.py /usr/local/bin/svc-healthcheck" in (REPO / "Dockerfile").read_text()
    # The config and the database credentials come from the secrets store, never as plain values.
    assert {s["name"]: s["valueFrom"] for s in container["secrets"]} == {
        "SVC_CONFIG": "<CONFIG_SECRET_ARN>",
        "SVC_DB_USER": "<DB_SECRET_ARN>:username::",
        "SVC_DB_PASSWORD": "<DB_SECRET_ARN>:password::",
    }
    assert "environment" not in container and "command" not in container  # the image's start command runs


def test_full_control_service() -> None:
    service = load_deploy_json("ecs/service.json")
    assert service["desiredCount"] == 1
    assert service["taskDefinition"] == load_deploy_json("ecs/task-definition.json")["family"]
    network = service["networkConfiguration"]["awsvpcConfiguration"]
    assert network["subnets"] == ["<PRIVATE_SUBNET_A>", "<PRIVATE_SUBNET_B>"]  # two zones (README table)
    assert network["assignPublicIp"] == "DISABLED"
    assert network["securityGroups"] == ["<AGENT_SECURITY_GROUP>"]
    deployment = service["deploymentConfiguration"]
    assert deployment["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
    # One agent at a time: the old task stops before the new one starts (the 30-60 s outage).
    assert (deployment["maximumPercent"], deployment["minimumHealthyPercent"]) == (100, 0)
    # The stable hostname, since task addresses change on every deployment.
    assert service["serviceRegistries"] == [{"registryArn": "<DISCOVERY_SERVICE_ARN>"}]
    discovery = load_deploy_json("ecs/discovery-service.json")
    assert discovery["DnsConfig"]["DnsRecords"] == [{"Type": "A", "TTL": 10}]


@pytest.mark.parametrize(("name", "group", "port", "source"), [
    ("ecs/agent-ingress.json", "<AGENT_SECURITY_GROUP>", 49684, "<CLIENT_TUNNEL_SECURITY_GROUP>"),
    ("ecs/database-ingress.json", "<DATABASE_SECURITY_GROUP>", 5432, "<AGENT_SECURITY_GROUP>"),
])
def test_security_group_ingress(name: str, group: str, port: int, source: str) -> None:
    ingress = load_deploy_json(name)
    assert ingress["GroupId"] == group
    [rule] = ingress["IpPermissions"]
    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", port, port)
    assert [pair["GroupId"] for pair in rule["UserIdGroupPairs"]] == [source]
    assert "IpRanges" not in rule  # never open to an address range by default


def test_express_service() -> None:
    express = load_deploy_json("express/service.json")
    assert "cluster" not in express  # runs in the default cluster
    assert (express["cpu"], express["memory"]) == ("1024", "2048")
    assert express["scalingTarget"] == {"minTaskCount": 1, "maxTaskCount": 1}
    assert express["healthCheckPath"] == "/api/v1/health"
    container = express["primaryContainer"]
    assert container["containerPort"] == 49684
    assert image_tag(container["image"]) == __version__
    assert container["secrets"] == [{"name": "SVC_CONFIG", "valueFrom": "<CONFIG_SECRET_ARN>"}]


def test_application_platform_service() -> None:
    service = load_deploy_json("apprunner/service.json")
    image = service["SourceConfiguration"]["ImageRepository"]
    assert image["ImageRepositoryType"] == "ECR"  # the platform pulls from its own registry only
    assert image_tag(image["ImageIdentifier"]) == __version__
    settings = image["ImageConfiguration"]
    assert settings["Port"] == "49684"
    assert settings["RuntimeEnvironmentSecrets"] == {"SVC_CONFIG": "<CONFIG_SECRET_ARN>"}
    assert service["SourceConfiguration"]["AuthenticationConfiguration"] == {"AccessRoleArn": "<APPRUNNER_ACCESS_ROLE_ARN>"}
    assert service["InstanceConfiguration"] == {"Cpu": "1024", "Memory": "2048",
                                                "InstanceRoleArn": "<APPRUNNER_INSTANCE_ROLE_ARN>"}
    assert service["HealthCheckConfiguration"] == {"Protocol": "HTTP", "Path": "/api/v1/health", "Interval": 10,
                                                   "Timeout": 5, "HealthyThreshold": 1, "UnhealthyThreshold": 3}
    # Split on whitespace by the platform: exactly sh, -c and one token whose words ${IFS} separates.
    words = settings["StartCommand"].split()
    assert words[:2] == ["sh", "-c"] and len(words) == 3
    token = words[2]
    assert re.search(r"svc\$\{IFS\}agent\$\{IFS\}start\$\{IFS\}--config\$\{IFS\}", token)
    assert "SVC_CONFIG" in token
    # Exactly one instance: the auto-scaling configuration the service names.
    assert service["AutoScalingConfigurationArn"] == "<AUTO_SCALING_CONFIGURATION_ARN>"
    scaling = load_deploy_json("apprunner/auto-scaling.json")
    assert (scaling["MinSize"], scaling["MaxSize"]) == (1, 1)


def test_full_control_config_uses_postgres_over_verified_tls_with_the_bundle_of_the_ca_image(
        monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("SVC_DB_USER", "svc_agent")
    monkeypatch.setenv("SVC_DB_PASSWORD", "from-the-db-secret")
    config = load_config(DEPLOY / "config" / "full-control.pkl").agent.datastore
    assert config.datastore_type == "postgres"
    assert (config.postgres.port, config.postgres.user) == (5432, "svc_agent")  # user from the injected secret
    params = dict(pair.split("=", 1) for pair in config.postgres.connection_params.split("&"))
    assert params["sslmode"] == "verify-full"
    assert "/etc/svc/rds-global-bundle.pem" == params["sslrootcert"]
    assert params["sslrootcert"] in (REPO / "deploy" / "Dockerfile.rds-ca").read_text()


def test_data_api_config_reads_its_credentials_through_the_secret_and_requires_auth(home: Path) -> None:
    config = load_config(DEPLOY / "config" / "data-api.pkl").agent
    assert config.datastore.datastore_type == "auroradataapi"
    assert config.datastore.aurora_data_api.secret_arn == "<DB_SECRET_ARN>"
    assert config.auth is not None and config.auth.type == "basic"  # the endpoint is public
