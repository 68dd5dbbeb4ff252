"""Machine output (issue 28 item 9): every command's ``--output-consumer machine`` document is JSON by default,
and the same thing has one shape wherever it is printed.

A command is ``{"Commands": [ … ]}`` as ``svc command status ID`` prints it, whether it comes from
``apply --wait``, ``command status``, ``command status --follow``, ``destroy --wait`` or ``command list``; a
listing is an object holding its rows under the plural noun, as the forma of ``svc inventory resources`` holds
its ``Stacks`` and ``Targets``. Not run here (they need ECS, a package index or pip): ``deploy``, ``plugin
install|update|uninstall|search``, ``upgrade``; ``reconcile`` is ``tests/e2e/test_cli_jobs.py``'s.
"""

from __future__ import annotations

import json
from typing import Any

from support.fake_world import World
from support.processes import run_svc
from svc.model.wire import CommandView

MACHINE = ("--output-consumer", "machine")  # and no --output-schema: JSON is every command's default
ITEMS = 'new item.Item { label = "one"; value = "v" }\nnew item.Item { label = "two"; value = "w" }\n'


def machine(world: World, *args: str, code: int = 0) -> Any:
    """The one JSON document ``svc ARGS`` prints in machine mode."""
    result = world.svc(*args, *MACHINE)
    assert result.returncode == code, result.stdout + result.stderr
    return json.loads(result.stdout)


def only_command(document: Any) -> dict[str, Any]:
    assert isinstance(document, dict) and list(document) == ["Commands"], document
    [command] = document["Commands"]
    return command


def test_every_command_prints_json_and_one_shape_per_thing(world: World) -> None:
    forma = world.forma(ITEMS)

    assert set(machine(world, "eval", str(forma))) >= {"Stacks", "Targets", "Resources"}
    simulated = machine(world, "apply", str(forma), "--simulate")
    assert machine(world, "plan", str(forma)).keys() == simulated.keys()
    applied = only_command(machine(world, "apply", str(forma), "--yes", "--wait"))
    command_id = applied["CommandId"]

    # One command, one document: as apply --wait printed it, so do status, status --follow and the list.
    assert only_command(machine(world, "command", "status", command_id)) == applied
    assert only_command(machine(world, "command", "status", command_id, "--follow")) == applied
    assert only_command(machine(world, "command", "status")) == applied  # this client's latest
    listed = machine(world, "command", "list")
    assert list(listed) == ["Commands"]
    assert next(c for c in listed["Commands"] if c["CommandId"] == command_id).keys() == applied.keys()
    assert machine(world, "cancel") is None  # nothing in progress

    # The inventory: stacks and targets as the forma of `inventory resources` holds them.
    forma_document = machine(world, "inventory", "resources")
    assert machine(world, "inventory") == forma_document
    assert {resource["Label"] for resource in forma_document["Resources"]} == {"one", "two"}
    stacks = machine(world, "inventory", "stacks")
    targets = machine(world, "inventory", "targets")
    assert stacks == {"Stacks": forma_document["Stacks"]}
    assert targets == {"Targets": forma_document["Targets"]}
    assert machine(world, "inventory", "policies") == {"Policies": []}

    status = machine(world, "agent", "status")
    assert status["Version"] and machine(world, "status", "agent").keys() == status.keys()
    listed_plugins = run_svc("plugin", "list", *MACHINE)  # the installed plugins: no agent, no --config
    assert "FAKE" in {plugin["namespace"] for plugin in json.loads(listed_plugins.stdout)["plugins"]}
    assert set(machine(world, "sync")) == {"CommandId", "Changed"}
    assert set(machine(world, "drift")) == {"ModifiedStacks"}
    assert "Resources" in machine(world, "discover")
    assert machine(world, "ttl", "check") == {"ExpiredStacks": [], "Commands": []}
    extracted = machine(world, "extract", "--query", "stack:app", str(world.directory / "extracted.pkl"))
    assert isinstance(extracted, dict)

    destroyed = only_command(machine(world, "destroy", str(forma), "--yes", "--wait"))
    assert {"CommandId", "Command", "State", "ResourceUpdates"} <= destroyed.keys() <= set(CommandView.__struct_fields__)
    assert only_command(machine(world, "command", "status", destroyed["CommandId"])) == destroyed
