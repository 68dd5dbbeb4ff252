"""Plain records that go in and out of the datastore: no SQL, no driver types.

JSON-valued fields hold whatever the engine gives (already hashed or encrypted where secret); the datastore
stores them as given and never interprets them beyond equality.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar

T = TypeVar("T")
Json = Mapping[str, Any]


class RunState(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list. The list ended only when ``next_cursor`` is None: a backend with a byte budget
    may return fewer items than asked for and still have more."""

    items: tuple[T, ...]
    next_cursor: str | None


def every_item(fetch: Callable[[str | None], Page[T]]) -> list[T]:
    """Every item of a paged list: ``fetch(cursor)`` returns one page; the first cursor is None."""
    return list(each_item(fetch))


def each_item(fetch: Callable[[str | None], Page[T]], first: Page[T] | None = None) -> Iterator[T]:
    """``every_item``, a page read at a time as the items are consumed; ``first``: the first page, read already."""
    page = first if first is not None else fetch(None)
    while True:
        yield from page.items
        if page.next_cursor is None:
            return
        page = fetch(page.next_cursor)


@dataclass(frozen=True, slots=True)
class ResourceWrite:
    """The desired stored state of one resource. ``ksuid`` None means "the resource stored under this (target, type,
    native id), else a new resource: mint an id"."""

    type: str
    label: str
    stack: str
    target: str
    properties: Json
    managed: bool = True
    native_id: str | None = None
    ksuid: str | None = None
    read_only_properties: Json = field(default_factory=dict)
    # The rest of the engine's resource document (schema, alias, group…): versioned with the properties.
    document: Json = field(default_factory=dict)
    # Write only if the resource's current version is still this one (state derived from a read of that
    # version, e.g. synchronization); otherwise nothing is written. None: unconditional.
    if_version: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceVersion:
    ksuid: str
    version: str
    operation: str
    type: str
    label: str
    stack: str
    target: str
    native_id: str | None
    managed: bool
    properties: Json
    read_only_properties: Json
    document: Json
    command_id: str | None
    valid_from: datetime
    current: bool
    deleted: bool


@dataclass
class ResourceScope:
    """Live resources named by what they are found by (``Datastore.live_resources_in``): those in ``stacks`` or on
    ``targets``, with one of ``ksuids``, the managed one of each (stack, type, label) of ``triplets``, the
    discovered (unmanaged) ones of each (type, label) of ``labels``, and the managed ones whose properties refer
    to one of ``referring_to`` (a ksuid). A partial inventory holds one scope in full and notes in another what a
    plan asked of it beyond that (``Inventory.reach``, ``Inventory.wanted``)."""

    stacks: set[str] = field(default_factory=set)
    targets: set[str] = field(default_factory=set)
    ksuids: set[str] = field(default_factory=set)
    triplets: set[tuple[str, str, str]] = field(default_factory=set)
    labels: set[tuple[str, str]] = field(default_factory=set)
    referring_to: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return any((self.stacks, self.targets, self.ksuids, self.triplets, self.labels, self.referring_to))

    def add(self, other: ResourceScope) -> None:
        self.stacks |= other.stacks
        self.targets |= other.targets
        self.ksuids |= other.ksuids
        self.triplets |= other.triplets
        self.labels |= other.labels
        self.referring_to |= other.referring_to

    def copy(self) -> ResourceScope:
        copied = ResourceScope()
        copied.add(self)
        return copied


@dataclass(frozen=True, slots=True)
class ResourceSummary:
    """The indexed columns of a current resource, for inventory lists that must not decode JSON."""

    ksuid: str
    type: str
    label: str
    stack: str
    target: str
    native_id: str | None
    managed: bool


@dataclass(frozen=True, slots=True)
class StoreOutcome:
    """What a resource write did. ``version`` is None only when a delete found nothing to delete."""

    ksuid: str
    version: str | None
    changed: bool
    operation: str | None


@dataclass(frozen=True, slots=True)
class StackRecord:
    id: str
    label: str
    description: str
    version: str
    created_at: datetime
    updated_at: datetime
    command_id: str | None


@dataclass(frozen=True, slots=True)
class TargetWrite:
    """A target as declared. ``reap_kind``: ``after`` (reap once unreachable for ``reap_after_seconds``),
    ``never``, or None (the agent's default)."""

    label: str
    namespace: str
    config: Json
    config_schema: Json = field(default_factory=dict)
    discoverable: bool = False
    reap_kind: str | None = None
    reap_after_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class TargetRecord:
    label: str
    version: int
    namespace: str
    config: Json
    config_schema: Json
    discoverable: bool
    incarnation_id: str
    health_state: str  # unknown | reachable | unreachable | reaped
    observed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    reap_kind: str | None = None
    reap_after_seconds: int | None = None
    last_seen_at: datetime | None = None
    last_sample_at: datetime | None = None  # the last observation or reaper tick that counted
    first_unreachable_at: datetime | None = None
    unreachable_seconds: float = 0.0  # continuous unreachable time accrued
    last_error_code: str | None = None


