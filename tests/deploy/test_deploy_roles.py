"""The roles and policies under deploy/iam/: created on moto's IAM by the deployment page's own commands, each request
checked against botocore's model first, then read back from moto to see that every role each shape names
exists and can do what the shape needs (and nothing that lets the agent change its own permissions)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore import xform_name
from botocore.validate import ParamValidator
from deploy_support import ACCOUNT, DEPLOY, PLACEHOLDER, REGION, REPO, load_deploy_json

from support.moto import MotoStartError, moto_server

SECRET = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret"
VALUES = {
    "TAG_KEY": "svc:agent", "TAG_VALUE": "true",
    "CONFIG_SECRET_ARN": f"{SECRET}:svc/agent-config-AbCdEf", "DB_SECRET_ARN": f"{SECRET}:svc/db-XyZ123",
    "DB_CLUSTER_ARN": f"arn:aws:rds:{REGION}:{ACCOUNT}:cluster:svc",
}
# Which service assumes each role (the role's file is named after the placeholder that takes its ARN).
TRUSTED = {
    "EXECUTION_ROLE_ARN": "ecs-tasks.amazonaws.com", "TASK_ROLE_ARN": "ecs-tasks.amazonaws.com",
    "INFRASTRUCTURE_ROLE_ARN": "ecs.amazonaws.com",
    "APPRUNNER_ACCESS_ROLE_ARN": "build.apprunner.amazonaws.com",
    "APPRUNNER_INSTANCE_ROLE_ARN": "tasks.apprunner.amazonaws.com",
}
SHAPES = {  # the files of each shape, and which of its roles the agent runs as and which injects the secrets
    "full-control": (["ecs/task-definition.json", "ecs/service.json"], "TASK_ROLE_ARN", "EXECUTION_ROLE_ARN"),
    "express": (["express/service.json"], "TASK_ROLE_ARN", "EXECUTION_ROLE_ARN"),
    "apprunner": (["apprunner/service.json"], "APPRUNNER_INSTANCE_ROLE_ARN", "APPRUNNER_INSTANCE_ROLE_ARN"),
}
DATA_API_SHAPES = {"express", "apprunner"}  # deploy/config/data-api.pkl: the agent reads the database secret


def fill_text(text: str) -> str:
    missing = sorted(set(PLACEHOLDER.findall(text)) - {f"<{key}>" for key in VALUES})
    assert not missing, f"no test value for {missing}"
    return PLACEHOLDER.sub(lambda match: VALUES[match.group(0)[1:-1]], text)


def documented_iam_commands() -> list[str]:
    """The ``aws iam`` commands docs/deployment.md tells an operator to run."""
    page = (REPO / "docs" / "deployment.md").read_text()
    return [line for line in page.splitlines() if line.startswith("aws iam ")]


def request(command: str) -> tuple[str, dict[str, Any]]:
    """The API operation and parameters of ``aws iam <command> …`` as the AWS CLI sends them."""
    words = shlex.split(command)
    operation = "".join(part.capitalize() for part in words[2].split("-"))
    parameters: dict[str, Any] = {}
    for option, value in zip(words[3::2], words[4::2], strict=True):
        if value.startswith("file://"):
            value = fill_text((REPO / value.removeprefix("file://")).read_text())
        if option == "--cli-input-json":
            parameters.update(json.loads(value))
        else:
            parameters["".join(part.capitalize() for part in option[2:].split("-"))] = value
    return operation, parameters


@pytest.fixture(scope="module")
def iam(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """moto's IAM with AWS's managed policies loaded, so attaching a misspelt policy ARN fails as in AWS."""
    try:
        with moto_server(tmp_path_factory.mktemp("moto") / "moto.log", {"MOTO_IAM_LOAD_MANAGED_POLICIES": "true"}) as url:
            client = boto3.client("iam", region_name=REGION, endpoint_url=url,
                                  aws_access_key_id="testing", aws_secret_access_key="testing")
            for command in documented_iam_commands():
                operation, parameters = request(command)
                shape = client.meta.service_model.operation_model(operation).input_shape
                report = ParamValidator().validate(parameters, shape)
                assert not report.has_errors(), f"{command}: {report.generate_report()}"
                getattr(client, xform_name(operation))(**parameters)  # moto validates policy documents
            yield client
    except MotoStartError as error:
        pytest.fail(str(error))


def role_file(placeholder: str) -> Path:
    return DEPLOY / "iam" / f"{placeholder.removesuffix('_ARN').lower().replace('_', '-')}.json"


def role_name(placeholder: str) -> str:
    return json.loads(role_file(placeholder).read_text())["RoleName"]


def documents(iam: Any, role: str) -> list[dict[str, Any]]:
    """Every policy document in force on ``role``: its inline policies and the managed ones attached."""
    found = [iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
             for name in iam.list_role_policies(RoleName=role)["PolicyNames"]]
    for attached in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]:
        policy = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]
        version = iam.get_policy_version(PolicyArn=policy["Arn"], VersionId=policy["DefaultVersionId"])
        document = version["PolicyVersion"]["Document"]
        found.append(json.loads(document) if isinstance(document, str) else document)
    return found


def _listed(statement: dict[str, Any], key: str) -> list[str] | None:
    value = statement.get(key)
    return None if value is None else [value] if isinstance(value, str) else list(value)


def _conditions_hold(statement: dict[str, Any], context: dict[str, str]) -> bool:
    """Only ``StringEquals`` is understood; a statement with any other condition is taken not to apply."""
    for operator, pairs in (statement.get("Condition") or {}).items():
        if operator != "StringEquals":
            return False
        for key, expected in pairs.items():
            if context.get(key) not in ([expected] if isinstance(expected, str) else expected):
                return False
    return True


def _applies(statement: dict[str, Any], action: str, resource: str, context: dict[str, str]) -> bool:
    actions, not_actions = _listed(statement, "Action"), _listed(statement, "NotAction")
    resources, not_resources = _listed(statement, "Resource"), _listed(statement, "NotResource")
    action_matches = (any(fnmatchcase(action.lower(), pattern.lower()) for pattern in actions) if actions is not None
                      else not any(fnmatchcase(action.lower(), pattern.lower()) for pattern in not_actions or []))
    resource_matches = (any(fnmatchcase(resource, pattern) for pattern in resources) if resources is not None
                        else not any(fnmatchcase(resource, pattern) for pattern in not_resources or []))
    return action_matches and resource_matches and _conditions_hold(statement, context)


def allowed(policies: list[dict[str, Any]], action: str, resource: str = "*",
            context: dict[str, str] | None = None) -> bool:
    """IAM's rule for one identity's policies: an explicit deny wins, else an allow is needed. ``context`` holds
    the request's condition keys (``aws:RequestTag/…``), for the statements that grant only under a condition."""
    context = context or {}
    statements = [s for document in policies for s in _listed(document, "Statement") or []]  # type: ignore[arg-type]
    if any(s["Effect"] == "Deny" and _applies(s, action, resource, context) for s in statements):
        return False
    return any(s["Effect"] == "Allow" and _applies(s, action, resource, context) for s in statements)


