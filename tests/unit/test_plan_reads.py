"""A plan made from partial inventories, read round by round (``svc.engine.inventory_reads.plan_in_rounds``), is
the plan the whole inventory gives, or the same error; and it reads little of an estate it does not touch.

Each case is planned twice: from the whole inventory, and in rounds whose reads an in-memory stand-in for
``Datastore.live_resources_in`` answers (the datastore's own answers are tested on every backend in
tests/integration/test_plan_reads_store.py). Each case holds, besides what it is about, an estate of resources in
other stacks and on another target that no plan of it needs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from support.planning import CATALOG, forma, inventory, new_id, ref, res, resource, stored
from svc.engine.errors import EngineError
from svc.engine.inventory_reads import plan_in_rounds
from svc.engine.planner import Changeset, Inventory, PlanRequest, plan
from svc.model.records import ResourceScope, ResourceVersion

ITEM = "T::Test::Item"
ESTATE = [stored(f"E{n:03d}", ITEM, f"e{n}", {"Value": str(n), **({"Ref": ref(f"E{n - 1:03d}", "Id")} if n % 2 else {})},
                 stack=f"estate-{n % 3}", target="far") for n in range(30)]
ESTATE_STACKS = ("estate-0", "estate-1", "estate-2")


def live_resources_in(resources: list[ResourceVersion], scope: ResourceScope) -> list[ResourceVersion]:
    """What ``Datastore.live_resources_in`` answers, over ``resources`` (the references found in the text)."""
    def wanted(r: ResourceVersion) -> bool:
        text = json.dumps(r.properties)
        return (r.stack in scope.stacks or r.target in scope.targets or r.ksuid in scope.ksuids
                or (r.managed and (r.stack, r.type, r.label) in scope.triplets)
                or (not r.managed and (r.type, r.label) in scope.labels)
                or (r.managed and any(f"svc://{k}#" in text for k in scope.referring_to)))
    return [r for r in resources if wanted(r)]


class Rounds:
    """Plans ``request`` in rounds over ``whole``'s resources, counting the rounds and the resources read."""

    def __init__(self, whole: Inventory) -> None:
        self.whole = whole
        self.reads: list[ResourceScope] = []
        self.read_ksuids: set[str] = set()

    def read(self, scope: ResourceScope) -> list[ResourceVersion]:
        self.reads.append(scope)
        found = live_resources_in(self.whole.resources, scope)
        self.read_ksuids |= {r.ksuid for r in found}
        return found

    def inventory_of(self, resources: list[ResourceVersion], reach: ResourceScope) -> Inventory:
        return Inventory(resources, self.whole.targets, self.whole.stacks, self.whole.modifications,
                         self.whole.policies, reach=reach)

    def plan(self, request: PlanRequest) -> Changeset | None:
        return plan_in_rounds(request, CATALOG, self.read, self.inventory_of, new_id)


def outcome(planning: Any) -> Any:
    """What a plan comes to, minted ksuids aside: each change, or the error."""
    try:
        changeset = planning()
    except EngineError as error:
        return type(error).__name__, str(error), error.data
    assert changeset is not None
    return (sorted((c.label, c.stack, c.operation, c.is_cascade, c.cascade_source, c.reason, c.old_stack,
                    json.dumps(c.patch, sort_keys=True)) for c in changeset.resources),
            [(t.label, t.operation) for t in changeset.targets], [(s.label, s.operation) for s in changeset.stacks])


def assert_same_plan(request: PlanRequest, whole: Inventory) -> Rounds:
    rounds = Rounds(whole)
    untouched = copy.deepcopy(request)  # a round that changed the forma would make the next one plan another
    assert outcome(lambda: rounds.plan(request)) == outcome(lambda: plan(untouched, whole, CATALOG, new_id))
    return rounds


def estate(*resources: ResourceVersion, stacks: tuple[str, ...] = ("app",), **kwargs: Any) -> Inventory:
    return inventory(*resources, *ESTATE, stacks=(*stacks, *ESTATE_STACKS),
                     targets={"main": None, "far": None, **kwargs.pop("targets", {})}, **kwargs)


def apply(document: Any, mode: str = "reconcile") -> PlanRequest:
    return PlanRequest("apply", mode, document)  # type: ignore[arg-type]


