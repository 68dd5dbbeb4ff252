"""The planner's view of stored state: a snapshot the engine loads, indexed for matching."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from svc.engine.planner.policies import StoredPolicies
from svc.model import values
from svc.model.records import ResourceScope, ResourceVersion, StackRecord, TargetRecord

UNMANAGED_STACK = "$unmanaged"


@dataclass(frozen=True)
class Modification:
    """A resource version written since the stack's last reconcile (by sync, a patch, …)."""

    stack: str
    type: str
    label: str
    operation: str
    ksuid: str
    out_of_band: bool = False  # stored by synchronization: a change made outside svc

    def to_json(self) -> dict[str, Any]:
        return {"Stack": self.stack, "Type": self.type, "Label": self.label, "Operation": self.operation}


@dataclass
class Inventory:
    """Stored state as the planner looks it up. Whole (``reach`` None: every live resource), or partial: the
    resources ``reach`` says it holds in full, plus any others read with them. A lookup a partial inventory
    cannot answer for certain is answered from what it holds and noted in ``wanted``; the plan made from it
    stands only when nothing was (``svc.engine.inventory_reads`` reads what was wanted and plans again)."""

    resources: list[ResourceVersion] = field(default_factory=list)
    targets: dict[str, TargetRecord] = field(default_factory=dict)
    stacks: dict[str, StackRecord] = field(default_factory=dict)
    modifications: dict[str, list[Modification]] = field(default_factory=dict)
    policies: StoredPolicies = field(default_factory=StoredPolicies)  # only what the plan's forma needs
    reach: ResourceScope | None = None

    def __post_init__(self) -> None:
        self.by_ksuid = {r.ksuid: r for r in self.resources}
        self.by_triplet = {(r.stack, r.type, r.label): r for r in self.resources if r.managed}
        self.unmanaged = {(r.type, r.label): r for r in self.resources if not r.managed}
        self._discovered = {(r.target, r.type, r.label): r for r in self.resources if not r.managed}
        self._dependents: dict[str, list[tuple[ResourceVersion, tuple[Any, ...]]]] | None = None
        self.wanted = ResourceScope()

    # -- lookups: each notes what a partial inventory could not answer for certain ---------------------------

    def resource(self, ksuid: str) -> ResourceVersion | None:
        """The stored resource ``ksuid`` (a found one is always the right one)."""
        found = self.by_ksuid.get(ksuid)
        if found is None and self.reach is not None and ksuid not in self.reach.ksuids:
            self.wanted.ksuids.add(ksuid)
        return found

    def managed(self, stack: str | None, type_: str, label: str) -> ResourceVersion | None:
        """The managed resource (stack, type, label); a stack of None names none."""
        if stack is None:
            return None
        found = self.by_triplet.get((stack, type_, label))
        reach = self.reach
        if (found is None and reach is not None and stack not in reach.stacks
                and (stack, type_, label) not in reach.triplets):
            self.wanted.triplets.add((stack, type_, label))
        return found

    def discovered(self, type_: str, label: str) -> ResourceVersion | None:
        """A discovered (unmanaged) resource of this (type, label), on any target."""
        self._want_label(type_, label)
        return self.unmanaged.get((type_, label))

    def adoptable(self, target: str, type_: str, label: str) -> ResourceVersion | None:
        """The discovered resource a forma resource on ``target`` adopts by its (type, label): one on the same
        target only, as another target's resource is another resource (another directory, account, region)."""
        self._want_label(type_, label)
        return self._discovered.get((target, type_, label))

    def in_stack(self, stack: str) -> list[ResourceVersion]:
        if self.reach is not None and stack not in self.reach.stacks:
            self.wanted.stacks.add(stack)
        return [r for r in self.resources if r.stack == stack and r.managed]

    def on_target(self, target: str) -> list[ResourceVersion]:
        if self.reach is not None and target not in self.reach.targets:
            self.wanted.targets.add(target)
        return [r for r in self.resources if r.target == target and r.managed]

    def stack_exists(self, stack: str) -> bool:
        if stack in self.stacks:
            return True
        if self.reach is not None and stack not in self.reach.stacks:
            self.wanted.stacks.add(stack)
        return any(r.stack == stack for r in self.resources)

    def dependents(self, ksuid: str) -> list[tuple[ResourceVersion, tuple[Any, ...]]]:
        """Managed resources whose stored properties refer to ``ksuid``, with the referring path."""
        if self.reach is not None and ksuid not in self.reach.referring_to:
            self.wanted.referring_to.add(ksuid)
        if self._dependents is None:
            index: dict[str, list[tuple[ResourceVersion, tuple[Any, ...]]]] = {}
            for resource in self.resources:
                if not resource.managed:
                    continue
                for path, ref in values.iter_refs(dict(resource.properties)):
                    producer, _ = values.split_uri(ref["$ref"])
                    index.setdefault(producer, []).append((resource, path))
            self._dependents = index
        return self._dependents.get(ksuid, [])

    def _want_label(self, type_: str, label: str) -> None:
        if self.reach is not None and (type_, label) not in self.reach.labels:
            self.wanted.labels.add((type_, label))

    def value_of(self, uri: str) -> Any:
        """A referenced property's stored value (plain), or KeyError when it is unknown or a secret."""
        ksuid, path = values.split_uri(uri)
        resource = self.resource(ksuid)
        if resource is None:
            raise KeyError(uri)
        for document in (resource.read_only_properties, resource.properties):
            try:
                found = values.get_path(values.plain_known(dict(document)), path)
            except KeyError:
                continue
            if found is values.UNRESOLVED or values.contains_unresolved(found):
                raise KeyError(uri)
            return found
        raise KeyError(uri)

    def hash_of(self, uri: str) -> dict[str, Any] | None:
        """The stored hash of a referenced secret, or of an object holding secrets (``{"$value": sha256,
        "$hashed": true, …}``); None when the property holds no secret, or is unknown."""
        ksuid, path = values.split_uri(uri)
        resource = self.resource(ksuid)
        try:
            found = values.get_path(dict(resource.properties), path) if resource is not None else None
        except KeyError:
            return None
        if isinstance(found, dict) and found.get("$hashed"):
            return {"$value": found.get("$value"), "$visibility": "Opaque", "$hashed": True}
        if values.contains_hash(found):  # an object holding secrets: hashed as the consumer stores it
            return {"$value": values.stored_digest(found), "$visibility": "Opaque", "$hashed": True}
        return None


def snapshot(resources: Iterable[ResourceVersion], targets: Iterable[TargetRecord],
             stacks: Iterable[StackRecord]) -> Inventory:
    return Inventory(list(resources), {t.label: t for t in targets}, {s.label: s for s in stacks})