def shape_roles(files: list[str]) -> set[str]:
    return {match for name in files for match in re.findall(r"<([A-Z_]+_ROLE_ARN)>", (DEPLOY / name).read_text())}


def injected_secrets(files: list[str]) -> set[str]:
    """The secret ARNs a shape's platform reads to inject (a JSON key suffix ``:username::`` names the secret)."""
    text = json.dumps([load_deploy_json(name) for name in files])
    return {fill_text(arn) for arn in re.findall(r"<(?:CONFIG|DB)_SECRET_ARN>", text)}


def test_every_file_under_deploy_iam_is_used_by_the_readme_commands() -> None:
    used = {match for command in documented_iam_commands() for match in re.findall(r"file://(\S+)", command)}
    assert used == {str(path.relative_to(REPO)) for path in (DEPLOY / "iam").rglob("*.json")}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_role_a_shape_names_is_created_trusting_its_service(iam: Any, shape: str) -> None:
    files, _, _ = SHAPES[shape]
    roles = shape_roles(files)
    assert roles, shape
    for placeholder in roles:
        assert role_file(placeholder).is_file(), f"{shape} names <{placeholder}> but deploy/iam/ has no role for it"
        role = iam.get_role(RoleName=role_name(placeholder))["Role"]
        trust = role["AssumeRolePolicyDocument"]
        [statement] = (json.loads(trust) if isinstance(trust, str) else trust)["Statement"]
        assert (statement["Effect"], statement["Action"], statement["Principal"]) == (
            "Allow", "sts:AssumeRole", {"Service": TRUSTED[placeholder]})
        # moto's trust-policy validator, as IAM checks the document when it is replaced.
        iam.update_assume_role_policy(RoleName=role["RoleName"], PolicyDocument=json.dumps(
            json.loads(trust) if isinstance(trust, str) else trust))
        assert role["Tags"] == [{"Key": "svc:agent", "Value": "true"}]  # the agent's filter leaves it out


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_can_read_its_secrets_and_reach_its_datastore(iam: Any, shape: str) -> None:
    files, runs_as, injects = SHAPES[shape]
    injecting = documents(iam, role_name(injects))
    secrets = injected_secrets(files)
    assert VALUES["CONFIG_SECRET_ARN"] in secrets
    for secret in secrets:
        assert allowed(injecting, "secretsmanager:GetSecretValue", secret), (shape, secret)
    agent = documents(iam, role_name(runs_as))
    if shape in DATA_API_SHAPES:
        assert allowed(agent, "secretsmanager:GetSecretValue", VALUES["DB_SECRET_ARN"])
        for action in ("ExecuteStatement", "BatchExecuteStatement", "BeginTransaction", "CommitTransaction",
                       "RollbackTransaction"):
            assert allowed(agent, f"rds-data:{action}", VALUES["DB_CLUSTER_ARN"])
    if shape != "apprunner":  # the execution role pulls the image and writes the logs
        for action in ("ecr:GetAuthorizationToken", "ecr:BatchGetImage", "logs:CreateLogStream", "logs:PutLogEvents"):
            assert allowed(injecting, action)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_agent_manages_and_discovers_identity_resources_but_never_its_own_permissions(
        iam: Any, shape: str) -> None:
    _, runs_as, _ = SHAPES[shape]
    own_role = f"arn:aws:iam::{ACCOUNT}:role/{role_name(runs_as)}"
    policies = documents(iam, role_name(runs_as))
    # The plugin's services (a permission set without identity management) …
    for action in ("s3:CreateBucket", "ec2:CreateVpc", "ecs:CreateCluster", "logs:CreateLogGroup", "sqs:CreateQueue"):
        assert allowed(policies, action), action
    # … plus seed 000 §1 rule 4's inline grant on all resources, and the read-only get and list discovery needs.
    other_role = f"arn:aws:iam::{ACCOUNT}:role/app"
    for action in ("iam:CreateRole", "iam:UpdateRole", "iam:DeleteRole", "iam:GetRole", "iam:ListRoles",
                   "iam:TagRole", "iam:PassRole", "iam:PutRolePolicy", "iam:CreatePolicy"):
        assert allowed(policies, action, other_role), action
    assert allowed(policies, "iam:UploadServerCertificate", f"arn:aws:iam::{ACCOUNT}:server-certificate/app")
    for action in ("iam:ListServerCertificates", "iam:ListSAMLProviders", "iam:ListOpenIDConnectProviders",
                   "iam:ListGroups", "iam:GetRole", "iam:GetSAMLProvider"):
        assert allowed(policies, action), action
    # Not administrator: its own role stays out of its reach, though it can read it.
    attached = {p["PolicyName"] for p in iam.list_attached_role_policies(RoleName=role_name(runs_as))["AttachedPolicies"]}
    assert "AdministratorAccess" not in attached
    for action in ("iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:DeleteRolePolicy", "iam:UpdateAssumeRolePolicy",
                   "iam:PassRole"):
        assert not allowed(policies, action, own_role), action
    assert allowed(policies, "iam:GetRole", own_role)


def test_the_platform_roles_hold_what_their_service_needs(iam: Any) -> None:
    access = documents(iam, role_name("APPRUNNER_ACCESS_ROLE_ARN"))
    assert allowed(access, "ecr:BatchGetImage") and allowed(access, "ecr:GetAuthorizationToken")
    # Express mode creates what it manages tagged with its system tag, which the data-api config filters on.
    infrastructure = documents(iam, role_name("INFRASTRUCTURE_ROLE_ARN"))
    system_tag = {"aws:RequestTag/AmazonECSManaged": "true", "aws:ResourceTag/AmazonECSManaged": "true"}
    balancer = f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:loadbalancer/app/svc/0123456789abcdef"
    assert allowed(infrastructure, "elasticloadbalancing:CreateLoadBalancer", balancer, context=system_tag)
    assert not allowed(infrastructure, "elasticloadbalancing:CreateLoadBalancer", balancer)  # untagged
    assert allowed(infrastructure, "acm:RequestCertificate", f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/1",
                   context=system_tag)
