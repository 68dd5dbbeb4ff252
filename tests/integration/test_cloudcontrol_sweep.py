"""Registry types through boto3's ``cloudcontrol`` client on the stand-in, each with its minimal valid
properties (tests/support/cloudcontrol/examples.py): create, poll to SUCCESS, read (read-only values there,
write-only ones not), update a mutable property in place, a create-only patch refused, list (with the parent's
model for a child type), delete, and the resource gone.

A deterministic sample of about 100 types runs by default; every type with create and read handlers runs with
``SVC_CLOUDCONTROL_SWEEP=all .venv/bin/pytest tests/integration/test_cloudcontrol_sweep.py -p no:xdist -q``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from botocore.exceptions import ClientError

from support.cloudcontrol.client import StandIn
from support.cloudcontrol.examples import example_for
from support.cloudcontrol.models import read_view, without_paths
from support.cloudcontrol.registry import registry

_SAMPLE_STEP = 17  # every 17th type in name order: 103 of the 1,737
_ALWAYS = ("AWS::EC2::Instance", "AWS::ECS::Service", "AWS::IAM::Role", "AWS::Logs::LogStream",
           "AWS::SecretsManager::Secret")


def _types() -> list[str]:
    names = registry().in_scope_type_names()
    if os.environ.get("SVC_CLOUDCONTROL_SWEEP") == "all":
        return names
    return sorted({*names[::_SAMPLE_STEP], *_ALWAYS})


def _wait(client: Any, event: dict[str, Any]) -> dict[str, Any]:
    for _ in range(10):
        event = client.get_resource_request_status(RequestToken=event["RequestToken"])["ProgressEvent"]
        if event["OperationStatus"] not in ("PENDING", "IN_PROGRESS"):
            return event
    raise AssertionError(f"{event['TypeName']}: request still in progress after 10 polls")


def _read(client: Any, type_name: str, identifier: str) -> dict[str, Any]:
    return json.loads(client.get_resource(TypeName=type_name, Identifier=identifier)["ResourceDescription"]
                      ["Properties"])


@pytest.mark.parametrize("type_name", _types())
def test_a_type_goes_through_its_whole_life_on_the_stand_in(cloudcontrol: StandIn, type_name: str):
    schema = registry().schema(type_name)
    example = example_for(schema)
    client = cloudcontrol.client()

    created = _wait(client, client.create_resource(TypeName=type_name, DesiredState=json.dumps(example.properties),
                                                   ClientToken="sweep-create")["ProgressEvent"])
    assert created["OperationStatus"] == "SUCCESS", created.get("StatusMessage")
    identifier = created["Identifier"]
    model = _read(client, type_name, identifier)
    assert not set(model) & schema.write_only
    assert schema.read_only & set(schema.properties) <= set(model)
    # What was asked is there (write-only parts aside), next to the service's own values, nested ones included.
    assert read_view(schema, example.properties).items() <= without_paths(model, schema.read_only_paths).items()

    if example.mutable is not None:
        change = example.mutable
        patch = [{"op": "add", "path": f"/{change.name}", "value": change.after}]
        updated = _wait(client, client.update_resource(TypeName=type_name, Identifier=identifier,
                                                       PatchDocument=json.dumps(patch))["ProgressEvent"])
        assert updated["OperationStatus"] == "SUCCESS", updated.get("StatusMessage")
        assert _read(client, type_name, identifier)[change.name] == change.after

    if example.create_only is not None and "update" in schema.handlers:
        patch = [{"op": "add", "path": f"/{example.create_only.name}", "value": example.create_only.after}]
        with pytest.raises(ClientError) as refused:
            client.update_resource(TypeName=type_name, Identifier=identifier, PatchDocument=json.dumps(patch))
        assert refused.value.response["Error"]["Code"] == "InvalidRequestException"
        assert "createOnlyProperties" in str(refused.value)

    if "list" in schema.handlers:
        model = _read(client, type_name, identifier)  # as updated: the parent may be what the update changed
        parent = {name: model[name] for name in schema.list_required if name in model}
        if len(parent) == len(schema.list_required):  # a child whose parent is named in its own model
            arguments = {"ResourceModel": json.dumps(parent)} if parent else {}
            pages = client.get_paginator("list_resources").paginate(TypeName=type_name, **arguments)
            assert identifier in [d["Identifier"] for page in pages for d in page["ResourceDescriptions"]]

    if "delete" in schema.handlers:
        deleted = _wait(client, client.delete_resource(TypeName=type_name, Identifier=identifier)["ProgressEvent"])
        assert deleted["OperationStatus"] == "SUCCESS", deleted.get("StatusMessage")
        with pytest.raises(ClientError) as gone:
            client.get_resource(TypeName=type_name, Identifier=identifier)
        assert gone.value.response["Error"]["Code"] == "ResourceNotFoundException"
