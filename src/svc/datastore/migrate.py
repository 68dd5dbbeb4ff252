"""Schema migrations: Alembic's revision graph and operations, driven programmatically (no alembic.ini,
no env.py), from the revision scripts in ``migrations/versions``.

Runs at agent start, is idempotent (at head it does nothing) and is safe when several processes start at
once: everything happens in ONE transaction that first takes a lock — ``pg_advisory_xact_lock`` on
PostgreSQL (a transaction-scoped lock also works through the Data API, where every statement may use another
session), ``BEGIN IMMEDIATE`` on SQLite. The second process waits, then finds the schema at head.

A database already at head (every start but the first after an upgrade) is seen without Alembic, whose import
(with Mako and Pygments) was a good part of every start's CPU: one read of the version table, compared with the
newest revision as the scripts declare it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from svc.datastore.sql_base import WRITE_OPTION
from svc.datastore.tables import metadata

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

log = logging.getLogger("svc.datastore")

SCRIPT_LOCATION = Path(__file__).parent / "migrations"
# Arbitrary but fixed: every svc process must agree on it ("svc-migrate" as an int64).
ADVISORY_LOCK_KEY = 0x7376632D6D696772


@dataclass(frozen=True, slots=True)
class MigrationResult:
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    return config


def _script() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config())


def head_revision() -> str | None:
    return _script().get_current_head()


_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*[\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(None|[\"']([^\"']+)[\"'])", re.MULTILINE)


def declared_head() -> str | None:
    """The newest revision as the scripts declare it (``revision``/``down_revision``), read without Alembic;
    None when they do not say plainly (then Alembic decides)."""
    revisions, parents = set(), set()
    for script in (SCRIPT_LOCATION / "versions").glob("*.py"):
        text = script.read_text()
        revision, down = _REVISION.search(text), _DOWN_REVISION.search(text)
        if revision is None or down is None:
            return None
        revisions.add(revision.group(1))
        if down.group(2):
            parents.add(down.group(2))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _at_head(engine: sa.Engine) -> MigrationResult | None:
    """The result of a migration with nothing to do, when the database is at the declared head; else None."""
    head = declared_head()
    if head is None:
        return None
    try:
        with engine.connect() as conn:
            # Looked up first, not read and failed: on the Data API a failed statement is a logged error.
            if not sa.inspect(conn).has_table("alembic_version"):
                return None
            versions = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    except sa.exc.SQLAlchemyError:  # no database: Alembic's path says why
        return None
    return MigrationResult(head, head) if versions == [head] else None


def current_revision(conn: sa.Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def migrate(engine: sa.Engine, *, schema: str | None = None, revision: str | None = None) -> MigrationResult:
    """Upgrades the database to the newest revision, or to ``revision`` (tests build a datastore as an older
    agent left it), creating ``schema`` first on PostgreSQL."""
    if revision is None and (done := _at_head(engine)) is not None:
        return done
    from alembic.runtime.environment import EnvironmentContext
    from alembic.script import ScriptDirectory

    config = _config()
    script = ScriptDirectory.from_config(config)
    with engine.connect() as base:
        conn = base.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK_KEY})
                if schema:
                    conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema.replace(chr(34), chr(34) * 2)}"')
            before = current_revision(conn)
            head = revision or script.get_current_head()
            if before == head:
                return MigrationResult(before, head)
            log.info("database migrations are starting (%s -> %s); this may take a while", before, head)

            def upgrade(current: Any, _context: Any) -> Any:
                return script._upgrade_revs(head, current)  # noqa: SLF001 (alembic's own command does this)

            context = EnvironmentContext(config, script, fn=upgrade, destination_rev=head)
            # The connection is already in our transaction, so alembic runs inside it and does not commit.
            context.configure(connection=conn, target_metadata=metadata)
            with context.begin_transaction():
                context.run_migrations()
            after = current_revision(conn)
    log.info("database migrations finished at %s", after)
    return MigrationResult(before, after)
