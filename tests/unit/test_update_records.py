"""A new command's update records made as they are asked for (``command_records.UpdateRecords``) are the records
``update_record`` makes, by index and by slice, in the order of their keys."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cryptography.fernet import Fernet

from svc.engine.command_records import UpdateRecords, update_record
from svc.engine.planner.changeset import ResourceChange
from svc.engine.sealing import Sealer


def _change(n: int) -> ResourceChange:
    return ResourceChange(ksuid=f"k{n}", operation="create", type="FAKE::Test::Item", label=f"l{n}", stack="s",
                          target="t", schema={}, desired={"Value": n})


def test_the_records_are_made_when_asked_for() -> None:
    sealer = Sealer(Fernet.generate_key())
    changes = [_change(n) for n in range(5)]
    records = UpdateRecords("cmd", changes, changes, sealer)
    expected = [update_record("cmd", change, change, sealer) for change in changes]
    assert len(records) == 5
    assert records[3] == expected[3]
    assert records[1:4] == expected[1:4]
    assert list(records) == expected


def test_the_records_come_in_the_order_of_their_keys() -> None:
    sealer = Sealer(Fernet.generate_key())
    changes = [_change(n) for n in (3, 1, 4, 2)]
    replaced = ResourceChange(ksuid="k2", operation="delete", type="FAKE::Test::Item", label="l2", stack="s",
                              target="t", schema={})
    shown = [replace(change, label=f"shown {change.label}") for change in [*changes, replaced]]
    records = UpdateRecords("cmd", [*changes, replaced], shown, sealer)
    # Each record pairs its change with its own shown change.
    assert [(r.ksuid, r.operation, r.change["label"]) for r in records] == [
        ("k1", "create", "shown l1"), ("k2", "create", "shown l2"), ("k2", "delete", "shown l2"),
        ("k3", "create", "shown l3"), ("k4", "create", "shown l4")]


def test_a_shown_change_per_change() -> None:
    with pytest.raises(ValueError):
        UpdateRecords("cmd", [_change(1)], [], Sealer(Fernet.generate_key()))
