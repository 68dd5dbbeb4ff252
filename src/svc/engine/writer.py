"""The engine's single writer: concurrent changes' small writes coalesced into few transactions.

Hundreds of changes finishing at once would otherwise each take the database's write lock for one row
(SQLite serialises writers, with sleeping busy waits). Here every write is queued and one task commits
whatever is queued as one batch: resource versions first, then update states, so a completion is never
durable before the resource state it reports. Each caller still awaits its own write (and its result);
a batch that fails is retried one write at a time so that one bad write fails only its caller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from svc.datastore.interface import Datastore
from svc.datastore.records import ResourceWrite, StoreOutcome
from svc.datastore.update_writes import UpdateStateWrite

log = logging.getLogger("svc.engine")
MAX_BATCH = 500


@dataclass
class _Pending:
    kind: str  # "resource", "delete", "state"
    payload: Any
    command_id: str | None
    future: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass(frozen=True, slots=True)
class Finished:
    moved: bool
    stored: StoreOutcome | None  # the resource version written with it (None for a delete or no resource)


class WriterClosed(RuntimeError):
    """The engine stopped; the write was not made (a later start resumes from what was stored)."""


class BatchWriter:
    def __init__(self, store: Datastore) -> None:
        self.store = store
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def _ensure(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="engine writer")

    async def _submit(self, pending: _Pending) -> Any:
        if self._closed:
            raise WriterClosed("the engine has stopped: nothing more is written")
        self._ensure()
        self._queue.put_nowait(pending)
        return await pending.future

    async def store_resource(self, write: ResourceWrite, command_id: str | None) -> StoreOutcome:
        return await self._submit(_Pending("resource", write, command_id))

    async def delete_resource(self, ksuid: str, command_id: str | None) -> StoreOutcome:
        return await self._submit(_Pending("delete", ksuid, command_id))

    async def set_state(self, write: UpdateStateWrite) -> bool:
        return await self._submit(_Pending("state", write, write.command_id))

    async def finish(self, resource: ResourceWrite | None, deleted: str | None, state: UpdateStateWrite) -> Finished:
        """A change's end: its resource state (a version, or a tombstone for ``deleted``), then its update
        state, committed in that order in one batch; returns whether the state moved, and what the resource
        write did."""
        return await self._submit(_Pending("finish", (resource, deleted, state), state.command_id))

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                results = await asyncio.to_thread(self._commit, batch)
            except Exception:  # noqa: BLE001 - isolate the failing write
                results = [await asyncio.to_thread(self._one, item) for item in batch]
            for item, result in zip(batch, results, strict=True):
                if item.future.done():
                    continue
                if isinstance(result, BaseException):
                    item.future.set_exception(result)
                else:
                    item.future.set_result(result)

    def _commit(self, batch: list[_Pending]) -> list[Any]:
        results: dict[int, Any] = {}
        stored: dict[int, StoreOutcome] = {}  # finish index → its resource's outcome
        resources: dict[str | None, list[tuple[int, ResourceWrite]]] = {}
        deletes: list[tuple[int, str, str | None]] = []
        states: list[tuple[int, UpdateStateWrite]] = []
        for index, item in enumerate(batch):
            if item.kind == "resource":
                resources.setdefault(item.command_id, []).append((index, item.payload))
            elif item.kind == "delete":
                deletes.append((index, item.payload, item.command_id))
            elif item.kind == "state":
                states.append((index, item.payload))
            else:
                resource, deleted, state = item.payload
                if resource is not None:
                    resources.setdefault(item.command_id, []).append((-1 - index, resource))
                if deleted is not None:
                    deletes.append((-1, deleted, item.command_id))
                states.append((index, state))
        for command_id, writes in resources.items():
            outcomes = self.store.store_resources([write for _, write in writes], command_id=command_id)
            for (i, _), outcome in zip(writes, outcomes, strict=True):
                if i >= 0:
                    results[i] = outcome
                else:
                    stored[-1 - i] = outcome
        for index, ksuid, command_id in deletes:
            outcome = self.store.delete_resource(ksuid, command_id=command_id)
            if index >= 0:
                results[index] = outcome
        if states:
            moved = self.store.set_resource_update_states([write for _, write in states])
            for (i, _), m in zip(states, moved, strict=True):
                results[i] = Finished(m, stored.get(i)) if batch[i].kind == "finish" else m
        return [results[i] for i in range(len(batch))]

    def _one(self, item: _Pending) -> Any:
        run: Callable[[], Any]
        if item.kind == "finish":
            try:
                return self._commit([item])[0]
            except Exception as error:  # noqa: BLE001 - handed to the caller
                return error
        if item.kind == "resource":
            run = lambda: self.store.store_resource(item.payload, command_id=item.command_id)  # noqa: E731
        elif item.kind == "delete":
            run = lambda: self.store.delete_resource(item.payload, command_id=item.command_id)  # noqa: E731
        else:
            run = lambda: self.store.set_resource_update_states([item.payload])[0]  # noqa: E731
        try:
            return run()
        except Exception as error:  # noqa: BLE001 - handed to the caller
            return error
