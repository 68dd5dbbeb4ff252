"""Commands and their resource updates, with write-fenced terminal states."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from svc.datastore.bulk import BulkStatement
from svc.datastore.paging import DEFAULT_PAGE_SIZE, PagedQuery, paginate
from svc.datastore.query import Pattern, Query
from svc.datastore.query_sql import conditions, match, matcher
from svc.datastore.sql_base import UPSERTABLE_INSERTS, SqlBase, in_chunks, json_value, now, upsertable_insert
from svc.datastore.tables import command_stacks, commands, resource_changes, resource_updates
from svc.model.records import CancelOutcome, CommandRecord, Page, ResourceUpdateRecord
from svc.model.states import TERMINAL_COMMAND_STATES, TERMINAL_UPDATE_STATES, CommandState, UpdateState

c, u, cs, rc = commands, resource_updates, command_stacks, resource_changes

_COMMAND_ORDER = (c.c.start_ts, c.c.id)
_UPDATE_ORDER = (u.c.ksuid, u.c.operation)
# The updates written since a time, in the order of their index: a page after the first one then reads only its
# own rows. In ksuid order each page of a poll scanned the command's every update for the few written lately (the
# executor reaches them in dependency order, spread over all ksuids), and the first page sorted them all.
_WRITTEN_ORDER = (u.c.modified_ts, u.c.ksuid, u.c.operation)
_INCOMPLETE = (CommandState.NOT_STARTED, CommandState.PENDING, CommandState.IN_PROGRESS, CommandState.CANCELING)
_CANCELABLE = (UpdateState.NOT_STARTED, UpdateState.PENDING)


def _command(row: sa.Row[Any]) -> CommandRecord:
    m = row._mapping
    return CommandRecord(
        id=m["id"], command=m["command"], state=m["state"], start_ts=m["start_ts"], end_ts=m["end_ts"],
        mode=m["mode"], source=m["source"], client_id=m["client_id"], agent_id=m["agent_id"],
        agent_version=m["agent_version"], subject=m["subject"], subject_name=m["subject_name"],
        description_text=m["description_text"], description_confirm=bool(m["description_confirm"]),
        force=bool(m["force"]), simulate=bool(m["simulate"]), data=m["data"] or {},
    )


def _update(row: sa.Row[Any]) -> ResourceUpdateRecord:
    """A full row: the update joined with its change."""
    m = row._mapping
    return _update_record(m, m["change"] or {}, m["desired_sealed"])


def _update_summary(row: sa.Row[Any]) -> ResourceUpdateRecord:
    """A summary's row: no change; data NULL unless the update failed. (Not ``m.get("change")``: a row without the
    column answers it through a KeyError that SQLAlchemy builds and catches, a tenth of a summary read's CPU.)"""
    return _update_record(row._mapping, {}, None)


def _update_record(m: sa.RowMapping, change: dict[str, Any], desired_sealed: str | None) -> ResourceUpdateRecord:
    return ResourceUpdateRecord(
        command_id=m["command_id"], ksuid=m["ksuid"], operation=m["operation"], state=m["state"],
        resource_type=m["resource_type"], resource_label=m["resource_label"], stack_label=m["stack_label"],
        start_ts=m["start_ts"], modified_ts=m["modified_ts"], version=m["version"], group_id=m["group_id"],
        is_cascade=bool(m["is_cascade"]), cascade_source=m["cascade_source"], data=m["data"] or {},
        change=change, desired_sealed=desired_sealed,
    )


def _command_values(record: CommandRecord) -> dict[str, Any]:
    return {
        "id": record.id, "command": record.command, "state": str(record.state), "mode": record.mode,
        "source": record.source, "client_id": record.client_id, "agent_id": record.agent_id,
        "agent_version": record.agent_version, "subject": record.subject, "subject_name": record.subject_name,
        "description_text": record.description_text, "description_confirm": record.description_confirm,
        "force": record.force, "simulate": record.simulate, "start_ts": record.start_ts, "end_ts": record.end_ts,
        "modified_ts": now(), "data": json_value(dict(record.data)),
    }


def _update_values(record: ResourceUpdateRecord) -> dict[str, Any]:
    return {
        "command_id": record.command_id, "ksuid": record.ksuid, "operation": record.operation,
        "state": str(record.state), "resource_type": record.resource_type, "resource_label": record.resource_label,
        "stack_label": record.stack_label, "start_ts": record.start_ts, "modified_ts": record.modified_ts,
        "version": record.version, "group_id": record.group_id, "is_cascade": record.is_cascade,
        # The column's own serializer writes it: a round trip through ``json_value`` here (two codec passes more
        # per row) made up a fifth of storing a big command, which execution waits for.
        "cascade_source": record.cascade_source, "data": dict(record.data),
    }


