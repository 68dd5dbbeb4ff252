"""A local stand-in for the AWS RDS Data API (``rds-data``) over a real PostgreSQL, for tests.

Import it as ``from support.rdsdata import RdsDataStandIn`` (``tests/`` is on ``sys.path`` through
the root ``tests/conftest.py``)::

    standin = RdsDataStandIn("postgresql://postgres@127.0.0.1:5432/postgres")
    endpoint = standin.start()
    client = boto3.client("rds-data", **standin.client_kwargs())
    ...
    standin.stop()
"""

from .database import temporary_database
from .errors import DataApiError, ErrorStyle, NotReadyKind
from .server import DEFAULT_RESOURCE_ARN, DEFAULT_SECRET_ARN, MIB, CallRecord, RdsDataStandIn, Stats

__all__ = [
    "DEFAULT_RESOURCE_ARN", "DEFAULT_SECRET_ARN", "MIB", "CallRecord", "DataApiError", "ErrorStyle",
    "NotReadyKind", "RdsDataStandIn", "Stats", "temporary_database",
]
