"""The pure planner (engine.md §1.2–§1.4, §5): forma + stored state in, changeset out, refusals."""

from __future__ import annotations

import base64
import json

import pytest

from support.planning import (
    CATALOG,
    forma,
    inventory,
    new_id,
    ref,
    res,
    resource,
    stored,
)
from svc.engine import errors
from svc.engine.planner import Modification, PlanRequest, plan


def apply(f, inv, mode="reconcile", force=False):
    return plan(PlanRequest("apply", mode, f, force=force), inv, CATALOG, new_id)


def ops(changeset):
    return sorted((c.label, c.operation) for c in changeset.resources)


def test_new_resources_are_created_with_references_translated():
    cs = apply(forma(resource("a", "T::Test::Item", {"Value": "1"}),
                     resource("b", "T::Test::Item", {"Ref": res("a", "T::Test::Item", "Id")})), inventory())
    assert ops(cs) == [("a", "create"), ("b", "create")]
    a = next(c for c in cs.resources if c.label == "a")
    b = next(c for c in cs.resources if c.label == "b")
    assert b.desired["Ref"] == {"$ref": f"svc://{a.ksuid}#/Id"}
    assert [s.label for s in cs.stacks] == []  # the stack exists already


def test_unchanged_resource_plans_nothing():
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "1"}))
    assert not apply(forma(resource("a", "T::Test::Item", {"Value": "1"})), inv).has_changes


def test_update_in_place_carries_patch_and_prior():
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "1"}))
    cs = apply(forma(resource("a", "T::Test::Item", {"Value": "2"})), inv)
    [change] = cs.resources
    assert (change.operation, change.ksuid, change.native_id) == ("update", "K1", "native-a")
    assert change.patch == [{"op": "replace", "path": "/Value", "value": "2"}]
    assert change.prior == {"Value": "1"}


def test_create_only_change_is_a_replace_pair_with_a_reason():
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Token": "t1"}))
    cs = apply(forma(resource("a", "T::Test::Item", {"Token": "t2"})), inv)
    delete, create = sorted(cs.resources, key=lambda c: c.operation, reverse=True)
    assert (delete.operation, create.operation) == ("delete", "create")
    assert delete.ksuid == create.ksuid == "K1" and delete.group_id == create.group_id is not None
    assert delete.create_only_patch == [{"op": "replace", "path": "/Token", "value": "t2"}]
    assert "Token" in delete.reason


def test_a_replace_carries_its_other_changes_for_the_plan_with_secrets_hashed():
    inv = inventory(stored("K1", "T::Storage::Bucket", "b", {"Name": "n1", "Version": "1"}))
    key = {"$value": "k-123", "$visibility": "Opaque", "$strategy": "Update"}
    cs = apply(forma(resource("b", "T::Storage::Bucket", {"Name": "n2", "Version": "2", "ApiKey": key})), inv)
    delete = next(c for c in cs.resources if c.operation == "delete")
    assert delete.create_only_patch == [{"op": "replace", "path": "/Name", "value": "n2"}]
    assert sorted((op["op"], op["path"]) for op in delete.patch) == [("add", "/ApiKey"), ("replace", "/Version")]
    assert "k-123" not in json.dumps(delete.patch)


def test_reconcile_deletes_what_the_forma_dropped_and_patch_does_not():
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "1"}),
                    stored("K2", "T::Test::Item", "b", {"Value": "2"}))
    f = forma(resource("a", "T::Test::Item", {"Value": "1"}))
    assert ops(apply(f, inv, "reconcile")) == [("b", "delete")]
    assert not apply(f, inv, "patch").has_changes


def test_rename_by_alias_is_a_metadata_only_update():
    inv = inventory(stored("K1", "T::Test::Item", "old", {"Value": "1"}))
    cs = apply(forma(resource("new", "T::Test::Item", {"Value": "1"}, alias="old")), inv)
    [change] = cs.resources
    assert (change.operation, change.ksuid, change.old_label, change.metadata_only) == ("update", "K1", "old", True)


def test_discovered_resource_is_adopted():
    inv = inventory(stored("K9", "T::Test::Item", "a", {"Value": "1"}, stack="$unmanaged", managed=False))
    [change] = apply(forma(resource("a", "T::Test::Item", {"Value": "1"})), inv).resources
    assert (change.operation, change.ksuid, change.old_stack) == ("update", "K9", "$unmanaged")


def test_a_discovered_resource_on_another_target_is_not_adopted():
    """Identity is (target, type, native id): another target's discovered resource with the label (or the alias) is
    another resource. The forma's is created anew; the discovered one is neither taken over nor deleted."""
    inv = inventory(stored("K9", "T::Test::Item", "a", {"Value": "1"}, stack="$unmanaged", managed=False,
                           target="lab"),
                    stored("K8", "T::Test::Item", "old", {"Value": "1"}, stack="$unmanaged", managed=False,
                           target="lab"),
                    targets={"main": None, "lab": None})
    cs = apply(forma(resource("a", "T::Test::Item", {"Value": "1"}),
                     resource("new", "T::Test::Item", {"Value": "1"}, alias="old")), inv)
    assert ops(cs) == [("a", "create"), ("new", "create")]
    assert {c.ksuid for c in cs.resources}.isdisjoint({"K8", "K9"})
    assert {c.target for c in cs.resources} == {"main"}


