"""The plugin conformance suite for the AWS plugin's IAM types, against one moto server and one agent.

Each case drives one type through create, read, a no-op re-apply, an in-place update, a replace on a
create-only change, list, out-of-band change and delete (made with boto3) and delete, through the real
agent (the AWS plugin in its own process) and the real CLI; discovery and extract run per type too.
A server certificate's private key is never stored, logged or answered in plain text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from support.aws import isolated_aws_home, run_id
from support.aws_identity_cases import IDENTITY_CASES, private_key
from support.conformance import Bench, bench, discovery_phase, extract_phase, run_conformance
from support.moto import moto_server
from support.secrets_scan import assert_nowhere


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    directory = tmp_path_factory.mktemp("aws-identity")
    with isolated_aws_home(directory), moto_server(directory / "moto.log") as url:
        yield url, directory


@pytest.fixture(scope="module")
def shared(world: tuple[str, Path]) -> Iterator[Bench]:
    url, directory = world
    with bench(IDENTITY_CASES["iam-role"](url, "unused"), directory) as b:
        yield b


@pytest.mark.parametrize("name", IDENTITY_CASES)
def test_aws_identity_crud_conformance(name: str, world: tuple[str, Path], shared: Bench) -> None:
    url, directory = world
    run_conformance(IDENTITY_CASES[name](url, run_id()), directory, shared)


@pytest.mark.parametrize("name", IDENTITY_CASES)
def test_aws_identity_discovery_conformance(name: str, world: tuple[str, Path], shared: Bench) -> None:
    url, directory = world
    discovery_phase(IDENTITY_CASES[name](url, run_id()), directory, shared)


@pytest.mark.parametrize("name", IDENTITY_CASES)
def test_aws_identity_extract_conformance(name: str, world: tuple[str, Path], shared: Bench) -> None:
    url, directory = world
    extract_phase(IDENTITY_CASES[name](url, run_id()), directory, shared)


def test_private_key_is_never_in_plain_text(world: tuple[str, Path], shared: Bench) -> None:
    url, directory = world
    run = run_id()
    case = IDENTITY_CASES["iam-servercertificate"](url, run)
    b = replace(shared, case=replace(case, stack=f"{case.stack}-secrets"))
    outputs = [b.apply("base").stdout, b.apply("replace").stdout]
    outputs += [b.svc(*args, "--output-consumer", "machine").stdout for args in (
        ("inventory", "resources"), ("command", "list"), ("command", "status"))]
    destroyed = b.svc("destroy", str(b.forma("replace")), "--yes", "--wait")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert_nowhere(private_key(run), directory, outputs + [destroyed.stdout])
