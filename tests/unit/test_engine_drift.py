"""Drift, pure parts: the read-back merge keeps the user's envelopes but not their stale values, what a
synchronization read stores (write-only fields, secrets), the drift patch (RFC 6902), and how the CLI shows
it (never a secret's value)."""

from __future__ import annotations

import jsonpatch
import pytest

from support.planning import CATALOG, forma, inventory, new_id, resource, stored
from svc.cli.property_changes import change_lines
from svc.engine import errors
from svc.engine.change_execution import merge
from svc.engine.drift import drift_changes, drift_patch, observed
from svc.engine.observed import observed_state
from svc.engine.planner import Modification, PlanRequest, plan
from svc.model import values
from svc.model.schema import Schema
from svc.model.wire import DriftChange

REF = "svc://2YaaaaaaaaaaaaaaaaaaaaaaaaA#/Path"


def template(value: str | None = None) -> dict:
    embed = {"$embed": True, "$parts": ["<!-- ", {"$ref": REF, "$value": "site"}, " -->"]}
    return embed if value is None else {**embed, "$value": value}


def test_a_template_keeps_its_parts_and_holds_a_different_read_back_value() -> None:
    assert merge(template(), "<!-- site -->") == template()  # what the parts assemble to: unchanged
    edited = merge(template(), "edited by hand")
    assert edited == template("edited by hand")
    assert values.plain(edited) == "edited by hand"  # the planner and resolver see what the provider has
    assert merge(edited, "<!-- site -->") == template()  # a write that makes them agree drops it again
    assert merge(template(), None) == template()  # nothing read: the user's state stays


def test_a_changed_value_is_a_change_of_the_stored_properties() -> None:
    before = {"Content": template(), "Dir": {"$ref": REF, "$value": "site"}}
    same = merge(before, {"Content": "<!-- site -->", "Dir": "site"})
    assert same == before
    changed = merge(before, {"Content": "<!-- site -->", "Dir": "elsewhere"})
    assert changed["Dir"] == {"$ref": REF, "$value": "elsewhere"} and changed != before


def test_a_res_envelope_keeps_its_structure_with_the_value_read() -> None:
    res = {"$res": True, "$label": "net", "$type": "T", "$property": "Id", "$stack": "s"}
    assert merge({"Net": res}, {"Net": "net-2"}) == {"Net": {**res, "$value": "net-2"}}


def test_a_template_with_a_read_back_value_is_not_a_value_envelope() -> None:
    assert not values.is_value(template("x")) and values.is_embed(template("x"))


SCHEMA = Schema.model_validate({
    "Identifier": "$.Id", "Fields": ["Name", "Password", "ApiKey", "Size"],
    "Hints": {"Password": {"WriteOnly": True}, "ApiKey": {"Opaque": True}}})


def test_a_read_stores_no_write_only_value_and_hashes_secrets() -> None:
    kept = {"Name": "a", "Password": values.hashed_secret("pw"), "ApiKey": values.hashed_secret("key")}
    unchanged, read_only = observed_state(kept, SCHEMA, {"Name": "a", "ApiKey": "key", "Id": "n"})
    assert unchanged == kept and read_only == {"Id": "n"}
    # a provider that echoes a write-only field (or a placeholder for it) changes nothing
    echoed, _ = observed_state(kept, SCHEMA, {"Name": "a", "ApiKey": "key", "Password": "****"})
    assert echoed == kept
    rotated, _ = observed_state(kept, SCHEMA, {"Name": "a", "ApiKey": "new-key"})
    assert rotated["ApiKey"] == values.hashed_secret("new-key") and "new-key" not in str(rotated)


@pytest.mark.parametrize(("old", "new"), [
    ({"A": 1, "B": "x"}, {"A": 2, "C": True}),
    ({"L": [1, 2, 3]}, {"L": [1, 5]}),
    ({"L": [1]}, {"L": [1, {"k": "v"}, 3]}),
    ({"N": {"a": {"b": 1}}}, {"N": {"a": {"b": 1, "c/d": 2, "e~f": 3}}}),
    ({"T": 1}, {"T": True}),
    ({}, {}),
])
def test_the_drift_patch_turns_old_into_new(old: dict, new: dict) -> None:
    patch = drift_patch(old, new)
    assert jsonpatch.apply_patch(old, patch) == new
    assert (patch == []) == (old == new and all(type(old[k]) is type(new[k]) for k in old))


