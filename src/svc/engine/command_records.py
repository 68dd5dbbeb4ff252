"""How commands and resource changes are stored: records in, records out, secrets never in plain text.

A resource update's ``data`` holds its change (desired state with secrets hashed; the plain-text
desired state sealed when it holds secrets), the attempt in flight (token, request id) and the last
progress, so that a restarted agent knows exactly where each change stands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from svc.engine.planner.changeset import Changeset, ResourceChange
from svc.engine.sealing import Sealer
from svc.model import values
from svc.model.records import CommandRecord, ResourceUpdateRecord
from svc.model.schema_cache import opaque_fields_of
from svc.model.states import CommandState, UpdateState

Json = dict[str, Any]


def utcnow() -> datetime:
    return datetime.now(UTC)


def _secret_free(change: ResourceChange) -> tuple[Json, str | None]:
    """The change as stored, and the sealed plain-text desired state when hashing changed it."""
    document = change.to_json()
    sealed = None
    if change.desired is not None:
        hashed = values.hash_secrets(change.desired, opaque_fields_of(change.schema))
        document["desired"] = hashed
        if hashed != change.desired:
            sealed = "pending"
    return document, sealed


@dataclass
class UpdateData:
    """The mutable part of one resource update, written whole on each transition."""

    change: Json
    desired_sealed: str | None = None
    attempt: Json | None = None
    progress: Json | None = None
    message: str = ""
    current_attempt: int | None = None
    max_attempts: int | None = None
    finished_at: str | None = None
    extra: Json = field(default_factory=dict)

    def to_json(self) -> Json:
        document: Json = {"change": self.change}
        for name in ("desired_sealed", "attempt", "progress", "current_attempt", "max_attempts", "finished_at"):
            if getattr(self, name) is not None:
                document[name] = getattr(self, name)
        if self.message:
            document["message"] = self.message
        document.update(self.extra)
        return document

    @classmethod
    def from_json(cls, document: Json) -> UpdateData:
        known = {"change", "desired_sealed", "attempt", "progress", "message", "current_attempt", "max_attempts",
                 "finished_at"}
        return cls(change=document["change"], desired_sealed=document.get("desired_sealed"),
                   attempt=document.get("attempt"), progress=document.get("progress"),
                   message=document.get("message", ""), current_attempt=document.get("current_attempt"),
                   max_attempts=document.get("max_attempts"), finished_at=document.get("finished_at"),
                   extra={k: v for k, v in document.items() if k not in known})


def update_data(change: ResourceChange, sealer: Sealer) -> UpdateData:
    """A new update's data: its change with secrets hashed, the plain-text desired state sealed."""
    stored, sealed = _secret_free(change)
    return UpdateData(change=stored, desired_sealed=sealer.seal(change.desired) if sealed else None)


def update_record(command_id: str, change: ResourceChange, data: UpdateData) -> ResourceUpdateRecord:
    return ResourceUpdateRecord(
        command_id=command_id, ksuid=change.ksuid, operation=change.operation, state=UpdateState.NOT_STARTED,
        resource_type=change.type, resource_label=change.label, stack_label=change.stack,
        group_id=change.group_id, is_cascade=change.is_cascade, cascade_source=change.cascade_source,
        data=data.to_json())


def change_of(record: ResourceUpdateRecord, sealer: Sealer) -> ResourceChange:
    """The change to execute, with its plain-text desired state unsealed."""
    data = UpdateData.from_json(dict(record.data))
    change = ResourceChange.from_json(dict(data.change))
    if data.desired_sealed:
        change.desired = sealer.open(data.desired_sealed)
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
