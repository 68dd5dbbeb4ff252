"""The plugin conformance suite for the AWS plugin's Secrets Manager, DynamoDB, ECS and Route 53 types,
against one moto server and one agent (see ``test_aws_identity`` for what each case runs through).

A secret's value (``SecretString``) reaches AWS, and is never stored, logged or answered in plain text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from support.aws import boto_client, isolated_aws_home, run_id
from support.aws_data_cases import DATA_CASES, secret_value
from support.conformance import Bench, bench, discovery_phase, extract_phase, run_conformance
from support.moto import moto_server
from support.secrets_scan import assert_nowhere


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    directory = tmp_path_factory.mktemp("aws-data")
    with isolated_aws_home(directory), moto_server(directory / "moto.log") as url:
        yield url, directory


@pytest.fixture(scope="module")
def shared(world: tuple[str, Path]) -> Iterator[Bench]:
    url, directory = world
    with bench(DATA_CASES["secretsmanager-secret"](url, "unused"), directory) as b:
        yield b


@pytest.mark.parametrize("name", DATA_CASES)
def test_aws_data_crud_conformance(name: str, world: tuple[str, Path], shared: Bench) -> None:
    url, directory = world
    run_conformance(DATA_CASES[name](url, run_id()), directory, shared)


@pytest.mark.parametrize("name", DATA_CASES)
def test_aws_data_discovery_conformance(name: str, world: tuple[str, Path], shared: Bench) -> None:
    url, directory = world
    discovery_phase(DATA_CASES[name](url, run_id()), directory, shared)


@pytest.mark.parametrize("name", DATA_CASES)
def test_aws_data_extract_conformance(name: str, world: tuple[str, Path], shared: Bench) -> None:
    url, directory = world
    extract_phase(DATA_CASES[name](url, run_id()), directory, shared)


def test_secret_string_reaches_aws_and_is_never_in_plain_text(world: tuple[str, Path], shared: Bench) -> None:
    url, directory = world
    run = run_id()
    case = DATA_CASES["secretsmanager-secret"](url, run)
    b = replace(shared, case=replace(case, stack=f"{case.stack}-secrets"))
    sm = boto_client(url, "secretsmanager")
    outputs = [b.apply("base").stdout]
    arn = b.native_id()
    assert sm.get_secret_value(SecretId=arn)["SecretString"] == secret_value(run, 1)
    outputs.append(b.apply("base").stdout)  # an unchanged secret is not sent again…
    assert "No changes needed" in outputs[-1], outputs[-1]
    outputs.append(b.apply("update").stdout)  # …a changed one is
    assert sm.get_secret_value(SecretId=arn)["SecretString"] == secret_value(run, 2)
    assert b.native_id() == arn
    outputs += [b.svc(*args, "--output-consumer", "machine").stdout for args in (
        ("inventory", "resources"), ("command", "list"), ("command", "status"))]
    outputs.append(b.svc("apply", "--simulate", "--mode", "reconcile", str(b.forma("base"))).stdout)
    destroyed = b.svc("destroy", str(b.forma("update")), "--yes", "--wait")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    for version in (1, 2):
        assert_nowhere(secret_value(run, version), directory, outputs + [destroyed.stdout])
