"""Dummy AWS credentials for tests that talk to local stand-ins (moto, the rds-data stand-in)."""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from svc_plugin_aws.routing import NATIVE

from support.processes import Agent, free_port
from svc.plugins import installed_plugins
from svc.schema.extract import extract_descriptors

# Variables that would let the developer's own AWS setup (profile, region, retry policy) leak into a test.
_LEAKY = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_RETRY_MODE",
          "AWS_MAX_ATTEMPTS")


def run_id() -> str:
    """A fresh prefix for the AWS names one test makes, so that cases sharing a moto server never collide."""
    return f"svc-{secrets.token_hex(3)}"


@contextmanager
def dummy_aws_credentials() -> Iterator[None]:
    """Credentials from the environment for the standard chain, and no user AWS config files."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        patch.setenv("AWS_CONFIG_FILE", os.devnull)
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        for name in _LEAKY:
            patch.delenv(name, raising=False)
        yield


# -- the AWS plugin against moto ----------------------------------------------------------------------------------

AWS_TEST_REGION = "us-east-1"
# moto has no Cloud Control: agents on moto discover the native types only (a listing of every registry type
# there is ~1,550 failing calls under the plugin's rate limit, minutes per discovery run).
NATIVE_DISCOVERY = "resourceTypesToDiscover { " + "; ".join(f'"{t}"' for t in sorted(NATIVE)) + " }"


def aws_environment(directory: Path) -> dict[str, str]:
    """Environment variables for a process (an agent, its plugins, boto3 in a test) that talks to moto: dummy
    credentials for the standard chain, and no config files, region or profile of the developer's."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_CONFIG_FILE": str(directory / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(directory / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def target_config(endpoint_url: str, region: str = AWS_TEST_REGION) -> dict[str, str]:
    """An AWS target's config as the plugin receives it."""
    return {"Type": "AWS", "Region": region, "EndpointUrl": endpoint_url}


def target_pkl(endpoint_url: str, region: str = AWS_TEST_REGION) -> str:
    """The same target in a forma (with ``import "@aws/aws.pkl"``)."""
    return f'new aws.Config {{ region = "{region}"; endpointUrl = "{endpoint_url}" }}'


def boto_client(endpoint_url: str, service: str, region: str = AWS_TEST_REGION) -> Any:
    """A boto3 client on moto with dummy credentials, for changes behind svc's back."""
    return boto3.client(service, region_name=region, endpoint_url=endpoint_url, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


@contextmanager
def isolated_aws_home(directory: Path, credentials: dict[str, str] | None = None) -> Iterator[Path]:
    """For a module's worth of tests: a fresh HOME (svc's data, config, PID file under ``directory``) and the
    environment of ``aws_environment``, optionally with other credentials; yields the home."""
    home = directory / "home"
    home.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        settings = {**aws_environment(directory), **(credentials or {}), "HOME": str(home),
                    "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
                    "SVC_PID_FILE": str(directory / "agent.pid")}
        for name, value in settings.items():
            patch.setenv(name, value)
        for name in _LEAKY:
            patch.delenv(name, raising=False)
        yield home


@functools.cache
def warm_aws_schemas() -> None:
    """Extracts the AWS plugin's schemas into the run's shared cache (``$SVC_SCHEMA_CACHE``, tests/conftest.py)
    before an agent needs them: the first extraction of its ~1,700 types takes longer than a test waits for an
    agent to become healthy. Every later agent, and every test process (the cache has a lock), reads the file."""
    extract_descriptors(next(p for p in installed_plugins() if p.namespace == "AWS"))


def agent_config_pkl(path: Path, port: int, *, plugin: str = "", agent: str = "") -> Path:
    """An agent (and CLI) config with the AWS plugin (``plugin``: members of its ``PluginConfig``), SQLite
    next to ``path``, short retries, synchronization and discovery only when asked (``POST /admin/…``)."""
    warm_aws_schemas()
    path.write_text(f"""\
amends "svc:/Config.pkl"
import "plugins:/AWS.pkl"
agent {{
  server {{ bindAddress = "127.0.0.1"; port = {port} }}
  datastore {{ sqlite {{ filePath = "{path.parent / 'svc.db'}" }} }}
  resourcePlugins {{ new AWS.PluginConfig {{ {plugin} }} }}
  retry {{ retryDelay = 50.ms; statusCheckInterval = 100.ms; maxRetries = 3 }}
  synchronization {{ enabled = false }}
  discovery {{ enabled = false }}
  {agent}
}}
cli {{ api {{ url = "http://localhost"; port = {port} }} }}
""")
    return path


@contextmanager
def aws_agent(directory: Path, env: dict[str, str] | None = None, *, plugin: str = "") -> Iterator[Agent]:
    """A started agent with the AWS plugin (``agent_config_pkl``, its files in ``directory``; ``plugin``: members
    of its ``PluginConfig``) on a free port, and stopped after; run it inside ``isolated_aws_home``, whose
    environment it inherits (plus ``env``)."""
    port = free_port()
    agent = Agent(config=agent_config_pkl(directory / "agent.pkl", port, plugin=plugin), port=port,
                  log=directory / "agent.log", env=dict(env or {})).start()
    try:
        yield agent
    finally:
        agent.stop()
