"""What a plan reads of the inventory, on every backend: ``Datastore.live_resources_in`` answers each kind of
scope with exactly the live resources it names, and ``plan_from_store`` plans as the whole inventory does while
reading little of an estate its forma does not touch."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from support.planning import CATALOG, TARGET_CONFIG, TYPES, forma, new_id, ref, res, resource
from svc.datastore import Datastore
from svc.engine import inventory_reads
from svc.engine.errors import EngineError
from svc.engine.inventory_reads import plan_from_store
from svc.engine.planner import PlanRequest
from svc.model.records import ResourceScope, ResourceWrite, TargetWrite

ITEM = "T::Test::Item"


def write(label: str, properties: dict[str, Any], *, stack: str = "app", target: str = "main",
          managed: bool = True) -> ResourceWrite:
    return ResourceWrite(ITEM, label, stack, target, properties, managed=managed, native_id=f"n-{stack}-{label}",
                         document={"Schema": TYPES[ITEM].to_json()})


def put(datastore: Datastore, label: str, properties: dict[str, Any], **where: Any) -> str:
    return datastore.store_resource(write(label, properties, **where)).ksuid


def put_many(datastore: Datastore, writes: list[ResourceWrite]) -> list[str]:
    return [outcome.ksuid for outcome in datastore.store_resources(writes)]


def labels(datastore: Datastore, **scope: Any) -> list[str]:
    return sorted(r.label for r in datastore.live_resources_in(ResourceScope(**scope)))


def test_each_kind_of_scope_reads_exactly_the_live_resources_it_names(datastore: Datastore) -> None:
    a = put(datastore, "a", {"Value": "1"})
    put(datastore, "b", {"Ref": ref(a, "Id", "x")}, stack="other")
    put(datastore, "c", {"Embedded": {"$embed": True, "$parts": ["x-", ref(a, "Value")]}}, stack="third", target="far")
    put(datastore, "d", {"Value": "discovered"}, stack="$unmanaged", target="far", managed=False)
    put(datastore, "d", {"Value": "managed, same label"}, stack="fourth")
    gone = put(datastore, "gone", {"Ref": ref(a, "Id")}, stack="other")
    datastore.delete_resource(gone)
    # A ksuid in a plain string is no reference; nor does the search find one ksuid inside another.
    put(datastore, "e", {"Value": f"see svc://{a}", "Other": ref(a + "X", "Id")}, stack="fifth")

    assert labels(datastore, stacks={"other"}) == ["b"]
    assert labels(datastore, targets={"far"}) == ["c", "d"]
    assert labels(datastore, ksuids={a, gone}) == ["a"]  # the deleted one is not live
    assert labels(datastore, triplets={("fourth", ITEM, "d"), ("app", ITEM, "d")}) == ["d"]
    # Each column is looked up in a list of its own: other/b has a wanted stack and a wanted label, not a wanted pair.
    assert labels(datastore, triplets={("other", ITEM, "a"), ("fourth", ITEM, "b")}) == []
    assert labels(datastore, labels={(ITEM, "d"), ("T::Other::Kind", "x")}) == ["d"]
    [discovered] = datastore.live_resources_in(ResourceScope(labels={(ITEM, "d")}))
    assert not discovered.managed and discovered.properties == {"Value": "discovered"}
    assert labels(datastore, referring_to={a}) == ["b", "c"]
    assert labels(datastore, stacks={"other", "app"}, referring_to={a}) == ["a", "b", "c"]
    assert datastore.live_resources_in(ResourceScope()) == []


def test_many_keys_of_each_kind_are_read_in_chunks(datastore: Datastore) -> None:
    ksuids = put_many(datastore, [write(f"r{n}", {"Value": str(n)}, stack=f"s{n % 7}") for n in range(45)])
    referring = put_many(datastore, [write(f"ref{n}", {"Ref": ref(ksuid, "Id")}, stack="refs")
                                     for n, ksuid in enumerate(ksuids)])  # 45 producers: three searches
    found = datastore.live_resources_in(ResourceScope(referring_to=set(ksuids)))
    assert sorted(r.ksuid for r in found) == sorted(referring)
    unknown = [f"K{n:026d}" for n in range(1200)]  # three IN lists of ksuids, and of stacks
    assert len(datastore.live_resources_in(ResourceScope(ksuids=set(ksuids + unknown)))) == 45
    assert len(datastore.live_resources_in(ResourceScope(stacks={"s0", "s1", *unknown}))) == 14


def outcome(planning: Any) -> Any:
    try:
        changeset = planning()
    except EngineError as error:
        return type(error).__name__, str(error)
    return sorted((c.label, c.stack, c.operation, c.is_cascade, c.cascade_source, json.dumps(c.patch, sort_keys=True))
                  for c in changeset.resources)


def labels_read(datastore: Datastore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of the resources ``live_resources_in`` answers from now on, as it answers them."""
    read: list[str] = []
    live_resources_in = datastore.live_resources_in

    def counted(scope: ResourceScope) -> Any:
        found = live_resources_in(scope)
        read.extend(r.label for r in found)
        return found

    monkeypatch.setattr(datastore, "live_resources_in", counted)
    return read


