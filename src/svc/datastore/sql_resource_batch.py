"""Set-based resource writes: one chunk of ``store_resources`` in a handful of statements.

Writing resource by resource cost two round trips per write (look up the head, insert the version), and
on PostgreSQL the lookup's plan depended on planner statistics, which lag during a bulk load: a fresh
database ingested ~100 versions/s. Here a chunk is:

1. two lookups for the whole chunk: the current rows of its ksuids (``head > 0``), and the live owners
   of its (target, type, native id) keys; both are plain equality/IN conditions on unique indexes, which
   PostgreSQL plans the same with or without statistics;
2. the rules of ``store_resource`` applied in order in memory, each write seeing the ones before it;
3. the changes: read-only updates in place, one compare-and-swap UPDATE demoting every superseded head
   (rolled back and retried if a concurrent writer moved one), and one ``executemany`` INSERT of the new
   versions (psycopg pipelines it; the Data API driver splits it under its request cap), then one of their
   references (``resource_references``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from svc.datastore.bulk import BulkStatement
from svc.datastore.errors import ConflictError
from svc.datastore.sql_base import Retry, now, successor
from svc.datastore.tables import (
    HEAD_LIVE,
    HEAD_OLD,
    HEAD_REAPED,
    HEAD_TOMBSTONE,
    head_is,
    resource_references,
    resources,
)
from svc.ids import new_id
from svc.model.native_ids import NativeKey, native_key
from svc.model.records import ResourceWrite, StoreOutcome
from svc.model.values import iter_refs, split_uri

r = resources
Row = dict[str, Any]
log = logging.getLogger("svc.datastore")

# Compared to decide between "no change", "read-only change in place" and "new version".
VERSIONED = ("type", "label", "stack", "target", "native_id", "managed", "properties", "document")

_SET_READ_ONLY = (sa.update(r).where(r.c.ksuid == sa.bindparam("k"), r.c.version == sa.bindparam("v"),
                                     head_is(r.c.head, HEAD_LIVE))
                  .values(read_only_properties=sa.bindparam("ro", type_=r.c.read_only_properties.type)))
_INSERT = BulkStatement(sa.insert(r))
_INSERT_REFERENCES = BulkStatement(sa.insert(resource_references))
# Built once, with expanding lists: building a statement per batch (and its cache key) cost more than running it.
HEADS_BY_KSUID = sa.select(r).where(r.c.head > sa.literal_column("0"),
                                    r.c.ksuid.in_(sa.bindparam("ksuids", expanding=True)))
# No "native_id IS NOT NULL" term, although the unique index's predicate has it: the IN list implies it for both
# planners, and with the term spelled out SQLite scanned the index range "native_id > NULL" (every live
# resource of the type) instead of looking each native id up.
OWNERS_BY_NATIVE_ID = sa.select(r).where(head_is(r.c.head, HEAD_LIVE),
                                         r.c.target.in_(sa.bindparam("targets", expanding=True)),
                                         r.c.type.in_(sa.bindparam("types", expanding=True)),
                                         r.c.native_id.in_(sa.bindparam("native_ids", expanding=True)))
_DEMOTE = (sa.update(r).where(r.c.head > sa.literal_column("0"), r.c.ksuid.in_(sa.bindparam("ksuids", expanding=True)))
           .values(head=HEAD_OLD).returning(r.c.ksuid, r.c.version))


def references_of(row: Mapping[str, Any]) -> list[Row]:
    """The ``resource_references`` rows of a version about to be stored: one per resource its properties refer to."""
    producers = {split_uri(ref["$ref"])[0] for _, ref in iter_refs(row["properties"])}
    return [{"producer": producer, "ksuid": row["ksuid"], "version": row["version"]} for producer in sorted(producers)]


def insert_references(conn: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Stores the references of the versions ``rows`` insert (``references_of``), in ``conn``'s transaction."""
    references = [reference for row in rows for reference in references_of(row)]
    if references:
        _INSERT_REFERENCES.execute(conn, references)


def tombstone_values(row: Row) -> Row:
    """A tombstone keeps the identifying columns (readable history) and drops the state."""
    return {"type": row["type"], "label": row["label"], "stack": row["stack"], "target": row["target"],
            "native_id": row["native_id"], "managed": row["managed"], "properties": {},
            "read_only_properties": {}, "document": {}}


