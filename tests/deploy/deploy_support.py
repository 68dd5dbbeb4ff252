"""Helpers for the deploy tests: the deploy/ files, placeholder filling, a real moto server.

Not a conftest.py: the root conftest is imported as ``conftest`` by other test folders, and a
second conftest module would shadow it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support.moto import MotoStartError
from support.moto import moto_server as shared_moto_server

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*>")


def load_deploy_json(relative: str) -> dict[str, Any]:
    return json.loads((DEPLOY / relative).read_text())


def fill(document: Any, values: dict[str, str]) -> Any:
    """``document`` with every ``<PLACEHOLDER>`` replaced, as a user would before applying it."""
    text = json.dumps(document)
    missing = sorted(set(PLACEHOLDER.findall(text)) - {f"<{key}>" for key in values})
    assert not missing, f"no test value for {missing}"
    return json.loads(PLACEHOLDER.sub(lambda match: values[match.group(0)[1:-1]], text))


@contextmanager
def moto_server(log: Path) -> Iterator[str]:
    """``moto_server`` on a free loopback port; yields its URL. Services it creates start with 0 of
    their tasks running (moto's default), so a test decides when a service becomes stable by scaling it."""
    try:
        with shared_moto_server(log, {"MOTO_ECS_SERVICE_RUNNING": "0"}) as url:
            yield url
    except MotoStartError as error:
        pytest.fail(str(error))


def aws_environment(tmp_path: Path) -> dict[str, str]:
    """Dummy credentials in environment variables (boto3's standard chain), nothing else from the host."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