@dataclass(frozen=True, slots=True)
class TargetReap:
    """What reaping one target did: the audit row's facts and the stacks its resources were in."""

    label: str
    incarnation_id: str
    reaped_at: datetime
    unreachable_seconds: float
    resource_count: int
    stacks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReapAudit:
    """One reaped target incarnation, as the immutable audit keeps it."""

    incarnation_id: str
    label: str
    namespace: str
    reaped_at: datetime
    unreachable_seconds: float
    resource_count: int
    last_error_code: str | None


@dataclass(frozen=True, slots=True)
class TargetFilter:
    """The target list's filters (exact values, or ``*`` wildcards for label and namespace); reaped targets
    are left out unless ``reaped``."""

    label: str | None = None
    namespace: str | None = None
    discoverable: bool | None = None
    reaped: bool = False


@dataclass(frozen=True, slots=True)
class PolicyWrite:
    """A policy; ``stack_id`` set means inline in that stack, None means standalone."""

    label: str
    policy_type: str
    data: Json
    stack_id: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    id: str
    version: str
    label: str
    policy_type: str
    data: Json
    stack_id: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class CommandRecord:
    """One command. ``data`` carries the engine's target/stack/policy updates and anything else it needs."""

    id: str
    command: str
    state: str
    start_ts: datetime
    end_ts: datetime | None = None
    mode: str | None = None
    source: str = "user"
    client_id: str = ""
    agent_id: str = ""
    agent_version: str = ""
    subject: str | None = None
    subject_name: str | None = None
    description_text: str = ""
    description_confirm: bool = False
    force: bool = False
    simulate: bool = False
    data: Json = field(default_factory=dict)


@dataclass(frozen=True)
class StackPolicies:
    """The live policies a stack holds: its own (inline), and the standalone ones attached to it; each by label."""

    inline: list[PolicyRecord]
    attached: list[PolicyRecord]


@dataclass(frozen=True, slots=True)
class ResourceUpdateRecord:
    """One resource's part of a command, keyed by (command_id, ksuid, operation). ``change`` is the change as
    planned (desired and prior state, patch, dependencies…; secrets hashed) and ``desired_sealed`` its
    plain-text desired state sealed: both written once, with the command (``put_command``). ``data`` is the
    engine's progress (attempt, message…), written with each state."""

    command_id: str
    ksuid: str
    operation: str
    state: str
    resource_type: str
    resource_label: str
    stack_label: str
    start_ts: datetime | None = None
    modified_ts: datetime | None = None
    version: str | None = None
    group_id: str | None = None
    is_cascade: bool = False
    cascade_source: str | None = None
    data: Json = field(default_factory=dict)
    change: Json = field(default_factory=dict)
    desired_sealed: str | None = None


@dataclass(frozen=True, slots=True)
class CancelOutcome:
    """Result of canceling a command's resource updates, as (ksuid, operation) keys."""

    canceled_not_started: tuple[tuple[str, str], ...]
    canceled_in_progress: tuple[tuple[str, str], ...]
    skipped: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class DatastoreCounts:
    """What the agent's stats report: live records counted, commands of users (not background runs)."""

    clients: int
    commands: Mapping[str, int]  # by command (apply, destroy…)
    command_states: Mapping[str, int]  # by command state
    stacks: int
    managed_by_type: Mapping[str, int]  # live managed resources by type
    unmanaged_by_type: Mapping[str, int]  # live discovered resources by type
    targets_by_namespace: Mapping[str, int]  # live targets not reaped
    reap_pending_targets: int = 0  # unreachable targets a reap policy applies to
    reaped_targets: int = 0


@dataclass(frozen=True, slots=True)
class RunRecord:
    """Bookkeeping of a background run (discovery, synchronization…) for one scope (e.g. a target)."""

    kind: str
    scope: str
    state: str
    started_at: datetime
    finished_at: datetime | None
    last_success_at: datetime | None
    details: Json


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The leader lease as the datastore holds it (``Datastore.read_lease``)."""

    holder: str | None  # agent id of the holder; None when released
    holder_url: str  # where the holder serves its API ("" when released)
    epoch: int  # how many times the lease was taken (0 before anyone ever held it)
    remaining: float  # seconds until expiry by the database clock (<= 0: expired or released)