def test_creates_in_a_new_stack_read_the_stack_and_the_labels_once_and_nothing_of_the_estate() -> None:
    rounds = assert_same_plan(apply(forma(resource("a", ITEM, {"Value": "1"}),
                                          resource("b", ITEM, {"Ref": res("a", ITEM, "Id")}))), estate())
    assert len(rounds.reads) == 1 and rounds.read_ksuids == set()


def test_a_no_op_reads_its_stack_alone() -> None:
    whole = estate(stored("K1", ITEM, "a", {"Value": "1"}))
    rounds = assert_same_plan(apply(forma(resource("a", ITEM, {"Value": "1"}))), whole)
    assert len(rounds.reads) == 1 and rounds.read_ksuids == {"K1"}


@pytest.mark.parametrize("command", ["patch", "destroy"])
def test_a_patch_or_a_destroy_reads_what_its_forma_names_not_the_whole_stack(command: str) -> None:
    # A patch of 10 in a stack of 100,000 read the whole stack first (2.5 s); only a reconcile deletes what its forma
    # does not name in its stacks. A name the forma gives as an alias is what a renamed resource is found by.
    whole = estate(stored("K1", ITEM, "a", {"Value": "1"}), stored("K2", ITEM, "was-b", {"Value": "1"}),
                   stored("K3", ITEM, "c", {"Ref": ref("K1", "Value", "1")}),
                   *(stored(f"S{n}", ITEM, f"s{n}", {"Value": "other"}) for n in range(20)))
    named = forma(resource("a", ITEM, {"Value": "2"}), resource("b", ITEM, {"Value": "1"}, alias="was-b"))
    request = apply(named, "patch") if command == "patch" else PlanRequest("destroy", forma=named)
    rounds = assert_same_plan(request, whole)
    assert rounds.read_ksuids == {"K1", "K2", "K3"}  # K3 as a's referrer
    assert not rounds.reads[0].stacks


def test_an_update_reads_what_refers_to_it_in_other_stacks() -> None:
    whole = estate(stored("N", "T::Net::Network", "net", {"Cidr": "10.0.0.0/16"}, read_only={"NetworkId": "n-1"}),
                   stored("S", "T::Net::Subnet", "sub", {"NetworkId": ref("N", "NetworkId", "n-1"), "Cidr": "c"},
                          stack="other"),
                   stored("I", ITEM, "i", {"Ref": ref("N", "NetworkId", "n-1")}, stack="other"),
                   stacks=("app", "other"))
    for mode in ("reconcile", "patch"):
        rounds = assert_same_plan(apply(forma(resource("net", "T::Net::Network", {"Cidr": "10.9.0.0/16"}),
                                              stacks=("app",)), mode), whole)
        assert {"S", "I"} <= rounds.read_ksuids and not rounds.read_ksuids & {r.ksuid for r in ESTATE}


def test_a_reference_to_another_stack_reads_that_resource_alone() -> None:
    whole = estate(stored("P", ITEM, "p", {"Value": "shared"}, stack="platform"),
                   stored("Q", ITEM, "q", {"Value": "other"}, stack="platform"), stacks=("app", "platform"))
    rounds = assert_same_plan(apply(forma(resource("a", ITEM, {"Ref": res("p", ITEM, "Value", stack="platform")}))),
                              whole)
    assert rounds.read_ksuids == {"P"}


def test_a_reference_to_a_resource_nowhere_is_the_same_error() -> None:
    assert_same_plan(apply(forma(resource("a", ITEM, {"Ref": res("zz", ITEM, "Id", stack="elsewhere")}))), estate())


@pytest.mark.parametrize("target", ["main", "lab"])
def test_a_discovered_resource_is_adopted_on_its_own_target_only(target: str) -> None:
    whole = estate(stored("D", ITEM, "a", {"Value": "1"}, stack="$unmanaged", managed=False, target=target),
                   stored("D2", ITEM, "old", {"Value": "1"}, stack="$unmanaged", managed=False, target=target),
                   targets={"lab": None})
    assert_same_plan(apply(forma(resource("a", ITEM, {"Value": "1"}), resource("new", ITEM, {"Value": "1"},
                                                                                 alias="old"))), whole)


