"""Stack policy changes in the pure planner (engine.md §5.4): inline by type, standalone by label with
attach/detach, reconcile deletes, destroy keeps policies other stacks still use."""

from __future__ import annotations

from typing import Any

import pytest

from support.planning import CATALOG, NOW, TYPES, inventory, new_id, stored
from svc.engine import errors
from svc.engine.planner import Inventory, PlanRequest, StoredPolicies, plan
from svc.model.forma import Forma
from svc.model.records import PolicyRecord

TTL = {"Type": "ttl", "TTLSeconds": 60, "OnDependents": "abort"}
AUTO = {"Type": "auto-reconcile", "IntervalSeconds": 300}
SHARED = {"Type": "ttl", "Label": "shared", "TTLSeconds": 600, "OnDependents": "cascade"}


def record(label: str, data: dict[str, Any], stack: str | None = None) -> PolicyRecord:
    policy_type = "auto-reconcile" if "IntervalSeconds" in data else "ttl"
    return PolicyRecord(id=f"P-{label}", version="1", label=label, policy_type=policy_type, data=data,
                        stack_id=f"S-{stack}" if stack else None, created_at=NOW, updated_at=NOW)


def forma(*policies: dict[str, Any], standalone: tuple[dict[str, Any], ...] = (), stacks: tuple[str, ...] = ("app",),
          resources: bool = True) -> Forma:
    return Forma.model_validate({
        "Stacks": [{"Label": stack, "Policies": list(policies) if stack == stacks[0] else []} for stack in stacks],
        "Policies": list(standalone),
        "Resources": [{"Label": "a", "Type": "T::Test::Item", "Stack": stacks[0], "Target": "main",
                       "Schema": TYPES["T::Test::Item"].to_json(), "Properties": {"Value": "1"}}] if resources else []})


def stored_inventory(policies: StoredPolicies | None = None, stacks: tuple[str, ...] = ("app",)) -> Inventory:
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "1"}), stacks=stacks)
    inv.policies = policies or StoredPolicies()
    return inv


def apply(f: Forma, inv: Inventory, mode: str = "reconcile") -> list[tuple[str, str, str | None]]:
    changeset = plan(PlanRequest("apply", mode, f), inv, CATALOG, new_id)  # type: ignore[arg-type]
    return [(c.operation, c.label, c.stack) for c in changeset.policies]


def test_inline_policies_are_created_with_a_generated_label_and_stored_in_the_command():
    changeset = plan(PlanRequest("apply", "reconcile", forma(TTL, {**AUTO, "Label": "nightly"})), stored_inventory(),
                     CATALOG, new_id)
    ttl, auto = changeset.policies
    assert (ttl.operation, ttl.policy_type, ttl.stack) == ("create", "ttl", "app")
    assert ttl.label.startswith("app-ttl-") and len(ttl.label) == len("app-ttl-") + 8
    assert ttl.config == {"TTLSeconds": 60, "OnDependents": "abort"}
    assert (auto.label, auto.config) == ("nightly", {"IntervalSeconds": 300})
    assert changeset.has_changes and not changeset.resources  # a policy alone is a change
    assert changeset.to_json()["policies"][0]["label"] == ttl.label


def test_inline_policies_match_by_type_and_keep_their_stored_label():
    inv = stored_inventory(StoredPolicies(inline={"app": (record("app-ttl-abcdefgh", {"TTLSeconds": 60,
                                                                                      "OnDependents": "abort"}, "app"),)}))
    assert apply(forma(TTL), inv) == []
    changeset = plan(PlanRequest("apply", "reconcile", forma({**TTL, "TTLSeconds": 120, "Label": "renamed"})), inv,
                     CATALOG, new_id)
    [update] = changeset.policies
    assert (update.operation, update.label) == ("update", "app-ttl-abcdefgh")
    assert (update.old_config, update.config) == ({"TTLSeconds": 60, "OnDependents": "abort"},
                                                  {"TTLSeconds": 120, "OnDependents": "abort"})


