"""The stored state a plan is made from: only what the plan looks up, or the whole inventory.

Reading every live resource for each command made a small command pay for the whole estate: an apply of 10
beside 100,000 other resources took 2.7 s, nearly all of it reading, decoding and indexing the 100,000
(``bench/big_inventory.py``). A plan looks up little beyond its forma's stacks: the resources its forma's
resources match (by stack, type and label, or the discovered ones they adopt), the producers they refer to, the
resources on a target it replaces, and those referring to what it changes. So a reconcile's stacks (what its
forma does not name there is deleted), or the resources a patch's or a destroy's forma names, and the discovered
resources its labels could adopt are read first, and the plan is made from that partial inventory
(``Inventory.reach``); whatever it looked up that the partial inventory could not answer for certain
(``Inventory.wanted``) is read too and the plan made again, until it asks for nothing new. That plan is the one
the whole inventory gives: every lookup it made was answered from resources read in full for it. Most commands
take one round; a reference to another stack or an update with dependents, two or three. The stored targets and
stacks such a plan looks up are those its forma names and those of the resources it read (``_State``): they are
read by label, not every one of the estate's.

The whole inventory is still read where the partial one would cost more: an estate of no more than ``SMALL_ESTATE``
resources beyond twice what the plan names (the rounds' queries cost a plan of 10 ~1.5 ms more than the whole read
of an estate of its own; each stored resource read whole costs ~17 µs, so the two meet at about a hundred), a forma
of more than ``WHOLE_ABOVE`` resources (its stacks are most of what is read anyway), or a plan still asking after
``_ROUNDS`` rounds. The referrers of any number of producers are read in rounds: the datastore looks them up in its
index of references (before it had one, a round asking for those of more than 200 producers read the whole inventory
instead, each search reading every live row).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from svc.datastore.interface import Datastore
from svc.engine import drift
from svc.engine.planner import Catalog, Changeset, Inventory, Modification, PlanRequest, plan
from svc.engine.planner.policies import StoredPolicies
from svc.engine.policy_store import stored_policies
from svc.engine.queries import PAGE
from svc.model.records import ResourceScope, ResourceVersion, StackRecord, TargetFilter, TargetRecord, every_item

WHOLE_ABOVE = 1_000
SMALL_ESTATE = 100
_ROUNDS = 8
_R = TypeVar("_R", StackRecord, TargetRecord)


def plan_from_store(store: Datastore, request: PlanRequest, catalog: Catalog, reconcile_stacks: set[str],
                    new_id: Callable[[], str]) -> Changeset:
    """The plan of ``request`` against what is stored, read in one snapshot (see the module)."""
    with store.snapshot():  # one consistent view of what is stored, read in one transaction
        named = len(request.forma.resources) if request.forma is not None else len(request.destroy_matches)
        small = SMALL_ESTATE + 2 * named
        if named <= WHOLE_ABOVE and store.count_resources(up_to=small + 1) > small:
            state = _State.read(store, request, reconcile_stacks, whole=False)
            changeset = plan_in_rounds(request, catalog, store.live_resources_in,
                                       lambda resources, reach: state.inventory(resources + state.reaped, reach),
                                       new_id)
            if changeset is not None:
                return changeset
        state = _State.read(store, request, reconcile_stacks, whole=True)
        resources = every_item(lambda c: store.list_resources(cursor=c, limit=PAGE)) + state.reaped
    return plan(request, state.inventory(resources, None), catalog, new_id)  # a whole inventory: read, done


class _ByLabel(Generic[_R]):
    """Targets or stacks by label: every one, or (``read`` given) those asked for, each read by key once."""

    def __init__(self, records: Iterable[_R], read: Callable[[set[str]], list[_R]] | None = None) -> None:
        self.found = {record.label: record for record in records}
        self._read = read
        self._asked = set(self.found)

    def ask(self, labels: Iterable[str]) -> None:
        missing = set(labels) - self._asked
        if self._read is not None and missing:
            self.found.update((record.label, record) for record in self._read(missing))
            self._asked |= missing


@dataclass(frozen=True)
class _State:
    """What a plan reads besides resources: targets and stacks, the reconciled stacks' modifications, the forma's
    policies, and the resources of reaped targets an apply declares again. The targets and stacks are read whole,
    or only those the forma names, then those of the resources each round reads (``inventory``): the planner
    looks no other up, and a small command beside 3,000 stacks spent ~30 ms reading them all."""

    targets: _ByLabel[TargetRecord]
    stacks: _ByLabel[StackRecord]
    modifications: dict[str, list[Modification]]
    policies: StoredPolicies
    reaped: list[ResourceVersion]

    @classmethod
    def read(cls, store: Datastore, request: PlanRequest, reconcile_stacks: set[str], *, whole: bool) -> _State:
        forma = request.forma
        if whole:
            targets = _ByLabel(every_item(lambda c: store.list_targets(TargetFilter(reaped=True), cursor=c,
                                                                       limit=PAGE)))
            stacks = _ByLabel(every_item(lambda c: store.list_stacks(cursor=c, limit=PAGE)))
        else:
            targets, stacks = _ByLabel([], store.targets_named), _ByLabel([], store.stacks_named)
            stacks.ask(reconcile_stacks)
            if forma is not None:
                targets.ask({t.label for t in forma.targets} | {r.target for r in forma.resources})
                stacks.ask({s.label for s in forma.stacks} | {r.stack for r in forma.resources})
        reaped: list[ResourceVersion] = []
        if request.command == "apply" and forma is not None:
            # A reaped target the forma declares again comes back with its resources: planned as the stored
            # resources they are (updated or left alone, never created twice in the cloud); a destroy forgets them.
            for target in forma.targets:
                stored = targets.found.get(target.label)
                if stored is not None and stored.health_state == "reaped":
                    reaped.extend(store.list_reaped_resources(target.label))
        return cls(targets, stacks, {stack: _modifications(store, stack) for stack in reconcile_stacks},
                   stored_policies(store, forma, stacks.found), reaped)

    def inventory(self, resources: list[ResourceVersion], reach: ResourceScope | None) -> Inventory:
        self.targets.ask(r.target for r in resources)
        self.stacks.ask({r.stack for r in resources} | (reach.stacks if reach is not None else set()))
        return Inventory(resources, dict(self.targets.found), dict(self.stacks.found), dict(self.modifications),
                         self.policies, reach=reach)


def _modifications(store: Datastore, stack: str) -> list[Modification]:
    """Versions written in ``stack`` since its last reconcile by anything but that reconcile."""
    changed = drift.modified(store, stack)
    outside = drift.out_of_band(store, changed)
    return [Modification(stack, v.type, v.label, "delete" if v.deleted else "update", v.ksuid, v.ksuid in outside)
            for v in changed]


def plan_in_rounds(request: PlanRequest, catalog: Catalog, read: Callable[[ResourceScope], list[ResourceVersion]],
                   inventory_of: Callable[[list[ResourceVersion], ResourceScope], Inventory],
                   new_id: Callable[[], str]) -> Changeset | None:
    """The plan made from partial inventories (``inventory_of`` the resources read so far and what they cover),
    each round reading (``read``) what the last one wanted; None when the whole inventory should be read
    instead (see the module)."""
    reach = _first_reach(request)
    loaded: dict[str, ResourceVersion] = {r.ksuid: r for r in request.destroy_matches}
    _read(read, reach, loaded)
    for _ in range(_ROUNDS):
        inventory = inventory_of(_in_inventory_order(loaded.values()), reach.copy())

        def minted(inventory: Inventory = inventory) -> str:
            # A resource this plan creates is stored nowhere, nor is anything referring to it.
            ksuid = new_id()
            assert inventory.reach is not None
            inventory.reach.ksuids.add(ksuid)
            inventory.reach.referring_to.add(ksuid)
            return ksuid

        try:
            changeset = plan(request, inventory, catalog, minted)
        except Exception:
            if not inventory.wanted:
                raise  # answered from resources read in full for it: the whole inventory gives the same error
        else:
            if not inventory.wanted:
                return changeset
        wanted = inventory.wanted
        _read(read, wanted, loaded)
        reach.add(wanted)
    return None


def _first_reach(request: PlanRequest) -> ResourceScope:
    """What a plan looks up first: the resources of a reconcile's stacks (what its forma does not name there is
    deleted) or, for a patch or a destroy, the resources its forma names (by stack, type and label or alias: a
    patch of 10 in a stack of 100,000 read them all); the discovered resources its resources could adopt; the
    resources a destroy by query matched."""
    forma = request.forma
    reach = ResourceScope(ksuids={r.ksuid for r in request.destroy_matches})
    if forma is not None:
        if request.command == "apply" and request.mode == "reconcile":
            reach.stacks = {r.stack for r in forma.resources}
        else:
            reach.triplets = {(r.stack, r.type, name) for r in forma.resources for name in (r.label, r.alias) if name}
        reach.labels = {(r.type, r.label) for r in forma.resources}
        reach.labels |= {(r.type, r.alias) for r in forma.resources if r.alias}
    return reach


def _read(read: Callable[[ResourceScope], list[ResourceVersion]], reach: ResourceScope,
          loaded: dict[str, ResourceVersion]) -> None:
    if reach:
        for resource in read(reach):
            loaded.setdefault(resource.ksuid, resource)


def _in_inventory_order(resources: Iterable[ResourceVersion]) -> list[ResourceVersion]:
    """As the whole inventory lists them (``Datastore.list_resources``): lookups that keep the last of several
    (a discovered (type, label) on two targets) then answer alike."""
    return sorted(resources, key=lambda r: (r.type, r.label, r.ksuid))

