"""The datastore interface the engine and the agent program against; every backend implements it.

Methods are synchronous and thread-safe: async callers run them with ``asyncio.to_thread`` (SQL runs on a
pool, never on the event loop). Every list returns a ``Page`` and takes the previous page's ``next_cursor``.
Failures raise ``DatastoreError`` subclasses; ``DatastoreUnavailable`` means "try again later" (HTTP 503).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar, runtime_checkable

from svc.datastore.query import Query
from svc.datastore.update_writes import ChangeBatch, ChangeBatchOutcome, UpdateStateWrite
from svc.model.records import (
    CancelOutcome,
    CommandRecord,
    DatastoreCounts,
    LeaseRecord,
    Page,
    PolicyRecord,
    PolicyWrite,
    ReapAudit,
    ResourceScope,
    ResourceSummary,
    ResourceUpdateRecord,
    ResourceVersion,
    ResourceWrite,
    RunRecord,
    StackPolicies,
    StackRecord,
    StoreOutcome,
    TargetFilter,
    TargetReap,
    TargetRecord,
    TargetWrite,
)

Json = dict[str, Any]
T = TypeVar("T")


class DocumentRewrite(Protocol):
    """What a type's stored documents become (``Datastore.rewrite_stored_documents``); each is returned whole,
    equal to the one given when nothing changes."""

    def properties(self, properties: Json) -> Json:
        """A resource version's properties or read-only properties."""

    def change(self, change: Json) -> Json:
        """A resource update's change as planned (desired and prior state, patches…)."""

    def update_data(self, data: Json) -> Json:
        """A resource update's progress (what the plugin answered so far)."""


