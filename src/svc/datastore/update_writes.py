"""The record of a batched resource-update state change (``Datastore.set_resource_update_states``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


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
