"""SQLAlchemy's PostgreSQL dialect on our Data API driver (``postgresql+dataapi``).

Everything PostgreSQL-specific (DDL, ON CONFLICT, RETURNING, reflection, Alembic's migrations) comes from
the stock dialect; this subclass only says how to talk to the driver:

* ``named`` parameters, as the Data API takes them;
* JSON values serialized to ``JsonText`` so the driver sends them with ``typeHint`` JSON;
* no "insertmanyvalues": SQLAlchemy would fold a batch into one multi-row INSERT, which can exceed the
  request cap; a plain ``executemany`` lets the driver split the batch by bytes;
* no session state: every Data API call may run in another database session, so isolation levels are
  per transaction and there is nothing to reset or ping.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from sqlalchemy.dialects import registry
from sqlalchemy.dialects.postgresql.base import PGCompiler, PGDialect
from sqlalchemy.sql.functions import Function

from svc.datastore.dataapi_values import json_text

# Functions whose integer arguments PostgreSQL only accepts as int4: the Data API sends every integer as a
# bigint (longValue), and PostgreSQL does not cast bigint down implicitly, so such arguments are inlined.
_INT4_ARGUMENT_FUNCTIONS = frozenset({"generate_subscripts", "array_length", "array_lower", "array_upper",
                                      "pg_get_indexdef", "pg_get_constraintdef", "format_type"})


class DataApiCompiler(PGCompiler):
    def visit_function(self, func: Function[Any], **kwargs: Any) -> str:
        if func.name.lower() in _INT4_ARGUMENT_FUNCTIONS:
            kwargs["literal_binds"] = True
        return super().visit_function(func, **kwargs)


class DataApiDialect(PGDialect):
    driver = "dataapi"
    supports_statement_cache = True
    default_paramstyle = "named"
    use_insertmanyvalues = False
    use_insertmanyvalues_wo_returning = False
    insert_executemany_returning = False
    supports_sane_multi_rowcount = False
    statement_compiler = DataApiCompiler

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("json_serializer", json_text)
        super().__init__(**kwargs)

    @classmethod
    def import_dbapi(cls) -> ModuleType:
        from svc.datastore import dataapi_dbapi

        return dataapi_dbapi

    def get_isolation_level_values(self, dbapi_conn: Any) -> tuple[str, ...]:
        return (*super().get_isolation_level_values(dbapi_conn), "AUTOCOMMIT")

    def get_isolation_level(self, dbapi_connection: Any) -> str:
        # The service's sessions use PostgreSQL's default; asking would cost a round trip per connection.
        return "AUTOCOMMIT" if dbapi_connection.autocommit else "READ COMMITTED"

    def set_isolation_level(self, dbapi_connection: Any, level: str) -> None:
        dbapi_connection.autocommit = level == "AUTOCOMMIT"

    def reset_isolation_level(self, dbapi_connection: Any) -> None:
        dbapi_connection.autocommit = False

    def do_ping(self, dbapi_connection: Any) -> bool:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SELECT 1")
        finally:
            cursor.close()
        return True


registry.register("postgresql.dataapi", __name__, "DataApiDialect")
