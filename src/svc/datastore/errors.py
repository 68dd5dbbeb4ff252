"""The datastore's typed errors; callers map them to exit codes and HTTP statuses without parsing text."""

from __future__ import annotations


class DatastoreError(Exception):
    """Any datastore failure. The message is one line, safe to show to a user (no secrets); ``setting``
    names the config field to look at when one is to blame."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class DatastoreUnavailable(DatastoreError):
    """The database cannot be reached right now (connection lost, server down, lock wait exhausted).

    Transient by nature: the API answers 503 and the pool reconnects by itself once the database is back.
    """


class LeadershipLost(DatastoreUnavailable):
    """A fenced write was refused: this process no longer holds (or never held) the leader lease.

    A ``DatastoreUnavailable`` so that every "wait and retry" path and the API's 503 treat it as "try later"
    (another agent leads now); the agent itself exits once it learns it lost the lease. ``epoch`` is the epoch
    found in the datastore (None when this process does not lead at all, or no lease row exists)."""

    def __init__(self, message: str, epoch: int | None = None) -> None:
        super().__init__(message)
        self.epoch = epoch


class DatastoreConfigError(DatastoreError):
    """The datastore settings are wrong; ``setting`` names the config field to fix."""

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message, setting)


class ConflictError(DatastoreError):
    """The write contradicts what is stored (e.g. a live stack with that label already exists)."""


class NotFoundError(DatastoreError):
    """The write needs a record that does not exist."""


class InvalidCursorError(DatastoreError):
    """A pagination cursor that this datastore did not issue (or issued for another list)."""
