"""The AWS plugin's Cloud Control handler in its own process (the agent's plugin host, the gateway's retries and
polling) against the Cloud Control stand-in: registry types with no native handler, end to end."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.aws import aws_environment
from support.cloudcontrol.client import StandIn
from svc.engine.gateway import PluginAccess, PluginGateway
from svc.engine.operations import Attempt, Guard, RetryPolicy, Step
from svc.plugins.host import HostedPlugin
from svc.plugins.journal import Journal
from svc.plugins.runner import PluginCallError
from svc.plugins.sdk import ErrorCode, Json, Progress, ReadResult, Status

TARGET = {"Type": "AWS", "Region": "us-east-1"}  # no EndpointUrl: AWS_ENDPOINT_URL_CLOUDCONTROL points at the stand-in
POLICY = RetryPolicy(max_retries=3, retry_delay=0.0, status_interval=0.0, call_timeout=30.0)
KEY = "AWS::KMS::Key"


@dataclass
class Aws:
    """The AWS plugin as the agent drives it: hosted in its own process, called through the plugin gateway."""

    host: HostedPlugin
    plugin: PluginAccess
    journal: Path

    async def create(self, resource_type: str, properties: Json, token: str = "cmd-k1-create") -> Progress:
        return await self.plugin.create(resource_type, TARGET, "subject", properties, Attempt("create", token),
                                        _ignore, Step(Guard(), token))

    async def update(self, resource_type: str, native_id: str, patch: list[Json], desired: Json) -> Progress:
        token = f"cmd-{len(patch)}-update"
        return await self.plugin.update(resource_type, TARGET, native_id, {}, desired, patch,
                                        Attempt("update", token), _ignore, Step(Guard(), token))

    async def delete(self, resource_type: str, native_id: str) -> Progress:
        return await self.plugin.delete(resource_type, TARGET, native_id, Attempt("delete", "cmd-k1-delete"),
                                        _ignore, Step(Guard(), "k1"))

    async def read(self, resource_type: str, native_id: str) -> ReadResult:
        return await self.plugin.read(resource_type, TARGET, native_id, None, not_found_ok=True)

    async def list(self, resource_type: str, filters: dict[str, str] | None = None, page_size: int = 100) -> list[str]:
        found: list[str] = []
        token: str | None = None
        while True:
            page = await self.plugin.list(resource_type, TARGET, page_size, token, filters or {})
            found += page.native_ids
            token = page.next_page_token
            if not token:
                return found


async def _ignore(attempt: Attempt, progress: Progress | None) -> None:
    return None


def run(cloudcontrol: StandIn, tmp_path: Path, scenario: Callable[[Aws], Awaitable[Any]]) -> Any:
    """``scenario`` with the AWS plugin in a process of its own, pointed at the stand-in for Cloud Control."""
    state = tmp_path / "plugin-state"
    env = {**aws_environment(tmp_path), **cloudcontrol.environment(), "SVC_PLUGIN_STATE_DIR": str(state)}

    async def main() -> Any:
        host = HostedPlugin("AWS", env=env, backoff=0.01, max_backoff=0.05)
        gateway = PluginGateway({"AWS": host}, retry=POLICY)
        await gateway.start()
        try:
            return await scenario(Aws(host, gateway.plugin("AWS"), state / "journal"))
        finally:
            await gateway.close()

    return asyncio.run(main())


def stored(cloudcontrol: StandIn, resource_type: str) -> dict[str, Json]:
    return cloudcontrol.state()["resources"].get(resource_type, {})


def calls(cloudcontrol: StandIn, operation: str) -> int:
    return int(cloudcontrol.state()["calls"].get(operation, 0))


# -- a resource's life -------------------------------------------------------------------------------------------


def test_a_key_is_created_read_updated_and_deleted_through_cloud_control(cloudcontrol: StandIn, tmp_path: Path) -> None:
    cloudcontrol.set_timing(polls=2)  # each request answers IN_PROGRESS twice: the agent polls

    async def scenario(aws: Aws) -> tuple[Progress, ReadResult, Progress, Progress, ReadResult]:
        created = await aws.create(KEY, {"Description": "orders", "EnableKeyRotation": False})
        read = await aws.read(KEY, created.native_id)
        updated = await aws.update(KEY, created.native_id, [{"op": "replace", "path": "/Description", "value": "v2"}],
                                   {"Description": "v2", "EnableKeyRotation": False})
        deleted = await aws.delete(KEY, created.native_id)
        return created, read, updated, deleted, await aws.read(KEY, created.native_id)

    created, read, updated, deleted, gone = run(cloudcontrol, tmp_path, scenario)
    assert created.status is Status.SUCCESS, created
    assert created.native_id and created.properties is not None
    assert created.properties["KeyId"] == created.native_id  # read-only properties come back
    assert read.properties is not None and read.properties["Description"] == "orders"
    assert updated.status is Status.SUCCESS and updated.properties is not None
    assert updated.properties["Description"] == "v2" and updated.properties["EnableKeyRotation"] is False
    assert deleted.status is Status.SUCCESS
    assert gone.error_code is ErrorCode.NOT_FOUND
    assert stored(cloudcontrol, KEY) == {}
    assert calls(cloudcontrol, "GetResourceRequestStatus") >= 6  # three requests, each polled to its end
    assert calls(cloudcontrol, "CreateResource") == calls(cloudcontrol, "UpdateResource") == calls(cloudcontrol, "DeleteResource") == 1


def test_an_update_sends_only_what_the_planner_changed(cloudcontrol: StandIn, tmp_path: Path) -> None:
    async def scenario(aws: Aws) -> Progress:
        created = await aws.create(KEY, {"Description": "a", "Enabled": True})
        await aws.update(KEY, created.native_id, [{"op": "replace", "path": "/Description", "value": "b"}],
                         {"Description": "b", "Enabled": False})  # Enabled differs, but the patch does not say so
        return created

    created = run(cloudcontrol, tmp_path, scenario)
    model = stored(cloudcontrol, KEY)[created.native_id]
    assert model["Description"] == "b" and model["Enabled"] is True


def test_a_compound_identifier_is_the_values_joined_with_a_bar(cloudcontrol: StandIn, tmp_path: Path) -> None:
    cloudcontrol.put_resource("AWS::Logs::LogGroup", {"LogGroupName": "app"})

    async def scenario(aws: Aws) -> tuple[Progress, ReadResult, Progress]:
        created = await aws.create("AWS::Logs::LogStream", {"LogGroupName": "app", "LogStreamName": "web"})
        read = await aws.read("AWS::Logs::LogStream", created.native_id)
        # LogStream has no update handler: Cloud Control says so, and the agent does not retry
        refused = await aws.update("AWS::Logs::LogStream", created.native_id,
                                   [{"op": "add", "path": "/Extra", "value": "x"}], {})
        return created, read, refused

    created, read, refused = run(cloudcontrol, tmp_path, scenario)
    assert created.status is Status.SUCCESS and created.native_id == "app|web"
    assert read.properties == {"LogGroupName": "app", "LogStreamName": "web"}
    assert refused.status is Status.FAILURE and refused.error_code is ErrorCode.INVALID_REQUEST, refused
    assert calls(cloudcontrol, "UpdateResource") == 1


def test_a_resource_already_gone_is_deleted(cloudcontrol: StandIn, tmp_path: Path) -> None:
    async def scenario(aws: Aws) -> Progress:
        created = await aws.create(KEY, {"Description": "short-lived"})
        cloudcontrol.delete_resource(KEY, created.native_id)
        return await aws.delete(KEY, created.native_id)

    assert run(cloudcontrol, tmp_path, scenario).status is Status.SUCCESS


# -- lists ------------------------------------------------------------------------------------------------------


def test_children_are_listed_by_their_parents_model_page_by_page(cloudcontrol: StandIn, tmp_path: Path) -> None:
    cloudcontrol.set_timing(page_size=2)  # Cloud Control's own pages are small: the handler follows NextToken
    groups = [cloudcontrol.put_resource("AWS::Logs::LogGroup", {"LogGroupName": f"app-{n}"})["Identifier"]
              for n in range(2)]
    streams = {group: {cloudcontrol.put_resource("AWS::Logs::LogStream",
                                                 {"LogGroupName": group, "LogStreamName": f"s-{n}"})["Identifier"]
                       for n in range(3)} for group in groups}
    keys = {cloudcontrol.put_resource(KEY, {"Description": f"k{n}"})["Identifier"] for n in range(5)}

    async def scenario(aws: Aws) -> tuple[list[str], dict[str, list[str]]]:
        top = await aws.list(KEY, page_size=2)  # the agent's pages, too
        children = {group: await aws.list("AWS::Logs::LogStream", {"LogGroupName": group}) for group in groups}
        return top, children

    top, children = run(cloudcontrol, tmp_path, scenario)
    assert sorted(top) == sorted(keys)
    assert {group: set(found) for group, found in children.items()} == streams
    assert streams[groups[0]] == {"app-0|s-0", "app-0|s-1", "app-0|s-2"}


def test_a_throttled_listing_is_retried_and_a_denied_one_fails_with_its_code(cloudcontrol: StandIn, tmp_path: Path) -> None:
    cloudcontrol.put_resource(KEY, {"Description": "listed"})
    cloudcontrol.throttle(next_calls=3, operations=["ListResources"])  # more than botocore's own retry absorbs

    async def scenario(aws: Aws) -> tuple[list[str], PluginCallError]:
        listed = await aws.list(KEY)
        cloudcontrol.answer_error("ListResources", "AccessDeniedException", type_name="AWS::Lambda::Function")
        with pytest.raises(PluginCallError) as denied:
            await aws.list("AWS::Lambda::Function")
        return listed, denied.value

    listed, denied = run(cloudcontrol, tmp_path, scenario)
    assert len(listed) == 1
    assert denied.code is ErrorCode.ACCESS_DENIED


# -- faults -----------------------------------------------------------------------------------------------------


def test_throttling_is_retried_by_the_agent_and_the_create_succeeds_once(cloudcontrol: StandIn, tmp_path: Path) -> None:
    cloudcontrol.throttle(next_calls=3, operations=["CreateResource"])

    async def scenario(aws: Aws) -> Progress:
        return await aws.create(KEY, {"Description": "patient"})

    created = run(cloudcontrol, tmp_path, scenario)
    assert created.status is Status.SUCCESS, created
    assert len(stored(cloudcontrol, KEY)) == 1


def test_a_request_that_failed_throttled_is_sent_again_and_creates_once(cloudcontrol: StandIn, tmp_path: Path) -> None:
    # Cloud Control took the request, and the type's handler was throttled by its service: the request is over,
    # so the agent sends a new one (a new ClientToken) after its backoff.
    cloudcontrol.fail_requests("CREATE", "Throttling", type_name=KEY, message="Rate exceeded", count=1)

    async def scenario(aws: Aws) -> Progress:
        return await aws.create(KEY, {"Description": "second time lucky"})

    created = run(cloudcontrol, tmp_path, scenario)
    assert created.status is Status.SUCCESS, created
    assert list(stored(cloudcontrol, KEY)) == [created.native_id]
    assert calls(cloudcontrol, "CreateResource") == 2


def test_a_failed_request_names_the_type_and_cloud_controls_message(cloudcontrol: StandIn, tmp_path: Path) -> None:
    cloudcontrol.fail_requests("CREATE", "InvalidRequest", type_name=KEY, message="The key policy is malformed")

    async def scenario(aws: Aws) -> Progress:
        return await aws.create(KEY, {"Description": "bad"})

    failed = run(cloudcontrol, tmp_path, scenario)
    assert failed.status is Status.FAILURE and failed.error_code is ErrorCode.INVALID_REQUEST
    assert KEY in failed.message and "The key policy is malformed" in failed.message
    assert calls(cloudcontrol, "CreateResource") == 1  # what the user must fix is not retried


def test_a_type_the_registry_lacks_is_refused_by_name(cloudcontrol: StandIn, tmp_path: Path) -> None:
    async def scenario(aws: Aws) -> Progress:
        return await aws.create("AWS::EC2::Nothing", {})

    refused = run(cloudcontrol, tmp_path, scenario)
    assert refused.status is Status.FAILURE and refused.error_code is ErrorCode.INVALID_REQUEST
    assert "AWS::EC2::Nothing" in refused.message
    assert calls(cloudcontrol, "CreateResource") == 1


@pytest.mark.parametrize(("code", "expected"), [("InvalidRequestException", ErrorCode.INVALID_REQUEST),
                                                ("AlreadyExistsException", ErrorCode.ALREADY_EXISTS),
                                                ("AccessDeniedException", ErrorCode.ACCESS_DENIED)])
def test_what_the_user_must_fix_is_reported_and_not_retried(cloudcontrol: StandIn, tmp_path: Path, code: str,
                                                            expected: ErrorCode) -> None:
    cloudcontrol.answer_error("CreateResource", code, type_name=KEY, message="you cannot do that")

    async def scenario(aws: Aws) -> Progress:
        return await aws.create(KEY, {"Description": "refused"})

    refused = run(cloudcontrol, tmp_path, scenario)
    assert refused.status is Status.FAILURE and refused.error_code is expected
    assert "you cannot do that" in refused.message
    assert calls(cloudcontrol, "CreateResource") == 1


def test_a_create_interrupted_after_it_reached_cloud_control_creates_once(cloudcontrol: StandIn, tmp_path: Path) -> None:
    # CreateResource answers late: the plugin process is killed while Cloud Control carries the call out.
    cloudcontrol.delay(2000, operations=["CreateResource"])
    cloudcontrol.set_timing(polls=0)  # as the real service does, a request nobody polls is carried out all the same

    async def scenario(aws: Aws) -> tuple[Progress, int, int]:
        first_pid = aws.host.describe()["pid"]
        assert (await aws.read(KEY, "none")).error_code is ErrorCode.NOT_FOUND  # the plugin's client is made now
        creating = asyncio.create_task(aws.create(KEY, {"Description": "once"}, token="cmd-k9-create"))
        await _journaled_pending(aws.journal, "cmd-k9-create")
        await asyncio.sleep(1.0)  # the request is at the stand-in now, which carries it out after its delay
        os.kill(first_pid, signal.SIGKILL)
        created = await creating  # the host restarts the plugin and re-sends the create with the same token
        return created, first_pid, aws.host.describe()["pid"]

    created, first_pid, second_pid = run(cloudcontrol, tmp_path, scenario)
    assert second_pid != first_pid
    assert created.status is Status.SUCCESS, created
    assert list(stored(cloudcontrol, KEY)) == [created.native_id]
    assert calls(cloudcontrol, "CreateResource") == 2  # sent twice, carried out once (the same ClientToken)


async def _journaled_pending(directory: Path, token: str) -> None:
    journal = Journal("AWS", directory)  # the plugin process's journal, read from this one
    try:
        for _ in range(300):
            if (journal.get(token) or {}).get("state") == "pending":
                return
            await asyncio.sleep(0.02)
    finally:
        journal.close()
    raise AssertionError("the plugin never journaled the create")