def _change_values(record: ResourceUpdateRecord) -> dict[str, Any]:
    return {"command_id": record.command_id, "ksuid": record.ksuid, "operation": record.operation,
            "change": dict(record.change), "desired_sealed": record.desired_sealed}


_COMMAND_COLUMNS = tuple(column.key for column in c.c)  # ``_command_values`` sets each
_UPDATE_COLUMNS = tuple(column.key for column in u.c)
_PUT_SLICE = 2000  # resource updates stored per executemany by ``put_command``
_CHANGE_COLUMNS = tuple(column.key for column in rc.c)


def _upsert_updates(dialect: sa.Dialect) -> sa.Insert:
    """Inserts resource updates, or rewrites those already stored that are not terminal yet."""
    insert = upsertable_insert(dialect, u)
    return insert.on_conflict_do_update(
        index_elements=[u.c.command_id, u.c.ksuid, u.c.operation],
        set_={name: insert.excluded[name] for name in _UPDATE_COLUMNS
              if name not in ("command_id", "ksuid", "operation")},
        # Plain binds, not an expanding IN list: executemany cannot take expanding parameters.
        where=u.c.state.not_in([sa.literal(str(state)) for state in TERMINAL_UPDATE_STATES]))


def _upsert_command(insert: Any) -> sa.Insert:
    """Stores a command, or rewrites the stored one unless it is terminal; answers its id when it wrote."""
    return insert.on_conflict_do_update(
        index_elements=[c.c.id],
        set_={name: insert.excluded[name] for name in _COMMAND_COLUMNS if name != "id"},
        where=c.c.state.not_in(TERMINAL_COMMAND_STATES)).returning(c.c.id)


# Per dialect name, as ``upsertable_insert`` picks the construct (the Data API's dialect is PostgreSQL's).
_UPSERT_COMMAND = {name: _upsert_command(insert(c)) for name, insert in UPSERTABLE_INSERTS.items()}
_COVER_STACKS = {name: insert(cs).on_conflict_do_nothing(index_elements=[cs.c.command_id, cs.c.stack_label])
                 for name, insert in UPSERTABLE_INSERTS.items()}
_UPSERT_UPDATES = BulkStatement(_upsert_updates, _UPDATE_COLUMNS)
# A change is immutable: storing a command again (a write retried after an outage) keeps the one stored.
_INSERT_CHANGES = BulkStatement(
    lambda dialect: upsertable_insert(dialect, rc).on_conflict_do_nothing(
        index_elements=[rc.c.command_id, rc.c.ksuid, rc.c.operation]), _CHANGE_COLUMNS)
_WITH_CHANGE = u.outerjoin(rc, sa.and_(rc.c.command_id == u.c.command_id, rc.c.ksuid == u.c.ksuid,
                                       rc.c.operation == u.c.operation))


# The statements of every command's admission, execution and status answers, built once (their values bound).
_COMMAND_BY_ID = sa.select(c).where(c.c.id == sa.bindparam("command_id"))
# The columns it sets are those given with it (state and modified_ts, end_ts and data when given).
_SET_STATE = sa.update(c).where(c.c.id == sa.bindparam("command_id"), c.c.state.not_in(TERMINAL_COMMAND_STATES))
_INCOMPLETE_COMMANDS = PagedQuery(sa.select(c).where(c.c.state.in_([str(state) for state in _INCOMPLETE])),
                                  order=_COMMAND_ORDER, descending=True)
_STATE_COUNTS = (sa.select(u.c.state, sa.func.count()).where(u.c.command_id == sa.bindparam("command_id"))
                 .group_by(u.c.state))


def _last_reconcile() -> sa.Select[Any]:
    stack = sa.bindparam("stack")
    in_stack = sa.or_(sa.exists().where(u.c.command_id == c.c.id, u.c.stack_label == stack),
                      sa.exists().where(cs.c.command_id == c.c.id, cs.c.stack_label == stack))
    # Not its data document (the target, stack and policy changes it made: 0.3 MB for a forma of 500 stacks, decoded
    # for each stack's drift, each stack of a reconcile's drift gate, each auto-reconciled stack's anchor).
    columns = [column for column in c.c if column.name != "data"]
    return (sa.select(*columns, sa.null().label("data")).where(c.c.command == "apply", c.c.mode == "reconcile",
                                                               in_stack)
            .order_by(*(column.desc() for column in _COMMAND_ORDER)).limit(1))