def test_reconcile_deletes_undeclared_inline_policies_and_patch_keeps_them():
    inv = stored_inventory(StoredPolicies(inline={"app": (record("keep", {"IntervalSeconds": 300}, "app"),
                                                          record("gone", {"TTLSeconds": 60}, "app"))}))
    assert apply(forma(AUTO), inv, "reconcile") == [("delete", "gone", "app")]
    assert apply(forma(AUTO), inv, "patch") == []


def test_standalone_policies_are_created_updated_attached_and_detached():
    assert apply(forma({"$ref": "policy://shared"}, standalone=(SHARED,)), stored_inventory()) == [
        ("create", "shared", None), ("attach", "shared", "app")]
    stored_policies = StoredPolicies(standalone={"shared": record("shared", {"TTLSeconds": 600,
                                                                             "OnDependents": "cascade"})},
                                     attached={"shared": frozenset({"app", "other"})})
    inv = stored_inventory(stored_policies, stacks=("app", "other"))
    # Referenced and unchanged: nothing; a stack may refer to a stored policy the forma does not list.
    assert apply(forma({"$ref": "policy://shared"}, standalone=(SHARED,)), inv) == []
    assert apply(forma({"$ref": "policy://shared"}), inv) == []
    assert apply(forma({"$ref": "policy://shared"}, standalone=({**SHARED, "TTLSeconds": 60},)), inv) == [
        ("update", "shared", None)]
    # No longer referenced by a stack of the forma: detached from it only.
    assert apply(forma(), inv) == [("detach", "shared", "app")]
    assert apply(forma(), inv, "patch") == [("detach", "shared", "app")]


@pytest.mark.parametrize(("policies", "standalone", "message"), [
    ([{"$ref": "policy://nowhere"}], (), "refers to policy 'nowhere', which is neither in the forma nor stored"),
    ([TTL, {**TTL, "TTLSeconds": 5}], (), "declares two ttl policies"),
    ([{"Type": "ttl", "OnDependents": "abort"}], (), "exactly one of TTLSeconds and ExpiresAt"),
    ([{"Type": "ttl", "ExpiresAt": "tomorrow"}], (), "is not an RFC 3339 timestamp"),
    ([{"Type": "ttl", "TTLSeconds": 0}], (), "TTLSeconds must be at least 1"),
    ([{"Type": "auto-reconcile"}], (), "IntervalSeconds of at least 1"),
    ([{"$ref": "shared"}], (), "must be policy://<label>"),
    ([], ({"Type": "ttl", "TTLSeconds": 5},), "needs a Label"),
    ([], (SHARED, SHARED), "declared twice"),
])
def test_malformed_policies_are_refused(policies, standalone, message):
    with pytest.raises(errors.InvalidForma, match=message.replace("(", r"\(").replace(")", r"\)")):
        apply(forma(*policies, standalone=standalone), stored_inventory())


def test_expires_at_with_a_time_zone_is_accepted():
    [(operation, _, _)] = apply(forma({"Type": "ttl", "ExpiresAt": "2030-01-01T00:00:00Z"}), stored_inventory())
    assert operation == "create"


def test_destroy_deletes_standalone_policies_no_other_stack_uses():
    stored_policies = StoredPolicies(
        standalone={"shared": record("shared", {"TTLSeconds": 600}), "mine": record("mine", {"TTLSeconds": 5})},
        attached={"shared": frozenset({"app", "other"}), "mine": frozenset({"app"})})
    inv = stored_inventory(stored_policies, stacks=("app", "other"))
    f = forma({"$ref": "policy://shared"}, {"$ref": "policy://mine"},
              standalone=(SHARED, {"Type": "ttl", "Label": "mine", "TTLSeconds": 5}))
    changeset = plan(PlanRequest("destroy", "patch", f), inv, CATALOG, new_id)
    by_label = {c.label: c for c in changeset.policies}
    assert by_label["shared"].operation == "skip" and by_label["shared"].referencing_stacks == ["other"]
    assert by_label["mine"].operation == "delete" and by_label["mine"].old_config == {"TTLSeconds": 5}
    # Inline policies go with their stack: the destroy plans nothing for them.
    assert {c.operation for c in changeset.policies} == {"skip", "delete"}
    by_query = plan(PlanRequest("destroy", "patch", None, destroy_matches=tuple(inv.resources)), inv, CATALOG,
                    new_id)
    assert by_query.policies == []
