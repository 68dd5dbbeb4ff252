"""``commit_changes``, the engine's group commit: resource versions, tombstones and update states in one
transaction, each answered as its separate call would be; on every backend."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from support.records import item_write, stored_command
from svc.datastore import ConflictError, Datastore
from svc.datastore.update_writes import ChangeBatch, UpdateStateWrite


def test_a_batch_stores_versions_then_tombstones_then_states(datastore: Datastore) -> None:
    first, second = stored_command(datastore, "k1", "k2"), stored_command(datastore, "k3")
    datastore.store_resource(item_write("k9", "old"), command_id=first)
    outcome = datastore.commit_changes(ChangeBatch(
        resources=[(first, item_write("k1", "a")), (second, item_write("k3", "c")), (first, item_write("k9", "old"))],
        deletes=[(second, "k9"), (first, "gone")],
        states=[UpdateStateWrite(first, "k1", "create", "Success", data={"message": "done"}),
                UpdateStateWrite(second, "k3", "create", "Failed"), UpdateStateWrite(first, "k8", "create", "Success")]))
    assert [(o.ksuid, o.changed, o.operation) for o in outcome.stored] == [
        ("k1", True, "create"), ("k3", True, "create"), ("k9", False, None)]
    assert [(o.ksuid, o.changed, o.operation) for o in outcome.deleted] == [("k9", True, "delete"),
                                                                            ("gone", False, None)]
    assert outcome.moved == [True, True, False]  # the command has no update of k8
    stored = {k: datastore.get_resource(k) for k in ("k1", "k3", "k9")}
    assert stored["k9"] is None
    assert (stored["k1"].command_id, stored["k3"].command_id) == (first, second)  # type: ignore[union-attr]
    assert [v.command_id for v in datastore.resource_history("k9").items][-1] == second
    updates = {u.ksuid: u for u in datastore.get_resource_updates(first).items}
    assert (updates["k1"].state, updates["k1"].data) == ("Success", {"message": "done"})


def test_terminal_states_stay_final_in_a_batch(datastore: Datastore) -> None:
    command = stored_command(datastore, "k1")
    assert datastore.commit_changes(ChangeBatch(states=[UpdateStateWrite(command, "k1", "create", "Canceled")])
                                    ).moved == [True]
    outcome = datastore.commit_changes(ChangeBatch(resources=[(command, item_write("k1", "a"))],
                                                   states=[UpdateStateWrite(command, "k1", "create", "Success")]))
    assert outcome.moved == [False] and outcome.stored[0].changed
    assert datastore.get_resource_updates(command).items[0].state == "Canceled"


def test_a_conflicting_write_fails_the_whole_batch(datastore: Datastore) -> None:
    command = stored_command(datastore, "k1", "k2")
    datastore.store_resource(item_write("k1", "a", native_id="same"), command_id=command)
    datastore.store_resource(item_write("k2", "b"), command_id=command)
    with pytest.raises(ConflictError):  # k2 may not take the native id k1 has
        datastore.commit_changes(ChangeBatch(resources=[(command, item_write("k2", "b", native_id="same"))],
                                             deletes=[(command, "k1")],
                                             states=[UpdateStateWrite(command, "k2", "create", "Success")]))
    assert datastore.get_resource("k1") is not None
    assert datastore.get_resource("k2").native_id == "n-k2"  # type: ignore[union-attr]
    assert {u.ksuid: u.state for u in datastore.get_resource_updates(command).items}["k2"] == "InProgress"


def test_a_write_after_a_terminal_one_of_the_same_update_does_not_move(datastore: Datastore) -> None:
    command = stored_command(datastore, "k1", "k2")
    outcome = datastore.commit_changes(ChangeBatch(states=[
        UpdateStateWrite(command, "k1", "create", "InProgress"), UpdateStateWrite(command, "k1", "create", "Success"),
        UpdateStateWrite(command, "k1", "create", "Failed"), UpdateStateWrite(command, "k2", "create", "Success")]))
    assert outcome.moved == [True, True, False, True]
    assert {u.ksuid: u.state for u in datastore.get_resource_updates(command).items} == {"k1": "Success",
                                                                                         "k2": "Success"}


def test_a_canceled_update_among_live_ones_keeps_its_state_and_the_others_move(datastore: Datastore) -> None:
    command = stored_command(datastore, "k1", "k2", "k3")
    datastore.cancel_resource_updates(command, force=True)
    live = stored_command(datastore, "k4", "k5")
    outcome = datastore.commit_changes(ChangeBatch(
        resources=[(live, item_write("k4", "a"))],
        states=[UpdateStateWrite(live, "k4", "create", "Success", data={"message": "done"}),
                UpdateStateWrite(command, "k2", "create", "Success"),
                UpdateStateWrite(live, "k5", "create", "Failed")]))
    assert outcome.moved == [True, False, True] and outcome.stored[0].changed
    assert {u.ksuid: u.state for u in datastore.get_resource_updates(command).items} == dict.fromkeys(
        ("k1", "k2", "k3"), "Canceled")
    assert {u.ksuid: (u.state, u.data) for u in datastore.get_resource_updates(live).items} == {
        "k4": ("Success", {"message": "done"}), "k5": ("Failed", {})}
    assert [v.version for v in datastore.resource_history("k4").items] == [outcome.stored[0].version]


def test_a_batch_of_live_updates_is_written_without_reading_their_states(datastore: Datastore) -> None:
    """The row counts of the UPDATEs prove what a read of the states would have (where the driver counts
    them); a read per batch cost a statement in every group commit."""
    command = stored_command(datastore, "k1", "k2")
    engine = datastore.engine  # type: ignore[attr-defined]
    statements: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        statements.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        outcome = datastore.commit_changes(ChangeBatch(
            resources=[(command, item_write("k1", "a"))],
            states=[UpdateStateWrite(command, "k1", "create", "Success"),
                    UpdateStateWrite(command, "k2", "create", "InProgress")]))
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    assert outcome.moved == [True, True]
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT") and "resource_updates" in s]
    assert len(reads) == (0 if engine.dialect.supports_sane_multi_rowcount else 1), statements
