"""Where the AWS plugin's credentials come from: the standard chain of the agent's process, never the config.

moto checks every request against IAM here (after the setup calls), so only real keys of its users work:
one user's keys are in the agent's environment, another's in a shared credentials file under a profile
that a target names. Neither key is ever written to the datastore, the plugin's state or the agent log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from support.aws import AWS_TEST_REGION, aws_agent, isolated_aws_home
from support.moto import moto_server
from support.processes import Agent, run_svc

SETUP_CALLS = 6  # two users, each: create_user, create_access_key, put_user_policy


@dataclass
class Keys:
    access_key_id: str
    secret_access_key: str


def _user(iam: Any, name: str) -> Keys:
    iam.create_user(UserName=name)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    iam.put_user_policy(UserName=name, PolicyName="all", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    return Keys(key["AccessKeyId"], key["SecretAccessKey"])


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Keys, Keys]]:
    directory = tmp_path_factory.mktemp("aws-credentials-moto")
    with moto_server(directory / "moto.log", {"INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_CALLS)}) as url:
        iam = boto3.client("iam", region_name=AWS_TEST_REGION, endpoint_url=url, aws_access_key_id="testing",
                           aws_secret_access_key="testing")
        yield url, _user(iam, "from-environment"), _user(iam, "from-profile")


def _forma(path: Path, url: str, bucket: str, profile: str | None) -> Path:
    chosen = f'; profile = "{profile}"' if profile else ""
    path.write_text(f"""\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@aws/aws.pkl"
import "@aws/s3/bucket.pkl"
forma {{
  new svc.Stack {{ label = "{bucket}" }}
  new svc.Target {{ label = "{bucket}"; config = new aws.Config {{ region = "us-east-1"; endpointUrl = "{url}"{chosen} }} }}
  new bucket.Bucket {{ label = "b"; bucketName = "{bucket}" }}
}}
""")
    return path


@contextmanager
def _running_agent(directory: Path, credentials: dict[str, str]) -> Iterator[Agent]:
    with isolated_aws_home(directory, credentials), aws_agent(directory) as agent:
        yield agent


def _apply(agent: Agent, forma: Path) -> Any:
    return run_svc("apply", "--mode", "reconcile", str(forma), "--yes", "--wait", "--config", str(agent.config),
                   env={"COLUMNS": "200"})


def _nothing_kept(directory: Path, agent: Agent, *keys: Keys) -> None:
    """No key id or secret in any file svc wrote (datastore, plugin state, logs) nor in the agent's output."""
    written = [path for path in directory.rglob("*") if path.is_file() and path.name != "credentials"]
    assert any(path.name.startswith("svc.db") for path in written)
    for key in keys:
        for value in (key.access_key_id, key.secret_access_key):
            assert value not in agent.output()
            for path in written:
                assert value.encode() not in path.read_bytes(), f"{path} holds a credential"


def test_credentials_from_the_environment(moto: tuple[str, Keys, Keys], tmp_path: Path) -> None:
    url, environment, _ = moto
    with _running_agent(tmp_path, {"AWS_ACCESS_KEY_ID": environment.access_key_id,
                                   "AWS_SECRET_ACCESS_KEY": environment.secret_access_key}) as agent:
        applied = _apply(agent, _forma(tmp_path / "env.pkl", url, "from-env-bucket", None))
        assert applied.returncode == 0, applied.stdout + applied.stderr
        _nothing_kept(tmp_path, agent, environment)
    assert "from-env-bucket" in _bucket_names(url, environment)


def test_credentials_from_a_shared_credentials_profile(moto: tuple[str, Keys, Keys], tmp_path: Path) -> None:
    url, _, profiled = moto
    credentials = tmp_path / "credentials"
    credentials.write_text(f"[shop]\naws_access_key_id = {profiled.access_key_id}\n"
                           f"aws_secret_access_key = {profiled.secret_access_key}\n")
    # No keys in the environment: only the profile the target names has any.
    with _running_agent(tmp_path, {"AWS_SHARED_CREDENTIALS_FILE": str(credentials),
                                   "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}) as agent:
        applied = _apply(agent, _forma(tmp_path / "profile.pkl", url, "from-profile-bucket", "shop"))
        assert applied.returncode == 0, applied.stdout + applied.stderr
        refused = _apply(agent, _forma(tmp_path / "none.pkl", url, "no-credentials-bucket", None))
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "InvalidCredentials" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
        missing = _apply(agent, _forma(tmp_path / "missing.pkl", url, "missing-profile-bucket", "nowhere"))
        assert missing.returncode == 1
        assert "nowhere" in missing.stdout + missing.stderr, missing.stdout + missing.stderr
        _nothing_kept(tmp_path, agent, profiled)
    names = _bucket_names(url, profiled)
    assert "from-profile-bucket" in names and "no-credentials-bucket" not in names


def _bucket_names(url: str, keys: Keys) -> set[str]:
    s3 = boto3.client("s3", region_name=AWS_TEST_REGION, endpoint_url=url, aws_access_key_id=keys.access_key_id,
                      aws_secret_access_key=keys.secret_access_key)
    return {bucket["Name"] for bucket in s3.list_buckets()["Buckets"]}