@pytest.mark.parametrize("case", ["create", "no-op", "update", "cross-stack reference", "destroy", "cascade"])
def test_a_plan_from_what_it_reads_is_the_plan_of_the_whole_inventory(
        datastore: Datastore, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    # An estate no plan here needs.
    put_many(datastore, [write(f"e{n}", {"Value": str(n)}, stack=f"estate-{n % 4}", target="far") for n in range(20)])
    a = put(datastore, "a", {"Value": "1"})
    put(datastore, "b", {"Ref": ref(a, "Value", "1")}, stack="other")
    requests = {
        "create": PlanRequest("apply", "reconcile", forma(resource("a", ITEM, {"Value": "1"}),
                                                         resource("n", ITEM, {"Value": "new"}))),
        "no-op": PlanRequest("apply", "reconcile", forma(resource("a", ITEM, {"Value": "1"}))),
        "update": PlanRequest("apply", "reconcile", forma(resource("a", ITEM, {"Value": "2"}))),
        "cross-stack reference": PlanRequest("apply", "reconcile", forma(
            resource("c", ITEM, {"Ref": res("b", ITEM, "Ref", stack="other")}), stacks=("third",))),
        "destroy": PlanRequest("destroy", forma=forma(resource("a", ITEM, {}))),
        "cascade": PlanRequest("destroy", forma=forma(resource("a", ITEM, {})), on_dependents="cascade"),
    }
    request = requests[case]
    read = labels_read(datastore, monkeypatch)
    monkeypatch.setattr(inventory_reads, "SMALL_ESTATE", 0)  # this estate of 22 is read in part
    partial = outcome(lambda: plan_from_store(datastore, request, CATALOG, {"app", "third"}, new_id))
    assert read and not any(label.startswith("e") for label in read)
    monkeypatch.setattr(inventory_reads, "WHOLE_ABOVE", -1)
    read.clear()
    assert partial == outcome(lambda: plan_from_store(datastore, request, CATALOG, {"app", "third"}, new_id))
    assert not read


def test_a_small_estate_is_read_whole(datastore: Datastore, monkeypatch: pytest.MonkeyPatch) -> None:
    put_many(datastore, [write(f"e{n}", {"Value": str(n)}, stack="estate", target="far") for n in range(20)])
    monkeypatch.setattr(datastore, "live_resources_in", lambda scope: pytest.fail("read in part"))
    request = PlanRequest("apply", "reconcile", forma(resource("a", ITEM, {"Value": "1"})))
    [change] = plan_from_store(datastore, request, CATALOG, {"app"}, new_id).resources
    assert change.operation == "create"


def test_a_small_forma_in_an_estate_of_a_few_hundred_reads_what_it_names(
        datastore: Datastore, monkeypatch: pytest.MonkeyPatch) -> None:
    # Read whole, 250 other resources cost a plan of one resource several times what its rounds cost.
    put_many(datastore, [write(f"e{n}", {"Value": str(n)}, stack="estate", target="far") for n in range(250)])
    read = labels_read(datastore, monkeypatch)
    monkeypatch.setattr(datastore, "list_resources", lambda **_: pytest.fail("the whole inventory was read"))
    request = PlanRequest("apply", "reconcile", forma(resource("a", ITEM, {"Value": "1"})))
    [change] = plan_from_store(datastore, request, CATALOG, {"app"}, new_id).resources
    assert change.operation == "create" and not any(label.startswith("e") for label in read)


def test_a_small_forma_reads_the_stacks_and_targets_it_needs_not_every_one(
        datastore: Datastore, monkeypatch: pytest.MonkeyPatch) -> None:
    # Read whole, 3,000 stacks cost a plan of 10 resources ~30 ms.
    for n in range(20):
        datastore.create_stack(f"s{n}")
        datastore.put_target(TargetWrite(f"t{n}", "T", {"Path": f"/t{n}"}))
    put_many(datastore, [write(f"e{n}", {"Value": str(n)}, stack=f"s{n % 20}", target=f"t{n % 20}")
                         for n in range(150)])
    request = PlanRequest("apply", "reconcile", forma(resource("a", ITEM, {"Ref": res("e7", ITEM, "Value", stack="s7")})))

    def shape(changeset: Any) -> Any:
        return (sorted((c.label, c.stack, c.operation, c.target, c.namespace, json.dumps(c.target_config),
                        json.dumps(c.desired, sort_keys=True)) for c in changeset.resources),
                [(t.label, t.operation) for t in changeset.targets], [(s.label, s.operation) for s in changeset.stacks])

    asked: dict[str, set[str]] = {"stacks": set(), "targets": set()}
    with monkeypatch.context() as patched:
        for kind in asked:
            named = getattr(datastore, f"{kind}_named")
            patched.setattr(datastore, f"{kind}_named",
                            lambda labels, kind=kind, named=named: asked[kind].update(labels) or named(labels))
            patched.setattr(datastore, f"list_{kind}", lambda *_, **__: pytest.fail("every stack or target was read"))
        partial = shape(plan_from_store(datastore, request, CATALOG, {"app"}, new_id))
    assert asked == {"stacks": {"app", "s7"}, "targets": {"main", "t7"}}
    monkeypatch.setattr(inventory_reads, "WHOLE_ABOVE", -1)
    assert partial == shape(plan_from_store(datastore, request, CATALOG, {"app"}, new_id))


def test_a_reaped_target_declared_again_brings_its_resources_back_when_read_in_part(
        datastore: Datastore, monkeypatch: pytest.MonkeyPatch) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    datastore.put_target(TargetWrite("main", "T", TARGET_CONFIG, reap_kind="after", reap_after_seconds=60))
    put(datastore, "a", {"Value": "1"})
    for seconds in (0, 30, 60, 90):
        datastore.observe_target("main", reachable=False, at=at + timedelta(seconds=seconds), max_gap=60)
    target = datastore.get_target("main")
    assert target is not None and datastore.reap_target("main", target.incarnation_id, threshold=60,
                                                        at=at + timedelta(seconds=91)) is not None
    put_many(datastore, [write(f"e{n}", {"Value": str(n)}, stack="estate", target="far") for n in range(120)])
    request = PlanRequest("apply", "reconcile", forma(resource("a", ITEM, {"Value": "2"})))
    monkeypatch.setattr(datastore, "list_resources", lambda **_: pytest.fail("the whole inventory was read"))
    [change] = plan_from_store(datastore, request, CATALOG, {"app"}, new_id).resources
    assert (change.label, change.operation) == ("a", "update")
