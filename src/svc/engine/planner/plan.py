"""The planner: evaluated forma + stored state → changeset (engine.md §1.2–§1.4). Pure but for id minting.

* Reconcile: the forma is the whole truth of each stack it names: stored resources of those stacks that
  the forma dropped are deleted. Patch: only what the forma names is created or updated.
* Each matched resource is diffed by its hints (``diff.generate_patch``): no change, an update, or a
  replace (delete, then create) when a create-only field, the target, or a replaced target changes.
* A resource whose reference points at something this command creates or changes is re-planned with
  that value unknown, so a consumer of a replaced producer is itself updated (mutable field) or
  replaced (create-only field) — also when the consumer is not in the forma (it is rebuilt from its
  stored state). This runs to a fixed point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from svc.engine.errors import (
    EmptyStackRejected,
    PatchRejected,
    ReconcileRejected,
    ResourceHasDependents,
)
from svc.engine.planner.changeset import Changeset, ResourceChange, StackChange, TargetChange, compact_schema
from svc.engine.planner.diff import UNKNOWN, generate_patch, mask_patch
from svc.engine.planner.inventory import UNMANAGED_STACK, Inventory, Modification
from svc.engine.planner.policies import plan_policies
from svc.engine.planner.targets import plan_targets
from svc.engine.planner.translate import Desired, translate
from svc.engine.planner.validate import Catalog, check_no_hashed_secret, check_required_on_create, validate_forma
from svc.model import values
from svc.model.forma import Forma
from svc.model.records import ResourceVersion
from svc.model.schema import Schema
from svc.model.schema_cache import schema_of

Json = dict[str, Any]
_NONE = object()  # no say in ``changing``


@dataclass(frozen=True)
class PlanRequest:
    command: Literal["apply", "destroy"]
    mode: Literal["reconcile", "patch"] = "patch"
    forma: Forma | None = None
    force: bool = False
    on_dependents: Literal["abort", "cascade"] = "abort"
    destroy_matches: tuple[ResourceVersion, ...] = ()  # destroy by query: the managed resources it matched


def plan(request: PlanRequest, inventory: Inventory, catalog: Catalog, new_id: Callable[[], str]) -> Changeset:
    if request.command == "destroy":
        changeset = _Destroy(request, inventory, new_id).run()
    else:
        changeset = _Apply(request, inventory, catalog, new_id).run()
    changeset.policies = plan_policies(request.command, request.mode, request.forma, inventory.policies, new_id)
    return changeset


def _schema_of(resource: ResourceVersion) -> Schema:
    return schema_of(resource.document.get("Schema") or {"Identifier": ""})  # shared, as every change's is


def _producers(properties: Json) -> frozenset[str]:
    """The ksuids of the resources ``properties`` refer to."""
    return frozenset(values.split_uri(ref["$ref"])[0] for _, ref in values.iter_refs(properties))


def _with_opaque_paths(schema: Schema, installed: Schema | None) -> Schema:
    """A forma evaluated by an older svc names no opaque paths (its dotted hints cannot tell a mapping's keys):
    the installed plugin's say where the secrets are. A schema that names them is taken as it is."""
    if schema.opaque_paths or installed is None or not installed.opaque_paths:
        return schema
    return schema.model_copy(update={"opaque_paths": installed.opaque_paths})


class _Apply:
    def __init__(self, request: PlanRequest, inventory: Inventory, catalog: Catalog, new_id: Callable[[], str]):
        assert request.forma is not None
        self.request, self.forma, self.inventory, self.catalog, self.new_id = (
            request, request.forma, inventory, catalog, new_id)
        self.exact = request.mode == "reconcile"
        self.changes: dict[str, list[ResourceChange]] = {}  # by ksuid
        self.targets_in_forma = {t.label: t for t in self.forma.targets}
        # Each schema's compact document, made once and shared by its changes (``model_dump`` per change was a
        # tenth of planning 100,000 creates, and each copy ~1 KB of the agent's memory); keyed by identity, the
        # schema kept alive with it so that its id is not reused.
        self._compact: dict[int, tuple[Schema, Json]] = {}

    # -- helpers -------------------------------------------------------------------------------------------

    def compact(self, schema: Schema) -> Json:
        known = self._compact.get(id(schema))
        if known is None or known[0] is not schema:
            known = self._compact[id(schema)] = (schema, compact_schema(schema))
        return known[1]

    def target_config(self, label: str, *, old: bool = False) -> Json:
        if not old and label in self.targets_in_forma:
            return dict(self.targets_in_forma[label].config or {})
        stored = self.inventory.targets.get(label)
        return dict(stored.config) if stored is not None else {}

    def namespace(self, label: str) -> str:
        if label in self.targets_in_forma:
            return self.targets_in_forma[label].namespace
        stored = self.inventory.targets.get(label)
        return stored.namespace if stored is not None else ""

    def fill(self, properties: Json, changing: dict[str, set[str] | None]) -> Json:
        """Properties with each reference's plan-time value: the stored value, or none (unknown) when
        its producer is created or changed by this command."""

        return values.map_refs(properties, lambda ref: self._filled(ref, changing))

    def _filled(self, ref: Json, changing: dict[str, set[str] | None]) -> Json:
        ksuid, path = values.split_uri(ref["$ref"])
        filled = {k: v for k, v in ref.items() if k != "$value"}
        touched = changing.get(ksuid, set())
        if ksuid in changing and (touched is None or values.split_path(path)[0] in touched):
            return filled
        try:
            filled["$value"] = self.inventory.value_of(ref["$ref"])
        except KeyError:
            # A secret is stored only as its hash: the reference holds that (so that it compares equal to
            # what the consumer stored, unless the secret changed); execution reads the secret itself.
            hashed = self.inventory.hash_of(ref["$ref"]) or {}
            if "$json" in ref and hashed:
                # A part of the secret: its value is unknown here, but the consumer's stored value says which
                # state of the secret it was taken from (``$of``), which tells whether it changed.
                filled |= {"$of": hashed["$value"], "$visibility": "Opaque"}
            else:
                filled |= hashed
        return filled

    def match(self, desired: Desired) -> ResourceVersion | None:
        found = self.inventory.resource(desired.ksuid)
        if found is None:
            return None
        r = desired.resource
        if found.managed and found.stack != r.stack:
            return None  # another stack's resource: moving between managed stacks is delete + create
        return found

    def classify(self, schema: Schema, ksuid: str, label: str, stack: str, target: str, desired: Json,
                 stored: ResourceVersion | None, *, alias: str | None = None, group: str | None = None,
                 cascade_source: str | None = None) -> list[ResourceChange]:
        common = dict(ksuid=ksuid, type="", label=label, stack=stack, target=target, schema=self.compact(schema),
                      alias=alias, group=group, exact=self.exact, is_cascade=cascade_source is not None,
                      cascade_source=cascade_source)
        if stored is None:
            return [ResourceChange(operation="create", desired=desired, target_config=self.target_config(target),
                                   namespace=self.namespace(target), **common)]
        common["type"] = stored.type
        reason = ""
        if stored.target != target:
            reason = f"target changes from {stored.target!r} to {target!r}"
        elif target in self.replaced_targets:
            reason = f"target {target!r} is replaced"
        patch = generate_patch(dict(stored.properties), desired, schema, exact=self.exact)
        if patch.create_only and not reason:
            fields = sorted({op["path"].split("/")[1] for op in patch.create_only})
            reason = f"create-only field(s) changed: {', '.join(fields)}"
        if reason:
            group_id = self.new_id()
            delete = ResourceChange(operation="delete", prior=dict(stored.properties),
                                    prior_read_only=dict(stored.read_only_properties), native_id=stored.native_id,
                                    target_config=self.target_config(stored.target, old=True),
                                    namespace=self.namespace(stored.target),
                                    create_only_patch=mask_patch(patch.create_only, desired, schema) or None,
                                    # What else the new resource changes, for the plan to show.
                                    patch=mask_patch(patch.ops, desired, schema) or None,
                                    group_id=group_id, reason=reason,
                                    **{**common, "target": stored.target, "label": stored.label,
                                       "stack": stored.stack})
            create = ResourceChange(operation="create", desired=desired, target_config=self.target_config(target),
                                    namespace=self.namespace(target), group_id=group_id, reason=reason, **common)
            return [delete, create]
        renamed = stored.label != label
        moved = stored.stack != stack or not stored.managed
        if not patch.ops and not renamed and not moved:
            return []
        return [ResourceChange(operation="update", desired=desired, prior=dict(stored.properties),
                               prior_read_only=dict(stored.read_only_properties), native_id=stored.native_id,
                               target_config=self.target_config(target), namespace=self.namespace(target),
                               patch=mask_patch(patch.ops, desired, schema),
                               old_label=stored.label if renamed else None,
                               old_stack=stored.stack if moved else None, metadata_only=not patch.ops,
                               **common)]

    # -- the plan ------------------------------------------------------------------------------------------

    def run(self) -> Changeset:
        validate_forma(self.forma, self.inventory, self.catalog)
        target_changes = plan_targets(self.forma, self.inventory)
        self.replaced_targets = {t.label for t in target_changes if t.operation == "replace"}
        desired = translate(self.forma, self.inventory, self.new_id)
        in_forma = {d.ksuid for d in desired}

        # Resources the forma names: classified, then re-classified while the set of changing producers grows
        # (each stored resource referring to one of them classified too). It starts from what is certain: a
        # resource with no stored version is created, whatever it refers to, as is a deleted one deleted. A
        # first pass from nothing classified every resource twice, the first time for nothing (at 100,000 new
        # resources, ~2.5 s of the agent's CPU before the command could start).
        changing: dict[str, set[str] | None] = {d.ksuid: None for d in desired if self.match(d) is None}
        entries: dict[str, Callable[[], list[ResourceChange]]] = {}
        for d in desired:
            schema = self.catalog.types.get(d.resource.type) or d.resource.schema_
            schema = d.resource.schema_ if d.resource.schema_.identifier else schema
            schema = _with_opaque_paths(schema, self.catalog.types.get(d.resource.type))
            entries[d.ksuid] = self._forma_entry(d, schema, changing)
        sources = {d.ksuid: d.properties for d in desired}  # each entry's properties, for what they refer to
        # Stored resources of the stacks on a replaced target that the forma does not name move with it.
        for label in self.replaced_targets:
            for stored in self.inventory.on_target(label):
                if stored.ksuid not in in_forma and stored.ksuid not in entries:
                    entries[stored.ksuid] = self._stored_entry(stored, changing, f"target {label}")
                    sources[stored.ksuid] = stored.properties
        implicit = self._implicit_deletes(in_forma) if self.exact else []
        deleted = {c.ksuid for c in implicit}
        changing.update(dict.fromkeys(deleted))
        # An entry's classification depends on ``changing`` only through the producers it refers to: a pass after
        # the first classifies again only the entries referring to a producer whose say changed (an update of a
        # tenth of 100 resources classified all 100 twice). What an entry refers to is read when a later pass asks:
        # most plans (creates, no-ops) have one pass, and the walk costs ~7 µs a resource.
        moved: set[str] | None = None  # the producers whose say changed since the last pass (None: the first)
        producers: dict[str, frozenset[str]] = {}

        def refers_to_moved(ksuid: str) -> bool:
            assert moved is not None
            if ksuid not in producers:
                producers[ksuid] = _producers(sources[ksuid])
            return not producers[ksuid].isdisjoint(moved)

        while True:
            for producer in changing:
                for dependent, _ in self.inventory.dependents(producer):
                    if dependent.ksuid not in entries and dependent.ksuid not in deleted:
                        source = self.inventory.resource(producer)
                        entries[dependent.ksuid] = self._stored_entry(
                            dependent, changing, source.label if source is not None else producer)
                        sources[dependent.ksuid] = dependent.properties
            for ksuid, entry in list(entries.items()):
                if moved is None or ksuid not in self.changes or refers_to_moved(ksuid):
                    self.changes[ksuid] = entry()
            new = self._changing()
            for ksuid in deleted:
                new[ksuid] = None
            if new == changing:
                break
            moved = {k for k in new.keys() | changing.keys() if new.get(k, _NONE) != changing.get(k, _NONE)}
            changing.clear()
            changing.update(new)
        self._refuse_dangling(deleted)
        resources = [c for ksuid in entries for c in self.changes.get(ksuid, [])] + implicit
        named = {d.ksuid: d.resource for d in desired}  # a search of ``desired`` per change was quadratic
        for change in resources:
            if change.operation == "create" and not change.is_cascade:
                resource = named[change.ksuid]
                check_no_hashed_secret(resource, change.desired or {})
                check_required_on_create(resource, values.plain(change.desired or {}, unresolved=UNKNOWN),
                                         schema_of(change.schema))
        for change in resources:
            if not change.type and change.ksuid in named:
                change.type = named[change.ksuid].type
        changeset = Changeset("apply", self.request.mode, resources, target_changes, self._stacks(resources))
        self._gates(changeset, desired)
        changeset.warnings = [f"target {t.label!r} is replaced: every resource on it is deleted and created again"
                              for t in target_changes if t.operation == "replace"]
        return changeset

    def _forma_entry(self, d: Desired, schema: Schema, changing: dict[str, set[str] | None]
                     ) -> Callable[[], list[ResourceChange]]:
        r = d.resource

        def entry() -> list[ResourceChange]:
            changes = self.classify(schema, d.ksuid, r.label, r.stack, r.target, self.fill(d.properties, changing),
                                    self.match(d), alias=r.alias, group=r.group)
            for change in changes:
                change.type = r.type
            return changes

        return entry

    def _stored_entry(self, stored: ResourceVersion, changing: dict[str, set[str] | None], source: str
                      ) -> Callable[[], list[ResourceChange]]:
        def entry() -> list[ResourceChange]:
            return self.classify(_schema_of(stored), stored.ksuid, stored.label, stored.stack, stored.target,
                                 self.fill(dict(stored.properties), changing), stored,
                                 alias=stored.document.get("Alias"), group=stored.document.get("Group"),
                                 cascade_source=source)

        return entry

    def _changing(self) -> dict[str, set[str] | None]:
        """Producers whose referenced values this command may change: created or replaced (every
        property), or updated (the top-level properties its patch touches)."""
        out: dict[str, set[str] | None] = {}
        for ksuid, changes in self.changes.items():
            ops = {c.operation for c in changes}
            if "create" in ops:
                out[ksuid] = None
            elif "update" in ops:
                touched = {op["path"].split("/")[1] for c in changes for op in (c.patch or [])}
                if touched:
                    out[ksuid] = touched
        return out

    def _implicit_deletes(self, in_forma: set[str]) -> list[ResourceChange]:
        stacks = {r.stack for r in self.forma.resources}
        out: list[ResourceChange] = []
        for stack in sorted(stacks):
            for stored in self.inventory.in_stack(stack):
                if stored.ksuid in in_forma:
                    continue
                out.append(ResourceChange(
                    ksuid=stored.ksuid, operation="delete", type=stored.type, label=stored.label, stack=stack,
                    target=stored.target, schema=dict(stored.document.get("Schema") or {}),
                    target_config=self.target_config(stored.target, old=True), namespace=self.namespace(stored.target),
                    prior=dict(stored.properties), prior_read_only=dict(stored.read_only_properties),
                    native_id=stored.native_id, reason="not in the forma (reconcile)", exact=True))
        return out

    def _refuse_dangling(self, deleted: set[str]) -> None:
        """A resource this command deletes for good may not stay referenced by one it keeps."""
        if not deleted:
            return
        recreated = {k for k, cs in self.changes.items() if any(c.operation == "create" for c in cs)}
        dependents = []
        for ksuid in deleted - recreated:
            for dependent, _ in self.inventory.dependents(ksuid):
                if dependent.ksuid in deleted:
                    continue
                source = self.inventory.resource(ksuid)
                dependents.append({"ResourceLabel": dependent.label, "ResourceType": dependent.type,
                                   "Stack": dependent.stack, "CascadeSource": source.label if source else ksuid})
        if dependents:
            names = ", ".join(f"{d['Stack']}/{d['ResourceType']}/{d['ResourceLabel']}" for d in dependents)
            raise ResourceHasDependents(f"resources this apply deletes are still referenced by: {names}",
                                        {"Dependents": dependents})

    def _stacks(self, resources: list[ResourceChange]) -> list[StackChange]:
        out: list[StackChange] = []
        for stack in self.forma.stacks:
            stored = self.inventory.stacks.get(stack.label)
            description = stack.description or ""
            if stored is None:
                out.append(StackChange(stack.label, "create", description))
            elif stored.description != description:
                out.append(StackChange(stack.label, "update", description))
        return out

    def _gates(self, changeset: Changeset, desired: list[Desired]) -> None:
        forma_stacks = {r.stack for r in self.forma.resources}
        empty = sorted(s.label for s in self.forma.stacks
                       if s.label not in forma_stacks and not self.inventory.stack_exists(s.label))
        if empty:
            raise EmptyStackRejected(f"stack(s) {', '.join(empty)} would be created without resources",
                                     {"EmptyStacks": empty})
        if self.request.mode == "patch":
            unknown = sorted({c.stack for c in changeset.resources if not self.inventory.stack_exists(c.stack)})
            if unknown:
                raise PatchRejected(f"patch mode cannot create stack(s) {', '.join(unknown)}; apply with "
                                    "--mode reconcile first", {"UnknownStacks": unknown})
        if self.request.mode == "reconcile":
            changeset.reconciled = sorted(forma_stacks)
            changeset.absorbed = [s for s in changeset.reconciled if self.inventory.modifications.get(s)]
            if not self.request.force:
                self._drift_gate(changeset, desired)

    def _drift_gate(self, changeset: Changeset, desired: list[Desired]) -> None:
        """Refuses a reconcile of stacks written since their last reconcile (``changeset.absorbed``, in order) by
        other than what the forma says."""
        if not changeset.absorbed:
            return  # nothing written since the last reconcile: nothing to weigh against the forma
        named = {(d.resource.stack, d.resource.type, d.resource.label) for d in desired}
        named |= {(d.resource.stack, d.resource.type, d.resource.alias) for d in desired if d.resource.alias}
        planned = {c.ksuid for c in changeset.resources}
        # A resource deleted outside svc that the forma would create again is drift too (with a new ksuid); one
        # a user destroyed is not. A deleted resource the forma no longer names agrees with the forma.
        recreated = {(c.stack, c.type, c.label) for c in changeset.resources if c.operation == "create"}

        def absorbed(m: Modification) -> bool:
            key = (m.stack, m.type, m.label)
            if key not in named:
                return m.operation == "delete"
            return m.ksuid not in planned and not (m.out_of_band and key in recreated)

        rejected: dict[str, Any] = {}
        for stack in changeset.absorbed:
            left = [m for m in self.inventory.modifications[stack] if not absorbed(m)]
            if left:
                rejected[stack] = {"ModifiedResources": [m.to_json() for m in left]}
        if rejected:
            listing = "; ".join(f"{stack}: " + ", ".join(f"{m['Type']}/{m['Label']} ({m['Operation']})"
                                                         for m in entry["ModifiedResources"])
                                for stack, entry in rejected.items())
            raise ReconcileRejected(f"resources changed outside svc since the last reconcile ({listing}); put the "
                                    "changes in the forma or apply with --force to overwrite them",
                                    {"ModifiedStacks": rejected})


class _Destroy:
    def __init__(self, request: PlanRequest, inventory: Inventory, new_id: Callable[[], str]):
        self.request, self.inventory, self.new_id = request, inventory, new_id

    def delete(self, stored: ResourceVersion, *, cascade: str | None = None) -> ResourceChange:
        target = self.inventory.targets.get(stored.target)
        return ResourceChange(
            ksuid=stored.ksuid, operation="delete", type=stored.type, label=stored.label, stack=stored.stack,
            target=stored.target, schema=dict(stored.document.get("Schema") or {}),
            target_config=dict(target.config) if target else {}, namespace=target.namespace if target else "",
            prior=dict(stored.properties), prior_read_only=dict(stored.read_only_properties),
            native_id=stored.native_id, is_cascade=cascade is not None, cascade_source=cascade)

    def run(self) -> Changeset:
        roots: list[ResourceVersion] = list(self.request.destroy_matches)
        target_changes: list[TargetChange] = []
        forma = self.request.forma
        if forma is not None:
            for resource in forma.resources:
                stored = self.inventory.managed(resource.stack, resource.type, resource.label)
                if stored is not None:
                    roots.append(stored)
            if not forma.resources:  # a forma of targets only deletes them and everything on them
                for target in forma.targets:
                    stored_target = self.inventory.targets.get(target.label)
                    if stored_target is None:
                        continue
                    target_changes.append(TargetChange(target.label, "delete", stored_target.namespace,
                                                       dict(stored_target.config)))
                    roots.extend(self.inventory.on_target(target.label))
        chosen = {r.ksuid: self.delete(r) for r in roots if r.managed}
        queue = list(chosen)
        cascades: list[ResourceChange] = []
        while queue:
            producer = queue.pop()
            for dependent, _ in self.inventory.dependents(producer):
                if dependent.ksuid in chosen or dependent.stack == UNMANAGED_STACK:
                    continue
                source = self.inventory.resource(producer)
                change = self.delete(dependent, cascade=source.label if source is not None else producer)
                chosen[dependent.ksuid] = change
                cascades.append(change)
                queue.append(dependent.ksuid)
        if cascades and self.request.on_dependents != "cascade":
            dependents = [{"ResourceLabel": c.label, "ResourceType": c.type, "Stack": c.stack,
                           "CascadeSource": c.cascade_source} for c in cascades]
            names = ", ".join(f"{c.stack}/{c.type}/{c.label}" for c in cascades)
            raise ResourceHasDependents(f"other resources depend on what you destroy: {names}; destroy with "
                                        "--on-dependents cascade to delete them too", {"Dependents": dependents})
        return Changeset("destroy", "patch", list(chosen.values()), target_changes)
