"""How commands and resource changes are stored: records in, records out, secrets never in plain text.

A resource update's change (desired state with secrets hashed; the plain-text desired state sealed when it
holds secrets) is stored once, with its command; its ``data`` holds what changes as it runs: the attempt in
flight (token, request id), the last progress and message, so that a restarted agent knows exactly where
each change stands. A state transition writes only ``data``, never the change again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, overload

from svc.engine.planner.changeset import Changeset, ResourceChange
from svc.engine.sealing import Sealer
from svc.model import values
from svc.model.records import CommandRecord, ResourceUpdateRecord
from svc.model.schema_cache import opaque_fields_of
from svc.model.states import CommandState, UpdateState

Json = dict[str, Any]


def utcnow() -> datetime:
    return datetime.now(UTC)


def shown_change(change: ResourceChange) -> ResourceChange:
    """The change as it may be shown and stored: its desired state with secrets hashed (``change`` itself when
    it holds none). Made once per change, when its command is planned: the plan's view and the stored change
    are both this, and what is read back from the datastore is hashed already."""
    if change.desired is None:
        return change
    hashed = values.hash_secrets(change.desired, opaque_fields_of(change.schema))
    return change if hashed == change.desired else replace(change, desired=hashed)


@dataclass
class UpdateData:
    """The mutable part of one resource update (its progress), written whole on each transition."""

    attempt: Json | None = None
    progress: Json | None = None
    message: str = ""
    current_attempt: int | None = None
    max_attempts: int | None = None
    finished_at: str | None = None
    extra: Json = field(default_factory=dict)

    def to_json(self) -> Json:
        document: Json = {}
        for name in ("attempt", "progress", "current_attempt", "max_attempts", "finished_at"):
            if getattr(self, name) is not None:
                document[name] = getattr(self, name)
        if self.message:
            document["message"] = self.message
        document.update(self.extra)
        return document

    @classmethod
    def from_json(cls, document: Json) -> UpdateData:
        known = {"attempt", "progress", "message", "current_attempt", "max_attempts", "finished_at"}
        return cls(attempt=document.get("attempt"), progress=document.get("progress"),
                   message=document.get("message", ""), current_attempt=document.get("current_attempt"),
                   max_attempts=document.get("max_attempts"), finished_at=document.get("finished_at"),
                   extra={k: v for k, v in document.items() if k not in known})


def update_record(command_id: str, change: ResourceChange, shown: ResourceChange,
                  sealer: Sealer) -> ResourceUpdateRecord:
    """A new update: its change as ``shown`` (``shown_change``: secrets hashed), the plain-text desired state
    sealed when it holds secrets, no progress yet."""
    return ResourceUpdateRecord(
        command_id=command_id, ksuid=change.ksuid, operation=change.operation, state=UpdateState.NOT_STARTED,
        resource_type=change.type, resource_label=change.label, stack_label=change.stack,
        group_id=change.group_id, is_cascade=change.is_cascade, cascade_source=change.cascade_source,
        data=UpdateData().to_json(), change=shown.to_json(),
        desired_sealed=sealer.seal(change.desired) if shown is not change else None)


class UpdateRecords(Sequence[ResourceUpdateRecord]):
    """A new command's update records (``update_record`` of each change as ``shown``), each made when it is asked
    for: ``Datastore.put_command`` stores a slice at a time, so storing a 100,000-resource command never holds
    them all (they were a tenth of the agent's peak memory).

    They come in the order of their keys (ksuid, operation), the order of the tables' primary keys and indexes:
    a B-tree takes rows in its own order as appends, and rows in the plan's order (its ksuids random) as inserts
    all over the index, each page read back from the file once the page cache is full (storing 100,000 updates
    on SQLite took a sixth less CPU so)."""

    def __init__(self, command_id: str, changes: Sequence[ResourceChange], shown: Sequence[ResourceChange],
                 sealer: Sealer) -> None:
        if len(changes) != len(shown):
            raise ValueError("a shown change per change")
        order = sorted(range(len(changes)), key=lambda index: (changes[index].ksuid, changes[index].operation))
        self.changes = [changes[index] for index in order]
        self.shown = [shown[index] for index in order]
        self.command_id, self.sealer = command_id, sealer

    def __len__(self) -> int:
        return len(self.changes)

    @overload
    def __getitem__(self, index: int) -> ResourceUpdateRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[ResourceUpdateRecord]: ...

    def __getitem__(self, index: int | slice) -> ResourceUpdateRecord | list[ResourceUpdateRecord]:
        if isinstance(index, slice):
            return [update_record(self.command_id, change, shown, self.sealer)
                    for change, shown in zip(self.changes[index], self.shown[index], strict=True)]
        return update_record(self.command_id, self.changes[index], self.shown[index], self.sealer)


def stored_change(record: ResourceUpdateRecord) -> ResourceChange:
    """The change as stored: its desired state with secrets hashed (what may be shown)."""
    return ResourceChange.from_json(dict(record.change))


def change_of(record: ResourceUpdateRecord, sealer: Sealer) -> ResourceChange:
    """The change to execute, with its plain-text desired state unsealed."""
    change = stored_change(record)
    if record.desired_sealed:
        change.desired = sealer.open(record.desired_sealed)
    return change


def command_record(command_id: str, changeset: Changeset, *, client_id: str, subject: str | None, force: bool,
                   description: tuple[str, bool], agent_id: str, agent_version: str, source: str = "user",
                   state: str = CommandState.NOT_STARTED) -> CommandRecord:
    return CommandRecord(
        id=command_id, command=changeset.command, state=state, start_ts=utcnow(),
        mode=changeset.mode, source=source, client_id=client_id, agent_id=agent_id, agent_version=agent_version,
        subject=subject, subject_name=subject, description_text=description[0], description_confirm=description[1],
        force=force, data={"targets": [t.to_json() for t in changeset.targets],
                           "stacks": [s.to_json() for s in changeset.stacks],
                           "policies": [p.to_json() for p in changeset.policies], "warnings": changeset.warnings})


def overall_state(states: list[str]) -> str:
    """A command's state from its updates' (engine.md §1.7)."""
    terminal = {UpdateState.SUCCESS, UpdateState.FAILED, UpdateState.REJECTED, UpdateState.CANCELED}
    if any(state not in terminal for state in states):
        return CommandState.IN_PROGRESS
    if any(state == UpdateState.CANCELED for state in states):
        return CommandState.CANCELED
    if any(state in (UpdateState.FAILED, UpdateState.REJECTED) for state in states):
        return CommandState.FAILED
    return CommandState.SUCCESS
