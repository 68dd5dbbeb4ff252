"""What discovery relies on from every datastore backend: a discovered write never takes over a managed resource."""

from __future__ import annotations

from svc.datastore import Datastore
from svc.ids import new_id
from svc.model.records import ResourceWrite

BUCKET = "AWS::S3::Bucket"


def found(native_id: str, label: str) -> ResourceWrite:
    return ResourceWrite(BUCKET, label, "$unmanaged", "aws", {"Name": label}, managed=False, native_id=native_id,
                         ksuid=new_id())


def test_a_discovered_write_for_a_managed_native_id_changes_nothing(datastore: Datastore) -> None:
    """Discovery listed the id before an apply stored it as managed (a race): the managed resource stays."""
    managed = datastore.store_resource(ResourceWrite(BUCKET, "mine", "prod", "aws", {"Name": "n-1"}, native_id="n-1"))
    outcomes = datastore.store_resources([found("n-1", "n-1"), found("n-2", "n-2")])
    assert (outcomes[0].changed, outcomes[0].ksuid) == (False, managed.ksuid)
    assert outcomes[1].changed and outcomes[1].operation == "create"
    current = datastore.get_resource(managed.ksuid)
    assert current is not None and current.managed and (current.stack, current.label) == ("prod", "mine")
    assert datastore.count_resources(managed=False) == 1
