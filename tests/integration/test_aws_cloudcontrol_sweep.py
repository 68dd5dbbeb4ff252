"""Registry types through the AWS plugin's Cloud Control handler (the plugin in this process, called through the
plugin gateway, as the agent calls it) on the stand-in, each with its minimal valid properties: create polled
to its end, the read-back holding what was asked, a mutable property updated in place with a JSON patch, the
type listed (a child type by its parent's model), deleted, and gone.

By default a deterministic sample of about 100 registry types runs (not the stand-in sweep's own sample) plus
the 20 native types, sent through Cloud Control here; every type with create and read handlers runs with
``SVC_CLOUDCONTROL_SWEEP=all .venv/bin/pytest tests/integration/test_aws_cloudcontrol_sweep.py -p no:xdist -q``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from svc_plugin_aws.routing import FORCE_CLOUD_CONTROL_VARIABLE, NATIVE

from support.aws import dummy_aws_credentials
from support.cloudcontrol.client import StandIn
from support.cloudcontrol.examples import example_for
from support.cloudcontrol.models import read_view
from support.cloudcontrol.registry import registry
from svc.engine.gateway import PluginAccess, PluginGateway
from svc.engine.operations import Attempt, Guard, RetryPolicy, Step
from svc.plugins.runner import InProcessRunner
from svc.plugins.sdk import ErrorCode, Json, Progress, Status

TARGET = {"Type": "AWS", "Region": "us-east-1"}
POLICY = RetryPolicy(max_retries=2, retry_delay=0.0, status_interval=0.0, call_timeout=30.0)
_SAMPLE_STEP = 17
_SAMPLE_START = 8  # between the stand-in sweep's picks (every 17th from the first): other types


def _types() -> list[str]:
    names = registry().in_scope_type_names()
    if os.environ.get("SVC_CLOUDCONTROL_SWEEP") == "all":
        return names
    return sorted({*names[_SAMPLE_START::_SAMPLE_STEP], *NATIVE})


@pytest.fixture(scope="module")
def plugin(cloudcontrol_server: StandIn, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PluginAccess]:
    """The AWS plugin with every type on Cloud Control, the stand-in's endpoint and its own journal."""
    with dummy_aws_credentials(), pytest.MonkeyPatch.context() as patch:
        for name, value in {**cloudcontrol_server.environment(), FORCE_CLOUD_CONTROL_VARIABLE: "*",
                            "SVC_PLUGIN_STATE_DIR": str(tmp_path_factory.mktemp("aws-state"))}.items():
            patch.setenv(name, value)
        yield PluginGateway({"AWS": InProcessRunner.load("AWS")}, retry=POLICY).plugin("AWS")


async def _ignore(attempt: Attempt, progress: Progress | None) -> None:
    return None


def _token(type_name: str, op: str) -> str:
    return f"sweep-{type_name.replace('::', '-')}-{op}"


def _holds(asked: object, read: object) -> bool:
    """Whether the read-back holds what was asked (objects may gain read-only members, such as nested ARNs)."""
    if isinstance(asked, dict) and isinstance(read, dict):
        return all(key in read and _holds(value, read[key]) for key, value in asked.items())
    return asked == read


@pytest.mark.parametrize("type_name", _types())
def test_a_type_goes_through_its_whole_life_through_the_handler(cloudcontrol: StandIn, plugin: PluginAccess,
                                                                 type_name: str, tmp_path: Path) -> None:
    schema = registry().schema(type_name)
    example = example_for(schema)

    async def life() -> None:
        token = _token(type_name, "create")
        created = await plugin.create(type_name, TARGET, "subject", example.properties, Attempt("create", token),
                                      _ignore, Step(Guard(), token))
        assert created.status is Status.SUCCESS, created.message
        assert created.native_id and created.properties is not None
        assert _holds(read_view(schema, example.properties), created.properties), created.properties
        native_id = created.native_id

        if example.mutable is not None and "update" in schema.handlers:
            change = example.mutable
            desired: Json = {**example.properties, change.name: change.after}
            patch = [{"op": "replace" if change.name in example.properties else "add", "path": f"/{change.name}",
                      "value": change.after}]
            token = _token(type_name, "update")
            updated = await plugin.update(type_name, TARGET, native_id, example.properties, desired, patch,
                                          Attempt("update", token), _ignore, Step(Guard(), token))
            assert updated.status is Status.SUCCESS, updated.message
            assert updated.native_id == native_id
            if change.name not in schema.write_only:
                assert updated.properties is not None and updated.properties[change.name] == change.after

        if "list" in schema.handlers:
            read = await plugin.read(type_name, TARGET, native_id, None, not_found_ok=True)
            assert read.properties is not None, read.message
            parent = {name: read.properties[name] for name in schema.list_required if name in read.properties}
            if len(parent) == len(schema.list_required) and all(isinstance(v, str) for v in parent.values()):
                listed = await plugin.list(type_name, TARGET, 100, None, parent)
                assert native_id in listed.native_ids

        if "delete" in schema.handlers:
            token = _token(type_name, "delete")
            deleted = await plugin.delete(type_name, TARGET, native_id, Attempt("delete", token), _ignore,
                                          Step(Guard(), token))
            assert deleted.status is Status.SUCCESS, deleted.message
            gone = await plugin.read(type_name, TARGET, native_id, None, not_found_ok=True)
            assert gone.error_code is ErrorCode.NOT_FOUND

    asyncio.run(life())