def test_deleting_what_another_stack_uses_is_the_same_error() -> None:
    whole = estate(stored("K1", ITEM, "a", {"Value": "1"}), stored("K2", ITEM, "b", {"Ref": ref("K1", "Id", "x")},
                                                                   stack="other"), stacks=("app", "other"))
    assert_same_plan(apply(forma(resource("c", ITEM, {}))), whole)


@pytest.mark.parametrize("on_dependents", ["abort", "cascade"])
def test_a_destroy_follows_its_dependents_through_other_stacks(on_dependents: str) -> None:
    whole = estate(stored("K1", ITEM, "a", {"Value": "1"}),
                   stored("K2", ITEM, "b", {"Ref": ref("K1", "Id", "x")}, stack="other"),
                   stored("K3", ITEM, "c", {"Ref": ref("K2", "Id", "y")}, stack="third"),
                   stacks=("app", "other", "third"))
    request = PlanRequest("destroy", forma=forma(resource("a", ITEM, {"Value": "1"})),
                          on_dependents=on_dependents)  # type: ignore[arg-type]
    rounds = assert_same_plan(request, whole)
    assert not rounds.read_ksuids & {r.ksuid for r in ESTATE}
    by_query = PlanRequest("destroy", on_dependents=on_dependents,  # type: ignore[arg-type]
                           destroy_matches=(whole.by_ksuid["K1"],))
    assert_same_plan(by_query, whole)


def test_a_replaced_target_moves_its_resources_in_every_stack() -> None:
    whole = estate(stored("B", "T::Storage::Bucket", "b", {"Name": "b"}),
                   stored("B2", "T::Storage::Bucket", "b2", {"Name": "b2"}, stack="other"),
                   stored("N", "T::Net::Network", "net", {"Cidr": "c"}, stack="third"),
                   stacks=("app", "other", "third"))
    assert_same_plan(apply(forma(resource("b", "T::Storage::Bucket", {"Name": "b"}),
                                 config={"Type": "T", "Path": "/other"})), whole)  # refused: net cannot move
    movable = estate(stored("B", "T::Storage::Bucket", "b", {"Name": "b"}),
                     stored("B2", "T::Storage::Bucket", "b2", {"Name": "b2"}, stack="other"), stacks=("app", "other"))
    assert_same_plan(apply(forma(resource("b", "T::Storage::Bucket", {"Name": "b"}),
                                 config={"Type": "T", "Path": "/other"})), movable)


def test_a_new_stack_without_resources_and_one_known_only_by_its_resources() -> None:
    whole = estate(stored("K1", ITEM, "a", {"Value": "1"}, stack="rowless"), stacks=("app",))
    assert_same_plan(apply(forma(resource("a", ITEM, {}), stacks=("app", "empty"))), whole)
    assert_same_plan(apply(forma(resource("a", ITEM, {}), stacks=("app", "rowless"))), whole)
    assert_same_plan(apply(forma(resource("x", ITEM, {"Value": "2"}, stack="rowless"), stacks=()), "patch"), whole)


def test_an_update_of_hundreds_of_producers_reads_their_referrers_by_key() -> None:
    # Before the datastore indexed references, more than 200 producers read the whole inventory instead.
    stored_items = [stored(f"K{n:04d}", ITEM, f"i{n}", {"Value": "old"}) for n in range(250)]
    whole = estate(*stored_items, stored("R", ITEM, "r", {"Ref": ref("K0249", "Value", "old")}, stack="other"),
                   stacks=("app", "other"))
    rounds = assert_same_plan(apply(forma(*(resource(f"i{n}", ITEM, {"Value": "new"}) for n in range(250)))), whole)
    assert "R" in rounds.read_ksuids and not rounds.read_ksuids & {r.ksuid for r in ESTATE}


def test_the_whole_inventory_is_not_a_partial_one() -> None:
    whole = estate(stored("K1", ITEM, "a", {"Value": "1"}))
    plan(apply(forma(resource("a", ITEM, {"Value": "2"}))), whole, CATALOG, new_id)
    assert not whole.wanted


def test_a_reference_to_a_discovered_resource_reads_it_by_its_label() -> None:
    whole = estate(stored("D", ITEM, "d", {"Value": "found"}, stack="$unmanaged", managed=False, target="far"))
    rounds = assert_same_plan(apply(forma(resource("a", ITEM, {"Ref": res("d", ITEM, "Value")}))), whole)
    assert rounds.read_ksuids == {"D"}
