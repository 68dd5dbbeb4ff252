"""Every forma in examples/aws/ evaluates offline with ``svc eval``, and those of native types apply cleanly to
moto (then a second apply has nothing to change, and destroy removes it all); those with types moto cannot run
(Cloud Control) are applied on the Cloud Control stand-in by test_aws_registry_forma.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.aws import aws_agent, isolated_aws_home
from support.moto import moto_server
from support.processes import Agent, run_svc

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "aws").glob("*.pkl"))
THROUGH_CLOUD_CONTROL = {"platform", "full-control"}  # test_aws_registry_forma.py
NATIVE_EXAMPLES = [path for path in EXAMPLES if path.stem not in THROUGH_CLOUD_CONTROL]


def test_there_are_aws_examples() -> None:
    assert {path.stem for path in EXAMPLES} >= {"network", "storage", "identity", *THROUGH_CLOUD_CONTROL}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.stem)
def test_example_evaluates(example: Path, home: Path) -> None:
    result = run_svc("eval", str(example), "--output-consumer", "machine")
    assert result.returncode == 0, result.stderr
    forma = json.loads(result.stdout)
    assert forma["Resources"] and all(r["Type"].startswith("AWS::") for r in forma["Resources"])
    assert forma["Targets"][0]["Config"] == {"Type": "AWS", "Region": "eu-west-1"}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Agent, str]]:
    directory = tmp_path_factory.mktemp("aws-examples")
    with isolated_aws_home(directory), moto_server(directory / "moto.log") as url, aws_agent(directory) as agent:
        yield agent, url


@pytest.mark.parametrize("example", NATIVE_EXAMPLES, ids=lambda path: path.stem)
def test_example_applies_to_moto(example: Path, agent: tuple[Agent, str]) -> None:
    running, url = agent

    def svc(*args: str) -> object:
        return run_svc(*args, str(example), "--region", "us-east-1", "--endpoint-url", url, "--yes", "--wait",
                       "--config", str(running.config), env={"COLUMNS": "200"})

    applied = svc("apply", "--mode", "reconcile")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    again = svc("apply", "--mode", "reconcile")
    assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr
    destroyed = svc("destroy")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