def _update_summaries(with_progress: bool, since: bool) -> PagedQuery:
    """A command's updates without their changes, nor the data documents of those that did not fail unless
    ``with_progress``; ``since``: only those written since a time (``modified_since``), in the order written."""
    failed = u.c.state.in_([str(UpdateState.FAILED), str(UpdateState.REJECTED)])
    data = (u.c.data if with_progress else sa.case((failed, u.c.data), else_=sa.null())).label("data")
    statement = sa.select(*(column for column in u.c if column.name != "data"), data).where(
        u.c.command_id == sa.bindparam("command_id"))
    if since:
        statement = statement.where(u.c.modified_ts >= sa.bindparam("modified_since"))
    return PagedQuery(statement, order=_WRITTEN_ORDER if since else _UPDATE_ORDER)


_LAST_RECONCILE = _last_reconcile()
_CHANGING = sa.select(u.c.stack_label).distinct().where(
    u.c.command_id == sa.bindparam("command_id"),
    u.c.state.not_in([str(UpdateState.SUCCESS), str(UpdateState.FAILED), str(UpdateState.REJECTED)]))
_UPDATED_STACKS = sa.select(u.c.stack_label).distinct().where(u.c.command_id == sa.bindparam("command_id"))
_COVERED_STACKS = (sa.select(cs.c.stack_label).where(cs.c.command_id == sa.bindparam("command_id"))
                   .order_by(cs.c.stack_label))
_STACK_HISTORY = sa.select(sa.literal_column("1")).where(sa.or_(
    sa.exists().where(u.c.stack_label == sa.bindparam("stack")),
    sa.exists().where(cs.c.stack_label == sa.bindparam("stack"))))
_UPDATE_SUMMARIES = {(progress, since): _update_summaries(progress, since)
                     for progress in (False, True) for since in (False, True)}


