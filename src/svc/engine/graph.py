"""The execution DAG: which resource change waits for which (seed 001 §2.5, engine.md §4.2).

"A waits for B" comes from references (the edge kind of the referencing field), parent mappings and
replace pairs:

* create/update: a consumer waits for its producer; with ``runtimeDependency`` also for the producer's
  children (resources whose parent mapping points at the producer): producer, children, consumer;
* delete, ``default``: the producer's delete waits for the consumer's (consumer first);
* delete, ``attachesTo``: the consumer's delete waits for the producer's (producer first);
* delete, ``runtimeDependency``: the producer's and its children's deletes wait for the consumer's;
* replace: the create half waits for the delete half of the same resource.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from svc.engine.errors import CyclesDetected
from svc.engine.planner.changeset import ResourceChange
from svc.model import values
from svc.model.schema import EdgeKind


@dataclass
class Graph:
    nodes: dict[str, ResourceChange] = field(default_factory=dict)
    waits_for: dict[str, set[str]] = field(default_factory=dict)
    dependents: dict[str, set[str]] = field(default_factory=dict)

    def link(self, waiter: str, waited: str) -> None:
        if waiter == waited:
            return
        self.waits_for[waiter].add(waited)
        self.dependents[waited].add(waiter)

    def downstream(self, key: str) -> set[str]:
        """Every node that (transitively) waits for ``key``."""
        seen: set[str] = set()
        stack = list(self.dependents.get(key, ()))
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(self.dependents.get(node, ()))
        return seen


def _edge_kind(change: ResourceChange, path: tuple[Any, ...]) -> EdgeKind:
    hints = change.schema.get("Hints")
    hint = hints.get(values.hint_key(path)) if hints else None
    if not hint:  # most references: the enum's lookup by value costs more than the rest of the edge
        return EdgeKind.default
    if hint.get("AttachesTo"):
        return EdgeKind.attaches_to
    return EdgeKind(hint.get("EdgeKind") or "default")


def _refs(properties: dict[str, Any] | None) -> Iterable[tuple[tuple[Any, ...], str]]:
    for path, ref in values.iter_refs(properties or {}):
        yield path, values.split_uri(ref["$ref"])[0]


def _points_at(child: ResourceChange, properties: dict[str, Any] | None, producer: str) -> bool:
    mappings = child.schema.get("ParentMappings") or []
    if not mappings:
        return False
    pointed = False
    for mapping in mappings:
        value = (properties or {}).get(mapping.get("childProperty", ""))
        if values.is_ref(value):
            if values.split_uri(value["$ref"])[0] != producer:
                return False
            pointed = True
    return pointed


def build_graph(changes: Iterable[ResourceChange]) -> Graph:
    graph = Graph()
    for change in changes:
        key = change.key
        graph.nodes[key] = change
        graph.waits_for[key] = set()
        graph.dependents[key] = set()
    builds = {c.ksuid: c for c in graph.nodes.values() if c.operation in ("create", "update")}
    deletes = {c.ksuid: c for c in graph.nodes.values() if c.operation == "delete"}

    def children(producer: ResourceChange, pool: dict[str, ResourceChange], prior: bool) -> list[ResourceChange]:
        return [c for c in pool.values() if c.schema.get("Parent") == producer.type and c.ksuid != producer.ksuid
                and _points_at(c, c.prior if prior else c.desired, producer.ksuid)]

    for consumer in builds.values():
        for path, producer_id in _refs(consumer.desired):
            producer = builds.get(producer_id)
            if producer is None:
                continue
            graph.link(consumer.key, producer.key)
            if _edge_kind(consumer, path) is EdgeKind.runtime_dependency:
                for child in children(producer, builds, prior=False):
                    graph.link(consumer.key, child.key)
    for consumer in deletes.values():
        for path, producer_id in _refs(consumer.prior):
            producer = deletes.get(producer_id)
            if producer is None:
                continue
            kind = _edge_kind(consumer, path)
            if kind is EdgeKind.attaches_to:
                graph.link(consumer.key, producer.key)
            else:
                graph.link(producer.key, consumer.key)
                if kind is EdgeKind.runtime_dependency:
                    for child in children(producer, deletes, prior=True):
                        graph.link(child.key, consumer.key)
    for ksuid, build in builds.items():
        if ksuid in deletes and build.operation == "create":
            graph.link(build.key, deletes[ksuid].key)
    check_acyclic(graph)
    return graph


def check_acyclic(graph: Graph) -> None:
    """Raises ``CyclesDetected`` naming one cycle (iterative DFS: no recursion limit on deep chains)."""
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(graph.nodes, white)
    for start in graph.nodes:
        if color[start] != white:
            continue
        path = [start]
        iterators = [iter(sorted(graph.waits_for[start]))]
        color[start] = grey
        while iterators:
            node = next(iterators[-1], None)
            if node is None:
                color[path.pop()] = black
                iterators.pop()
                continue
            if color[node] == grey:
                cycle = path[path.index(node):] + [node]
                names = [f"{graph.nodes[k].handle} ({graph.nodes[k].operation})" for k in cycle]
                raise CyclesDetected(f"dependency cycle: {' -> '.join(names)}", {"Cycle": names})
            if color[node] == white:
                color[node] = grey
                path.append(node)
                iterators.append(iter(sorted(graph.waits_for[node])))
