"""The persistence contract for operations grouped into one transaction: ``Datastore.atomically`` (a command's
admission stores its stacks, targets, policies and updates at once) and ``Datastore.snapshot`` (the admission's
reads of the inventory). Runs against every backend."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from svc.datastore import ConflictError, Datastore
from svc.datastore.sql_base import Retry
from svc.ids import new_id
from svc.model.records import CommandRecord, ResourceUpdateRecord, TargetWrite

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _command() -> tuple[CommandRecord, list[ResourceUpdateRecord]]:
    record = CommandRecord(id=new_id(), command="apply", state="InProgress", start_ts=T0, client_id="c",
                           mode="reconcile")
    return record, [ResourceUpdateRecord(command_id=record.id, ksuid=new_id(), operation="create", state="NotStarted",
                                         resource_type="FAKE::Test::Item", resource_label="item", stack_label="app",
                                         data={})]


def _store_new(datastore: Datastore, record: CommandRecord, updates: list[ResourceUpdateRecord]) -> None:
    """What an admission stores for a command on a new stack and target."""
    datastore.create_stack("app", command_id=record.id)
    datastore.put_target(TargetWrite("cloud", "FAKE", {"Region": "here"}))
    stack = datastore.get_stack("app")
    assert stack is not None and stack.command_id == record.id  # the block's reads see its writes
    datastore.put_command(record, updates)


def _nothing_of(datastore: Datastore, record: CommandRecord) -> bool:
    return (datastore.get_stack("app") is None and datastore.get_target("cloud") is None
            and datastore.get_command(record.id) is None)


def test_an_atomic_block_stores_all_of_it(datastore: Datastore) -> None:
    record, updates = _command()
    datastore.atomically(lambda: _store_new(datastore, record, updates))
    assert datastore.get_stack("app") is not None and datastore.get_target("cloud") is not None
    assert datastore.get_command(record.id) == record
    assert [u.ksuid for u in datastore.get_resource_updates(record.id).items] == [updates[0].ksuid]


def test_an_atomic_block_that_fails_stores_nothing(datastore: Datastore) -> None:
    record, updates = _command()

    def failing() -> None:
        _store_new(datastore, record, updates)
        raise ValueError("the agent stopped")

    with pytest.raises(ValueError, match="the agent stopped"):
        datastore.atomically(failing)
    assert _nothing_of(datastore, record)
    # A datastore refusal half-way (a live stack of that label) rolls back what came before it too.
    other, other_updates = _command()

    def conflicting() -> None:
        datastore.put_target(TargetWrite("cloud", "FAKE", {"Region": "here"}))
        datastore.put_command(other, other_updates)
        datastore.create_stack("taken")
        datastore.create_stack("taken")

    with pytest.raises(ConflictError):
        datastore.atomically(conflicting)
    assert _nothing_of(datastore, other) and datastore.get_stack("taken") is None


def test_an_atomic_block_that_loses_a_compare_and_swap_runs_again_whole(datastore: Datastore) -> None:
    attempts: list[int] = []

    def work() -> str:
        attempts.append(len(attempts) + 1)
        datastore.create_stack(f"attempt-{len(attempts)}")
        if len(attempts) == 1:
            raise Retry("a concurrent writer moved a head first")  # what a lost compare-and-swap raises
        return "done"

    assert datastore.atomically(work) == "done"
    assert attempts == [1, 2]
    assert datastore.get_stack("attempt-1") is None and datastore.get_stack("attempt-2") is not None


def test_no_write_is_made_within_a_snapshot(datastore: Datastore) -> None:
    with datastore.snapshot():
        with pytest.raises(RuntimeError, match="within a read snapshot"):
            datastore.create_stack("app")
        with pytest.raises(RuntimeError, match="within a read snapshot"):
            datastore.atomically(lambda: datastore.create_stack("app"))
        assert datastore.get_stack("app") is None
    assert datastore.get_stack("app") is None
    datastore.create_stack("app")  # the thread holds no transaction once the block is left
    assert datastore.get_stack("app") is not None


def test_a_snapshot_reads_one_state_of_the_datastore(datastore: Datastore, second: Datastore) -> None:
    if datastore.backend == "auroradataapi":
        pytest.skip("through the Data API each statement sees what was committed before it (Datastore.snapshot)")
    datastore.create_stack("before")
    with datastore.snapshot():
        assert [s.label for s in datastore.list_stacks().items] == ["before"]
        second.create_stack("meanwhile")  # another agent's write, committed while the snapshot reads
        assert second.get_stack("meanwhile") is not None
        assert datastore.get_stack("meanwhile") is None
        assert [s.label for s in datastore.list_stacks().items] == ["before"]
    assert datastore.get_stack("meanwhile") is not None
