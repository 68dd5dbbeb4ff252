"""The execution DAG: every edge kind in both directions (seed 001 §2.5), replace order, cycles."""

from __future__ import annotations

import pytest

from support.planning import GATEWAY, ITEM, NETWORK, SERVER, SUBNET, ref
from svc.engine.errors import CyclesDetected
from svc.engine.graph import build_graph
from svc.engine.planner.changeset import ResourceChange


def change(ksuid: str, op: str, schema, properties: dict | None = None, type_: str = "") -> ResourceChange:
    body = properties or {}
    return ResourceChange(ksuid=ksuid, operation=op, type=type_ or ksuid, label=ksuid.lower(), stack="app",
                          target="main", schema=schema.to_json(), desired=body if op != "delete" else None,
                          prior=body if op == "delete" else None)


def waits(graph, waiter: str, waited: str) -> bool:
    return waited in graph.waits_for[waiter]


def test_default_edge_create_producer_first_destroy_consumer_first():
    producer = lambda op: change("A", op, ITEM)  # noqa: E731
    consumer = lambda op: change("B", op, ITEM, {"Ref": ref("A", "Id")})  # noqa: E731
    created = build_graph([producer("create"), consumer("create")])
    assert waits(created, "B/create", "A/create") and not waits(created, "A/create", "B/create")
    deleted = build_graph([producer("delete"), consumer("delete")])
    assert waits(deleted, "A/delete", "B/delete") and not waits(deleted, "B/delete", "A/delete")


def test_attaches_to_create_producer_first_destroy_producer_first():
    gateway = lambda op: change("G", op, GATEWAY, {"Name": "g"})  # noqa: E731
    server = lambda op: change("S", op, SERVER, {"GatewayId": ref("G", "GatewayId")})  # noqa: E731
    created = build_graph([gateway("create"), server("create")])
    assert waits(created, "S/create", "G/create")
    deleted = build_graph([gateway("delete"), server("delete")])
    assert waits(deleted, "S/delete", "G/delete") and not waits(deleted, "G/delete", "S/delete")


def test_runtime_dependency_orders_producer_children_consumer_and_back():
    def trio(op: str) -> list[ResourceChange]:
        return [change("N", op, NETWORK, {"Cidr": "c"}, "T::Net::Network"),
                change("S", op, SUBNET, {"NetworkId": ref("N", "NetworkId")}, "T::Net::Subnet"),
                change("G", op, GATEWAY, {"NetworkId": ref("N", "NetworkId")}, "T::Net::Gateway")]

    created = build_graph(trio("create"))
    assert waits(created, "G/create", "N/create") and waits(created, "G/create", "S/create")
    assert waits(created, "S/create", "N/create")
    deleted = build_graph(trio("delete"))
    assert waits(deleted, "N/delete", "G/delete") and waits(deleted, "S/delete", "G/delete")
    assert waits(deleted, "N/delete", "S/delete")


def test_parent_child_without_runtime_dependency_has_only_the_reference_edge():
    created = build_graph([change("N", "create", NETWORK, {}, "T::Net::Network"),
                           change("S", "create", SUBNET, {"NetworkId": ref("N", "NetworkId")}, "T::Net::Subnet"),
                           change("I", "create", ITEM, {"Ref": ref("N", "NetworkId")})])
    assert waits(created, "I/create", "N/create") and not waits(created, "I/create", "S/create")


def test_replace_deletes_before_it_creates():
    graph = build_graph([change("A", "delete", ITEM), change("A", "create", ITEM)])
    assert waits(graph, "A/create", "A/delete") and not waits(graph, "A/delete", "A/create")


def test_consumer_waits_for_the_create_half_of_a_replaced_producer():
    graph = build_graph([change("A", "delete", ITEM), change("A", "create", ITEM),
                         change("B", "delete", ITEM, {"Ref": ref("A", "Id")}),
                         change("B", "create", ITEM, {"Ref": ref("A", "Id")})])
    assert waits(graph, "B/create", "A/create") and waits(graph, "A/delete", "B/delete")
    assert graph.downstream("A/delete") >= {"A/create", "B/create"}


def test_updates_wait_for_their_producers_too():
    graph = build_graph([change("A", "update", ITEM), change("B", "update", ITEM, {"Ref": ref("A", "Id")})])
    assert waits(graph, "B/update", "A/update")


def test_cycle_is_refused_naming_it():
    with pytest.raises(CyclesDetected) as raised:
        build_graph([change("A", "create", ITEM, {"Ref": ref("B", "Id")}),
                     change("B", "create", ITEM, {"Ref": ref("C", "Id")}),
                     change("C", "create", ITEM, {"Ref": ref("A", "Id")})])
    assert raised.value.message.startswith("dependency cycle: app/")
    cycle = raised.value.data["Cycle"]
    assert cycle[0] == cycle[-1] and len(cycle) == 4


def test_long_chains_do_not_recurse():
    chain = [change("K0", "create", ITEM)] + [change(f"K{i}", "create", ITEM, {"Ref": ref(f"K{i - 1}", "Id")})
                                                for i in range(1, 5000)]
    graph = build_graph(chain)
    assert len(graph.downstream("K0/create")) == 4999
