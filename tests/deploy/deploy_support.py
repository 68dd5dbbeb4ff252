"""Helpers for the deploy tests: the deploy/ files, placeholder filling, a real moto server.

Not a conftest.py: the root conftest is imported as ``conftest`` by other test folders, and a
second conftest module would shadow it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.processes import free_port

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
    port = free_port()
    server = Path(sys.executable).parent / "moto_server"
    env = {**os.environ, "MOTO_ECS_SERVICE_RUNNING": "0"}
    with log.open("wb") as output:
        process = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=output, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/moto-api/", timeout=1)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto_server did not start:\n{log.read_text(errors='replace')}")
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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
