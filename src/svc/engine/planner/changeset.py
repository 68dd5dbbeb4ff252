"""The planner's output: plain data you can print, test and persist (a plan, then an apply)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal

from svc.model.schema import Schema

Json = dict[str, Any]
ResourceOp = Literal["create", "update", "delete"]


def compact_schema(schema: Schema) -> Json:
    """The descriptor without default values: it is stored with every change and every resource version,
    and readers (``Schema.model_validate``, the graph) fill the defaults back in."""
    return schema.model_dump(mode="json", by_alias=True, exclude_defaults=True) | {"Identifier": schema.identifier}


@dataclass
class ResourceChange:
    """One resource's part of a command. A replace is a ``delete`` and a ``create`` sharing ``group_id``."""

    ksuid: str
    operation: ResourceOp
    type: str
    label: str
    stack: str
    target: str
    schema: Json
    target_config: Json = field(default_factory=dict)
    namespace: str = ""
    desired: Json | None = None  # translated forma properties (secrets in plain text) for create/update
    prior: Json | None = None  # stored properties (secrets hashed) for update/delete
    prior_read_only: Json = field(default_factory=dict)
    native_id: str | None = None
    patch: list[Json] | None = None  # for display: secret values hashed
    create_only_patch: list[Json] | None = None
    old_label: str | None = None
    old_stack: str | None = None
    group_id: str | None = None
    is_cascade: bool = False
    cascade_source: str | None = None
    managed: bool = True
    alias: str | None = None
    group: str | None = None
    reason: str = ""
    metadata_only: bool = False  # adopt or rename with no property change: no plugin call
    exact: bool = False  # reconcile (ExactMatch) diff semantics at execution time

    @property
    def key(self) -> str:
        return f"{self.ksuid}/{self.operation}"

    @property
    def handle(self) -> str:
        return f"{self.stack}/{self.type}/{self.label}"

    def to_json(self) -> Json:
        # Shallow: the values are JSON already and never mutated in place (asdict's deep copy was a
        # measurable share of submitting 10,000 changes). The fields are looked up once: ``fields()`` and a
        # ``getattr`` each took 6 µs a change, in the storing of a command that stands before its first call.
        return dict(zip(_CHANGE_FIELDS, _change_values(self), strict=True))

    @classmethod
    def from_json(cls, document: Json) -> ResourceChange:
        return cls(**document)


_CHANGE_FIELDS = tuple(f.name for f in fields(ResourceChange))
_change_values = attrgetter(*_CHANGE_FIELDS)


@dataclass
class TargetChange:
    label: str
    operation: Literal["create", "update", "replace", "delete"]
    namespace: str
    config: Json
    config_schema: Json = field(default_factory=dict)
    discoverable: bool = False
    existing_config: Json | None = None
    existing_discoverable: bool | None = None
    reap_kind: str | None = None  # after | never | None (the agent's default)
    reap_after_seconds: int | None = None
    recovered: bool = False  # the target was reaped: declaring it brings it and its resources back

    @property
    def starts_discovery(self) -> bool:
        """Whether storing this change gives discovery something new to list (engine.md §6 triggers): a
        discoverable target created, or one made discoverable or pointed elsewhere."""
        if not self.discoverable or self.operation == "delete":
            return False
        return (self.operation in ("create", "replace") or not self.existing_discoverable
                or self.existing_config != self.config)

    def to_json(self) -> Json:
        return asdict(self)


@dataclass
class StackChange:
    label: str
    operation: Literal["create", "update"]
    description: str = ""

    def to_json(self) -> Json:
        return asdict(self)


@dataclass
class PolicyChange:
    """One stack policy's part of a command (engine.md §5.4). ``stack`` is the owning stack of an inline
    policy, the stack of an ``attach``/``detach``, and None for a standalone policy's own changes."""

    label: str
    policy_type: str
    operation: Literal["create", "update", "delete", "attach", "detach", "skip"]
    stack: str | None = None
    config: Json | None = None  # the policy's wire keys (TTLSeconds, OnDependents, IntervalSeconds…)
    old_config: Json | None = None
    referencing_stacks: list[str] | None = None  # why a standalone policy's delete was skipped

    def to_json(self) -> Json:
        return asdict(self)

    @classmethod
    def from_json(cls, document: Json) -> PolicyChange:
        return cls(**document)


@dataclass
class Changeset:
    command: Literal["apply", "destroy"]
    mode: Literal["reconcile", "patch"]
    resources: list[ResourceChange] = field(default_factory=list)
    targets: list[TargetChange] = field(default_factory=list)
    stacks: list[StackChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    policies: list[PolicyChange] = field(default_factory=list)
    # A reconcile apply's stacks: the forma is their whole truth, so the command is their new drift baseline, also
    # where it changes nothing. ``absorbed``: those of them that drifted since their last reconcile (a plan that
    # passed the drift gate says what the drift says, or ``--force`` overrides it): a reconcile that plans no change
    # must still record the new baseline for them.
    reconciled: list[str] = field(default_factory=list)
    absorbed: list[str] = field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.resources or self.targets or self.stacks or self.policies)

    @property
    def stack_labels(self) -> set[str]:
        return ({change.stack for change in self.resources} | {change.label for change in self.stacks}
                | {change.stack for change in self.policies if change.stack})

    def to_json(self) -> Json:
        return {"command": self.command, "mode": self.mode,
                "resources": [r.to_json() for r in self.resources],
                "targets": [t.to_json() for t in self.targets], "stacks": [s.to_json() for s in self.stacks],
                "policies": [p.to_json() for p in self.policies], "warnings": list(self.warnings)}