class ChunkWriter:
    """Applies one chunk of writes inside the caller's write transaction."""

    def __init__(self, conn: sa.Connection, command_id: str | None) -> None:
        self.conn = conn
        self.command_id = command_id
        self.heads: dict[str, Row] = {}  # ksuid → current row (live or tombstone)
        self.owners: dict[NativeKey, Row] = {}  # (target, type, native id) → live row
        self.pending: dict[int, Row] = {}  # id(row) → row to insert
        self.demotes: dict[str, str] = {}  # ksuid → version of a stored head to demote
        self.read_only_updates: list[tuple[str, str, Any]] = []

    def load(self, writes: Sequence[ResourceWrite], deletes: Sequence[str] = ()) -> None:
        ksuids = sorted({write.ksuid for write in writes if write.ksuid} | set(deletes))
        keys = {native_key(write.target, write.type, write.native_id) for write in writes
                if write.native_id is not None}
        rows: dict[tuple[str, str], Row] = {}
        if ksuids:
            for row in self.conn.execute(HEADS_BY_KSUID, {"ksuids": ksuids}):
                rows[(row.ksuid, row.version)] = dict(row._mapping)
        if keys:
            targets, types, native_ids = (sorted({k[i] for k in keys}) for i in range(3))
            found = self.conn.execute(OWNERS_BY_NATIVE_ID, {"targets": targets, "types": types,
                                                            "native_ids": native_ids})
            for row in found:
                if native_key(row.target, row.type, row.native_id) in keys:
                    rows.setdefault((row.ksuid, row.version), dict(row._mapping))
        for row in rows.values():  # one dict per stored row, shared by both maps
            self.heads[row["ksuid"]] = row
            if row["head"] == HEAD_LIVE and row["native_id"] is not None:
                self.owners[native_key(row["target"], row["type"], row["native_id"])] = row

    def store(self, write: ResourceWrite, values: Row) -> StoreOutcome:
        """``store_resource``'s rules against the chunk's view of the table."""
        head = self.heads.get(write.ksuid) if write.ksuid else None
        ksuid = write.ksuid
        if write.if_version is not None and (head is None or head["head"] != HEAD_LIVE
                                             or head["version"] != write.if_version):
            return StoreOutcome(ksuid or "", head["version"] if head is not None else None, False, None)
        if head is not None and head["head"] == HEAD_REAPED:
            # Its target was reaped: only declaring the target again brings it back (``put_target``), never a
            # late write (a sync read or a change that raced the reap).
            return StoreOutcome(ksuid or "", head["version"], False, None)
        if write.native_id is not None:
            owner = self.owners.get(native_key(write.target, write.type, write.native_id))
            if owner is not None and owner["ksuid"] != ksuid:
                live = head is not None and head["head"] == HEAD_LIVE
                if owner["managed"] and not write.managed and not live:
                    # A discovery that raced an apply: the managed resource stays as it is.
                    return StoreOutcome(owner["ksuid"], owner["version"], False, None)
                if not live and (not owner["managed"] or write.ksuid is None):
                    # Adoption: the discovered resource on this target becomes the written one (a managed write
                    # takes it over; a rediscovery finds it already stored). A write that names no ksuid is the
                    # resource its key names, whoever manages it.
                    ksuid, head = owner["ksuid"], owner
                elif not owner["managed"] and write.managed:
                    self._append(owner["ksuid"], owner, tombstone_values(owner), "delete", HEAD_TOMBSTONE)
                else:
                    # Another stack's resource is never taken over: moving it is the user's decision, and the
                    # stack that manages it would lose it without being told.
                    raise ConflictError(
                        f"{write.type} {write.native_id!r} on target {write.target!r} already belongs to "
                        f"{owner['stack']}/{owner['label']} (resource {owner['ksuid']}); one resource belongs to "
                        "one stack: remove it from that stack first")
        ksuid = ksuid or new_id()
        if head is not None and head["head"] == HEAD_LIVE:
            if all(head[name] == values[name] for name in VERSIONED):
                if head["read_only_properties"] == values["read_only_properties"]:
                    return StoreOutcome(ksuid, head["version"], False, None)
                head["read_only_properties"] = values["read_only_properties"]
                if id(head) not in self.pending:
                    self.read_only_updates.append((ksuid, head["version"], values["read_only_properties"]))
                return StoreOutcome(ksuid, head["version"], True, "update")
            operation = "update"
        else:
            operation = "create"
        version = self._append(ksuid, head, values, operation, HEAD_LIVE)
        return StoreOutcome(ksuid, version, True, operation)

    def delete(self, ksuid: str) -> StoreOutcome:
        """``delete_resource``'s rule against the chunk's view: a live resource gets a tombstone."""
        head = self.heads.get(ksuid)
        if head is None or head["head"] != HEAD_LIVE:
            return StoreOutcome(ksuid, head["version"] if head is not None else None, False, None)
        version = self._append(ksuid, head, tombstone_values(head), "delete", HEAD_TOMBSTONE)
        return StoreOutcome(ksuid, version, True, "delete")

    def _append(self, ksuid: str, head: Row | None, values: Row, operation: str, head_value: int) -> str:
        version = new_id()
        if head is not None:
            if version <= head["version"]:
                version = successor(head["version"])
            if id(head) not in self.pending:
                self.demotes[ksuid] = head["version"]
            head["head"] = HEAD_OLD
            key = native_key(head["target"], head["type"], head["native_id"])
            if self.owners.get(key) is head:
                del self.owners[key]
        row = {"ksuid": ksuid, "version": version, "head": head_value, "operation": operation,
               "command_id": self.command_id, "valid_from": now(), "references_indexed": True, **values}
        self.pending[id(row)] = row
        self.heads[ksuid] = row
        if head_value == HEAD_LIVE and row["native_id"] is not None:
            self.owners[native_key(row["target"], row["type"], row["native_id"])] = row
        return version

    def flush(self) -> None:
        """Writes the chunk's changes: in-place updates first (they must see their rows still live), then the
        demotions (which free the unique indexes), then the new versions and their references."""
        for ksuid, version, read_only in self.read_only_updates:
            if self.conn.execute(_SET_READ_ONLY, {"k": ksuid, "v": version, "ro": read_only}).rowcount != 1:
                raise Retry("resource changed while updating read-only properties")
        if self.demotes:
            demoted = self.conn.execute(_DEMOTE, {"ksuids": sorted(self.demotes)}).all()
            # Compare-and-swap: exactly the heads this chunk read, no other version (a concurrent writer's).
            if sorted((row.ksuid, row.version) for row in demoted) != sorted(self.demotes.items()):
                raise Retry("resource head moved")
        if self.pending:
            rows = list(self.pending.values())
            _INSERT.execute(self.conn, rows)
            insert_references(self.conn, rows)


