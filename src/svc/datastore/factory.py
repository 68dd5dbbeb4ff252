"""``open_datastore``: picks the backend named by ``datastoreType``, connects, and migrates."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from svc.config.model import DatastoreConfig
from svc.datastore.errors import DatastoreConfigError
from svc.datastore.interface import Datastore
from svc.datastore.migrate import migrate as run_migrations
from svc.datastore.sql_base import SqlBase
from svc.datastore.sql_store import SqlDatastore
from svc.datastore.sqlite import sqlite_engine

# A backend returns a SQLAlchemy engine and a short description (no secrets) for messages.
EngineFactory = Callable[[DatastoreConfig], tuple[sa.Engine, str]]

_BACKENDS: dict[str, EngineFactory] = {
    "sqlite": lambda config: sqlite_engine(config.sqlite),
    "postgres": lambda config: _postgres_engine(config),
    "auroradataapi": lambda config: _aurora_engine(config),
}


def _postgres_engine(config: DatastoreConfig, application_name: str | None = None) -> tuple[sa.Engine, str]:
    # Imported on use: psycopg takes a while to import and an agent on SQLite never needs it.
    from svc.datastore.postgres import postgres_engine

    return postgres_engine(config.postgres, application_name)


def _aurora_engine(config: DatastoreConfig) -> tuple[sa.Engine, str]:
    # Imported on use: boto3 takes a while to import and only this backend needs it.
    from svc.datastore.aurora import aurora_engine

    return aurora_engine(config.aurora_data_api)


# Backends whose sessions can carry the application's name (the Data API's cannot: the service opens them).
_NAMED_BACKENDS: dict[str, Callable[[DatastoreConfig, str | None], tuple[sa.Engine, str]]] = {
    "postgres": _postgres_engine,
}


def register_backend(name: str, factory: EngineFactory) -> None:
    """Adds a backend (e.g. the Data API, as a PostgreSQL-dialect engine) under its ``datastoreType``."""
    _BACKENDS[name] = factory
    _NAMED_BACKENDS.pop(name, None)  # the registered factory replaces the built-in one, named or not


def _schema(config: DatastoreConfig) -> str | None:
    return config.postgres.schema_ or None if config.datastore_type == "postgres" else None


def open_datastore(config: DatastoreConfig, *, migrate: bool = True, application_name: str | None = None) -> Datastore:
    """Connects to the configured datastore and brings its schema up to date.

    ``application_name`` names this process's sessions where the backend can (PostgreSQL's ``application_name``,
    e.g. ``svc-agent-<agent id>``, so that the server can tell which agent wrote what); default ``svc-agent``.
    Raises ``DatastoreConfigError`` (naming the setting) for bad settings, ``DatastoreUnavailable`` when
    the database cannot be reached; both carry a one-line message.
    """
    factory = _BACKENDS.get(config.datastore_type)
    if factory is None:
        raise DatastoreConfigError(
            f"the {config.datastore_type!r} datastore is not available in this build; use one of "
            f"{', '.join(sorted(_BACKENDS))}", "agent.datastore.datastoreType")
    named = _NAMED_BACKENDS.get(config.datastore_type)
    engine, describe = named(config, application_name) if named is not None else factory(config)
    store = SqlDatastore(engine, config.datastore_type, describe)
    if migrate:
        migrate_store(store, schema=_schema(config))
    return store


def migrate_store(store: SqlBase, *, schema: str | None = None) -> None:
    """Runs the migrations on ``store``'s engine, reporting failures as datastore errors."""
    try:
        run_migrations(store.engine, schema=schema)
    except (sa.exc.SQLAlchemyError, OSError) as error:
        store.close()
        raise store.translate(error) from error