@runtime_checkable
class Datastore(Protocol):
    backend: str
    """``sqlite``, ``postgres`` or ``auroradataapi``."""

    def ping(self) -> None:
        """Raises ``DatastoreUnavailable`` unless the database answers now (cheap: one trivial query)."""

    def close(self) -> None: ...

    # several operations as one transaction
    def snapshot(self) -> AbstractContextManager[None]:
        """``with store.snapshot():`` every read this thread makes in the block shares one read transaction: one
        consistent view, one BEGIN and COMMIT. No write may be made on this thread within it."""

    def atomically(self, work: Callable[[], T]) -> T:
        """Runs ``work`` with every read and write this thread makes in it inside one write transaction (all or
        nothing), the whole of it run again when a compare-and-swap in it loses to a concurrent writer."""

    # resources
    def store_resource(self, write: ResourceWrite, *, command_id: str | None = None) -> StoreOutcome: ...
    def store_resources(self, writes: Sequence[ResourceWrite], *,
                        command_id: str | None = None) -> list[StoreOutcome]: ...
    def delete_resource(self, ksuid: str, *, command_id: str | None = None,
                        if_version: str | None = None) -> StoreOutcome: ...
    def get_resource(self, ksuid: str) -> ResourceVersion | None: ...
    def get_resource_by_native_id(self, target: str, type_: str, native_id: str) -> ResourceVersion | None: ...
    def get_resource_by_label(self, stack: str, type_: str, label: str) -> ResourceVersion | None: ...
    def list_resources(self, query: Query | None = None, *, cursor: str | None = None,
                       limit: int = ...) -> Page[ResourceVersion]: ...
    def list_resource_summaries(self, query: Query | None = None, *, cursor: str | None = None,
                                limit: int = ...) -> Page[ResourceSummary]: ...
    def live_resources_in(self, scope: ResourceScope) -> list[ResourceVersion]: ...
    def resource_history(self, ksuid: str, *, cursor: str | None = None,
                         limit: int = ...) -> Page[ResourceVersion]: ...
    def list_resource_versions(self, *, cursor: str | None = None, limit: int = ...) -> Page[ResourceVersion]: ...
    def count_resources(self, *, stack: str | None = None, target: str | None = None,
                        managed: bool | None = None, up_to: int | None = None) -> int: ...
    def list_resource_changes(self, stack: str, since: datetime, *,
                              exclude_command: str | None = None) -> list[ResourceVersion]: ...

    # stacks
    def create_stack(self, label: str, description: str = "", *, command_id: str | None = None) -> StackRecord: ...
    def update_stack(self, label: str, description: str, *, command_id: str | None = None) -> StackRecord: ...
    def delete_stack(self, label: str, *, command_id: str | None = None) -> bool: ...
    def get_stack(self, label: str) -> StackRecord | None: ...
    def list_stacks(self, *, cursor: str | None = None, limit: int = ...) -> Page[StackRecord]: ...
    def stacks_named(self, labels: Iterable[str]) -> list[StackRecord]: ...
    def stacks_with_ids(self, stack_ids: Iterable[str]) -> list[StackRecord]: ...

    # targets
    def put_target(self, write: TargetWrite) -> TargetRecord: ...
    def delete_target(self, label: str) -> bool: ...
    def get_target(self, label: str) -> TargetRecord | None: ...
    def targets_named(self, labels: Iterable[str]) -> list[TargetRecord]: ...
    def list_targets(self, where: TargetFilter | None = None, *, cursor: str | None = None,
                     limit: int = ...) -> Page[TargetRecord]: ...
    # target health and reaping (``sql_reaping``)
    def observe_target(self, label: str, *, reachable: bool, at: datetime, max_gap: float,
                       error_code: str | None = None) -> bool: ...
    def advance_target_accrual(self, label: str, incarnation_id: str, at: datetime, max_gap: float) -> bool: ...
    def reap_target(self, label: str, incarnation_id: str, *, threshold: float,
                    at: datetime) -> TargetReap | None: ...
    def reaped_targets(self, labels: Iterable[str]) -> set[str]: ...
    def list_reaped_resources(self, target: str) -> list[ResourceVersion]: ...
    def reap_audit(self, label: str | None = None) -> list[ReapAudit]: ...

    # policies
    def put_policy(self, write: PolicyWrite, *, command_id: str | None = None) -> PolicyRecord: ...
    def delete_policy(self, policy_id: str, *, command_id: str | None = None) -> bool: ...
    def get_policy(self, label: str, stack_id: str | None = None) -> PolicyRecord | None: ...
    def list_policies(self, *, stack_id: str | None = None, cursor: str | None = None,
                      limit: int = ...) -> Page[PolicyRecord]: ...
    def attach_policy(self, stack_id: str, policy_id: str) -> bool: ...
    def detach_policy(self, stack_id: str, policy_id: str) -> bool: ...
    def list_attached_policies(self, stack_id: str, *, cursor: str | None = None,
                               limit: int = ...) -> Page[PolicyRecord]: ...
    def policies_of_stacks(self, stack_ids: Iterable[str]) -> dict[str, StackPolicies]:
        """The live policies each of ``stack_ids`` holds (every id asked has an entry), in two queries."""

    def policy_attachments(self) -> list[tuple[str, str]]:
        """(policy label, stack label) of every live standalone policy attached to a live stack, in one query."""

    def has_live_policies(self) -> bool:
        """Whether any policy lives, inline or standalone: one query, where a plan would ask four to learn that the
        stacks it touches have none (most agents hold no policy)."""

    def policies_in_force(self, policy_type: str) -> list[tuple[str, PolicyRecord]]:
        """(stack id, policy) for every live policy of ``policy_type`` a stack holds, by stack: its inline ones
        first, then the standalone ones attached to it, each by label (so a stack's first pair is its effective
        policy of that type). One query, where asking stack by stack takes two per stack."""

    # commands and resource updates
    def put_command(self, command: CommandRecord, updates: Sequence[ResourceUpdateRecord] = (), *,
                    stacks: Sequence[str] = ()) -> bool: ...
    def set_command_state(self, command_id: str, state: str, *, end_ts: datetime | None = None,
                          data: dict[str, Any] | None = None) -> bool: ...
    def end_command(self, command_id: str, state: str | None, *, end_ts: datetime,
                    emptied_targets: Sequence[str] = (), emptied_stacks: Sequence[str] = ()) -> bool:
        """Deletes those of the targets, then the stacks, that hold no resource now, and moves the command to
        ``state`` unless it is terminal (None: not at all), in one transaction; whether the state moved."""
    def get_command(self, command_id: str) -> CommandRecord | None: ...
    def stacks_changing(self, command_id: str, stacks: Iterable[str]) -> set[str]: ...
    def stacks_updated(self, command_id: str) -> set[str]: ...
    def stacks_covered(self, command_id: str) -> list[str]: ...
    def last_reconcile(self, stack: str) -> CommandRecord | None:
        """The newest reconcile apply that changed something in ``stack`` or whose forma named it, without its data
        document (``data`` empty)."""
    def delete_command(self, command_id: str) -> bool: ...
    def list_commands(self, query: Query | None = None, *, client_id: str | None = None,
                      sources: Sequence[str] | None = ..., cursor: str | None = None,
                      limit: int = ...) -> Page[CommandRecord]: ...
    def list_incomplete_commands(self, *, cursor: str | None = None, limit: int = ...) -> Page[CommandRecord]: ...
    def get_resource_updates(self, command_id: str, *, cursor: str | None = None,
                             limit: int = ...) -> Page[ResourceUpdateRecord]: ...
    def get_resource_update_summaries(self, command_id: str, *, modified_since: datetime | None = None,
                                      with_progress: bool = False,
                                      cursor: str | None = None, limit: int = ...) -> Page[ResourceUpdateRecord]: ...
    def count_resource_update_states(self, command_id: str) -> dict[str, int]:
        """How many of the command's resource updates are in each state (the states none is in left out)."""
    def set_resource_update_state(self, command_id: str, ksuid: str, operation: str, state: str, *,
                                  version: str | None = None, data: dict[str, Any] | None = None,
                                  start_ts: datetime | None = None) -> bool: ...
    def cancel_resource_updates(self, command_id: str, *, force: bool = False) -> CancelOutcome: ...
    def set_resource_update_states(self, writes: Sequence[UpdateStateWrite]) -> list[bool]: ...
    def commit_changes(self, batch: ChangeBatch) -> ChangeBatchOutcome:
        """Resource versions, tombstones, then update states, in one transaction (the engine's group commit)."""

    # background-run bookkeeping (discovery, synchronization)
    def begin_run(self, kind: str, scope: str, *, stale_after: timedelta) -> str | None: ...
    def finish_run(self, kind: str, scope: str, run_id: str, *, succeeded: bool,
                   details: dict[str, Any] | None = None) -> bool: ...
    def get_run(self, kind: str, scope: str) -> RunRecord | None: ...

    # stored documents rewritten in place (``sql_stored_documents``: secrets an earlier version stored in clear)
    def stored_types(self) -> set[str]:
        """Every resource type with a stored version or resource update, current or past."""

    def rewrite_stored_documents(self, type_: str, rewrite: DocumentRewrite) -> int:
        """Writes back, page by page, every stored document of ``type_`` that ``rewrite`` changes (resource
        versions, planned changes, update progress; never a key, version or state); the number of rows written."""

    def erase_replaced_rows(self) -> bool:
        """Rebuilds what ``rewrite_stored_documents`` writes so that the rows it replaced leave no bytes in the
        database's files; False where the backend leaves that to the database itself."""

    # stats
    def counts(self) -> DatastoreCounts:
        """Aggregates for the agent's stats (GROUP BY queries, not a walk over the rows)."""

    # the leader lease and write fencing (``sql_lease``, ``write_fence``); times are the database's clock
    def read_lease(self, name: str = "agent") -> LeaseRecord | None:
        """The lease as stored (None: nobody ever took it); ``remaining`` <= 0 when expired or released."""

    def acquire_lease(self, holder: str, holder_url: str, duration: float, name: str = "agent") -> int | None:
        """Takes the lease if it is released, expired or was never taken; the new epoch, else None (held by
        another, or its row stayed locked about a second). Two agents racing never both win."""

    def renew_lease(self, holder: str, epoch: int, duration: float, name: str = "agent") -> bool:
        """Extends the lease to ``duration`` seconds from now if ``holder`` holds it at ``epoch`` (even expired:
        the unchanged epoch proves nobody took over); False once another epoch holds it."""

    def release_lease(self, holder: str, epoch: int, name: str = "agent") -> bool:
        """Hands the lease over at once (no holder, expired, epoch kept) if ``holder`` holds it at ``epoch``."""

    def fence_writes(self, epoch: int | None, on_lost: Callable[[int | None], None] | None = None) -> None:
        """Every later write transaction first checks, in the transaction, that the ``agent`` lease is held at
        ``epoch``, and raises ``LeadershipLost`` otherwise (calling ``on_lost(found epoch)`` the first time);
        ``None``: every write raises ``LeadershipLost`` at once. Never called: writes are not fenced."""