class AnalyzeSchedule:
    """Refreshes PostgreSQL's planner statistics of ``resources`` and ``resource_references`` while writes grow them.

    Autovacuum analyzes a table only after it has changed by a fraction of its size and at its own pace, so
    during a fresh load the planner keeps believing the tables are tiny and picks poor plans: a 100,000-version
    load's pages of 200 took 15 ms instead of 5; beside 500 resources never analyzed, the search for a destroy's
    referrers looped over the live versions, scanning the references for each (15 ms instead of 0.2). An ANALYZE
    (a few milliseconds for small tables, ~0.1 s once it samples) whenever the versions this process wrote doubled
    since the last one keeps the statistics within a factor of two of the truth at a logarithmic cost;
    steady-state upkeep is autovacuum's job.
    """

    FIRST = 200

    def __init__(self) -> None:
        self.written = 0
        self.next_at = self.FIRST
        self.enabled = True

    def record(self, engine: sa.Engine, versions: int) -> None:
        if not self.enabled or engine.dialect.name != "postgresql":
            return
        self.written += versions
        if self.written < self.next_at:
            return
        self.next_at = self.written * 2
        try:
            # Not fenced (``write_fence``): statistics change no data, so an ex-leader's refresh harms nothing.
            with engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE resources, resource_references")
        except sa.exc.SQLAlchemyError as error:  # e.g. not the table's owner: the load goes on without
            self.enabled = False
            log.info("could not refresh planner statistics of the resources (%s); leaving it to autovacuum",
                     str(error).splitlines()[0])
