"""``get_resource_update_summaries``: a command's updates without their data documents, except the failed and
rejected ones' (their messages), paged like ``get_resource_updates``; and ``count_resource_update_states``, what a
follower's last poll reads instead of them all; and ``read_command``, which reads a command with them; on every
backend."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from svc.datastore import Datastore
from svc.datastore.update_writes import UpdateStateWrite
from svc.engine.queries import read_command
from svc.ids import new_id
from svc.model.records import CommandRecord, ResourceUpdateRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _update(command_id: str, n: int) -> ResourceUpdateRecord:
    return ResourceUpdateRecord(command_id=command_id, ksuid=f"k{n:04d}", operation="create", state="NotStarted",
                                resource_type="FAKE::Test::Item", resource_label=f"r{n}", stack_label="app",
                                data={"change": {"n": n}, "message": f"note {n}"})


def test_summaries_carry_everything_but_the_documents_of_updates_that_did_not_fail(datastore: Datastore) -> None:
    command = CommandRecord(id=new_id(), command="apply", state="InProgress", start_ts=T0, client_id="c",
                            mode="reconcile")
    datastore.put_command(command, [_update(command.id, n) for n in range(1100)])
    states = {0: "Success", 1: "Failed", 2: "Rejected", 3: "InProgress", 4: "Canceled"}
    datastore.set_resource_update_states([
        UpdateStateWrite(command.id, f"k{n:04d}", "create", state, data={"change": {"n": n}, "message": f"m{n}"},
                         start_ts=T0) for n, state in states.items()])
    full = datastore.get_resource_updates(command.id, limit=1000)
    first = datastore.get_resource_update_summaries(command.id, limit=1000)
    rest = datastore.get_resource_update_summaries(command.id, cursor=first.next_cursor, limit=1000)
    assert len(first.items) == 1000 and len(rest.items) == 100 and rest.next_cursor is None
    for summary, record in zip(first.items, full.items, strict=True):
        failed = record.state in ("Failed", "Rejected")
        assert summary == (record if failed else replace(record, data={}))
    assert [s.data.get("message") for s in first.items[:5]] == [None, "m1", "m2", None, None]
    # With their progress (a live view's rows): every update's data.
    progress = datastore.get_resource_update_summaries(command.id, with_progress=True, limit=1000)
    assert list(progress.items) == [replace(record, change={}) for record in full.items]
    assert [s.data["message"] for s in progress.items[:6]] == ["m0", "m1", "m2", "m3", "m4", "note 5"]


def test_summaries_modified_since_hold_the_updates_written_since(datastore: Datastore) -> None:
    command = CommandRecord(id=new_id(), command="apply", state="InProgress", start_ts=T0, client_id="c",
                            mode="reconcile")
    datastore.put_command(command, [_update(command.id, n) for n in range(6)])
    datastore.set_resource_update_states([UpdateStateWrite(command.id, f"k{n:04d}", "create", "InProgress")
                                          for n in range(4)])
    between = datetime.now(UTC)
    datastore.set_resource_update_states([UpdateStateWrite(command.id, f"k{n:04d}", "create", "Success")
                                          for n in (1, 2)])
    datastore.set_resource_update_state(command.id, "k0005", "create", "Failed", data={"message": "boom"})
    since = datastore.get_resource_update_summaries(command.id, modified_since=between).items
    assert [(s.ksuid, s.state, s.data.get("message")) for s in since] == [
        ("k0001", "Success", None), ("k0002", "Success", None), ("k0005", "Failed", "boom")]
    assert len(datastore.get_resource_update_summaries(command.id, modified_since=T0).items) == 6 - 1  # k0004: never


def test_a_commands_updates_are_counted_by_state(datastore: Datastore) -> None:
    command = CommandRecord(id=new_id(), command="apply", state="InProgress", start_ts=T0, client_id="c",
                            mode="reconcile")
    other = CommandRecord(id=new_id(), command="apply", state="InProgress", start_ts=T0, client_id="c",
                          mode="reconcile")
    datastore.put_command(command, [_update(command.id, n) for n in range(5)])
    datastore.put_command(other, [_update(other.id, n) for n in range(3)])
    datastore.set_resource_update_states([UpdateStateWrite(command.id, f"k{n:04d}", "create", "Success")
                                          for n in (0, 1)])
    datastore.set_resource_update_state(command.id, "k0004", "create", "Failed", data={"message": "boom"})
    assert datastore.count_resource_update_states(command.id) == {"NotStarted": 2, "Success": 2, "Failed": 1}
    assert datastore.count_resource_update_states(other.id) == {"NotStarted": 3}
    assert datastore.count_resource_update_states(new_id()) == {}


def test_a_status_read_shows_the_updates_as_they_were_when_the_command_was_read(
        datastore: Datastore, second: Datastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_command`` reads the command, its counts and its first page of updates in one snapshot: another
    agent's write between them is not half seen (a command still running whose updates had all ended)."""
    if datastore.backend == "auroradataapi":
        pytest.skip("through the Data API each statement sees what was committed before it (Datastore.snapshot)")
    command = CommandRecord(id=new_id(), command="apply", state="InProgress", start_ts=T0, client_id="c",
                            mode="reconcile")
    datastore.put_command(command, [_update(command.id, n) for n in range(3)])
    read = datastore.get_command

    def read_then_written(command_id: str) -> CommandRecord | None:
        record = read(command_id)
        second.set_resource_update_states([UpdateStateWrite(command.id, f"k{n:04d}", "create", "Success")
                                           for n in range(3)])
        second.set_command_state(command.id, "Success")
        return record

    monkeypatch.setattr(datastore, "get_command", read_then_written)
    stored = read_command(datastore, command.id, summary=True)
    assert stored is not None and stored.record.state == "InProgress"
    assert [u.state for u in stored.updates] == ["NotStarted"] * 3
    monkeypatch.undo()
    again = read_command(datastore, command.id, summary=True)
    assert again is not None and again.record.state == "Success" and again.update_counts == {"Success": 3}
    assert [u.state for u in again.updates] == ["Success"] * 3
