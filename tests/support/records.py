"""Datastore records the datastore and engine-writer tests start from."""

from __future__ import annotations

from datetime import UTC, datetime

from svc.datastore import Datastore
from svc.ids import new_id
from svc.model.records import CommandRecord, ResourceUpdateRecord, ResourceWrite

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def stored_command(datastore: Datastore, *ksuids: str, state: str = "InProgress") -> str:
    """Stores an apply with a create of a FAKE item per ksuid (updates in ``state``); returns its id."""
    command = CommandRecord(id=new_id(), command="apply", state="InProgress", start_ts=T0, client_id="c",
                            mode="reconcile")
    datastore.put_command(command, [ResourceUpdateRecord(
        command_id=command.id, ksuid=k, operation="create", state=state, resource_type="FAKE::Test::Item",
        resource_label=k, stack_label="app", data={}) for k in ksuids])
    return command.id


def item_write(ksuid: str, value: str, native_id: str | None = None) -> ResourceWrite:
    """A FAKE item's resource state (native id ``n-<ksuid>`` unless given)."""
    return ResourceWrite(type="FAKE::Test::Item", label=ksuid, stack="app", target="cloud",
                         properties={"Value": value}, native_id=native_id or f"n-{ksuid}", ksuid=ksuid)
