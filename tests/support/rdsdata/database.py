"""A throwaway PostgreSQL database for one test module or run."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql


@contextmanager
def temporary_database(postgres_url: str, prefix: str = "svc_test") -> Iterator[str]:
    """Creates a database with a random name on the server of ``postgres_url``; drops it afterwards.

    Yields the database name. The drop uses ``FORCE`` so connections a failed test left open do not
    keep the database alive.
    """
    name = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
