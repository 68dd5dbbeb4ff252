"""The records of the engine's batched writes: resource-update state changes
(``Datastore.set_resource_update_states``) and whole group commits (``Datastore.commit_changes``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from svc.model.records import ResourceWrite, StoreOutcome


@dataclass(frozen=True, slots=True)
class UpdateStateWrite:
    """One ``set_resource_update_state`` call, as data."""

    command_id: str
    ksuid: str
    operation: str
    state: str
    version: str | None = None
    data: dict[str, Any] | None = None
    start_ts: datetime | None = None


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """What the engine's writer commits at once, in this order: resource versions (each with the id of the
    command that wrote it), tombstones, then update states. Storing the states last means an update never
    reports a result whose resource state is not stored."""

    resources: Sequence[tuple[str | None, ResourceWrite]] = ()  # (command id, write)
    deletes: Sequence[tuple[str | None, str]] = ()  # (command id, ksuid)
    states: Sequence[UpdateStateWrite] = ()


@dataclass(frozen=True, slots=True)
class ChangeBatchOutcome:
    """Per entry of the batch: what ``store_resource``, ``delete_resource`` and ``set_resource_update_states``
    would have answered."""

    stored: list[StoreOutcome] = field(default_factory=list)
    deleted: list[StoreOutcome] = field(default_factory=list)
    moved: list[bool] = field(default_factory=list)
