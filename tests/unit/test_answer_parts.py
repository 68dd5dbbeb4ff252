"""The answers rendered update by update (``svc.api.answer_parts``) say exactly what the whole views say."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from support.records import T0
from svc.api.answer_parts import Part, Rendered, chunks, json_parts, status_parts, submit_parts
from svc.api.command_views import stored_view, submit_response
from svc.engine.planner.changeset import Changeset, ResourceChange
from svc.engine.service import Caller, StoredCommand, Submission
from svc.model import wire
from svc.model.records import CommandRecord, ResourceUpdateRecord


def _sent(parts: list[Part]) -> Any:
    async def collect() -> bytes:
        return b"".join([chunk async for chunk in chunks(parts)])

    return json.loads(asyncio.run(collect()))


def _change(ksuid: str, label: str, stack: str) -> ResourceChange:
    return ResourceChange(ksuid=ksuid, operation="create", type="FAKE::Test::Item", label=label, stack=stack,
                          target="cloud", schema={}, desired={"Value": label})


def _update(ksuid: str, label: str, stack: str, state: str = "Success", **data: Any) -> ResourceUpdateRecord:
    return ResourceUpdateRecord(command_id="cmd", ksuid=ksuid, operation="create", state=state,
                                resource_type="FAKE::Test::Item", resource_label=label, stack_label=stack,
                                start_ts=T0, data=data, change=dict(_change(ksuid, label, stack).to_json()))


def test_a_status_is_the_whole_view_in_its_order() -> None:
    command = CommandRecord(id="cmd", command="apply", state="Failed", start_ts=T0, client_id="c", mode="reconcile",
                            data={"stacks": [{"label": "b", "operation": "create"}]})
    updates = (_update("k1", "z", "b"), _update("k2", "a", "b", "Failed", message="no"), _update("k3", "m", "a"),
               _update("k4", "a", "b"))
    for summary in (False, True):
        stored = [StoredCommand(command, updates, summary=summary)] * 2
        whole = wire.ListCommandStatusResponse(Commands=[stored_view(each) for each in stored]).to_json()
        assert _sent(status_parts(stored)) == json.loads(json.dumps(whole, default=str))
        labels = [u["ResourceLabel"] for u in _sent(status_parts(stored))["Commands"][0]["ResourceUpdates"]]
        assert labels == ["m", "a", "a", "z"]


def test_rendered_arrays_sit_anywhere_and_in_many_chunks() -> None:
    many = Rendered(json.dumps({"n": n}) for n in range(2500))
    value = {"a": 1, "b": {"c": [1, {"d": many}], "e": Rendered()}, "f": [{"x": None}]}
    assert _sent(json_parts(value)) == {"a": 1, "b": {"c": [1, {"d": [{"n": n} for n in range(2500)]}], "e": []},
                                        "f": [{"x": None}]}


def test_a_plan_is_the_whole_submission_answer() -> None:
    changes = [_change("k2", "b", "s"), _change("k1", "a", "s")]
    for changeset in (Changeset("apply", "reconcile", changes), Changeset("apply", "reconcile")):
        submission = Submission("cmd" if changeset.has_changes else "", changeset, fingerprint={"a": "b"})
        whole = submit_response(submission, Caller("c")).to_json()
        assert _sent(submit_parts(submission, Caller("c"))) == json.loads(json.dumps(whole, default=str))
