"""The deployment shapes under deploy/: valid API requests, and every number and rule of the contract."""

from __future__ import annotations

import json
import re
from pathlib import Path

import boto3
import pytest
from botocore.validate import ParamValidator
from deploy_support import ACCOUNT, DEPLOY, PLACEHOLDER, REGION, REPO, fill, load_deploy_json

from support.processes import run_svc
from svc import __version__
from svc.config import load_config
from svc.engine.discovery_filters import excluded
from svc.engine.discovery_settings import plugin_discovery
from svc.plugins.installed import installed_plugins
from svc.schema.extract import extract_descriptors

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
    "iam/execution-role.json": ("iam", "CreateRole"),
    "iam/task-role.json": ("iam", "CreateRole"),
    "iam/infrastructure-role.json": ("iam", "CreateRole"),
    "iam/apprunner-access-role.json": ("iam", "CreateRole"),
    "iam/apprunner-instance-role.json": ("iam", "CreateRole"),
}
# Policy documents, not requests: tests/deploy/test_deploy_roles.py puts each on a role in moto.
POLICY_DOCUMENTS = "iam/policies"
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
    files = {str(path.relative_to(DEPLOY)) for path in DEPLOY.rglob("*.json")
             if not str(path.relative_to(DEPLOY)).startswith(POLICY_DOCUMENTS)}
    assert files == set(OPERATIONS)
    for name, (service, operation) in OPERATIONS.items():
        shape = boto3.client(service, region_name=REGION).meta.service_model.operation_model(operation).input_shape
        report = ParamValidator().validate(fill(load_deploy_json(name), SAMPLE_VALUES), shape)
        assert not report.has_errors(), f"{name}: {report.generate_report()}"