def test_the_patch_compares_what_the_provider_has() -> None:
    old = {"Content": template(), "Key": values.hashed_secret("a")}
    new = {"Content": template("edited"), "Key": values.hashed_secret("b")}
    patch = drift_patch(observed(old), observed(new))
    assert patch[0] == {"op": "replace", "path": "/Content", "value": "edited"}
    assert patch[1] == {"op": "replace", "path": "/Key", "value": observed(new)["Key"]}  # whole, as a hash
    assert patch[1]["value"]["$value"] == values.digest("b") and len(patch) == 2


def test_changes_carry_the_value_before_each_change() -> None:
    old = observed({"Content": template(), "Key": values.hashed_secret("a"), "Mode": "0644", "Tags": ["x"]})
    new = observed({"Content": template("edited"), "Key": values.hashed_secret("b"), "Tags": ["x", "y"]})
    changes = drift_changes(old, new)
    assert changes[:2] == [{"Path": "/Mode", "Old": "0644"},
                           {"Path": "/Content", "Old": "<!-- site -->", "New": "edited"}]
    assert changes[2] == {"Path": "/Key", "Old": old["Key"], "New": new["Key"]}
    assert changes[3] == {"Path": "/Tags/1", "New": "y"} and len(changes) == 4


def test_the_cli_shows_old_and_new_values_but_never_a_secret() -> None:
    lines = change_lines([
        DriftChange(Path="/Content", Old="typed", New="edited by hand"),
        DriftChange(Path="/Key", Old=values.hashed_secret("a"), New=values.hashed_secret("b")),
        DriftChange(Path="/Mode", Old="0644"),
        DriftChange(Path="/Tags/1", New="y"),
        DriftChange(Path="/Unset", Old=None, New="set"),
    ])
    assert lines == ['/Content: "typed" → "edited by hand"', "/Key: (sensitive) → (sensitive)",
                     '/Mode: "0644" → (absent)', '/Tags/1: (absent) → "y"', '/Unset: null → "set"']
    many = change_lines([DriftChange(Path=f"/F{i}", New="x" * 200) for i in range(20)])
    assert len(many) == 9 and many[-1] == "… and 12 more" and len(many[0]) < 90


def test_reconcile_refused_when_it_would_recreate_what_was_deleted_outside_svc() -> None:
    inv = inventory(stored("K2", "T::Test::Item", "b", {"Value": "2"}))
    desired = forma(resource("a", "T::Test::Item", {"Value": "1"}), resource("b", "T::Test::Item", {"Value": "2"}))
    inv.modifications["app"] = [Modification("app", "T::Test::Item", "a", "delete", "K1", out_of_band=True)]
    with pytest.raises(errors.ReconcileRejected) as raised:
        plan(PlanRequest("apply", "reconcile", desired), inv, CATALOG, new_id)
    assert raised.value.data["ModifiedStacks"]["app"]["ModifiedResources"] == [
        {"Stack": "app", "Type": "T::Test::Item", "Label": "a", "Operation": "delete"}]
    # destroyed by a user: re-applying the forma brings it back without a refusal
    inv.modifications["app"] = [Modification("app", "T::Test::Item", "a", "delete", "K1")]
    changeset = plan(PlanRequest("apply", "reconcile", desired), inv, CATALOG, new_id)
    assert [(c.label, c.operation) for c in changeset.resources] == [("a", "create")]


def test_a_deletion_the_forma_agrees_with_is_no_drift() -> None:
    """Destroyed (by a user or outside svc) and dropped from the forma: the stack already is what the forma
    says, so the reconcile goes on; an edited resource the forma drops is still drift."""
    inv = inventory(stored("K2", "T::Test::Item", "b", {"Value": "2"}))
    desired = forma(resource("b", "T::Test::Item", {"Value": "2"}))
    for out_of_band in (False, True):
        inv.modifications["app"] = [Modification("app", "T::Test::Item", "a", "delete", "K1", out_of_band)]
        assert not plan(PlanRequest("apply", "reconcile", desired), inv, CATALOG, new_id).has_changes
    inv.modifications["app"] = [Modification("app", "T::Test::Item", "b", "update", "K2", out_of_band=True)]
    dropped = forma(resource("c", "T::Test::Item", {"Value": "3"}))
    with pytest.raises(errors.ReconcileRejected):
        plan(PlanRequest("apply", "reconcile", dropped), inv, CATALOG, new_id)
