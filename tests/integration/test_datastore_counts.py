"""``Datastore.counts()``: the aggregates behind ``GET /stats``, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime

from svc.datastore import Datastore
from svc.ids import new_id
from svc.model.records import CommandRecord, ResourceWrite, TargetWrite

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_counts_of_an_empty_datastore(datastore: Datastore) -> None:
    counts = datastore.counts()
    assert (counts.clients, counts.stacks) == (0, 0)
    assert not (counts.commands or counts.command_states or counts.managed_by_type or counts.unmanaged_by_type
                or counts.targets_by_namespace)


def test_counts_cover_live_records_and_user_commands_only(datastore: Datastore) -> None:
    datastore.put_target(TargetWrite("eu", "FAKE", {}))
    datastore.put_target(TargetWrite("us", "FAKE", {}))
    datastore.put_target(TargetWrite("aws", "AWS", {}))
    datastore.create_stack("a")
    datastore.create_stack("b")
    datastore.delete_stack("b")
    kept = datastore.store_resource(ResourceWrite("FAKE::Test::Item", "x", "a", "eu", {"V": 1}, native_id="1"))
    datastore.store_resource(ResourceWrite("FAKE::Test::Item", "x", "a", "eu", {"V": 2}, native_id="1",
                                           ksuid=kept.ksuid))  # a second version of the same resource
    gone = datastore.store_resource(ResourceWrite("FAKE::Test::Item", "y", "a", "eu", {}, native_id="2"))
    datastore.delete_resource(gone.ksuid)
    datastore.store_resource(ResourceWrite("AWS::S3::Bucket", "z", "a", "aws", {}, native_id="b"))
    datastore.store_resource(ResourceWrite("AWS::S3::Bucket", "found", "$unmanaged", "aws", {}, native_id="c",
                                           managed=False))
    for client, command, state, source in (("c1", "apply", "Success", "user"), ("c1", "apply", "Failed", "user"),
                                           ("c2", "destroy", "Success", "user"),
                                           ("", "sync", "Success", "synchronizer")):
        datastore.put_command(CommandRecord(id=new_id(), command=command, state=state, start_ts=T0,
                                            client_id=client, source=source))
    counts = datastore.counts()
    assert counts.clients == 2
    assert dict(counts.commands) == {"apply": 2, "destroy": 1}
    assert dict(counts.command_states) == {"Success": 2, "Failed": 1}
    assert counts.stacks == 1
    assert dict(counts.managed_by_type) == {"FAKE::Test::Item": 1, "AWS::S3::Bucket": 1}
    assert dict(counts.unmanaged_by_type) == {"AWS::S3::Bucket": 1}
    assert dict(counts.targets_by_namespace) == {"FAKE": 2, "AWS": 1}