def test_every_placeholder_is_explained_in_the_deployment_page() -> None:
    section = (REPO / "docs" / "deployment.md").read_text()
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
    # Pinned to this release, never latest, and the variant with the CA bundle its config verifies against.
    assert image_tag(container["image"]) == f"{__version__}-rds-ca"
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
    assert network["subnets"] == ["<PRIVATE_SUBNET_A>", "<PRIVATE_SUBNET_B>"]  # two zones (docs/deployment.md table)
    assert network["assignPublicIp"] == "DISABLED"
    assert network["securityGroups"] == ["<AGENT_SECURITY_GROUP>"]
    deployment = service["deploymentConfiguration"]
    assert deployment["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
    # A rolling replacement: the new task starts and turns healthy (a follower) before the old one stops.
    assert (deployment["maximumPercent"], deployment["minimumHealthyPercent"]) == (200, 100)
    # The stable hostname, since task addresses change on every deployment.
    assert service["serviceRegistries"] == [{"registryArn": "<DISCOVERY_SERVICE_ARN>"}]
    discovery = load_deploy_json("ecs/discovery-service.json")
    assert discovery["DnsConfig"]["DnsRecords"] == [{"Type": "A", "TTL": 10}]


# The config each shape's agent runs with (docs/deployment.md, "Three shapes"), and the datastores several agents
# can share (one leads, the others follow: docs/deployment.md, "Replacing the agent without an outage").
SHAPE_CONFIGS = {"ecs/service.json": "full-control.pkl", "express/service.json": "data-api.pkl",
                 "apprunner/service.json": "data-api.pkl"}
SHARED_DATASTORES = {"postgres", "auroradataapi"}


def rolling_parameters(datastore_type: str) -> tuple[int, int]:
    """(maximumPercent, minimumHealthyPercent) of an ECS service whose agent uses ``datastore_type``: a second task
    while the first drains on a shared datastore; on SQLite, which one agent only may open, the old task stops
    before the new one starts."""
    return (200, 100) if datastore_type in SHARED_DATASTORES else (100, 0)


def shipped_datastore(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SVC_DB_USER", "svc_agent")
    monkeypatch.setenv("SVC_DB_PASSWORD", "from-the-db-secret")
    return load_config(DEPLOY / "config" / name).agent.datastore.datastore_type


def test_every_shipped_config_belongs_to_a_shape() -> None:
    """So that a config added later (an SQLite one, say) is checked against its shape's rolling below."""
    assert {path.name for path in (DEPLOY / "config").glob("*.pkl")} == set(SHAPE_CONFIGS.values())


def test_the_full_control_service_rolls_only_because_its_datastore_is_shared(
        monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    deployment = load_deploy_json("ecs/service.json")["deploymentConfiguration"]
    datastore = shipped_datastore(SHAPE_CONFIGS["ecs/service.json"], monkeypatch)
    assert datastore == "postgres"
    assert (deployment["maximumPercent"], deployment["minimumHealthyPercent"]) == rolling_parameters(datastore)
    assert rolling_parameters("sqlite") == (100, 0)


@pytest.mark.parametrize("shape", ["express/service.json", "apprunner/service.json"])
def test_the_platforms_that_overlap_two_agents_run_them_on_a_shared_datastore(
        shape: str, monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Express mode's canary and App Runner start the new task (instance) before stopping the old one, whatever
    the files say: their agents must be able to share the datastore."""
    assert shipped_datastore(SHAPE_CONFIGS[shape], monkeypatch) in SHARED_DATASTORES


def test_the_old_task_has_time_to_hand_over_and_stop_cleanly() -> None:
    """ECS sends SIGTERM, then SIGKILL after stopTimeout: that must exceed the agent's graceful stop (it hands the
    lease over, finishes its requests, closes its plugins and datastore), within Fargate's 120 s."""
    from svc.agent.lifecycle import STOP_TIMEOUT_SECONDS  # the agent's own bound (uvicorn's graceful shutdown)

    [container] = load_deploy_json("ecs/task-definition.json")["containerDefinitions"]
    assert STOP_TIMEOUT_SECONDS < container["stopTimeout"] <= 120
    assert container["stopTimeout"] >= 2 * STOP_TIMEOUT_SECONDS  # room for the clean-up after the server stops


def test_a_new_task_turns_healthy_soon_through_the_health_endpoint() -> None:
    """With minimumHealthyPercent 100 the old task stops only once the new one is HEALTHY: its container health
    check (the image's probe of GET /api/v1/health, 200 for a follower too) runs often enough for a short overlap."""
    [container] = load_deploy_json("ecs/task-definition.json")["containerDefinitions"]
    check = container["healthCheck"]
    assert check["command"] == ["CMD", "/usr/local/bin/svc-healthcheck"]
    assert re.search(r'^DEFAULT_URL = "http://127\.0\.0\.1:49684/api/v1/health"$',
                     (DEPLOY / "healthcheck.py").read_text(), re.MULTILINE)
    assert check["interval"] <= 10 and check["timeout"] < check["interval"]
    assert check["startPeriod"] >= 30  # a fresh agent reads its config and plugin schemas before it answers
    # The stable name follows only healthy tasks (ECS reports the container's health to Cloud Map).
    assert load_deploy_json("ecs/discovery-service.json")["HealthCheckCustomConfig"] == {"FailureThreshold": 1}


def test_the_example_forma_deploys_the_full_control_shape_as_the_files_do(home: Path) -> None:
    """``examples/aws/full-control.pkl`` (svc applying its own shape) rolls and checks health as deploy/ecs/ does."""
    result = run_svc("eval", str(REPO / "examples" / "aws" / "full-control.pkl"), "--output-consumer", "machine")
    assert result.returncode == 0, result.stderr
    resources = {r["Type"]: r["Properties"] for r in json.loads(result.stdout)["Resources"]}
    deployment = load_deploy_json("ecs/service.json")["deploymentConfiguration"]
    assert resources["AWS::ECS::Service"]["DeploymentConfiguration"] == {
        "DeploymentCircuitBreaker": {"Enable": True, "Rollback": True},
        "MaximumPercent": deployment["maximumPercent"], "MinimumHealthyPercent": deployment["minimumHealthyPercent"]}
    [container] = load_deploy_json("ecs/task-definition.json")["containerDefinitions"]
    [example] = resources["AWS::ECS::TaskDefinition"]["ContainerDefinitions"]
    assert example["HealthCheck"] == {key[0].upper() + key[1:]: value for key, value in container["healthCheck"].items()}
    assert example["StopTimeout"] == container["stopTimeout"]


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


def filled_config(name: str, directory: Path) -> Path:
    """deploy/config/``name`` with its placeholders replaced, as a user stores it in the config secret."""
    values = {**SAMPLE_VALUES, "DB_WRITER_ENDPOINT": "svc.cluster-abc.us-east-1.rds.amazonaws.com",
              "DB_CLUSTER_ARN": f"arn:aws:rds:{REGION}:{ACCOUNT}:cluster:svc",
              "BCRYPT_PASSWORD_HASH": "$2b$12$KIXQJmVmhF5n0sLzPfC8UOZ3Q5f9m1yV0yVYqkq0H0b0m8nqXJQ2W"}
    text = (DEPLOY / "config" / name).read_text()
    missing = sorted(set(PLACEHOLDER.findall(text)) - {f"<{key}>" for key in values})
    assert not missing, f"no test value for {missing}"
    path = directory / name
    path.write_text(PLACEHOLDER.sub(lambda match: values[match.group(0)[1:-1]], text))
    return path


def aws_types_with_tags() -> set[str]:
    """What the installed AWS plugin discovers that carries ``Tags``, from its schema."""
    [plugin] = [plugin for plugin in installed_plugins() if plugin.namespace == "AWS"]
    return {name for name, descriptor in extract_descriptors(plugin).items()
            if descriptor.schema_.discoverable and "Tags" in descriptor.schema_.fields}


AGENT_TAGGED = {"Tags": [{"Key": "svc:agent", "Value": "true"}]}  # SAMPLE_VALUES' <TAG_KEY> = <TAG_VALUE>
SYSTEM_TAGGED = {"Tags": [{"Key": "AmazonECSManaged", "Value": "true"}]}


@pytest.mark.parametrize(("name", "express"), [("full-control.pkl", False), ("data-api.pkl", True)])
def test_shipped_configs_run_the_aws_plugin_leaving_out_the_agents_own_infrastructure(
        name: str, express: bool, monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("SVC_DB_USER", "svc_agent")
    monkeypatch.setenv("SVC_DB_PASSWORD", "from-the-db-secret")
    config = load_config(filled_config(name, home)).agent
    [plugin] = config.resource_plugins
    assert (plugin.type, plugin.enabled) == ("AWS", True)
    tagged = aws_types_with_tags()
    agent_filter, *system_filter = plugin.discovery_filters
    # The agent's own tag, from the same placeholders every file under deploy/ tags with, on every tagged type.
    assert set(agent_filter.resource_types) == tagged
    assert [(c.property_path, c.property_value) for c in agent_filter.conditions] == [
        ("$.Tags[?(@.Key=='svc:agent')].Value", "true")]
    if express:  # what express mode creates carries its system tag; the shared default cluster stays in
        [system] = system_filter
        assert set(system.resource_types) == tagged - {"AWS::ECS::Cluster"}
        assert [(c.property_path, c.property_value) for c in system.conditions] == [
            ("$.Tags[?(@.Key=='AmazonECSManaged')].Value", "true")]
    else:
        assert system_filter == []
    # What discovery does with them (the filters replace the plugin's defaults).
    discovery = plugin_discovery("AWS", plugin, {}, ("Name",))
    assert excluded(discovery.filters, "AWS::IAM::Role", AGENT_TAGGED)
    assert excluded(discovery.filters, "AWS::ECS::Cluster", AGENT_TAGGED)
    assert not excluded(discovery.filters, "AWS::EC2::VPC", {"Tags": [{"Key": "Name", "Value": "shop"}]})
    assert excluded(discovery.filters, "AWS::Logs::LogGroup", SYSTEM_TAGGED) is express
    assert not excluded(discovery.filters, "AWS::ECS::Cluster", SYSTEM_TAGGED)


def test_the_agent_tag_is_one_placeholder_pair_everywhere() -> None:
    """Every tag a deploy/ file puts on what it creates is <TAG_KEY> = <TAG_VALUE>, which the configs filter on."""
    def tags(document: object) -> list[object]:
        if isinstance(document, dict):
            found = [document[key] for key in ("Tags", "tags") if key in document]
            return found + [tag for value in document.values() for tag in tags(value)]
        return [tag for value in document for tag in tags(value)] if isinstance(document, list) else []

    creating = [name for name, (_, operation) in OPERATIONS.items() if operation.startswith(("Create", "Register"))]
    for name in creating:
        assert tags(load_deploy_json(name)) in (
            [[{"Key": "<TAG_KEY>", "Value": "<TAG_VALUE>"}]], [[{"key": "<TAG_KEY>", "value": "<TAG_VALUE>"}]]), name
    for config in ("full-control.pkl", "data-api.pkl"):
        assert "propertyPath = \"$.Tags[?(@.Key=='<TAG_KEY>')].Value\"; propertyValue = \"<TAG_VALUE>\"" in (
            DEPLOY / "config" / config).read_text()


def test_the_full_control_task_runs_the_image_that_holds_the_ca_bundle_its_config_names(
        monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("SVC_DB_USER", "svc_agent")
    monkeypatch.setenv("SVC_DB_PASSWORD", "from-the-db-secret")
    postgres = load_config(DEPLOY / "config" / "full-control.pkl").agent.datastore.postgres
    bundle = dict(pair.split("=", 1) for pair in postgres.connection_params.split("&"))["sslrootcert"]
    [container] = load_deploy_json("ecs/task-definition.json")["containerDefinitions"]
    variant = (REPO / "deploy" / "Dockerfile.rds-ca").read_text()
    # The variant adds that very file, and its documented build tags the image as the task definition names it.
    assert re.search(rf"^ADD \S+ {re.escape(bundle)}$", variant, re.MULTILINE)
    build = re.compile(r"docker build -f deploy/Dockerfile\.rds-ca .*-t svc:(\S+) \.")
    for documented in (variant, (REPO / "docs" / "deployment.md").read_text()):
        [tag] = build.findall(documented)
        assert image_tag(container["image"]) == tag
