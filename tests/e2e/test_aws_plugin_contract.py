"""The AWS plugin's side of the contract, in process against moto: a repeated request token is answered,
not acted on twice; ``status`` knows every token it saw; lists page; deletes of what is gone succeed."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.aws import boto_client, isolated_aws_home, target_config
from support.moto import moto_server
from svc.plugins.runner import Call, InProcessRunner, PluginCallError
from svc.plugins.sdk import ErrorCode, Status


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[InProcessRunner, str]]:
    directory = tmp_path_factory.mktemp("aws-contract")
    with isolated_aws_home(directory), pytest.MonkeyPatch.context() as patch, \
            moto_server(directory / "moto.log") as url:
        patch.setenv("SVC_PLUGIN_STATE_DIR", str(directory / "state"))
        runner = InProcessRunner.load("AWS", max_threads=4)
        yield runner, url
        asyncio.run(runner.close())


def _call(url: str, resource_type: str, token: str | None = None) -> Call:
    return Call(resource_type, target_config(url), 30.0, token)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_a_repeated_token_is_answered_not_repeated(world: tuple[InProcessRunner, str]) -> None:
    runner, url = world
    call = _call(url, "AWS::SQS::Queue", "token-queue-1")
    first = run(runner.create(call, "jobs", {"VisibilityTimeout": 40}))  # no name: one is made from the label
    second = run(runner.create(call, "jobs", {"VisibilityTimeout": 40}))
    assert first.status is Status.SUCCESS and first.native_id.rsplit("/", 1)[-1].startswith("jobs-")
    assert second.native_id == first.native_id and second.request_id == "token-queue-1"
    made = [u for u in boto_client(url, "sqs").list_queues().get("QueueUrls", []) if "/jobs-" in u]
    assert made == [first.native_id]
    status = run(runner.status(call, "token-queue-1", first.native_id))
    assert status.status is Status.SUCCESS and status.native_id == first.native_id


def test_status_of_an_unknown_token_is_not_found(world: tuple[InProcessRunner, str]) -> None:
    runner, url = world
    answer = run(runner.status(_call(url, "AWS::SQS::Queue"), "never-sent", ""))
    assert answer.status is Status.FAILURE and answer.error_code is ErrorCode.NOT_FOUND


def test_lists_page_through_everything(world: tuple[InProcessRunner, str]) -> None:
    runner, url = world
    logs = boto_client(url, "logs")
    names = {f"/paging/{n}" for n in range(5)}
    for name in names:
        logs.create_log_group(logGroupName=name)
    seen: list[str] = []
    token = None
    while True:
        page = run(runner.list(_call(url, "AWS::Logs::LogGroup"), 2, token, {}))
        assert len(page.native_ids) <= 2
        seen.extend(page.native_ids)
        token = page.next_page_token
        if not token:
            break
    assert names <= set(seen) and len(seen) == len(set(seen))


def test_children_are_listed_by_their_parent(world: tuple[InProcessRunner, str]) -> None:
    runner, url = world
    ec2 = boto_client(url, "ec2")
    vpcs = [ec2.create_vpc(CidrBlock=f"10.9{n}.0.0/16")["Vpc"]["VpcId"] for n in range(2)]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9{n}.1.0/24")["Subnet"]["SubnetId"]
               for n, vpc in enumerate(vpcs)]
    listed = run(runner.list(_call(url, "AWS::EC2::Subnet"), 100, None, {"VpcId": vpcs[0]}))
    assert listed.native_ids == [subnets[0]]


def test_gone_is_not_found_on_read_and_done_on_delete(world: tuple[InProcessRunner, str]) -> None:
    runner, url = world
    call = _call(url, "AWS::EC2::VPC")
    read = run(runner.read(call, "vpc-0123456789abcdef0", None))
    assert read.error_code is ErrorCode.NOT_FOUND
    deleted = run(runner.delete(call, "vpc-0123456789abcdef0"))
    assert deleted.status is Status.SUCCESS


def test_errors_carry_their_codes(world: tuple[InProcessRunner, str]) -> None:
    runner, url = world
    boto_client(url, "s3").create_bucket(Bucket="taken-bucket")
    taken = run(runner.create(_call(url, "AWS::S3::Bucket"), "b", {"BucketName": "taken-bucket"}))
    assert taken.status is Status.FAILURE and taken.error_code is ErrorCode.ALREADY_EXISTS, taken
    # Any AWS::<Service>::<Resource> name reaches a handler (Cloud Control for types with no native one, which
    # refuses a type the registry lacks: tests/integration/test_aws_cloudcontrol.py); other names do not.
    malformed = run(runner.create(_call(url, "AWS::S3Bucket"), "x", {}))
    assert malformed.error_code is ErrorCode.INVALID_REQUEST and "AWS::<Service>::<Resource>" in malformed.message
    with pytest.raises(PluginCallError) as raised:
        run(runner.list(Call("AWS::S3::Bucket", {"Type": "AWS"}, 30.0), 10, None, {}))
    assert raised.value.code is ErrorCode.INVALID_REQUEST and "Region" in raised.value.message


def test_the_state_directory_holds_the_journal(world: tuple[InProcessRunner, str]) -> None:
    runner, url = world
    run(runner.create(_call(url, "AWS::SNS::Topic", "token-topic"), "events", {"DisplayName": "Events"}))
    journal = Path(os.environ["SVC_PLUGIN_STATE_DIR"]) / "journal"
    assert any(journal.iterdir())
