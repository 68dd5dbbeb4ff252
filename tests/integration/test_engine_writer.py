"""The engine's single writer (``BatchWriter``) on a real datastore: concurrent changes' ends are committed
together, each caller gets its own answer (straight from the committing thread), and one bad write fails
only its caller."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import pytest

from support.records import T0, item_write, stored_command
from svc.datastore import ConflictError, Datastore, DatastoreUnavailable
from svc.datastore.update_writes import UpdateStateWrite
from svc.engine.writer import BatchWriter, Finished, WriterClosed
from svc.ids import new_id
from svc.model.records import CommandRecord, ResourceUpdateRecord, ResourceWrite


def _write(ksuid: str, native_id: str) -> ResourceWrite:
    return item_write(ksuid, ksuid, native_id)


def _success(command: str, ksuid: str) -> UpdateStateWrite:
    return UpdateStateWrite(command, ksuid, "create", "Success", data={"message": f"{ksuid} done"})


class _Counting:
    """The datastore, counting the group commits made through it."""

    def __init__(self, store: Datastore) -> None:
        self.store = store
        self.commits = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def commit_changes(self, batch: Any) -> Any:
        self.commits += 1
        return self.store.commit_changes(batch)


def test_concurrent_ends_are_committed_in_batches_and_each_caller_gets_its_own_answer(
        datastore: Datastore) -> None:
    ksuids = [new_id() for _ in range(40)]
    command = stored_command(datastore, *ksuids, state="NotStarted")
    counting = _Counting(datastore)

    async def run() -> list[Finished]:
        writer = BatchWriter(counting)  # type: ignore[arg-type]
        try:
            return list(await asyncio.gather(*(writer.finish(_write(k, f"n-{k}"), None, _success(command, k))
                                               for k in ksuids)))
        finally:
            await writer.close()

    finished = asyncio.run(run())
    assert all(f.moved for f in finished)
    assert [f.stored.ksuid for f in finished] == ksuids  # type: ignore[union-attr]
    assert 1 <= counting.commits < len(ksuids)
    stored = {u.ksuid: (u.state, u.data) for u in datastore.get_resource_updates(command).items}
    assert stored == {k: ("Success", {"message": f"{k} done"}) for k in ksuids}
    assert all(datastore.get_resource(k).version == f.stored.version  # type: ignore[union-attr]
               for k, f in zip(ksuids, finished, strict=True))


def test_a_replace_whose_create_ends_right_after_its_delete_leaves_the_resource_live(datastore: Datastore) -> None:
    """A replace deletes and creates the same ksuid. The create starts once the delete's plugin answered, so both
    ends can be queued before the next commit; a batch stores versions before tombstones, so the two must not
    share one, or the new version would be tombstoned at once."""
    ksuid = new_id()
    command = new_id()
    datastore.put_command(CommandRecord(id=command, command="apply", state="InProgress", start_ts=T0, client_id="c",
                                        mode="reconcile"),
                          [ResourceUpdateRecord(command_id=command, ksuid=ksuid, operation=operation, state="NotStarted",
                                                resource_type="FAKE::Test::Item", resource_label="b", stack_label="app",
                                                data={}) for operation in ("delete", "create")])
    datastore.store_resource(_write(ksuid, "n-old"), command_id=command)

    counting = _Counting(datastore)

    async def run() -> list[Finished]:
        writer = BatchWriter(counting)  # type: ignore[arg-type]
        try:
            deleted = writer.finish(None, ksuid, UpdateStateWrite(command, ksuid, "delete", "Success"))
            created = writer.finish(_write(ksuid, "n-new"), None, UpdateStateWrite(command, ksuid, "create",
                                                                                    "Success"))
            return list(await asyncio.gather(deleted, created))
        finally:
            await writer.close()

    finished = asyncio.run(run())
    assert all(f.moved for f in finished)
    live = datastore.get_resource(ksuid)
    assert live is not None and live.native_id == "n-new"
    assert counting.commits == 2  # split there and only there


def test_writes_without_a_tombstone_before_them_share_a_batch(datastore: Datastore) -> None:
    ksuids = [new_id() for _ in range(6)]
    command = stored_command(datastore, *ksuids, state="NotStarted")
    counting = _Counting(datastore)

    async def run() -> None:
        writer = BatchWriter(counting)  # type: ignore[arg-type]
        try:
            ends = [writer.finish(_write(ksuids[0], "n-0"), None, _success(command, ksuids[0]))]
            ends += [writer.set_state(UpdateStateWrite(command, k, "create", "InProgress")) for k in ksuids[1:]]
            await asyncio.gather(*ends)
        finally:
            await writer.close()

    asyncio.run(run())
    assert counting.commits == 1


def test_a_batch_waits_for_the_ends_running_changes_have_yet_to_write(datastore: Datastore) -> None:
    """While running changes have ends to come, a batch waits for them (the linger is far longer than the test)
    until it holds as many as are still to come: two ends queued in different turns of the event loop, with a
    third change still running, share a commit."""
    ksuids = [new_id() for _ in range(2)]
    command = stored_command(datastore, *ksuids, state="NotStarted")
    counting = _Counting(datastore)
    coming = [3]

    async def run() -> None:
        writer = BatchWriter(counting, linger=600)  # type: ignore[arg-type]
        writer.writes_coming = lambda: coming[0]
        try:
            ends = []
            for ksuid in ksuids:
                coming[0] -= 1  # a change leaves the running ones as it queues its end
                ends.append(writer.finish(_write(ksuid, f"n-{ksuid}"), None, _success(command, ksuid)))
                for _ in range(5):
                    await asyncio.sleep(0)  # the writer's task runs in between
            await asyncio.wait_for(asyncio.gather(*ends), 60)
        finally:
            await writer.close()

    asyncio.run(run())
    assert counting.commits == 1
    assert {u.state for u in datastore.get_resource_updates(command).items} == {"Success"}


def test_a_write_with_no_running_change_behind_it_commits_without_waiting(datastore: Datastore) -> None:
    command = stored_command(datastore, "k1", state="NotStarted")

    async def run() -> None:
        writer = BatchWriter(datastore, linger=600)
        writer.writes_coming = lambda: 0
        try:
            await asyncio.wait_for(writer.set_state(_success(command, "k1")), 60)  # not 600 s
        finally:
            await writer.close()

    asyncio.run(run())
    assert datastore.get_resource_updates(command).items[0].state == "Success"


def test_a_batch_waits_for_more_ends_at_most_its_linger(datastore: Datastore) -> None:
    command = stored_command(datastore, "k1", state="NotStarted")

    async def run() -> None:
        writer = BatchWriter(datastore, linger=0.01)
        writer.writes_coming = lambda: 5  # changes that never end
        try:
            await asyncio.wait_for(writer.set_state(_success(command, "k1")), 60)
        finally:
            await writer.close()

    asyncio.run(run())
    assert datastore.get_resource_updates(command).items[0].state == "Success"


def test_a_bad_write_fails_only_its_caller(datastore: Datastore) -> None:
    ksuids = [new_id() for _ in range(6)]
    command = stored_command(datastore, *ksuids, state="NotStarted")
    datastore.store_resource(_write(ksuids[0], "taken"), command_id=command)
    datastore.store_resource(_write(ksuids[2], "its-own"), command_id=command)

    async def run() -> list[Any]:
        writer = BatchWriter(datastore)
        try:
            # The third resource, stored already, claims the native id the first one owns: its batch fails, and
            # is retried one write at a time.
            return list(await asyncio.gather(
                *(writer.finish(_write(k, "taken" if i == 2 else f"n-{k}"), None, _success(command, k))
                  for i, k in enumerate(ksuids[1:], start=1)), return_exceptions=True))
        finally:
            await writer.close()

    answers = asyncio.run(run())
    assert isinstance(answers[1], ConflictError)
    assert all(isinstance(a, Finished) and a.moved for i, a in enumerate(answers) if i != 1)
    states = {u.ksuid: u.state for u in datastore.get_resource_updates(command).items}
    assert states == {k: "NotStarted" if k in (ksuids[0], ksuids[2]) else "Success" for k in ksuids}


def test_a_closed_writer_writes_nothing(datastore: Datastore) -> None:
    command = stored_command(datastore, "k1", state="NotStarted")

    async def run() -> None:
        writer = BatchWriter(datastore)
        await writer.close()
        with pytest.raises(WriterClosed):
            await writer.set_state(_success(command, "k1"))

    asyncio.run(run())
    assert datastore.get_resource_updates(command).items[0].state == "NotStarted"


def test_batches_commit_on_one_thread_of_the_writers_own_at_the_processs_priority(datastore: Datastore) -> None:
    command = stored_command(datastore, "k1", "k2", state="NotStarted")
    niceness: list[tuple[int, int]] = []  # (thread id, niceness) of each commit

    class Recording(_Counting):
        def commit_changes(self, batch: Any) -> Any:
            thread = threading.get_native_id()
            niceness.append((thread, os.getpriority(os.PRIO_PROCESS, thread)))
            return super().commit_changes(batch)

    async def run() -> int:
        writer = BatchWriter(Recording(datastore))  # type: ignore[arg-type]
        try:
            for k in ("k1", "k2"):
                await writer.finish(_write(k, f"n-{k}"), None, _success(command, k))
        finally:
            await writer.close()
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    loop_niceness = asyncio.run(run())
    assert len(niceness) == 2 and niceness[0][0] == niceness[1][0] != threading.get_native_id()  # one thread
    # Below the loop's priority, the command's last commits waited for every other process of a busy machine.
    assert niceness[0][1] == loop_niceness


def test_a_batch_whose_commit_answer_was_lost_in_an_outage_is_not_taken_for_a_fenced_one(
        datastore: Datastore) -> None:
    """The connection can drop after the database committed and before it answered: the writer commits the batch
    again once the datastore is back, and its update states, terminal already by its own first commit, do not
    move again; they moved all the same (a change that succeeded is not reported Canceled)."""
    command = stored_command(datastore, "k1", "k2", state="NotStarted")

    class AnswerLost(_Counting):
        def commit_changes(self, batch: Any) -> Any:
            outcome = super().commit_changes(batch)
            if self.commits == 1:
                raise DatastoreUnavailable("datastore unavailable (test): the connection dropped while committing")
            return outcome

    async def run() -> list[Finished]:
        writer = BatchWriter(AnswerLost(datastore))  # type: ignore[arg-type]
        try:
            return list(await asyncio.gather(*(writer.finish(_write(k, f"n-{k}"), None, _success(command, k))
                                               for k in ("k1", "k2"))))
        finally:
            await writer.close()

    finished = asyncio.run(run())
    assert [f.moved for f in finished] == [True, True]
    assert {u.ksuid: u.state for u in datastore.get_resource_updates(command).items} == {"k1": "Success",
                                                                                         "k2": "Success"}
