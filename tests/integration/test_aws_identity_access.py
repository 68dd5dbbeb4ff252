"""Credentials that may not read identity resources: every IAM type's list and read fail with AccessDenied
(what discovery logs once per type, and never a "not found" that would forget a managed resource), while
the other types go on working.

moto enforces IAM policies after its first few calls (``INITIAL_NO_AUTH_ACTION_COUNT``): those make a user
whose policy allows everything but IAM, and the plugin then runs with that user's keys from the environment.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from support.aws import boto_client, dummy_aws_credentials, target_config
from support.moto import moto_server
from svc.plugins.runner import Call, InProcessRunner, PluginCallError
from svc.plugins.sdk import ErrorCode

IDENTITY_TYPES = {
    "AWS::IAM::Role": "some-role",
    "AWS::IAM::ManagedPolicy": "arn:aws:iam::123456789012:policy/some-policy",
    "AWS::IAM::Group": "some-group",
    "AWS::IAM::OIDCProvider": "arn:aws:iam::123456789012:oidc-provider/issuer.example.com",
    "AWS::IAM::SAMLProvider": "arn:aws:iam::123456789012:saml-provider/some-idp",
    "AWS::IAM::ServerCertificate": "some-certificate",
}
_SETUP_CALLS = 3  # create_user, put_user_policy, create_access_key: unauthenticated, then moto checks policies
_NOT_IAM = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": "*", "Action": [
    "s3:*", "secretsmanager:*", "dynamodb:*", "ecs:*"]}]}


@pytest.fixture(scope="module")
def denied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[InProcessRunner, str]]:
    directory = tmp_path_factory.mktemp("aws-denied")
    with dummy_aws_credentials(), pytest.MonkeyPatch.context() as patch, \
            moto_server(directory / "moto.log", env={"INITIAL_NO_AUTH_ACTION_COUNT": str(_SETUP_CALLS)}) as url:
        iam = boto_client(url, "iam")
        iam.create_user(UserName="agent")
        iam.put_user_policy(UserName="agent", PolicyName="everything-but-iam", PolicyDocument=json.dumps(_NOT_IAM))
        key = iam.create_access_key(UserName="agent")["AccessKey"]
        patch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])  # the standard chain: the agent's environment
        patch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
        patch.setenv("SVC_PLUGIN_STATE_DIR", str(directory / "state"))
        runner = InProcessRunner.load("AWS")
        yield runner, url
        asyncio.run(runner.close())


@pytest.mark.parametrize("resource_type", IDENTITY_TYPES)
def test_identity_types_cannot_be_listed_or_read(resource_type: str, denied: tuple[InProcessRunner, str]) -> None:
    runner, url = denied
    call = Call(resource_type, target_config(url))
    with pytest.raises(PluginCallError) as failure:
        asyncio.run(runner.list(call, 100, None, {}))
    assert failure.value.code is ErrorCode.ACCESS_DENIED, failure.value.message
    assert "not authorized" in failure.value.message
    read = asyncio.run(runner.read(call, IDENTITY_TYPES[resource_type], None))
    assert read.error_code is ErrorCode.ACCESS_DENIED, read


def test_other_types_go_on(denied: tuple[InProcessRunner, str]) -> None:
    runner, url = denied
    call = Call("AWS::SecretsManager::Secret", target_config(url))
    created = asyncio.run(runner.create(call, "visible", {"Name": "visible", "SecretString": "x"}))
    assert created.error_code is None, created
    assert asyncio.run(runner.list(call, 100, None, {})).native_ids == [created.native_id]
