"""The PostgreSQL backend: psycopg 3 under SQLAlchemy's pool, and one-line errors for bad settings."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import sqlalchemy as sa

from svc.config.model import PostgresConfig
from svc.datastore.errors import DatastoreConfigError, DatastoreError, DatastoreUnavailable
from svc.datastore.sql_base import JSON_CODEC

PREFIX = "agent.datastore.postgres"
CONNECT_TIMEOUT_SECONDS = 10
DEFAULT_APPLICATION_NAME = "svc-agent"


def connection_params(config: PostgresConfig, application_name: str | None = None) -> dict[str, str]:
    """libpq keywords for ``config``; ``connectionParams`` pairs pass through verbatim (and win).
    ``application_name`` (e.g. ``svc-agent-<agent id>``) tells in ``pg_stat_activity`` which agent a session is."""
    params = {"host": config.host, "port": str(config.port), "user": config.user, "dbname": config.database,
              "application_name": application_name or DEFAULT_APPLICATION_NAME,
              "connect_timeout": str(CONNECT_TIMEOUT_SECONDS)}
    if config.password:
        params["password"] = config.password
    if config.schema_:
        # Unqualified names (our tables, alembic's version table) then live in the configured schema.
        params["options"] = "-c search_path=" + re.sub(r"([\\\s])", r"\\\1", _quote_ident(config.schema_))
    for pair in filter(None, config.connection_params.split("&")):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise DatastoreConfigError(f"connection parameter {pair!r} is not key=value; check "
                                       f"{PREFIX}.connectionParams", f"{PREFIX}.connectionParams")
        params[key.strip()] = value
    return params


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def describe(config: PostgresConfig) -> str:
    return f"postgres {config.user}@{config.host}:{config.port}/{config.database}"


def explain_connect_error(error: psycopg.Error, config: PostgresConfig) -> DatastoreError:
    """One line that names the setting to fix, for an error raised while connecting."""
    text = str(error)
    where = f"{config.host}:{config.port}"
    db, user = config.database, config.user
    lowered = text.lower()

    def bad(setting: str, message: str) -> DatastoreConfigError:
        return DatastoreConfigError(f"{message}; check {PREFIX}.{setting}", f"{PREFIX}.{setting}")

    if f'database "{db}" does not exist' in text:
        return bad("database", f'database "{db}" does not exist on {where}; create it first '
                               f"(CREATE DATABASE {_quote_ident(db) if not db.isidentifier() else db})")
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return bad("password", f'password authentication failed for user "{user}" on {where}')
    if f'role "{user}" does not exist' in text:
        return bad("user", f'user "{user}" does not exist on {where}')
    if "permission denied for database" in lowered or "not permitted to log in" in lowered:
        return bad("user", f'user "{user}" may not connect to database "{db}" on {where}')
    if "could not translate host name" in lowered or "name or service not known" in lowered:
        return bad("host", f'cannot resolve host "{config.host}"')
    if any(s in lowered for s in ("sslmode", "ssl", "certificate", "invalid connection option", "invalid integer",
                                  "invalid value for parameter")) and "connection refused" not in lowered:
        return bad("connectionParams", f"cannot connect to {where}: {_essence(text)}")
    if "invalid port" in lowered:
        return bad("port", f"invalid port {config.port}")
    if "connection refused" in lowered or "timeout expired" in lowered or "no route to host" in lowered:
        reason = "connection refused" if "refused" in lowered else "no answer" if "timeout" in lowered else "no route"
        return DatastoreUnavailable(f"cannot reach PostgreSQL at {where} ({reason}); check "
                                    f"{PREFIX}.host and {PREFIX}.port, and that the server runs", f"{PREFIX}.host")
    return DatastoreError(f"cannot connect to PostgreSQL at {where}: {_essence(text)}")


def _essence(text: str) -> str:
    """The server's or libpq's own words, without psycopg's "connection failed: connection to …" wrapping."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[-1] if lines else text
    line = re.sub(r"^connection (?:failed|is bad):\s*", "", line)
    line = re.sub(r'^connection to server at "[^"]*"(?: \([^)]*\))?, port \d+ failed:\s*', "", line)
    return re.sub(r"^(FATAL|ERROR):\s*", "", line).strip()


def check_connection(config: PostgresConfig, params: dict[str, str]) -> None:
    """Connects once so that bad settings fail at start with one clear line, not on the first request."""
    try:
        with psycopg.connect(**params) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        raise explain_connect_error(error, config) from None


def postgres_engine(config: PostgresConfig, application_name: str | None = None) -> tuple[sa.Engine, str]:
    params = connection_params(config, application_name)
    check_connection(config, params)

    def connect() -> Any:
        # No automatic server-side prepared statements: after five runs psycopg would prepare a statement and
        # PostgreSQL could switch it to a generic plan chosen while the tables were small (statistics lag
        # during a bulk load), and keep it. Custom plans per execution cost a fraction of a millisecond to
        # plan; the cached generic lookups made a fresh 100,000-version ingest 10-30x slower.
        return psycopg.connect(**params, prepare_threshold=None)

    # pre_ping replaces connections that died with a server restart, so the pool recovers by itself.
    engine = sa.create_engine("postgresql+psycopg://", creator=connect, pool_pre_ping=True, pool_size=10,
                              max_overflow=10, pool_timeout=30, pool_recycle=1800, **JSON_CODEC)
    return engine, describe(config)