def test_consumer_of_a_replaced_producer_on_a_create_only_field_is_replaced_too():
    inv = inventory(stored("N", "T::Net::Network", "net", {"Cidr": "10.0.0.0/16"}, read_only={"NetworkId": "n-1"}),
                    stored("S", "T::Net::Subnet", "sub", {"NetworkId": ref("N", "NetworkId", "n-1"), "Cidr": "c"}))
    f = forma(resource("net", "T::Net::Network", {"Cidr": "10.9.0.0/16"}),
              resource("sub", "T::Net::Subnet", {"NetworkId": res("net", "T::Net::Network", "NetworkId"),
                                                  "Cidr": "c"}))
    cs = apply(f, inv)
    assert ops(cs) == [("net", "create"), ("net", "delete"), ("sub", "create"), ("sub", "delete")]


def test_consumer_outside_a_patch_forma_is_rebuilt_from_its_stored_state():
    inv = inventory(stored("N", "T::Net::Network", "net", {"Cidr": "10.0.0.0/16"}, read_only={"NetworkId": "n-1"}),
                    stored("S", "T::Net::Subnet", "sub", {"NetworkId": ref("N", "NetworkId", "n-1"), "Cidr": "c"}),
                    stored("I", "T::Test::Item", "i", {"Ref": ref("N", "NetworkId", "n-1")}))
    cs = apply(forma(resource("net", "T::Net::Network", {"Cidr": "10.9.0.0/16"})), inv, "patch")
    assert ops(cs) == [("i", "update"), ("net", "create"), ("net", "delete"), ("sub", "create"), ("sub", "delete")]
    sub = [c for c in cs.resources if c.label == "sub"]
    assert all(c.is_cascade and c.cascade_source == "net" for c in sub)
    item = next(c for c in cs.resources if c.label == "i")
    assert item.is_cascade and item.desired["Ref"] == {"$ref": "svc://N#/NetworkId"}


def test_target_create_only_change_replaces_the_target_and_its_portable_resources():
    inv = inventory(stored("B", "T::Storage::Bucket", "b", {"Name": "b"}))
    cs = apply(forma(resource("b", "T::Storage::Bucket", {"Name": "b"}), config={"Type": "T", "Path": "/other"}), inv)
    assert [(t.label, t.operation) for t in cs.targets] == [("main", "replace")]
    assert ops(cs) == [("b", "create"), ("b", "delete")]
    delete = next(c for c in cs.resources if c.operation == "delete")
    create = next(c for c in cs.resources if c.operation == "create")
    assert delete.target_config["Path"] == "/cloud" and create.target_config["Path"] == "/other"
    assert cs.warnings


def test_target_replace_refused_when_a_resource_cannot_move():
    inv = inventory(stored("N", "T::Net::Network", "net", {"Cidr": "c"}))
    with pytest.raises(errors.NonPortableResources) as raised:
        apply(forma(resource("net", "T::Net::Network", {"Cidr": "c"}), config={"Type": "T", "Path": "/x"}), inv)
    assert raised.value.data["Resources"] == ["app/T::Net::Network/net"]


def test_target_mutable_change_is_an_update():
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "1"}))
    cs = apply(forma(resource("a", "T::Test::Item", {"Value": "1"}),
                     config={"Type": "T", "Path": "/cloud", "Note": "n"}), inv)
    assert [(t.label, t.operation) for t in cs.targets] == [("main", "update")] and not cs.resources


@pytest.mark.parametrize(("document", "error"), [
    (resource("a", "T::Nope::Thing", {}), errors.InvalidForma),
    (resource("a", "T::Test::Item", {}, target="nowhere"), errors.TargetReferenceNotFound),
    (resource("a", "T::Test::Item", {}, stack="ghost"), errors.StackReferenceNotFound),
    (resource("s", "T::Net::Subnet", {"NetworkId": "n"}), errors.RequiredFieldMissingOnCreate),
    (resource("a", "T::Test::Item", {"Ref": res("zz", "T::Test::Item", "Id")}), errors.ReferencedResourcesNotFound),
    (resource("a", "T::Test::Item", {"Value": {"$embed": True, "$template": "x\u001eYWJj"}}), errors.InvalidForma),
])
def test_bad_formas_are_refused(document, error):
    with pytest.raises(error):
        apply(forma(document), inventory())


def test_patch_on_a_stack_that_does_not_exist_is_rejected():
    with pytest.raises(errors.PatchRejected) as raised:
        apply(forma(resource("a", "T::Test::Item", {}, stack="new"), stacks=("new",)), inventory(), "patch")
    assert raised.value.data == {"UnknownStacks": ["new"]}


