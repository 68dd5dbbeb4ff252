"""The datastore: versioned resource state, stacks, targets, policies, commands, on SQLite or PostgreSQL.

The engine and the API use ``open_datastore`` and the ``Datastore`` interface; nothing outside this package
writes SQL. The records that go in and out are ``svc.model.records``.
"""

from svc.datastore.errors import (
    ConflictError,
    DatastoreConfigError,
    DatastoreError,
    DatastoreUnavailable,
    InvalidCursorError,
    LeadershipLost,
    NotFoundError,
)
from svc.datastore.factory import open_datastore, register_backend
from svc.datastore.interface import Datastore
from svc.datastore.query import COMMAND_FIELDS, DESTROY_FIELDS, RESOURCE_FIELDS, InvalidQueryError, Query, parse_query
from svc.datastore.sqlite_claim import claim_single_agent
from svc.model.records import LeaseRecord

__all__ = [
    "COMMAND_FIELDS", "DESTROY_FIELDS", "RESOURCE_FIELDS", "ConflictError", "Datastore", "DatastoreConfigError",
    "DatastoreError", "DatastoreUnavailable", "InvalidCursorError", "InvalidQueryError", "LeadershipLost",
    "LeaseRecord", "NotFoundError", "Query", "claim_single_agent", "open_datastore", "parse_query", "register_backend",
]
