"""Datastore fixtures: every contract test runs once per backend.

* ``sqlite`` — a database file in the test's temp dir.
* ``postgres`` — the real PostgreSQL at ``$SVC_TEST_POSTGRES_URL`` (default
  ``postgresql://postgres@127.0.0.1:5432/postgres``; ``scripts/ensure-postgres.sh`` starts a throwaway
  server where none runs). The session creates one database with a random name — with a locale (ICU en-US)
  collation when the server has ICU, so that byte-order bugs show — and drops it at the end; each test
  gets its own schema in it, which also exercises the ``schema`` setting.
* ``auroradataapi`` — the datastore's Data API backend against the rds-data stand-in
  (``tests/support/rdsdata``: the real protocol over the real PostgreSQL, with the service's 1 MiB
  request/response and 64 KB row limits). One stand-in serves the session, with dummy AWS credentials in
  the environment; each test gets a fresh database on the session's server.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from support.aws import dummy_aws_credentials
from support.rdsdata import RdsDataStandIn, temporary_database
from svc.config.model import DatastoreConfig
from svc.datastore import Datastore, open_datastore

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
BACKENDS = ("sqlite", "postgres", "auroradataapi")


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    database: str  # the session's scratch database

    def url(self, database: str | None = None) -> str:
        """A libpq URL of this server (the scratch database unless another is named)."""
        password = f":{self.password}" if self.password else ""
        return f"postgresql://{self.user}{password}@{self.host}:{self.port}/{database or self.database}"

    def connect(self, database: str | None = None, **kwargs: Any) -> psycopg.Connection[Any]:
        return psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password or None,
                               dbname=database or self.database, autocommit=True, **kwargs)


def make_datastore_config(datastore_type: str, *, sqlite_path: str = "", postgres: dict[str, Any] | None = None,
                     aurora: dict[str, Any] | None = None) -> DatastoreConfig:
    """A full ``DatastoreConfig`` as Config.pkl would render it, with the given backend's fields."""
    pg = {"host": "localhost", "port": 5432, "user": "postgres", "password": "", "database": "svc",
          "schema": "", "connectionParams": ""} | (postgres or {})
    au = {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""} | (aurora or {})
    return DatastoreConfig.model_validate({"datastoreType": datastore_type, "sqlite": {"filePath": sqlite_path},
                                           "postgres": pg, "auroraDataAPI": au})


@pytest.fixture(scope="session")
def datastore_config() -> Callable[..., DatastoreConfig]:
    """``make_datastore_config``, for tests that build their own configs."""
    return make_datastore_config


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    url = os.environ.get("SVC_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    params = conninfo_to_dict(url)
    admin = PostgresServer(host=str(params.get("host", "127.0.0.1")), port=int(params.get("port", 5432)),
                           user=str(params.get("user", "postgres")), password=str(params.get("password", "")),
                           database=str(params.get("dbname", "postgres")))
    try:
        connection = admin.connect(connect_timeout=5)
    except psycopg.OperationalError as error:
        pytest.fail(f"PostgreSQL is not reachable at {url} ({error}); run scripts/ensure-postgres.sh and export "
                    "the SVC_TEST_POSTGRES_URL it prints", pytrace=False)
    name = f"svc_test_{secrets.token_hex(4)}"
    with connection:
        has_icu = connection.execute("SELECT count(*) FROM pg_collation WHERE collprovider = 'i'").fetchone()
        if has_icu and has_icu[0]:
            connection.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 LOCALE_PROVIDER icu "
                                       "ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'").format(sql.Identifier(name)))
        else:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield PostgresServer(admin.host, admin.port, admin.user, admin.password, name)
    finally:
        with admin.connect() as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DatastoreConfig]:
    yield make_datastore_config("sqlite", sqlite_path=str(tmp_path / "data" / "svc.db"))


def _postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DatastoreConfig]:
    server: PostgresServer = request.getfixturevalue("postgres_server")
    schema = f"t_{secrets.token_hex(6)}"
    yield make_datastore_config("postgres", postgres={"host": server.host, "port": server.port, "user": server.user,
                                                 "password": server.password, "database": server.database,
                                                 "schema": schema})
    with server.connect() as connection:
        connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(scope="session")
def aws_test_credentials() -> Iterator[None]:
    """Dummy credentials for the standard chain, and no user AWS config leaking into the tests."""
    with dummy_aws_credentials():
        yield


@pytest.fixture(scope="session")
def rdsdata_standin(postgres_server: PostgresServer, aws_test_credentials: None) -> Iterator[RdsDataStandIn]:
    """The session's rds-data stand-in; its default database is the session's scratch database."""
    with RdsDataStandIn(postgres_server.url()) as standin:
        yield standin


def aurora_config(standin: RdsDataStandIn, database_name: str, **overrides: Any) -> DatastoreConfig:
    """A config for the Data API backend aimed at ``standin``; ``overrides`` replace auroraDataAPI fields."""
    return make_datastore_config("auroradataapi", aurora={
        "clusterArn": standin.resource_arn, "secretArn": standin.secret_arn, "database": database_name,
        "region": "us-east-1", "endpoint": standin.endpoint_url} | overrides)


@pytest.fixture(scope="session")
def aurora_datastore_config() -> Callable[..., DatastoreConfig]:
    """``aurora_config(standin, database, **overrides)``, for tests that build their own configs."""
    return aurora_config


def _auroradataapi(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DatastoreConfig]:
    standin: RdsDataStandIn = request.getfixturevalue("rdsdata_standin")
    server: PostgresServer = request.getfixturevalue("postgres_server")
    with temporary_database(server.url(), prefix="svc_aurora") as database:
        yield aurora_config(standin, database)
        standin.backend.close()  # the stand-in's idle sessions would keep the database from being dropped


# How each backend's config is made for one test: a generator that yields it and cleans up afterwards.
BACKEND_CONFIGS: dict[str, Callable[[pytest.FixtureRequest, Path], Iterator[DatastoreConfig]]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
    "auroradataapi": _auroradataapi,
}


@pytest.fixture(params=BACKENDS)
def datastore_config_for_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DatastoreConfig]:
    """A fresh, empty datastore's config, once per backend."""
    yield from BACKEND_CONFIGS[request.param](request, tmp_path)


def _opened(config: DatastoreConfig) -> Iterator[Datastore]:
    store = open_datastore(config)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def datastore(datastore_config_for_backend: DatastoreConfig) -> Iterator[Datastore]:
    yield from _opened(datastore_config_for_backend)


@pytest.fixture
def second(datastore_config_for_backend: DatastoreConfig) -> Iterator[Datastore]:
    """Another datastore object on the same database: another agent, with its own connections."""
    yield from _opened(datastore_config_for_backend)