def test_reconcile_refused_after_out_of_band_change_unless_absorbed_or_forced():
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "oob"}),
                    stored("K2", "T::Test::Item", "b", {"Value": "2"}))
    inv.modifications["app"] = [Modification("app", "T::Test::Item", "a", "update", "K1")]
    drifting = forma(resource("a", "T::Test::Item", {"Value": "1"}), resource("b", "T::Test::Item", {"Value": "3"}))
    with pytest.raises(errors.ReconcileRejected) as raised:
        apply(drifting, inv)
    assert raised.value.data["ModifiedStacks"]["app"]["ModifiedResources"][0]["Label"] == "a"
    assert ops(apply(drifting, inv, force=True)) == [("a", "update"), ("b", "update")]
    absorbed = forma(resource("a", "T::Test::Item", {"Value": "oob"}), resource("b", "T::Test::Item", {"Value": "3"}))
    assert ops(apply(absorbed, inv)) == [("b", "update")]
    assert ops(apply(drifting, inv, "patch")) == [("a", "update"), ("b", "update")]


def test_apply_may_not_delete_what_another_stack_still_uses():
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "1"}),
                    stored("K2", "T::Test::Item", "b", {"Ref": ref("K1", "Id", "x")}, stack="other"),
                    stacks=("app", "other"))
    with pytest.raises(errors.ResourceHasDependents):
        apply(forma(resource("c", "T::Test::Item", {})), inv)


def test_empty_new_stack_is_rejected():
    with pytest.raises(errors.EmptyStackRejected):
        apply(forma(resource("a", "T::Test::Item", {}), stacks=("app", "empty")), inventory())


def test_destroy_cascades_only_when_asked():
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "1"}),
                    stored("K2", "T::Test::Item", "b", {"Ref": ref("K1", "Id", "x")}, stack="other"),
                    stacks=("app", "other"))
    f = forma(resource("a", "T::Test::Item", {"Value": "1"}))
    with pytest.raises(errors.ResourceHasDependents):
        plan(PlanRequest("destroy", forma=f), inv, CATALOG, new_id)
    cs = plan(PlanRequest("destroy", forma=f, on_dependents="cascade"), inv, CATALOG, new_id)
    assert ops(cs) == [("a", "delete"), ("b", "delete")]
    assert next(c for c in cs.resources if c.label == "b").cascade_source == "a"


def test_changeset_is_plain_data():
    import json

    cs = apply(forma(resource("a", "T::Test::Item", {"Value": "1"})), inventory())
    assert json.loads(json.dumps(cs.to_json()))["resources"][0]["operation"] == "create"


def test_a_reference_in_a_plain_string_is_a_template_as_an_embed_envelope_is():
    """The original product renders a resolvable interpolated into a String as a plain string holding the
    reference's span; svc's earlier shape wraps it in ``$embed``. Both plan the same."""
    span = "\u001e" + base64.b64encode(json.dumps(res("a", "T::Test::Item", "Id")).encode()).decode() + "\u001f"
    for value in (f"id {span}!", {"$embed": True, "$template": f"id {span}!"}):
        cs = apply(forma(resource("a", "T::Test::Item", {"Value": "1"}),
                         resource("b", "T::Test::Item", {"Value": value})), inventory())
        a = next(c for c in cs.resources if c.label == "a")
        b = next(c for c in cs.resources if c.label == "b")
        assert b.desired["Value"] == {"$embed": True, "$parts": ["id ", {"$ref": f"svc://{a.ksuid}#/Id"}, "!"]}, value


def test_new_resources_are_classified_once(monkeypatch):
    """A resource with no stored version is created whatever its references resolve to: the planner starts from
    that, instead of classifying every resource of a new forma a second time once it knows they all change."""
    import importlib

    planning = importlib.import_module("svc.engine.planner.plan")

    calls = []
    classify = planning._Apply.classify

    def counted(self, schema, ksuid, *args, **kwargs):
        calls.append(ksuid)
        return classify(self, schema, ksuid, *args, **kwargs)

    monkeypatch.setattr(planning._Apply, "classify", counted)
    chain = [resource("a", "T::Test::Item", {"Value": "1"})] + [
        resource(f"r{n}", "T::Test::Item", {"Ref": res("a" if n == 0 else f"r{n - 1}", "T::Test::Item", "Id")})
        for n in range(5)]
    cs = apply(forma(*chain), inventory())
    assert len(calls) == 6 and len(cs.resources) == 6
    # A stored consumer of an updated producer still gets its second look: the producer's change is learned first.
    # What refers to no producer whose change was learned (the producer itself, an unrelated resource) gets none.
    calls.clear()
    inv = inventory(stored("K1", "T::Test::Item", "a", {"Value": "1"}),
                    stored("K2", "T::Test::Item", "b", {"Ref": ref("K1", "Value")}),
                    stored("K3", "T::Test::Item", "c", {"Value": "3"}))
    cs = apply(forma(resource("a", "T::Test::Item", {"Value": "2"}),
                     resource("b", "T::Test::Item", {"Ref": res("a", "T::Test::Item", "Value")}),
                     resource("c", "T::Test::Item", {"Value": "3"})), inv)
    assert sorted(calls) == ["K1", "K2", "K2", "K3"] and ops(cs) == [("a", "update"), ("b", "update")]