class CommandStore(SqlBase):
    # -- commands ----------------------------------------------------------------------------------------

    def put_command(self, command: CommandRecord, updates: Sequence[ResourceUpdateRecord] = (), *,
                    stacks: Sequence[str] = ()) -> bool:
        """Stores a command and its resource updates in one transaction (upsert by id, and by (command,
        ksuid, operation)). A command or update already in a terminal state is left untouched; returns
        whether the command row was written. ``stacks``: stacks the command covers beyond its updates' (a
        reconcile's), matched by ``stack:`` queries like its updates' stacks."""
        with self.write() as conn:
            upsert = _UPSERT_COMMAND[conn.dialect.name]
            written = conn.execute(upsert, _command_values(command)).first() is not None
            # An executemany per slice of updates (each driver batches it within its own limits: psycopg pipelines
            # it, the Data API driver splits BatchExecuteStatement calls under the request cap), its rows built
            # for it: built for a 100,000-resource command at once, the rows, their bound parameters and their
            # JSON were a peak of the agent's memory.
            for start in range(0, len(updates), _PUT_SLICE):
                part = updates[start:start + _PUT_SLICE]
                _UPSERT_UPDATES.execute(conn, [_update_values(update) for update in part])
                # Updates written by others than the engine (tests, tools) may carry no change: no row for them.
                _INSERT_CHANGES.execute(conn, [_change_values(update) for update in part
                                               if update.change or update.desired_sealed])
            if stacks:
                conn.execute(_COVER_STACKS[conn.dialect.name],
                             [{"command_id": command.id, "stack_label": s} for s in sorted(set(stacks))])
            return written

    def set_command_state(self, command_id: str, state: str, *, end_ts: datetime | None = None,
                          data: dict[str, Any] | None = None) -> bool:
        """Moves a command to ``state`` unless it is already terminal (terminal states are final even under
        concurrent writers: the check and the write are one conditional UPDATE). Returns whether it moved."""
        with self.write() as conn:
            return self._set_command_state_in(conn, command_id, state, end_ts=end_ts, data=data)

    @staticmethod
    def _set_command_state_in(conn: sa.Connection, command_id: str, state: str, *, end_ts: datetime | None = None,
                              data: dict[str, Any] | None = None) -> bool:
        """``set_command_state`` within ``conn``'s write transaction."""
        values: dict[str, Any] = {"command_id": command_id, "state": str(state), "modified_ts": now()}
        if end_ts is not None:
            values["end_ts"] = end_ts
        if data is not None:
            values["data"] = json_value(data)
        return conn.execute(_SET_STATE, values).rowcount == 1

    def get_command(self, command_id: str) -> CommandRecord | None:
        with self.read() as conn:
            row = conn.execute(_COMMAND_BY_ID, {"command_id": command_id}).first()
        return _command(row) if row is not None else None

    def last_reconcile(self, stack: str) -> CommandRecord | None:
        """The newest reconcile apply that changed something in ``stack`` or whose forma named it, without its data
        document (``data`` is empty: what it is asked for is which command and when; drift's baseline,
        ``svc.engine.drift``): one row, found by walking the commands newest first. Filtering ``list_commands`` by
        stack read and decoded a page of them for it, growing with the stack's history, on every reconcile. A stack
        no command ever touched (a forma's first apply) is answered from the stack's indexes first: the walk would
        go through the whole history to find nothing (16 ms beside 20,000 commands)."""
        with self.read() as conn:
            if conn.execute(_STACK_HISTORY, {"stack": stack}).first() is None:
                return None
            row = conn.execute(_LAST_RECONCILE, {"stack": stack}).first()
        return _command(row) if row is not None else None

    def stacks_changing(self, command_id: str, stacks: Iterable[str]) -> set[str]:
        """The stacks among ``stacks`` in which the command has an update not Success, Failed or Rejected (what
        a new command on them conflicts with), found by the updates' stack index: reading every update of a
        running command for it took 0.6 s beside one of 20,000."""
        with self.read() as conn:
            return {row[0] for chunk in in_chunks(set(stacks))
                    for row in conn.execute(_CHANGING.where(u.c.stack_label.in_(chunk)), {"command_id": command_id})}

    def stacks_updated(self, command_id: str) -> set[str]:
        """The stacks of a command's updates, whatever their states (not their documents: reading those for it
        took synchronization ~2 s a pass while a 100,000-resource command ran)."""
        with self.read() as conn:
            return {row[0] for row in conn.execute(_UPDATED_STACKS, {"command_id": command_id})}

    def stacks_covered(self, command_id: str) -> list[str]:
        """The stacks a command covers beyond its updates' (``put_command``'s ``stacks``: a reconcile's forma's),
        by label."""
        with self.read() as conn:
            return [row[0] for row in conn.execute(_COVERED_STACKS, {"command_id": command_id})]

    def delete_command(self, command_id: str) -> bool:
        """Removes a command and its updates (e.g. a synchronization that changed nothing)."""
        with self.write() as conn:
            conn.execute(sa.delete(rc).where(rc.c.command_id == command_id))
            conn.execute(sa.delete(u).where(u.c.command_id == command_id))
            conn.execute(sa.delete(cs).where(cs.c.command_id == command_id))
            return conn.execute(sa.delete(c).where(c.c.id == command_id)).rowcount == 1

    def list_commands(self, query: Query | None = None, *, client_id: str | None = None,
                      sources: Sequence[str] | None = ("user",), cursor: str | None = None,
                      limit: int = DEFAULT_PAGE_SIZE) -> Page[CommandRecord]:
        """Commands matching ``query`` (``COMMAND_FIELDS``), newest first. ``client:me`` means ``client_id``;
        ``sources`` limits the sources shown (None = all)."""

        def client(pattern: Pattern) -> sa.ColumnElement[bool]:
            if not pattern.has_wildcard and pattern.text == "me" and client_id is not None:
                return c.c.client_id == client_id
            return match(c.c.client_id, pattern)

        def stack(pattern: Pattern) -> sa.ColumnElement[bool]:
            return sa.or_(sa.exists().where(u.c.command_id == c.c.id, match(u.c.stack_label, pattern)),
                          sa.exists().where(cs.c.command_id == c.c.id, match(cs.c.stack_label, pattern)))

        text_fields = {"id": matcher(c.c.id), "client": client, "command": matcher(c.c.command, case_insensitive=True),
                       "status": matcher(c.c.state, case_insensitive=True), "stack": stack,
                       "source": matcher(c.c.source)}
        statement = sa.select(c).where(*conditions(query, text_fields))
        if sources is not None:
            statement = statement.where(c.c.source.in_(list(sources)))
        with self.read() as conn:
            return paginate(conn, statement, list_name="commands", order=_COMMAND_ORDER, cursor=cursor, limit=limit,
                            convert=_command, descending=True)

    def list_incomplete_commands(self, *, cursor: str | None = None,
                                 limit: int = DEFAULT_PAGE_SIZE) -> Page[CommandRecord]:
        """Commands that have not reached a terminal state (crash recovery, conflict checks), newest first."""
        with self.read() as conn:
            return _INCOMPLETE_COMMANDS.page(conn, list_name="incomplete-commands", cursor=cursor, limit=limit,
                                             convert=_command)

    # -- resource updates --------------------------------------------------------------------------------

    def get_resource_updates(self, command_id: str, *, cursor: str | None = None,
                             limit: int = DEFAULT_PAGE_SIZE) -> Page[ResourceUpdateRecord]:
        """A command's updates, each with its change."""
        statement = (sa.select(u, rc.c.change, rc.c.desired_sealed).select_from(_WITH_CHANGE)
                     .where(u.c.command_id == command_id))
        with self.read() as conn:
            return paginate(conn, statement, list_name=f"updates:{command_id}", order=_UPDATE_ORDER, cursor=cursor,
                            limit=limit, convert=_update)

    def get_resource_update_summaries(self, command_id: str, *, modified_since: datetime | None = None,
                                      with_progress: bool = False, cursor: str | None = None,
                                      limit: int = DEFAULT_PAGE_SIZE) -> Page[ResourceUpdateRecord]:
        """``get_resource_updates`` without the changes, nor the data documents except those of failed and
        rejected updates (their messages): what following a command needs. Reading and decoding every update's
        change cost most of a status poll of a big command. ``modified_since``: only
        the updates whose state was written at or after it (each state write stamps ``modified_ts`` once it
        holds the write lock, so a write committed later than a read carries a time at most the write's
        duration before that read). ``with_progress``: every update's data document (attempts, message, end), a
        third more of the read's CPU, for a live view."""
        query = _UPDATE_SUMMARIES[with_progress, modified_since is not None]
        values: dict[str, Any] = {"command_id": command_id}
        list_name = f"update-summaries:{command_id}"
        if modified_since is not None:
            values["modified_since"] = modified_since
            list_name = f"updates-written:{command_id}"
        with self.read() as conn:
            return query.page(conn, list_name=list_name, cursor=cursor, limit=limit, convert=_update_summary,
                              **values)

    def count_resource_update_states(self, command_id: str) -> dict[str, int]:
        with self.read() as conn:
            return {state: count for state, count in conn.execute(_STATE_COUNTS, {"command_id": command_id}).all()}

    def set_resource_update_state(self, command_id: str, ksuid: str, operation: str, state: str, *,
                                  version: str | None = None, data: dict[str, Any] | None = None,
                                  start_ts: datetime | None = None) -> bool:
        """Moves one resource update to ``state`` (and stores ``version``/``data`` with it) unless it is
        already terminal: Success never becomes Failed, whoever writes last. Returns whether it moved."""
        values: dict[str, Any] = {"state": str(state)}
        if version is not None:
            values["version"] = version
        if data is not None:
            values["data"] = json_value(data)
        if start_ts is not None:
            values["start_ts"] = start_ts
        with self.write() as conn:
            values["modified_ts"] = now()  # once the write lock is held, as ``set_resource_update_states``
            done = conn.execute(
                sa.update(u).where(u.c.command_id == command_id, u.c.ksuid == ksuid, u.c.operation == operation,
                                   u.c.state.not_in(TERMINAL_UPDATE_STATES)).values(**values))
            return done.rowcount == 1

    def cancel_resource_updates(self, command_id: str, *, force: bool = False) -> CancelOutcome:
        """Cancels a command's updates that have not started; with ``force`` also those in progress.

        Each group is one compare-and-swap UPDATE, so an update that finished meanwhile is reported as
        skipped, never overwritten; running it again cancels nothing more.
        """
        def cancel(conn: sa.Connection, states: Sequence[str]) -> tuple[tuple[str, str], ...]:
            rows = conn.execute(
                sa.update(u).where(u.c.command_id == command_id, u.c.state.in_(list(states)))
                .values(state=str(UpdateState.CANCELED), modified_ts=at).returning(u.c.ksuid, u.c.operation)).all()
            return tuple(sorted((row.ksuid, row.operation) for row in rows))

        with self.write() as conn:
            at = now()  # once the write lock is held, as ``set_resource_update_states``
            not_started = cancel(conn, [str(s) for s in _CANCELABLE])
            in_progress = cancel(conn, [str(UpdateState.IN_PROGRESS)]) if force else ()
            changed = set(not_started) | set(in_progress)
            rows = conn.execute(sa.select(u.c.ksuid, u.c.operation).where(u.c.command_id == command_id)).all()
            skipped = tuple(sorted((row.ksuid, row.operation) for row in rows
                                   if (row.ksuid, row.operation) not in changed))
        return CancelOutcome(not_started, in_progress, skipped)
