"""The plugin conformance suite for every AWS type part A owns, against one moto server and one agent.

Each case drives one type through create, read, a no-op re-apply, an in-place update, a replace on a
create-only change, list, out-of-band change and delete (made with boto3) and delete, through the real
agent (the AWS plugin in its own process) and the real CLI; the discovery and extract phases run too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.aws import isolated_aws_home, run_id
from support.aws_conformance import CASES
from support.conformance import Bench, bench, discovery_phase, extract_phase, run_conformance
from support.moto import moto_server


@pytest.fixture(scope="module")
def aws_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A moto server and an isolated home with dummy AWS credentials, for the whole module."""
    directory = tmp_path_factory.mktemp("aws-conformance")
    with isolated_aws_home(directory), moto_server(directory / "moto.log") as url:
        yield url, directory


@pytest.fixture(scope="module")
def shared(aws_world: tuple[str, Path]) -> Iterator[Bench]:
    url, directory = aws_world
    with bench(CASES["s3-bucket"](url, "unused"), directory) as b:
        yield b


@pytest.mark.parametrize("name", CASES)
def test_aws_crud_conformance(name: str, aws_world: tuple[str, Path], shared: Bench) -> None:
    url, directory = aws_world
    run_conformance(CASES[name](url, run_id()), directory, shared)


@pytest.mark.parametrize("name", CASES)
def test_aws_discovery_conformance(name: str, aws_world: tuple[str, Path], shared: Bench) -> None:
    url, directory = aws_world
    discovery_phase(CASES[name](url, run_id()), directory, shared)


@pytest.mark.parametrize("name", CASES)
def test_aws_extract_conformance(name: str, aws_world: tuple[str, Path], shared: Bench) -> None:
    url, directory = aws_world
    extract_phase(CASES[name](url, run_id()), directory, shared)
