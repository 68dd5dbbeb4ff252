"""The gates a user relies on (issue 24 items 9-11), through a real agent with the FAKE plugin and the real CLI:
machine mode changes nothing without ``--yes``; a simulation plans what the real command does (a destroy with
dependents is refused the same way); every command id the CLI prints can be looked up."""

from __future__ import annotations

import json
from typing import Any

from support.fake_world import World, chain

MACHINE = ("--output-consumer", "machine")


def refused_for_consent(result: Any) -> None:
    """Exit 1, nothing on stdout (machine mode prints one document or, on an error, none), one ``Error:`` line."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: ") and "--yes" in line and "--simulate" in line, line


def test_machine_mode_changes_nothing_without_yes(world: World) -> None:
    forma = str(world.forma(chain("a", "b")))
    refused_for_consent(world.svc("apply", "--mode", "reconcile", forma, *MACHINE, input=""))
    refused_for_consent(world.svc("apply", "--mode", "reconcile", forma, "--wait", *MACHINE, input=""))
    assert world.cloud.resources() == {} and world.stats()["Commands"] == {}
    simulated = world.svc("apply", "--mode", "reconcile", forma, "--simulate", *MACHINE, input="")
    assert simulated.returncode == 0 and json.loads(simulated.stdout)["ChangesRequired"] is True  # needs no consent

    applied = world.svc("apply", "--mode", "reconcile", forma, "--yes", "--wait", *MACHINE, input="")
    assert applied.returncode == 0, applied.stderr
    [command] = json.loads(applied.stdout)["Commands"]  # as svc command status ID prints it
    assert command["State"] == "Success" and len(world.cloud.resources()) == 2

    refused_for_consent(world.svc("destroy", "--query", "stack:app", *MACHINE, input=""))
    refused_for_consent(world.svc("destroy", forma, *MACHINE, input=""))
    assert len(world.cloud.resources()) == 2 and set(world.inventory()) == {"a", "b"}
    destroyed = world.svc("destroy", "--query", "stack:app", "--yes", "--wait", *MACHINE, input="")
    assert destroyed.returncode == 0, destroyed.stderr
    assert json.loads(destroyed.stdout)["Commands"][0]["State"] == "Success", destroyed.stdout
    assert world.cloud.resources() == {}


def dependents(world: World) -> str:
    """``a`` in stack app and ``b`` in stack other referring to it, applied; the forma's path."""
    forma = world.forma('local a = new item.Item { label = "a"; value = "x"; token = "t"; stack = "app" }\na\n'
                        'new item.Item { label = "b"; value = "y"; token = "t"; stack = "other"; ref = a.res.id }\n',
                        stacks=("app", "other"))
    assert world.apply(forma).returncode == 0
    return str(forma)


def test_a_destroy_simulation_with_dependents_is_refused_like_the_destroy(world: World) -> None:
    dependents(world)
    real = world.svc("destroy", "--query", "stack:app", "--yes", *MACHINE)
    for simulated in (world.svc("destroy", "--query", "stack:app", "--simulate", *MACHINE),
                      world.svc("destroy", "--query", "stack:app", "--simulate")):
        assert simulated.returncode == real.returncode == 1, simulated.stdout + simulated.stderr
        assert simulated.stdout == ""
        [line] = simulated.stderr.splitlines()
        assert line == real.stderr.strip()  # the same refusal, word for word
        assert "(ResourceHasDependents)" in line and "other/FAKE::Test::Item/b" in line, line
        assert "--on-dependents cascade" in line, line
    cascade = world.svc("destroy", "--query", "stack:app", "--simulate", "--on-dependents", "cascade", *MACHINE)
    assert cascade.returncode == 0, cascade.stderr
    updates = {u["ResourceLabel"]: u for u in json.loads(cascade.stdout)["Command"]["ResourceUpdates"]}
    assert updates["b"]["IsCascade"] and updates["b"]["CascadeSource"] == "a"
    assert len(world.cloud.resources()) == 2 and set(world.inventory()) == {"a", "b"}


def command_ids(document: Any) -> list[str]:
    """Every non-empty ``CommandId`` anywhere in a printed document."""
    if isinstance(document, dict):
        found = [document["CommandId"]] if document.get("CommandId") else []
        return found + [i for key, value in document.items() if key != "CommandId" for i in command_ids(value)]
    if isinstance(document, list):
        return [i for value in document for i in command_ids(value)]
    return []


def test_every_printed_command_id_can_be_looked_up(world: World) -> None:
    forma = str(world.forma(chain("a")))
    printed: list[Any] = []
    for args in (("apply", "--mode", "reconcile", forma, "--simulate"),  # changes planned, none made
                 ("apply", "--mode", "reconcile", forma, "--yes", "--wait"),
                 ("apply", "--mode", "reconcile", forma, "--yes"),  # nothing to change
                 ("apply", "--mode", "reconcile", forma, "--yes", "--wait"),
                 ("apply", "--mode", "reconcile", forma, "--simulate"),
                 ("destroy", "--query", "stack:nothing", "--yes")):
        result = world.svc(*args, *MACHINE)
        assert result.returncode == 0, result.stderr
        printed.append(json.loads(result.stdout))
    assert printed[2] == printed[3] == {"CommandId": None}  # no command: nothing to look up
    ids = command_ids(printed)
    assert ids == [printed[1]["Commands"][0]["CommandId"]], printed  # the one command that ran
    for command_id in ids:
        found = world.svc("command", "status", command_id, *MACHINE)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["Commands"][0]["CommandId"] == command_id
