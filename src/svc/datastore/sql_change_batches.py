"""The engine's group commit as one transaction (``commit_changes``).

The engine's writer commits whatever its running changes queued (results and state transitions) as one
batch. Made of the separate calls, a batch was a ``store_resources`` transaction, then one transaction per
tombstone (``delete_resource``), then a ``set_resource_update_states`` one; every transaction costs a
connection checkout, BEGIN and COMMIT, and on SQLite the database's write lock, which the agent's other
writers queue for. Here the same rules run in a single write transaction: resource versions and tombstones
through one ``ChunkWriter`` (two lookups, one demotion, one insert for the whole batch), then the update
states, so a state still never commits without the resource state it reports. A concurrent writer that
wins a compare-and-swap, or an update state the batch assumed not terminal that was (``StateFence``), reruns
the whole batch (``write_retrying``).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from svc.datastore.sql_resource_batch import ChunkWriter
from svc.datastore.sql_resources import ResourceStore, lock_keys, write_values
from svc.datastore.sql_update_batches import StateFence, UpdateBatchStore
from svc.datastore.update_writes import ChangeBatch, ChangeBatchOutcome
from svc.model.records import ResourceWrite, StoreOutcome


class ChangeBatchStore(ResourceStore, UpdateBatchStore):
    def commit_changes(self, batch: ChangeBatch) -> ChangeBatchOutcome:
        """Stores the batch's resource versions, then its tombstones, then its update states, in order and in
        one transaction; each answer is what the separate call would have answered."""
        prepared: list[tuple[str | None, ResourceWrite, dict[str, Any]]] = [
            (command_id, write, write_values(write)) for command_id, write in batch.resources]
        fence = StateFence(self.engine.dialect)

        def work(conn: sa.Connection) -> ChangeBatchOutcome:
            writes = [write for _, write, _ in prepared]
            deleted = [ksuid for _, ksuid in batch.deletes]
            self.lock_all(conn, sorted(set(lock_keys(writes)) | {f"resource:{ksuid}" for ksuid in deleted}))
            chunk = ChunkWriter(conn, None)
            chunk.load(writes, deleted)
            stored: list[StoreOutcome] = []
            for command_id, write, values in prepared:
                chunk.command_id = command_id  # each version records the command that wrote it
                stored.append(chunk.store(write, values))
            tombstones: list[StoreOutcome] = []
            for command_id, ksuid in batch.deletes:
                chunk.command_id = command_id
                tombstones.append(chunk.delete(ksuid))
            chunk.flush()
            return ChangeBatchOutcome(stored, tombstones, fence.write(conn, batch.states))

        outcome = self.write_retrying(work)
        written = sum(1 for result in (*outcome.stored, *outcome.deleted) if result.changed)
        self._analyze_schedule().record(self.engine, written)
        return outcome
