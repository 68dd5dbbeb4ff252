"""Resources: versioned state with tombstones and history, current-version lookups, query-filtered lists."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from svc.datastore.paging import DEFAULT_PAGE_SIZE, PagedQuery, paginate
from svc.datastore.query import Query
from svc.datastore.query_sql import conditions, matcher
from svc.datastore.sql_base import Retry, SqlBase, in_chunks, json_value, now, successor
from svc.datastore.sql_resource_batch import AnalyzeSchedule, ChunkWriter, insert_references, tombstone_values
from svc.datastore.tables import HEAD_LIVE, HEAD_OLD, HEAD_TOMBSTONE, head_is, resource_references, resources
from svc.ids import new_id
from svc.model.records import Page, ResourceScope, ResourceSummary, ResourceVersion, ResourceWrite, StoreOutcome
from svc.model.values import URI_SCHEME

r = resources
x = resource_references

_TEXT_FIELDS = {
    "stack": matcher(r.c.stack),
    "type": matcher(r.c.type, case_insensitive=True),
    "label": matcher(r.c.label),
    "target": matcher(r.c.target),
    "native_id": matcher(r.c.native_id),
}
_BOOL_FIELDS = {"managed": r.c.managed}
_LIST_ORDER = (r.c.type, r.c.label, r.c.ksuid)
_LIVE_RESOURCES = PagedQuery(sa.select(r).where(head_is(r.c.head, HEAD_LIVE)), order=_LIST_ORDER)  # the inventory
_HISTORY_ORDER = (r.c.version,)
_ALL_VERSIONS_ORDER = (r.c.ksuid, r.c.version)
_TRIPLET = (r.c.stack, r.c.type, r.c.label)  # a managed resource's identity in a forma
_LABEL = (r.c.type, r.c.label)  # what a discovered resource is adopted by
_SUMMARY_COLUMNS = (r.c.ksuid, r.c.type, r.c.label, r.c.stack, r.c.target, r.c.native_id, r.c.managed)
_BATCH = 500  # writes per transaction in store_resources
_REFERRING = 20  # producers per text search of ``live_resources_in``: one scan of the unindexed live rows each

# Built once: the write path runs these for every stored version, and building statements costs more CPU
# than executing them.
_SELECT_HEAD = sa.select(r).where(r.c.ksuid == sa.bindparam("k"), r.c.head > sa.literal_column("0"))
_SELECT_LIVE = sa.select(r).where(r.c.ksuid == sa.bindparam("k"), head_is(r.c.head, HEAD_LIVE))
_SELECT_BY_NATIVE_ID = sa.select(r).where(r.c.target == sa.bindparam("target"), r.c.type == sa.bindparam("t"),
                                          r.c.native_id == sa.bindparam("n"), head_is(r.c.head, HEAD_LIVE))
_DEMOTE = (sa.update(r).where(r.c.ksuid == sa.bindparam("k"), r.c.version == sa.bindparam("v"),
                              r.c.head == sa.bindparam("h")).values(head=HEAD_OLD))
_INSERT = sa.insert(r)
_REFERRERS = (sa.select(r).select_from(r.join(x, sa.and_(x.c.ksuid == r.c.ksuid, x.c.version == r.c.version)))
              .where(head_is(r.c.head, HEAD_LIVE), r.c.managed.is_(True)))
# Literally the partial index's predicate (``ix_resources_unindexed``), which SQLite needs to use it.
_UNINDEXED = sa.select(r).where(head_is(r.c.head, HEAD_LIVE), r.c.references_indexed == sa.literal_column("false"),
                                r.c.managed.is_(True))
_ANY_UNINDEXED = _UNINDEXED.with_only_columns(r.c.ksuid).limit(1)


def version_of_row(row: sa.Row[Any]) -> ResourceVersion:
    m = row._mapping
    return ResourceVersion(
        ksuid=m["ksuid"], version=m["version"], operation=m["operation"], type=m["type"], label=m["label"],
        stack=m["stack"], target=m["target"], native_id=m["native_id"], managed=bool(m["managed"]),
        properties=m["properties"], read_only_properties=m["read_only_properties"], document=m["document"],
        command_id=m["command_id"], valid_from=m["valid_from"], current=m["head"] != HEAD_OLD,
        deleted=m["head"] == HEAD_TOMBSTONE or m["operation"] == "delete",
    )


def _summary(row: sa.Row[Any]) -> ResourceSummary:
    m = row._mapping
    return ResourceSummary(ksuid=m["ksuid"], type=m["type"], label=m["label"], stack=m["stack"],
                           target=m["target"], native_id=m["native_id"], managed=bool(m["managed"]))


def write_values(write: ResourceWrite) -> dict[str, Any]:
    return {
        "type": write.type, "label": write.label, "stack": write.stack, "target": write.target,
        "native_id": write.native_id, "managed": write.managed,
        "properties": json_value(dict(write.properties)),
        "read_only_properties": json_value(dict(write.read_only_properties)),
        "document": json_value(dict(write.document)),
    }


class ResourceStore(SqlBase):
    # -- writes ------------------------------------------------------------------------------------------

    def store_resource(self, write: ResourceWrite, *, command_id: str | None = None) -> StoreOutcome:
        """Stores ``write`` as the current state of its resource.

        * Nothing changed: no write. Only read-only properties changed: updated in place (same version).
          Anything else changed: a new version; the old one stays as history.
        * The resource is found by ksuid, else by (target, type, native id) among live resources, so a write
          for a discovered (unmanaged) resource on the same target adopts its ksuid. The same native id on
          another target is another resource; a write without a ksuid is the resource its key names. A
          different live resource that already owns the key is a ``ConflictError`` (a managed one is never
          taken over by another ksuid), unless it is unmanaged and the write is managed: then the discovered
          row is tombstoned, as the managed resource supersedes it. A new unmanaged write for a key a managed
          resource owns changes nothing (a discovery that raced an apply).
        """
        return self.store_resources([write], command_id=command_id)[0]

    def store_resources(self, writes: Sequence[ResourceWrite], *,
                        command_id: str | None = None) -> list[StoreOutcome]:
        """``store_resource`` for many resources (discovery and synchronization ingest): the same rules,
        applied in order, a few hundred per transaction."""
        prepared = [(write, write_values(write)) for write in writes]
        outcomes: list[StoreOutcome] = []
        for start in range(0, len(prepared), _BATCH):
            chunk = prepared[start:start + _BATCH]

            def work(conn: sa.Connection, chunk: list[tuple[ResourceWrite, dict[str, Any]]] = chunk
                     ) -> list[StoreOutcome]:
                self.lock_all(conn, lock_keys(write for write, _ in chunk))
                writer = ChunkWriter(conn, command_id)
                writer.load([write for write, _ in chunk])
                results = [writer.store(write, values) for write, values in chunk]
                writer.flush()
                return results

            outcomes.extend(self.write_retrying(work))
        self._analyze_schedule().record(self.engine, sum(1 for outcome in outcomes if outcome.changed))
        return outcomes

    def _analyze_schedule(self) -> AnalyzeSchedule:
        schedule = self.__dict__.get("_analyze")
        if schedule is None:
            schedule = self.__dict__["_analyze"] = AnalyzeSchedule()
        return schedule

    def delete_resource(self, ksuid: str, *, command_id: str | None = None,
                        if_version: str | None = None) -> StoreOutcome:
        """Writes a tombstone version; deleting a deleted or unknown resource changes nothing, and so does
        ``if_version`` when the current version is another one."""
        return self.write_retrying(lambda conn: self._delete(conn, ksuid, command_id, if_version))

    def _delete(self, conn: sa.Connection, ksuid: str, command_id: str | None,
                if_version: str | None = None) -> StoreOutcome:
        self.lock_all(conn, [f"resource:{ksuid}"])
        head = self._head(conn, ksuid)
        if head is None or head.head != HEAD_LIVE or (if_version is not None and head.version != if_version):
            return StoreOutcome(ksuid, head.version if head is not None else None, False, None)
        version = self._append(conn, ksuid, head, tombstone_values(dict(head._mapping)), "delete", HEAD_TOMBSTONE,
                               command_id)
        return StoreOutcome(ksuid, version, True, "delete")

    def _append(self, conn: sa.Connection, ksuid: str, head: sa.Row[Any] | None, values: dict[str, Any],
                operation: str, head_value: int, command_id: str | None) -> str:
        """Inserts a new current version, demoting ``head`` with a compare-and-swap: if another writer
        demoted it first, the transaction is retried."""
        version = new_id()
        if head is not None:
            if version <= head.version:
                version = successor(head.version)
            demoted = conn.execute(_DEMOTE, {"k": ksuid, "v": head.version, "h": head.head})
            if demoted.rowcount != 1:
                raise Retry("resource head moved")
        row = {"ksuid": ksuid, "version": version, "head": head_value, "operation": operation,
               "command_id": command_id, "valid_from": now(), "references_indexed": True, **values}
        conn.execute(_INSERT, row)
        insert_references(conn, [row])
        return version

    # -- current-state reads -----------------------------------------------------------------------------

    def _head(self, conn: sa.Connection, ksuid: str) -> sa.Row[Any] | None:
        return conn.execute(_SELECT_HEAD, {"k": ksuid}).first()

    def _live_by_native_id(self, conn: sa.Connection, target: str, type_: str, native_id: str
                            ) -> sa.Row[Any] | None:
        return conn.execute(_SELECT_BY_NATIVE_ID, {"target": target, "t": type_, "n": native_id}).first()

    def get_resource(self, ksuid: str) -> ResourceVersion | None:
        """The current version of a live resource; None if unknown or deleted."""
        with self.read() as conn:
            row = conn.execute(_SELECT_LIVE, {"k": ksuid}).first()
        return version_of_row(row) if row is not None else None

    def get_resource_by_native_id(self, target: str, type_: str, native_id: str) -> ResourceVersion | None:
        """The live resource that is ``native_id`` of ``type_`` on ``target`` (its provider identity)."""
        with self.read() as conn:
            row = self._live_by_native_id(conn, target, type_, native_id)
        return version_of_row(row) if row is not None else None

    def get_resource_by_label(self, stack: str, type_: str, label: str) -> ResourceVersion | None:
        """The live resource with that (stack, type, label); a managed one wins over discovered ones."""
        with self.read() as conn:
            row = conn.execute(
                sa.select(r).where(r.c.stack == stack, r.c.type == type_, r.c.label == label,
                                   head_is(r.c.head, HEAD_LIVE))
                .order_by(r.c.managed.desc(), r.c.ksuid).limit(1)).first()
        return version_of_row(row) if row is not None else None

    def list_resources(self, query: Query | None = None, *, cursor: str | None = None,
                       limit: int = DEFAULT_PAGE_SIZE) -> Page[ResourceVersion]:
        """Live resources matching ``query``, ordered by (type, label, ksuid)."""
        if query is None:  # every command's admission reads the whole inventory
            with self.read() as conn:
                return _LIVE_RESOURCES.page(conn, list_name="resources", cursor=cursor, limit=limit,
                                            convert=version_of_row)
        statement = sa.select(r).where(head_is(r.c.head, HEAD_LIVE), *conditions(query, _TEXT_FIELDS, _BOOL_FIELDS))
        with self.read() as conn:
            return paginate(conn, statement, list_name="resources", order=_LIST_ORDER, cursor=cursor,
                            limit=limit, convert=version_of_row)

    def list_resource_summaries(self, query: Query | None = None, *, cursor: str | None = None,
                                limit: int = DEFAULT_PAGE_SIZE) -> Page[ResourceSummary]:
        """Like ``list_resources`` but only the indexed columns: no JSON is read or decoded."""
        statement = sa.select(*_SUMMARY_COLUMNS).where(head_is(r.c.head, HEAD_LIVE),
                                                       *conditions(query, _TEXT_FIELDS, _BOOL_FIELDS))
        with self.read() as conn:
            return paginate(conn, statement, list_name="resource-summaries", order=_LIST_ORDER, cursor=cursor,
                            limit=limit, convert=_summary)

    def live_resources_in(self, scope: ResourceScope) -> list[ResourceVersion]:
        """The live resources of ``scope``, each once, in no particular order."""
        live = head_is(r.c.head, HEAD_LIVE)
        managed = r.c.managed.is_(True)
        # Each statement with the keys its rows must have, when it reads more than those.
        statements: list[tuple[sa.Select[Any], _Keys | None]] = []
        for column, keys in ((r.c.stack, scope.stacks), (r.c.target, scope.targets), (r.c.ksuid, scope.ksuids)):
            statements += [(sa.select(r).where(live, column.in_(chunk)), None) for chunk in in_chunks(keys)]
        for where, columns, keys in ((managed, _TRIPLET, scope.triplets), (~managed, _LABEL, scope.labels)):
            for chunk in in_chunks(keys):
                # An IN list per column, the rows of other combinations left out here: SQLite looks a row value
                # (``(type, label) IN (...)``) up in no index, and scanned every live row for it (13 ms at 100,000).
                lists = [column.in_(sorted({key[n] for key in chunk})) for n, column in enumerate(columns)]
                statements.append((sa.select(r).where(live, where, *lists), _Keys(columns, set(chunk))))
        # The referrers: by the index of references, and among the live versions an agent of an earlier release
        # wrote without indexing theirs (none once every agent is of this one), by their properties' text, where
        # a reference {"$ref": "svc://<ksuid>#/<path>"} names its producer.
        statements += [(_REFERRERS.where(x.c.producer.in_(chunk)), None)
                       for chunk in in_chunks(scope.referring_to)]
        text = sa.cast(r.c.properties, sa.Text)
        searches = [(_UNINDEXED.where(sa.or_(*(text.contains(f"{URI_SCHEME}{ksuid}#", autoescape=True)
                                               for ksuid in chunk))), None)
                    for chunk in in_chunks(scope.referring_to, _REFERRING)]
        found: dict[str, ResourceVersion] = {}
        with self.read() as conn:
            if searches and conn.execute(_ANY_UNINDEXED).first() is not None:
                statements += searches
            for statement, keys in statements:
                for row in conn.execute(statement):
                    if keys is None or keys.match(row):
                        found.setdefault(row.ksuid, version_of_row(row))
        return list(found.values())

    def resource_history(self, ksuid: str, *, cursor: str | None = None,
                         limit: int = DEFAULT_PAGE_SIZE) -> Page[ResourceVersion]:
        """Every stored version of one resource, oldest first, tombstones included."""
        statement = sa.select(r).where(r.c.ksuid == ksuid)
        with self.read() as conn:
            return paginate(conn, statement, list_name=f"history:{ksuid}", order=_HISTORY_ORDER, cursor=cursor,
                            limit=limit, convert=version_of_row)

    def list_resource_versions(self, *, cursor: str | None = None,
                               limit: int = DEFAULT_PAGE_SIZE) -> Page[ResourceVersion]:
        """All versions of all resources by (ksuid, version): the walk boot-time backfills page through."""
        with self.read() as conn:
            return paginate(conn, sa.select(r), list_name="resource-versions", order=_ALL_VERSIONS_ORDER,
                            cursor=cursor, limit=limit, convert=version_of_row)

    def count_resources(self, *, stack: str | None = None, target: str | None = None,
                        managed: bool | None = None, up_to: int | None = None) -> int:
        """The live resources matching, counted no further than ``up_to`` when given (then ``min(count, up_to)``:
        whether an estate is larger than some size costs that size, not the estate's)."""
        with self.read() as conn:
            return self._count_resources_in(conn, stack=stack, target=target, managed=managed, up_to=up_to)

    @staticmethod
    def _count_resources_in(conn: sa.Connection, *, stack: str | None = None, target: str | None = None,
                            managed: bool | None = None, up_to: int | None = None) -> int:
        rows = sa.select(sa.literal_column("1")).select_from(r).where(head_is(r.c.head, HEAD_LIVE))
        if stack is not None:
            rows = rows.where(r.c.stack == stack)
        if target is not None:
            rows = rows.where(r.c.target == target)
        if managed is not None:
            rows = rows.where(r.c.managed.is_(sa.true() if managed else sa.false()))
        if up_to is not None:
            rows = rows.limit(up_to)
        return int(conn.execute(sa.select(sa.func.count()).select_from(rows.subquery())).scalar_one())


class _Keys:
    """The combinations of ``columns`` a statement's rows must have."""

    def __init__(self, columns: tuple[sa.Column[Any], ...], wanted: set[tuple[Any, ...]]) -> None:
        self.names = tuple(column.key for column in columns)
        self.wanted = wanted

    def match(self, row: sa.Row[Any]) -> bool:
        m = row._mapping
        return tuple(m[name] for name in self.names) in self.wanted


def lock_keys(writes: Iterable[ResourceWrite]) -> list[str]:
    keys: set[str] = set()
    for write in writes:
        if write.ksuid:
            keys.add(f"resource:{write.ksuid}")
        if write.native_id is not None:
            keys.add(f"native:{write.target}:{write.type}:{write.native_id}")
    return sorted(keys)

