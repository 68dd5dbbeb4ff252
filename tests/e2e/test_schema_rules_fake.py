"""The field rules of the schema (seed 001 §2.1, §2.3, §2.6) through a real agent and the real CLI, on the
FAKE cloud's ``FAKE::Test::Rules`` and ``FAKE::Test::Record`` types: each change converges in one apply (the
next one plans nothing), and what happened is read back from the cloud's own file."""

from __future__ import annotations

from typing import Any

import pytest

from support.fake_world import World
from svc.forma import pkl_text

NO_CHANGES = "No changes needed"


def rules(*, seed: str = "s1", passphrase: str = "p1", order: tuple[str, ...] = ("a", "b"),
          document: str = '{"a": 1, "b": [1, 2]}', policy: str = '{"x": {"y": 1, "z": 2}}') -> str:
    listed = " ".join(pkl_text.string(value) for value in order)
    return (f'new rules.Rules {{ label = "r"; seed = "{seed}"; passphrase = "{passphrase}"; order {{ {listed} }}\n'
            f'  settings {{ document = {pkl_text.string(document)}; '
            f'layers {{ new {{ policy = {pkl_text.string(policy)} }} }} }} }}\n')


def converges(world: World, body: str) -> None:
    """One apply makes the change; the next one has nothing left to do."""
    path = world.forma(body)
    result = world.apply(path)
    assert result.returncode == 0 and NO_CHANGES not in result.stdout, result.stdout + result.stderr
    again = world.apply(path)
    assert again.returncode == 0 and NO_CHANGES in again.stdout, again.stdout + again.stderr


def the_one(world: World, resource_type: str) -> tuple[str, dict[str, Any]]:
    [(native_id, found)] = world.cloud_labels(resource_type).items()
    return native_id, found["properties"]


def test_write_only_fields_a_create_only_change_replaces_and_another_is_updated(world: World) -> None:
    converges(world, rules())
    first, properties = the_one(world, "FAKE::Test::Rules")
    assert (properties["Seed"], properties["Passphrase"]) == ("s1", "p1")

    converges(world, rules(passphrase="p2"))  # write-only: sent in the update
    native_id, properties = the_one(world, "FAKE::Test::Rules")
    assert native_id == first and properties["Passphrase"] == "p2"

    plan = world.svc("apply", "--mode", "reconcile", str(world.forma(rules(seed="s2", passphrase="p2"))),
                     "--simulate")
    row = next(line for line in plan.stdout.splitlines() if "FAKE::Test::Rules" in line)
    assert "± replace" in row and "create-only field(s) changed: Seed" in row, plan.stdout
    assert '    /Seed: "s1" → "s2"' in plan.stdout.splitlines(), plan.stdout
    converges(world, rules(seed="s2", passphrase="p2"))  # write-only and create-only: compared with what svc stored
    native_id, properties = the_one(world, "FAKE::Test::Rules")
    assert native_id != first and (properties["Seed"], properties["Passphrase"]) == ("s2", "p2")
    assert world.inventory()["r"]["NativeID"] == native_id


@pytest.mark.parametrize(("before", "after"), [(("a", "b"), ("b", "a", "c")), (("a", "b", "c"), ("c", "a"))])
def test_an_array_converges_in_one_apply_at_any_length(world: World, before: tuple[str, ...],
                                                       after: tuple[str, ...]) -> None:
    converges(world, rules(order=before))
    converges(world, rules(order=after))
    assert the_one(world, "FAKE::Test::Rules")[1]["Order"] == list(after)


def test_json_documents_inside_sub_resources_compare_canonically(world: World) -> None:
    converges(world, rules())
    reformatted = world.apply(world.forma(rules(document='{ "b":[1,2], "a":1 }', policy='{"x":{"z":2,"y":1}}')))
    assert reformatted.returncode == 0 and NO_CHANGES in reformatted.stdout, reformatted.stdout
    converges(world, rules(policy='{"x": {"y": 1, "z": 3}}'))
    [layer] = the_one(world, "FAKE::Test::Rules")[1]["Settings"]["Layers"]
    assert layer["Policy"] == '{"x":{"y":1,"z":3}}'


def test_a_reference_at_a_key_with_dots_colons_slashes_spaces_and_quotes_resolves(world: World) -> None:
    key = 'a.b:c/d e "f" \\g'
    literal = pkl_text.string(key)
    body = (f'local r = new rules.Rules {{ label = "r"; labels {{ [{literal}] = "found"; ["a"] = "decoy" }} }}\n'
            f'r\nnew item.Item {{ label = "i"; ref = r.res.labels.at({literal}) }}\n')
    converges(world, body)
    assert the_one(world, "FAKE::Test::Item")[1]["Ref"] == "found"


def test_the_native_id_comes_from_the_identifier_when_the_create_answer_names_none(world: World) -> None:
    converges(world, 'new rules.Record { label = "rec"; value = "v1" }\n')
    native_id, properties = the_one(world, "FAKE::Test::Record")
    assert properties["Meta"]["RecordId"] == native_id  # the schema's identifier: $.Meta.RecordId
    assert world.inventory()["rec"]["NativeID"] == native_id
    converges(world, 'new rules.Record { label = "rec"; value = "v2" }\n')  # later calls reach it by that id
    assert the_one(world, "FAKE::Test::Record") == (native_id, {**properties, "Value": "v2"})


def test_a_create_answer_with_neither_a_native_id_nor_the_identifier_fails_and_records_nothing(world: World) -> None:
    world.cloud.set_knob("anonymous", {"types": ["FAKE::Test::Record"]})
    result = world.apply(world.forma('new rules.Record { label = "rec"; value = "v1" }\n'))
    assert result.returncode != 0, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert ("plugin FAKE answered the create of FAKE::Test::Record 'rec' without a native id, and its properties "
            "hold none at the identifier '$.Meta.RecordId'") in " ".join(output.split()), output
    assert world.inventory() == {}
