"""The plugin conformance suite for every AWS type, against one moto server and one agent.

Each case (a row of the case tables in ``support.aws_conformance``, ``support.aws_data_cases`` and
``support.aws_identity_cases``) drives one type through create, read, a no-op re-apply, an in-place update, a
replace on a create-only change, list, out-of-band change and delete (made with boto3) and delete, through the
real agent (the AWS plugin in its own process; formas submitted through its HTTP API as the CLI submits them);
the discovery and extract phases (``svc extract``, the real CLI) run per type too.

A secret's value (Secrets Manager's ``SecretString``, a server certificate's private key) reaches AWS, and is
never stored, logged or answered in plain text, by the agent or by the real CLI.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from support.aws import boto_client, isolated_aws_home, run_id
from support.aws_conformance import CASES
from support.aws_data_cases import DATA_CASES, secret_value
from support.aws_identity_cases import IDENTITY_CASES, private_key
from support.moto import moto_server
from support.secrets_scan import assert_nowhere
from svc.plugins.conformance import Bench, Case, bench, discovery_phase, extract_phase, run_conformance

TABLE: dict[str, Callable[[str, str], Case]] = {**CASES, **DATA_CASES, **IDENTITY_CASES}
MACHINE = ("--output-consumer", "machine")


@pytest.fixture(scope="module")
def aws_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A moto server and an isolated home with dummy AWS credentials, for the whole module."""
    directory = tmp_path_factory.mktemp("aws-conformance")
    with isolated_aws_home(directory), moto_server(directory / "moto.log") as url:
        yield url, directory


@pytest.fixture(scope="module")
def shared(aws_world: tuple[str, Path]) -> Iterator[Bench]:
    """One agent with the AWS plugin for every case (each on a stack of its own)."""
    url, directory = aws_world
    with bench(CASES["s3-bucket"](url, "unused"), directory) as b:
        yield b


@pytest.mark.parametrize("name", TABLE)
def test_aws_crud_conformance(name: str, aws_world: tuple[str, Path], shared: Bench) -> None:
    url, directory = aws_world
    run_conformance(TABLE[name](url, run_id()), directory, shared)


@pytest.mark.parametrize("name", TABLE)
def test_aws_discovery_conformance(name: str, aws_world: tuple[str, Path], shared: Bench) -> None:
    url, directory = aws_world
    discovery_phase(TABLE[name](url, run_id()), directory, shared)


@pytest.mark.parametrize("name", TABLE)
def test_aws_extract_conformance(name: str, aws_world: tuple[str, Path], shared: Bench) -> None:
    url, directory = aws_world
    extract_phase(TABLE[name](url, run_id()), directory, shared)


def answers(b: Bench) -> list[str]:
    """What the real CLI answers about the inventory and the commands, in machine form."""
    return [b.svc(*args, *MACHINE).stdout for args in (
        ("inventory", "resources"), ("command", "list"), ("command", "status"))]


def test_secret_string_reaches_aws_and_is_never_in_plain_text(aws_world: tuple[str, Path], shared: Bench) -> None:
    url, directory = aws_world
    run = run_id()
    case = DATA_CASES["secretsmanager-secret"](url, run)
    b = replace(shared, case=replace(case, stack=f"{case.stack}-secrets"))
    sm = boto_client(url, "secretsmanager")
    outputs = [b.cli_apply("base").stdout]
    arn = b.native_id()
    assert sm.get_secret_value(SecretId=arn)["SecretString"] == secret_value(run, 1)
    outputs.append(b.cli_apply("base").stdout)  # an unchanged secret is not sent again…
    assert "No changes needed" in outputs[-1], outputs[-1]
    outputs.append(b.cli_apply("update").stdout)  # …a changed one is
    assert sm.get_secret_value(SecretId=arn)["SecretString"] == secret_value(run, 2)
    assert b.native_id() == arn
    outputs += answers(b)
    outputs.append(b.svc("apply", "--simulate", "--mode", "reconcile", str(b.forma("base"))).stdout)
    destroyed = b.svc("destroy", str(b.forma("update")), "--yes", "--wait")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    for version in (1, 2):
        assert_nowhere(secret_value(run, version), directory, outputs + [destroyed.stdout])


def test_private_key_is_never_in_plain_text(aws_world: tuple[str, Path], shared: Bench) -> None:
    url, directory = aws_world
    run = run_id()
    case = IDENTITY_CASES["iam-servercertificate"](url, run)
    b = replace(shared, case=replace(case, stack=f"{case.stack}-secrets"))
    outputs = [b.cli_apply("base").stdout, b.cli_apply("replace").stdout]
    outputs += answers(b)
    destroyed = b.svc("destroy", str(b.forma("replace")), "--yes", "--wait")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert_nowhere(private_key(run), directory, outputs + [destroyed.stdout])
