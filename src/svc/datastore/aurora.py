"""The ``auroradataapi`` backend: Aurora PostgreSQL through the RDS Data API, as a SQLAlchemy engine.

The engine speaks PostgreSQL's dialect over our Data API driver, so the datastore runs the same SQL and the
same migrations as on ``postgres``. Credentials come from the standard AWS chain (the task role);
``endpoint`` overrides the service URL (tests use a local stand-in).

Settings are checked at start with one statement: a malformed ARN, an unknown secret, a missing database
or a cluster without the Data API each give one line naming the setting; a database that is not ready
(auto-paused, writer unavailable) is waited for, then reported as unavailable, naming the cluster.
"""

from __future__ import annotations

import re
from typing import Any

import boto3
import botocore.config
import sqlalchemy as sa

from svc.config.model import AuroraDataApiConfig
from svc.datastore import dataapi_dbapi
from svc.datastore.dataapi_dialect import DataApiDialect  # noqa: F401 (registers postgresql+dataapi)
from svc.datastore.dataapi_errors import AccessError, Error, NotReadyError, OperationalError
from svc.datastore.dataapi_fetch import BudgetedReader
from svc.datastore.dataapi_transport import CANNOT_CONNECT, Limits, RetryPolicy, Transport
from svc.datastore.errors import DatastoreConfigError, DatastoreError, DatastoreUnavailable
from svc.datastore.sql_base import WRITE_OPTION

PREFIX = "agent.datastore.auroraDataAPI"
# Changed by tests only, to see the "not ready" path end within seconds.
NOT_READY_RETRY = RetryPolicy()
LIMITS = Limits()

_CLUSTER_ARN = re.compile(r"^arn:aws[a-z-]*:rds:(?P<region>[a-z0-9-]+):\d{12}:cluster:[A-Za-z][A-Za-z0-9-]{0,62}$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:(?P<region>[a-z0-9-]+):\d{12}:secret:[\w/+=.@-]+$")


def _bad(setting: str, message: str) -> DatastoreConfigError:
    return DatastoreConfigError(f"{message}; check {PREFIX}.{setting}", f"{PREFIX}.{setting}")


def describe(config: AuroraDataApiConfig) -> str:
    return f"auroradataapi {config.cluster_arn}/{config.database}"


def region_of(config: AuroraDataApiConfig) -> str:
    """The configured region, checked against the cluster's (the Data API endpoint is regional)."""
    match = _CLUSTER_ARN.match(config.cluster_arn)
    if not config.cluster_arn:
        raise _bad("clusterArn", "the Aurora cluster ARN is empty")
    if match is None:
        raise _bad("clusterArn", f"{config.cluster_arn!r} is not an Aurora cluster ARN "
                                 "(arn:aws:rds:<region>:<account>:cluster:<name>)")
    if not config.secret_arn:
        raise _bad("secretArn", "the ARN of the database credentials secret is empty")
    if _SECRET_ARN.match(config.secret_arn) is None:
        # The value is an identifier, not the secret itself, so it can be shown.
        raise _bad("secretArn", f"{config.secret_arn!r} is not a Secrets Manager secret ARN "
                                "(arn:aws:secretsmanager:<region>:<account>:secret:<name>)")
    if not config.database:
        raise _bad("database", "no database named (it must exist before the agent starts)")
    region = config.region or match.group("region")
    if region != match.group("region"):
        raise _bad("region", f"region {region!r} differs from the cluster's region {match.group('region')!r}")
    return region


def make_transport(config: AuroraDataApiConfig, *, retry: RetryPolicy | None = None,
                   limits: Limits | None = None) -> Transport:
    region = region_of(config)
    client = boto3.session.Session().client(
        "rds-data", region_name=region, endpoint_url=config.endpoint or None,
        # Our transport retries what is safe to retry; botocore's own retries would repeat writes.
        config=botocore.config.Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=75,
                                      max_pool_connections=32))
    return Transport(client, resource_arn=config.cluster_arn, secret_arn=config.secret_arn, database=config.database,
                     retry=retry or NOT_READY_RETRY, limits=limits or LIMITS)


def explain(error: Error, config: AuroraDataApiConfig) -> DatastoreError:
    """One line for an error raised by the driver while checking the settings."""
    where = f"cluster {config.cluster_arn}"
    if isinstance(error, AccessError):
        if error.setting is None:
            return DatastoreConfigError(f"{error}; give the agent an AWS identity (role, profile or environment)",
                                        f"{PREFIX}.clusterArn")
        return _bad(error.setting, f"{where}, database {config.database!r}: {error}")
    if isinstance(error, NotReadyError) and error.code == CANNOT_CONNECT:
        setting = "endpoint" if config.endpoint else "region"
        url = config.endpoint or f"the rds-data endpoint of {config.region or 'the cluster region'}"
        return DatastoreUnavailable(f"cannot reach {url} for {where}: {error}; check {PREFIX}.{setting} and the "
                                    "network", f"{PREFIX}.{setting}")
    if isinstance(error, NotReadyError):
        return DatastoreUnavailable(f"the Aurora database of {where} is not ready: {error}; it may be paused or "
                                    f"starting, try again shortly (check {PREFIX}.clusterArn)", f"{PREFIX}.clusterArn")
    if isinstance(error, OperationalError):
        return DatastoreUnavailable(f"cannot use the Data API of {where}: {error}", f"{PREFIX}.clusterArn")
    return DatastoreError(f"the Data API of {where} failed: {error}")


def check_connection(transport: Transport, config: AuroraDataApiConfig) -> None:
    """One statement, so that bad settings fail at start with one clear line."""
    try:
        transport.call("execute_statement", sql="SELECT 1")
    except Error as error:
        raise explain(error, config) from None


def _on_begin(conn: sa.Connection) -> None:
    # Read transactions run their reads without a Data API transaction (two round trips fewer per read);
    # the driver begins one as soon as such a transaction writes.
    dbapi_connection = conn.connection.dbapi_connection
    if dbapi_connection is not None:
        dbapi_connection.read_only = not conn.get_execution_options().get(WRITE_OPTION)


def aurora_engine(config: AuroraDataApiConfig, *, transport: Transport | None = None) -> tuple[sa.Engine, str]:
    transport = transport or make_transport(config)
    check_connection(transport, config)
    reader = BudgetedReader(transport.limits)  # shared: its column cache serves every connection

    def connect() -> Any:
        return dataapi_dbapi.connect(transport, reader)

    engine = sa.create_engine("postgresql+dataapi://", creator=connect, pool_size=10, max_overflow=10,
                              pool_timeout=30)
    sa.event.listen(engine, "begin", _on_begin)
    return engine, describe(config)
