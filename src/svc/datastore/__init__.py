"""The datastore: versioned resource state, stacks, targets, policies, commands, on SQLite or PostgreSQL.

The engine and the API use ``open_datastore`` and the ``Datastore`` interface; nothing outside this package
writes SQL.
"""

from svc.datastore.errors import (
    ConflictError,
    DatastoreConfigError,
    DatastoreError,
    DatastoreUnavailable,
    InvalidCursorError,
    NotFoundError,
)
from svc.datastore.factory import open_datastore, register_backend
from svc.datastore.interface import Datastore
from svc.datastore.query import COMMAND_FIELDS, DESTROY_FIELDS, RESOURCE_FIELDS, InvalidQueryError, Query, parse_query
from svc.datastore.records import (
    TERMINAL_COMMAND_STATES,
    TERMINAL_UPDATE_STATES,
    CancelOutcome,
    CommandRecord,
    CommandState,
    DatastoreCounts,
    Page,
    PolicyRecord,
    PolicyWrite,
    ResourceSummary,
    ResourceUpdateRecord,
    ResourceVersion,
    ResourceWrite,
    RunRecord,
    StackRecord,
    StoreOutcome,
    TargetFilter,
    TargetRecord,
    TargetWrite,
    UpdateState,
)

__all__ = [
    "COMMAND_FIELDS", "DESTROY_FIELDS", "RESOURCE_FIELDS", "TERMINAL_COMMAND_STATES", "TERMINAL_UPDATE_STATES",
    "CancelOutcome", "CommandRecord", "CommandState", "ConflictError", "Datastore", "DatastoreConfigError",
    "DatastoreCounts", "DatastoreError", "DatastoreUnavailable", "InvalidCursorError", "InvalidQueryError",
    "NotFoundError", "Page",
    "PolicyRecord", "PolicyWrite", "Query", "ResourceSummary", "ResourceUpdateRecord", "ResourceVersion",
    "ResourceWrite", "RunRecord", "StackRecord", "StoreOutcome", "TargetFilter", "TargetRecord", "TargetWrite",
    "UpdateState", "open_datastore", "parse_query", "register_backend",
]
