"""The hottest DML, bound here instead of by SQLAlchemy's per-row execution machinery.

Storing a command and the engine's group commit run the same few INSERT and UPDATE statements with hundreds
of rows a second. Run through ``Connection.execute``, every row of an ``executemany`` goes through
SQLAlchemy's generic parameter assembly (``construct_params``: each bind of the statement looked up by name,
then processed): about as much Python as SQLite's own work, held under the GIL on the engine's commit
thread while the event loop waited for it.

A ``BulkStatement`` is still a Core construct on the one table definition, compiled once per dialect by
SQLAlchemy. What it does itself is only the binding: a plan made from the compiled statement (its
parameter order for positional drivers, the values its literals carry) puts each row's values in place,
each through its column type's own bind processor for the dialect, and the driver's ``executemany`` gets
them through ``exec_driver_sql``, which keeps SQLAlchemy's connection events and error translation.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import sqlalchemy as sa


@dataclass(frozen=True, slots=True)
class Plan:
    """A statement compiled for one dialect, and how a row's values are put in its parameters: fetched all at once
    (``itemgetter``, in C), then only those that need it processed, then the statement's own values put in."""

    sql: str
    names: tuple[str, ...]  # the parameters in the driver's order; for named styles, its names
    fetch: Callable[[Mapping[str, Any]], tuple[Any, ...]]  # the row's values, in the parameters' order
    processors: tuple[tuple[int, Callable[[Any], Any]], ...]  # (index among the row's values, its processor)
    fixed: tuple[tuple[int, Any], ...]  # (parameter index, the statement's own processed value), ascending
    positional: bool

    def bind(self, row: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        """The driver's parameters for ``row`` (a tuple, or a dict for named styles); KeyError for a missing value."""
        values: tuple[Any, ...] | list[Any] = self.fetch(row)
        if self.processors or self.fixed:
            values = list(values)
            for index, process in self.processors:
                values[index] = process(values[index])
            for index, value in self.fixed:
                values.insert(index, value)
        return tuple(values) if self.positional else dict(zip(self.names, values, strict=True))


def _fetcher(keys: list[str]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    if len(keys) == 1:  # itemgetter of one key answers the value, not a tuple of it
        key = keys[0]
        return lambda row: (row[key],)
    if not keys:
        return lambda row: ()
    return itemgetter(*keys)


class BulkStatement:
    """An INSERT or UPDATE run with many rows at once: ``statement``, or the one ``statement(dialect)`` builds
    (e.g. an upsert, whose construct is the dialect's own); ``columns``: the row keys an INSERT sets (all its
    table's columns when not given)."""

    def __init__(self, statement: sa.UpdateBase | Callable[[sa.Dialect], sa.UpdateBase],
                 columns: Sequence[str] | None = None) -> None:
        self.statement = statement
        self.columns = list(columns) if columns is not None else None
        # Per dialect object: processors depend on its settings (an engine's JSON serializer), not only its name.
        self._plans: weakref.WeakKeyDictionary[sa.Dialect, Plan] = weakref.WeakKeyDictionary()

    def execute(self, conn: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> int:
        """Runs the statement once per row; returns the rows it changed in all, as the driver counts them
        (-1 where it cannot: ``dialect.supports_sane_multi_rowcount`` says which)."""
        if not rows:
            return 0
        plan = self.plan(conn.dialect)
        return conn.exec_driver_sql(plan.sql, [plan.bind(row) for row in rows]).rowcount

    def plan(self, dialect: sa.Dialect) -> Plan:
        """The statement compiled for ``dialect``, with how a row is bound to it (made once per dialect)."""
        plan = self._plans.get(dialect)
        return plan if plan is not None else self._make_plan(dialect)

    def _make_plan(self, dialect: sa.Dialect) -> Plan:
        statement = self.statement if isinstance(self.statement, sa.UpdateBase) else self.statement(dialect)
        columns = self.columns
        if columns is None and isinstance(statement, sa.Insert):
            columns = [column.key for column in statement.table.columns]
        compiled = statement.compile(dialect=dialect, column_keys=columns)
        binds = {name: bind for bind, name in compiled.bind_names.items()}
        names = tuple(compiled.positiontup) if compiled.positional else tuple(binds)  # type: ignore[arg-type]
        keys: list[str] = []
        processors: list[tuple[int, Callable[[Any], Any]]] = []
        fixed: list[tuple[int, Any]] = []
        for position, name in enumerate(names):
            bind = binds[name]
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind.required:
                if process is not None:
                    processors.append((len(keys), process))
                keys.append(bind.key)
            else:  # a literal of the statement: processed once, here
                fixed.append((position, process(bind.effective_value) if process else bind.effective_value))
        escaped = compiled.escaped_bind_names
        plan = Plan(compiled.string, tuple(escaped.get(name, name) for name in names), _fetcher(keys),
                    tuple(processors), tuple(fixed), compiled.positional)
        self._plans[dialect] = plan
        return plan
