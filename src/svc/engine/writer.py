"""The engine's single writer: concurrent changes' small writes coalesced into few transactions.

Hundreds of changes finishing at once would otherwise each take the database's write lock for one row
(SQLite serialises writers, with sleeping busy waits). Here every write is queued and one task commits
whatever is queued as one batch, in one transaction (``Datastore.commit_changes``): resource versions
first, then update states, so a completion is never durable before the resource state it reports. Each
caller still awaits its own write (and its result); a batch that fails is retried one write at a time so
that one bad write fails only its caller. A batch the datastore cannot take right now (``DatastoreUnavailable``:
an outage) is committed again, after growing pauses, until it can: its writes and every one queued behind it
wait in memory, in order, so that what plugins answered meanwhile is recorded once the datastore is back and
no caller sees the outage (``outage``). Since a batch stores every version before every tombstone, a
version of a ksuid that an earlier write of the batch tombstones (a replace's create after its delete) starts
the next batch instead.

While changes that will write are still running, a batch waits for them a little (``LINGER``, until ``GATHER``
writes are queued, or as many as the running changes have yet to make): a commit costs ~1 ms of CPU on top of
~0.1 ms per write, and plugin answers trickling in made batches of a few writes each (9 on average for LOCAL's
1,000 creates), so the commit thread spent twice the CPU its writes needed, and held the GIL the event loop
wanted meanwhile. A command's end waits for its last batch, so as its last changes end the batches halve, and
once no running change is left to write what is queued commits at once. Waiting loses nothing: a write not yet
committed is one whose plugin call the next agent re-drives by its token, as for any commit under way at a
crash.

Batches commit on a thread of the writer's own, at the process's priority. Nothing waits for a commit but
the command's end (a change's dependents start once its plugin answered, ``executor``), yet that end does: a
commit thread run below the event loop's priority (niceness +10, tried until issue 30) gave way to every other
process of a shared machine as well, and the last commits of a command waited 10 to 280 ms for a CPU after its
last plugin answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from svc.datastore.errors import DatastoreUnavailable
from svc.datastore.interface import Datastore
from svc.datastore.outage import Backoff
from svc.datastore.update_writes import ChangeBatch, UpdateStateWrite
from svc.model.records import ResourceWrite, StoreOutcome, every_item

log = logging.getLogger("svc.engine")
MAX_BATCH = 500
LINGER = 0.02  # seconds a batch waits for the writes of running changes
GATHER = 32  # queued writes that end the wait (at most: fewer once fewer are to come)


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


def _deliver(batch: list[_Pending], results: list[Any]) -> None:
    for item, result in zip(batch, results, strict=True):
        if item.future.done():
            continue
        if isinstance(result, BaseException):
            item.future.set_exception(result)
        else:
            item.future.set_result(result)


def _state_of(item: _Pending) -> UpdateStateWrite:
    """The update state a "state" or "finish" item writes."""
    return item.payload if item.kind == "state" else item.payload[2]


def _version_of(item: _Pending) -> str | None:
    """The ksuid whose version ``item`` writes, if any."""
    if item.kind == "resource":
        return item.payload.ksuid
    if item.kind == "finish" and item.payload[0] is not None:
        return item.payload[0].ksuid
    return None


def _tombstone_of(item: _Pending) -> str | None:
    """The ksuid ``item`` tombstones, if any."""
    if item.kind == "delete":
        return item.payload
    return item.payload[1] if item.kind == "finish" else None


class WriterClosed(RuntimeError):
    """The engine stopped; the write was not made (a later start resumes from what was stored)."""


def _settle(waiting: asyncio.Future[None]) -> None:
    if not waiting.done():
        waiting.set_result(None)


class BatchWriter:
    def __init__(self, store: Datastore, *, linger: float = LINGER) -> None:
        self.store = store
        self.linger = linger
        # How many running changes have yet to queue their ends: the engine's runs say so. A batch waits for them up
        # to ``linger`` seconds.
        self.writes_coming: Callable[[], int] = lambda: 0
        self._queue: deque[_Pending] = deque()
        self._waiting: asyncio.Future[None] | None = None  # the writer's task waits for writes to commit
        self._gathering = False  # ... and for more of them, not the first
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._unsettled: set[asyncio.Future[Any]] = set()  # queued or committing (``flush``)
        # Its thread starts with the first batch.
        self._thread = ThreadPoolExecutor(1, "svc-writer")

    def _ensure(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="engine writer")

    def _submit(self, pending: _Pending) -> asyncio.Future[Any]:
        """Queues ``pending`` now; its future answers once its batch is committed."""
        if self._closed:
            raise WriterClosed("the engine has stopped: nothing more is written")
        self._ensure()
        self._queue.append(pending)
        if self._waiting is not None and (not self._gathering or self._gathered()):
            _settle(self._waiting)
        self._unsettled.add(pending.future)
        pending.future.add_done_callback(self._unsettled.discard)
        return pending.future

    async def flush(self, timeout: float) -> bool:
        """Until every write queued so far is committed (or failed), for at most ``timeout`` seconds (the datastore
        may be down); whether all were. What a stopping run handed over is then stored."""
        if self._unsettled:
            _, pending = await asyncio.wait(set(self._unsettled), timeout=timeout)
            return not pending
        return True

    async def store_resource(self, write: ResourceWrite, command_id: str | None) -> StoreOutcome:
        return await self._submit(_Pending("resource", write, command_id))

    async def delete_resource(self, ksuid: str, command_id: str | None) -> StoreOutcome:
        return await self._submit(_Pending("delete", ksuid, command_id))

    def set_state(self, write: UpdateStateWrite) -> asyncio.Future[bool]:
        """Queued when called, like ``finish``; the future answers whether the state moved."""
        return self._submit(_Pending("state", write, write.command_id))

    def finish(self, resource: ResourceWrite | None, deleted: str | None,
               state: UpdateStateWrite) -> asyncio.Future[Finished]:
        """A change's end: its resource state (a version, or a tombstone for ``deleted``), then its update
        state, committed in that order in one batch. Queued when called, so whatever the caller does next
        (start its dependents) is written after it; the future answers whether the state moved, and what the
        resource write did."""
        return self._submit(_Pending("finish", (resource, deleted, state), state.command_id))

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await asyncio.to_thread(self._thread.shutdown)  # a commit under way ends before the engine stops

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        held: _Pending | None = None  # the write that had to start the next batch
        while True:
            if held is None:
                await self._ready(loop)
            batch = [held if held is not None else self._queue.popleft()]
            held = None
            tombstoned = {_tombstone_of(batch[0])} - {None}
            while len(batch) < MAX_BATCH and self._queue:
                item = self._queue.popleft()
                # A batch stores versions before tombstones: a version of a ksuid tombstoned earlier in it (a
                # replace's create, which starts as soon as its delete answered) waits for the next batch.
                if tombstoned and _version_of(item) in tombstoned:
                    held = item
                    break
                batch.append(item)
                if (tombstone := _tombstone_of(item)) is not None:
                    tombstoned.add(tombstone)
            try:
                await self._until_available(self._commit_and_deliver, loop, batch)
            except Exception:  # noqa: BLE001 - isolate the failing write
                _deliver(batch, [await self._until_available(self._one, item) for item in batch])

    async def _ready(self, loop: asyncio.AbstractEventLoop) -> None:
        """Until writes are queued and either enough of them (``_gathered``) or the first waited ``linger`` seconds.
        They stay in the queue meanwhile (a cancel of this task drops none)."""
        if not self._queue:
            await self._wait(loop, None, gathering=False)
        if self.linger > 0 and not self._gathered():
            await self._wait(loop, self.linger, gathering=True)

    def _gathered(self) -> bool:
        """Whether the queue holds ``GATHER`` writes, or at least as many as running changes have yet to make."""
        return len(self._queue) >= min(GATHER, self.writes_coming())

    async def _wait(self, loop: asyncio.AbstractEventLoop, timeout: float | None, *, gathering: bool) -> None:
        self._waiting = waiting = loop.create_future()
        self._gathering = gathering
        timer = None if timeout is None else loop.call_later(timeout, _settle, waiting)
        try:
            await waiting
        finally:
            if timer is not None:
                timer.cancel()
            self._waiting = None

    async def _until_available(self, work: Callable[..., Any], *args: Any) -> Any:
        """``work(*args, again)`` on the commit thread, again after a pause for as long as the datastore is
        unavailable; ``again`` tells it whether it runs after such a failure (its first run may have committed)."""
        loop = asyncio.get_running_loop()
        backoff: Backoff | None = None
        while True:
            try:
                return await loop.run_in_executor(self._thread, work, *args, backoff is not None)
            except DatastoreUnavailable:
                backoff = backoff or Backoff()
                await asyncio.sleep(backoff.next())

    def _commit_and_deliver(self, loop: asyncio.AbstractEventLoop, batch: list[_Pending], again: bool) -> None:
        """Commits ``batch`` and hands each caller its answer straight from this thread: through this task
        (the executor future's completion, then this task's wake-up) each answer took two more turns of the
        event loop, milliseconds each under load, and the command's end waits for its last answers."""
        results = self._commit(batch)
        if again:
            results = self._confirmed(batch, results)
        loop.call_soon_threadsafe(_deliver, batch, results)

    def _confirmed(self, batch: list[_Pending], results: list[Any]) -> list[Any]:
        """``results`` of a batch committed again after a failure that may have come after its first commit (the
        connection lost while committing): a state write found already made by that commit moved, not fenced."""
        unmoved = [index for index, (item, result) in enumerate(zip(batch, results, strict=True))
                   if item.kind == "state" and result is False
                   or item.kind == "finish" and isinstance(result, Finished) and not result.moved]
        if not unmoved:
            return results
        stored: dict[tuple[str, str, str], str] = {}
        for command_id in {_state_of(batch[index]).command_id for index in unmoved}:
            for update in every_item(lambda c, i=command_id: self.store.get_resource_update_summaries(
                    i, cursor=c, limit=1000)):
                stored[(command_id, update.ksuid, update.operation)] = str(update.state)
        confirmed = list(results)
        for index in unmoved:
            write = _state_of(batch[index])
            if stored.get((write.command_id, write.ksuid, write.operation)) == str(write.state):
                result = results[index]
                confirmed[index] = True if result is False else Finished(True, result.stored)
        return confirmed

    def _commit(self, batch: list[_Pending]) -> list[Any]:
        """The batch as one datastore transaction (``commit_changes``); each item's answer, in order."""
        resources: list[tuple[str | None, ResourceWrite]] = []
        resource_of: list[tuple[int, bool]] = []  # per resource write: (batch index, part of a finish)
        deletes: list[tuple[str | None, str]] = []
        delete_of: list[int] = []  # per tombstone: its batch index (-1: part of a finish)
        states: list[UpdateStateWrite] = []
        state_of: list[int] = []
        for index, item in enumerate(batch):
            if item.kind == "resource":
                resources.append((item.command_id, item.payload))
                resource_of.append((index, False))
            elif item.kind == "delete":
                deletes.append((item.command_id, item.payload))
                delete_of.append(index)
            elif item.kind == "state":
                states.append(item.payload)
                state_of.append(index)
            else:
                resource, deleted, state = item.payload
                if resource is not None:
                    resources.append((item.command_id, resource))
                    resource_of.append((index, True))
                if deleted is not None:
                    deletes.append((item.command_id, deleted))
                    delete_of.append(-1)
                states.append(state)
                state_of.append(index)
        outcome = self.store.commit_changes(ChangeBatch(resources, deletes, states))
        results: dict[int, Any] = {}
        stored: dict[int, StoreOutcome] = {}  # finish index → its resource's outcome
        for (index, finishing), result in zip(resource_of, outcome.stored, strict=True):
            (stored if finishing else results)[index] = result
        for index, result in zip(delete_of, outcome.deleted, strict=True):
            if index >= 0:
                results[index] = result
        for index, moved in zip(state_of, outcome.moved, strict=True):
            results[index] = Finished(moved, stored.get(index)) if batch[index].kind == "finish" else moved
        return [results[i] for i in range(len(batch))]

    def _one(self, item: _Pending, again: bool) -> Any:
        """``item`` alone; its answer, or the error for its caller (an outage is raised: it is waited out)."""
        try:
            if item.kind == "resource":
                return self.store.store_resource(item.payload, command_id=item.command_id)
            if item.kind == "delete":
                return self.store.delete_resource(item.payload, command_id=item.command_id)
            results = self._commit([item])
            return (self._confirmed([item], results) if again else results)[0]
        except DatastoreUnavailable:
            raise
        except Exception as error:  # noqa: BLE001 - handed to the caller
            return error
