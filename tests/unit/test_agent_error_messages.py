"""The agent's error bodies become one line that says what to do."""

from __future__ import annotations

import json

from svc.cli import http
from svc.cli.agent_errors import describe


def answer(status: int, body: object) -> http.Response:
    return http.Response(status, {"Content-Type": "application/json"}, json.dumps(body).encode())


def test_reconcile_rejected_lists_the_modified_resources_and_suggests_force() -> None:
    body = {"error": "ReconcileRejected", "message": "…", "data": {"ModifiedStacks": {
        "prod": {"ModifiedResources": [{"Type": "FAKE::Net::Network", "Label": "net", "Operation": "update"},
                                       {"Type": "FAKE::Compute::Server", "Label": "box", "Operation": "delete"}]}}}}
    text = describe(answer(409, body), "apply")
    assert text == ("apply refused by the agent (ReconcileRejected): reconcile refused: resources were changed "
                    "outside this forma since the last reconcile: prod/FAKE::Net::Network/net (update), "
                    "prod/FAKE::Compute::Server/box (delete); put those changes into the forma (see svc inventory "
                    "resources), or overwrite them with --force")


def test_conflicting_commands_name_the_command_to_wait_for_or_cancel() -> None:
    body = {"error": "ConflictingCommands", "data": {"ConflictingCommands": [{"CommandId": "C1", "State": "InProgress"}]}}
    text = describe(answer(409, body), "apply")
    assert "another command is still running on these stacks (C1)" in text
    assert "svc command status C1" in text and "svc cancel --query id:C1" in text


def test_other_typed_errors() -> None:
    assert "stack(s) web do not exist yet; create them first with svc apply --mode reconcile" in describe(
        answer(422, {"error": "PatchRejected", "data": {"UnknownStacks": [{"Label": "web"}]}}), "apply")
    assert "--on-dependents cascade" in describe(
        answer(409, {"error": "ResourceHasDependents", "data": {"Dependents": [{"ResourceLabel": "sub"}]}}), "destroy")
    assert "app/FAKE::Net::Network/n cannot be created without Name, Cidr" in describe(answer(400, {
        "error": "RequiredFieldMissingOnCreate",
        "data": {"MissingFields": ["Name", "Cidr"], "Stack": "app", "Label": "n", "Type": "FAKE::Net::Network"}}),
        "apply")
    # A type without its own rendering shows the engine's message.
    assert describe(answer(400, {"error": "CyclesDetected", "data": {}, "message": "cycle: a -> b -> a"}),
                    "apply") == "apply refused by the agent (CyclesDetected): cycle: a -> b -> a"


def test_untyped_and_unparsable_bodies() -> None:
    assert describe(answer(400, {"message": "the file forma.json is empty"}), "apply") == (
        "apply: the agent answered 400: the file forma.json is empty")
    assert describe(answer(404, {"error": "No stacks found"}), "inventory") == (
        "inventory: the agent answered 404: No stacks found")
    assert describe(http.Response(500, content=b"Internal Server Error\nboom"), "apply") == (
        "apply: the agent answered 500: Internal Server Error boom")
    assert describe(http.Response(503), "cancel") == "cancel: the agent answered 503"
