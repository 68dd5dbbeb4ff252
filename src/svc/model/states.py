"""The states of a command and of each of its updates, and which of them are final (one definition for all)."""

from __future__ import annotations

from enum import StrEnum


class CommandState(StrEnum):
    NOT_STARTED = "NotStarted"
    PENDING = "Pending"
    IN_PROGRESS = "InProgress"
    CANCELING = "Canceling"
    SUCCESS = "Success"
    FAILED = "Failed"
    CANCELED = "Canceled"


class UpdateState(StrEnum):
    NOT_STARTED = "NotStarted"
    PENDING = "Pending"
    IN_PROGRESS = "InProgress"
    SUCCESS = "Success"
    FAILED = "Failed"
    CANCELED = "Canceled"
    REJECTED = "Rejected"


TERMINAL_COMMAND_STATES: frozenset[str] = frozenset({CommandState.SUCCESS, CommandState.FAILED, CommandState.CANCELED})
TERMINAL_UPDATE_STATES: frozenset[str] = frozenset(
    {UpdateState.SUCCESS, UpdateState.FAILED, UpdateState.CANCELED, UpdateState.REJECTED})
