"""Stacks, targets and policies: small versioned records addressed by label."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from svc.datastore.errors import ConflictError, NotFoundError
from svc.datastore.paging import DEFAULT_PAGE_SIZE, PagedQuery, paginate
from svc.datastore.query import FieldKind, QueryFields, parse_query
from svc.datastore.query_sql import conditions, matcher
from svc.datastore.sql_base import Retry, SqlBase, in_chunks, json_value, now, successor
from svc.datastore.sql_reaping import HEALTH_COLUMNS, forget_reaped_resources, revive_resources
from svc.datastore.tables import HEAD_LIVE, HEAD_OLD, HEAD_TOMBSTONE, head_is, policies, stack_policies, stacks, targets
from svc.ids import new_id
from svc.model.records import (
    Page,
    PolicyRecord,
    PolicyWrite,
    StackPolicies,
    StackRecord,
    TargetFilter,
    TargetRecord,
    TargetWrite,
)

s, t, p, sp = stacks, targets, policies, stack_policies

_TARGET_FIELDS = QueryFields("targets", {"label": FieldKind.TEXT, "namespace": FieldKind.TEXT})
# Read by every command's admission (``PagedQuery``: built once).
_LIVE_STACKS = PagedQuery(sa.select(s).where(head_is(s.c.head, HEAD_LIVE)), order=(s.c.label,))
_LIVE_TARGETS = sa.select(t).where(head_is(t.c.head, HEAD_LIVE))
_ALL_TARGETS = PagedQuery(_LIVE_TARGETS, order=(t.c.label,))
_UNREAPED_TARGETS = PagedQuery(_LIVE_TARGETS.where(t.c.health_state != "reaped"), order=(t.c.label,))
_ANY_LIVE_POLICY = sa.select(sa.exists().where(head_is(p.c.head, HEAD_LIVE)))
_ATTACHMENTS = (sa.select(p.c.label, s.c.label)
                .select_from(sp.join(p, sp.c.policy_id == p.c.id).join(s, sp.c.stack_id == s.c.id))
                .where(head_is(p.c.head, HEAD_LIVE), head_is(s.c.head, HEAD_LIVE)).order_by(p.c.label, s.c.label))
# What storing a new command's stacks and targets runs (built once, as above).
_LIVE_STACK = sa.select(s).where(s.c.label == sa.bindparam("label"), head_is(s.c.head, HEAD_LIVE))
_INSERT_STACK = sa.insert(s).returning(*s.c)  # the row as stored, without reading it back
_LIVE_TARGET = sa.select(t).where(t.c.label == sa.bindparam("label"), head_is(t.c.head, HEAD_LIVE))
_INSERT_TARGET = sa.insert(t).returning(*t.c)


def _stack(row: sa.Row[Any]) -> StackRecord:
    m = row._mapping
    return StackRecord(id=m["id"], label=m["label"], description=m["description"], version=m["version"],
                       created_at=m["created_at"], updated_at=m["valid_from"], command_id=m["command_id"])


def _target(row: sa.Row[Any]) -> TargetRecord:
    m = row._mapping
    return TargetRecord(label=m["label"], version=m["version"], namespace=m["namespace"], config=m["config"],
                        config_schema=m["config_schema"], discoverable=bool(m["discoverable"]),
                        incarnation_id=m["incarnation_id"], health_state=m["health_state"],
                        observed_at=m["observed_at"], created_at=m["created_at"], updated_at=m["valid_from"],
                        reap_kind=m["reap_kind"], reap_after_seconds=m["reap_after_seconds"],
                        last_seen_at=m["last_seen_at"], last_sample_at=m["last_sample_at"],
                        first_unreachable_at=m["first_unreachable_at"],
                        unreachable_seconds=float(m["unreachable_seconds"] or 0),
                        last_error_code=m["last_error_code"])


def _policy(row: sa.Row[Any]) -> PolicyRecord:
    m = row._mapping
    return PolicyRecord(id=m["id"], version=m["version"], label=m["label"], policy_type=m["policy_type"],
                        data=m["data"], stack_id=m["stack_id"] or None, created_at=m["created_at"],
                        updated_at=m["valid_from"])


def _next_version(current: str) -> str:
    version = new_id()
    return version if version > current else successor(current)


class CatalogStore(SqlBase):
    # -- stacks ------------------------------------------------------------------------------------------

    def create_stack(self, label: str, description: str = "", *, command_id: str | None = None) -> StackRecord:
        """A new stack (a fresh id, even if a deleted stack had the label); ``ConflictError`` if one is live."""

        def work(conn: sa.Connection) -> StackRecord:
            if self._live_stack(conn, label) is not None:
                raise ConflictError(f"stack {label!r} already exists")
            at = now()
            values = {"id": new_id(), "version": new_id(), "head": HEAD_LIVE, "operation": "create",
                      "label": label, "description": description, "command_id": command_id,
                      "created_at": at, "valid_from": at}
            return _stack(conn.execute(_INSERT_STACK, values).one())

        return self.write_retrying(work)

    def update_stack(self, label: str, description: str, *, command_id: str | None = None) -> StackRecord:
        def work(conn: sa.Connection) -> StackRecord:
            head = self._live_stack(conn, label)
            if head is None:
                raise NotFoundError(f"stack {label!r} does not exist")
            if head.description == description:
                return _stack(head)
            version = self._advance(conn, s, head, operation="update", head_value=HEAD_LIVE, command_id=command_id,
                                    label=label, description=description, created_at=head.created_at)
            return _stack(conn.execute(sa.select(s).where(s.c.id == head.id, s.c.version == version)).one())

        return self.write_retrying(work)

    def delete_stack(self, label: str, *, command_id: str | None = None) -> bool:
        """Tombstones the live stack with ``label`` and its inline policies (they go with it), and detaches
        the standalone ones; False if there is none."""

        return self.write_retrying(lambda conn: self._delete_stack_in(conn, label, command_id))

    def _delete_stack_in(self, conn: sa.Connection, label: str, command_id: str | None) -> bool:
        """``delete_stack`` within ``conn``'s write transaction."""
        head = self._live_stack(conn, label)
        if head is None:
            return False
        self._advance(conn, s, head, operation="delete", head_value=HEAD_TOMBSTONE, command_id=command_id,
                      label=label, description=head.description, created_at=head.created_at)
        conn.execute(sa.delete(sp).where(sp.c.stack_id == head.id))
        inline = conn.execute(sa.select(p).where(p.c.stack_id == head.id, head_is(p.c.head, HEAD_LIVE))).all()
        for policy in inline:
            self._advance(conn, p, policy, operation="delete", head_value=HEAD_TOMBSTONE, command_id=command_id,
                          label=policy.label, policy_type=policy.policy_type, stack_id=policy.stack_id,
                          data=policy.data, created_at=policy.created_at)
        return True

    def get_stack(self, label: str) -> StackRecord | None:
        with self.read() as conn:
            row = self._live_stack(conn, label)
        return _stack(row) if row is not None else None

    def list_stacks(self, *, cursor: str | None = None, limit: int = DEFAULT_PAGE_SIZE) -> Page[StackRecord]:
        with self.read() as conn:
            return _LIVE_STACKS.page(conn, list_name="stacks", cursor=cursor, limit=limit, convert=_stack)

    def stacks_named(self, labels: Iterable[str]) -> list[StackRecord]:
        """The live stacks among ``labels``, read by key (a plan's few, not every stack of the estate)."""
        return self._live_stacks_where(s.c.label, labels)

    def stacks_with_ids(self, stack_ids: Iterable[str]) -> list[StackRecord]:
        """The live stacks among ``stack_ids``, by label (the few a background job's policies name)."""
        return sorted(self._live_stacks_where(s.c.id, stack_ids), key=lambda stack: stack.label)

    def _live_stacks_where(self, column: sa.Column[Any], keys: Iterable[str]) -> list[StackRecord]:
        with self.read() as conn:
            return [_stack(row) for chunk in in_chunks(set(keys))
                    for row in conn.execute(sa.select(s).where(head_is(s.c.head, HEAD_LIVE), column.in_(chunk)))]

    def _live_stack(self, conn: sa.Connection, label: str) -> sa.Row[Any] | None:
        return conn.execute(_LIVE_STACK, {"label": label}).first()

    def _advance(self, conn: sa.Connection, table: sa.Table, head: sa.Row[Any], *, operation: str,
                 head_value: int, command_id: str | None, **values: Any) -> str:
        """Appends a version after ``head`` (compare-and-swap on its head marker) and returns it."""
        version = _next_version(head.version)
        demoted = conn.execute(sa.update(table).where(table.c.id == head.id, table.c.version == head.version,
                                                      table.c.head == head.head).values(head=HEAD_OLD))
        if demoted.rowcount != 1:
            raise Retry(f"{table.name} head moved")
        conn.execute(sa.insert(table).values(id=head.id, version=version, head=head_value, operation=operation,
                                             command_id=command_id, valid_from=now(), **values))
        return version

    # -- targets -----------------------------------------------------------------------------------------

    def put_target(self, write: TargetWrite) -> TargetRecord:
        """Creates the target, or adds a version when its namespace, config, discoverability or reap policy
        changed.

        Health and incarnation carry over to new versions; an unchanged target is not written. A reaped target
        declared again is recovered in the same transaction: a fresh incarnation, health reset, and its reaped
        resources live again (``sql_reaping``).
        """
        config, schema = json_value(dict(write.config)), json_value(dict(write.config_schema))
        declared = {"namespace": write.namespace, "config": config, "config_schema": schema,
                    "discoverable": write.discoverable, "reap_kind": write.reap_kind,
                    "reap_after_seconds": write.reap_after_seconds}

        def work(conn: sa.Connection) -> TargetRecord:
            head = self._live_target(conn, write.label)
            at = now()
            if head is None or head.health_state == "reaped":
                values = {"version": 1, "incarnation_id": new_id(), "health_state": "unknown", "observed_at": None,
                          "created_at": at}
            else:
                if all(head._mapping[name] == value for name, value in declared.items()):
                    return _target(head)
                values = {"version": head.version + 1, "created_at": head.created_at,
                          **{name: head._mapping[name] for name in HEALTH_COLUMNS}}
            if head is not None:
                demoted = conn.execute(sa.update(t).where(t.c.label == write.label, t.c.version == head.version,
                                                          head_is(t.c.head, HEAD_LIVE)).values(head=HEAD_OLD))
                if demoted.rowcount != 1:
                    raise Retry("target head moved")
                if head.health_state == "reaped":
                    values["version"] = head.version + 1
                    revive_resources(conn, write.label)
            return _target(conn.execute(_INSERT_TARGET, {"label": write.label, "head": HEAD_LIVE, "valid_from": at,
                                                         **declared, **values}).one())

        return self.write_retrying(work)

    def delete_target(self, label: str) -> bool:
        """Removes the target and all its versions (targets keep no history once gone); the resources set aside
        when it was reaped become delete tombstones."""
        with self.write() as conn:
            return self._delete_target_in(conn, label)

    @staticmethod
    def _delete_target_in(conn: sa.Connection, label: str) -> bool:
        """``delete_target`` within ``conn``'s write transaction."""
        forget_reaped_resources(conn, label)
        return conn.execute(sa.delete(t).where(t.c.label == label)).rowcount > 0

    def get_target(self, label: str) -> TargetRecord | None:
        with self.read() as conn:
            row = self._live_target(conn, label)
        return _target(row) if row is not None else None

    def targets_named(self, labels: Iterable[str]) -> list[TargetRecord]:
        """The live targets among ``labels``, reaped ones included, read by key."""
        with self.read() as conn:
            return [_target(row) for chunk in in_chunks(set(labels))
                    for row in conn.execute(_LIVE_TARGETS.where(t.c.label.in_(chunk)))]

    def list_targets(self, where: TargetFilter | None = None, *, cursor: str | None = None,
                     limit: int = DEFAULT_PAGE_SIZE) -> Page[TargetRecord]:
        """Targets by label; ``label``/``namespace`` filters accept ``*`` wildcards (``%``/``_`` literal); reaped
        targets only with ``where.reaped``."""
        where = where or TargetFilter()
        if where.label is None and where.namespace is None and where.discoverable is None:
            every = _ALL_TARGETS if where.reaped else _UNREAPED_TARGETS
            with self.read() as conn:
                return every.page(conn, list_name="targets", cursor=cursor, limit=limit, convert=_target)
        statement = _LIVE_TARGETS
        terms = [f"{name}:{_quote(value)}" for name, value in (("label", where.label), ("namespace", where.namespace))
                 if value is not None]
        if terms:
            query = parse_query(" ".join(terms), _TARGET_FIELDS)
            statement = statement.where(*conditions(query, {"label": matcher(t.c.label),
                                                            "namespace": matcher(t.c.namespace)}))
        if where.discoverable is not None:
            statement = statement.where(t.c.discoverable.is_(sa.true() if where.discoverable else sa.false()))
        if not where.reaped:
            statement = statement.where(t.c.health_state != "reaped")
        with self.read() as conn:
            return paginate(conn, statement, list_name="targets", order=(t.c.label,), cursor=cursor, limit=limit,
                            convert=_target)

    def _live_target(self, conn: sa.Connection, label: str) -> sa.Row[Any] | None:
        return conn.execute(_LIVE_TARGET, {"label": label}).first()

    # -- policies ----------------------------------------------------------------------------------------

    def put_policy(self, write: PolicyWrite, *, command_id: str | None = None) -> PolicyRecord:
        """Creates the policy (by label, within its stack or among standalone ones) or versions a change."""
        data = json_value(dict(write.data))
        stack_id = write.stack_id or ""

        def work(conn: sa.Connection) -> PolicyRecord:
            head = self._live_policy(conn, write.label, stack_id)
            at = now()
            if head is None:
                policy_id, version = new_id(), new_id()
                conn.execute(sa.insert(p).values(id=policy_id, version=version, head=HEAD_LIVE, operation="create",
                                                 label=write.label, policy_type=write.policy_type, stack_id=stack_id,
                                                 data=data, command_id=command_id, created_at=at, valid_from=at))
            else:
                if head.policy_type == write.policy_type and head.data == data:
                    return _policy(head)
                policy_id = head.id
                version = self._advance(conn, p, head, operation="update", head_value=HEAD_LIVE,
                                        command_id=command_id, label=write.label, policy_type=write.policy_type,
                                        stack_id=stack_id, data=data, created_at=head.created_at)
            return _policy(conn.execute(sa.select(p).where(p.c.id == policy_id, p.c.version == version)).one())

        return self.write_retrying(work)

    def delete_policy(self, policy_id: str, *, command_id: str | None = None) -> bool:
        def work(conn: sa.Connection) -> bool:
            head = conn.execute(sa.select(p).where(p.c.id == policy_id, head_is(p.c.head, HEAD_LIVE))).first()
            if head is None:
                return False
            self._advance(conn, p, head, operation="delete", head_value=HEAD_TOMBSTONE, command_id=command_id,
                          label=head.label, policy_type=head.policy_type, stack_id=head.stack_id, data=head.data,
                          created_at=head.created_at)
            conn.execute(sa.delete(sp).where(sp.c.policy_id == policy_id))
            return True

        return self.write_retrying(work)

    def get_policy(self, label: str, stack_id: str | None = None) -> PolicyRecord | None:
        with self.read() as conn:
            row = self._live_policy(conn, label, stack_id or "")
        return _policy(row) if row is not None else None

    def list_policies(self, *, stack_id: str | None = None, cursor: str | None = None,
                      limit: int = DEFAULT_PAGE_SIZE) -> Page[PolicyRecord]:
        """Standalone policies (``stack_id`` None) or the inline policies of one stack, by label."""
        statement = sa.select(p).where(head_is(p.c.head, HEAD_LIVE), p.c.stack_id == (stack_id or ""))
        with self.read() as conn:
            return paginate(conn, statement, list_name=f"policies:{stack_id or ''}", order=(p.c.label,),
                            cursor=cursor, limit=limit, convert=_policy)

    def attach_policy(self, stack_id: str, policy_id: str) -> bool:
        """Attaches a standalone policy to a stack; False if it already was."""
        with self.write() as conn:
            statement = self.insert(sp).values(stack_id=stack_id, policy_id=policy_id, created_at=now())
            # rowcount of an INSERT is not reliable across drivers; RETURNING says whether a row went in.
            return conn.execute(statement.on_conflict_do_nothing().returning(sp.c.policy_id)).first() is not None

    def detach_policy(self, stack_id: str, policy_id: str) -> bool:
        with self.write() as conn:
            return conn.execute(sa.delete(sp).where(sp.c.stack_id == stack_id,
                                                    sp.c.policy_id == policy_id)).rowcount == 1

    def list_attached_policies(self, stack_id: str, *, cursor: str | None = None,
                               limit: int = DEFAULT_PAGE_SIZE) -> Page[PolicyRecord]:
        statement = (sa.select(p).join(sp, sp.c.policy_id == p.c.id)
                     .where(sp.c.stack_id == stack_id, head_is(p.c.head, HEAD_LIVE)))
        with self.read() as conn:
            return paginate(conn, statement, list_name=f"attached:{stack_id}", order=(p.c.label,), cursor=cursor,
                            limit=limit, convert=_policy)

    def policies_of_stacks(self, stack_ids: Iterable[str]) -> dict[str, StackPolicies]:
        """The live policies each of ``stack_ids`` holds, each by label: two queries for them all (chunks of ids),
        where asking stack by stack took two a stack (``GET /stacks`` of 2,000 stacks: 1 s)."""
        held = {stack_id: StackPolicies([], []) for stack_id in stack_ids}
        live = head_is(p.c.head, HEAD_LIVE)
        with self.read() as conn:
            for chunk in in_chunks(held):
                for row in conn.execute(sa.select(p).where(live, p.c.stack_id.in_(chunk)).order_by(p.c.label)):
                    held[row.stack_id].inline.append(_policy(row))
                attached = (sa.select(sp.c.stack_id.label("holder"), p).join(sp, sp.c.policy_id == p.c.id)
                            .where(live, sp.c.stack_id.in_(chunk)).order_by(p.c.label))
                for row in conn.execute(attached):
                    held[row.holder].attached.append(_policy(row))
        return held

    def policy_attachments(self) -> list[tuple[str, str]]:
        """(policy label, stack label) of every live standalone policy attached to a live stack: one query, not
        one a stack."""
        with self.read() as conn:
            return [(row[0], row[1]) for row in conn.execute(_ATTACHMENTS)]

    def has_live_policies(self) -> bool:
        with self.read() as conn:
            return conn.execute(_ANY_LIVE_POLICY).scalar() is True

    def policies_in_force(self, policy_type: str) -> list[tuple[str, PolicyRecord]]:
        live = (head_is(p.c.head, HEAD_LIVE), p.c.policy_type == policy_type)
        inline = sa.select(p.c.stack_id.label("holder"), sa.literal_column("0").label("rank"), p).where(
            p.c.stack_id != "", *live)
        attached = sa.select(sp.c.stack_id.label("holder"), sa.literal_column("1").label("rank"), p).join(
            sp, sp.c.policy_id == p.c.id).where(*live)
        held = sa.union_all(inline, attached).subquery()
        statement = sa.select(held).order_by(held.c.holder, held.c.rank, held.c.label)
        with self.read() as conn:
            return [(row.holder, _policy(row)) for row in conn.execute(statement)]

    def _live_policy(self, conn: sa.Connection, label: str, stack_id: str) -> sa.Row[Any] | None:
        return conn.execute(sa.select(p).where(p.c.label == label, p.c.stack_id == stack_id,
                                               head_is(p.c.head, HEAD_LIVE))).first()


def _quote(value: str) -> str:
    """A filter value as a query-language value: ``*`` stays a wildcard, everything else is literal."""
    return "".join(c if c == "*" else "\\" + c for c in value)
