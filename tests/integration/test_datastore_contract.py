"""The persistence contract (datastore-tests.md §2.9), resources part: run against every backend."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from svc.datastore import ConflictError, Datastore, InvalidCursorError, parse_query
from svc.ids import new_id
from svc.model.records import ResourceWrite

BUCKET = "AWS::S3::Bucket"


def write(label: str = "bucket", *, properties: dict[str, Any] | None = None, **fields: Any) -> ResourceWrite:
    values: dict[str, Any] = {"type": BUCKET, "label": label, "stack": "prod", "target": "aws-eu",
                              "properties": {"Name": label} if properties is None else properties,
                              "native_id": f"native-{label}"}
    values.update(fields)
    return ResourceWrite(**values)


def all_pages(fetch: Callable[..., Any], limit: int, **kwargs: Any) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        page = fetch(cursor=cursor, limit=limit, **kwargs)
        assert len(page.items) <= limit
        items.extend(page.items)
        if page.next_cursor is None:
            return items
        cursor = page.next_cursor


# -- versioning ---------------------------------------------------------------------------------------------

def test_storing_the_same_state_twice_adds_no_version(datastore: Datastore) -> None:
    first = datastore.store_resource(write())
    again = datastore.store_resource(write(ksuid=first.ksuid))
    assert (again.changed, again.version, again.ksuid) == (False, first.version, first.ksuid)
    assert len(datastore.resource_history(first.ksuid).items) == 1


def test_changing_properties_adds_a_version_and_keeps_history(datastore: Datastore) -> None:
    first = datastore.store_resource(write(properties={"Size": 1}))
    second = datastore.store_resource(write(ksuid=first.ksuid, properties={"Size": 2}))
    assert second.changed and second.operation == "update" and second.version != first.version
    current = datastore.get_resource(first.ksuid)
    assert current is not None and current.properties == {"Size": 2} and current.version == second.version
    history = datastore.resource_history(first.ksuid).items
    assert [v.properties for v in history] == [{"Size": 1}, {"Size": 2}]
    assert [v.current for v in history] == [False, True]


def test_a_read_only_change_updates_the_current_version_in_place(datastore: Datastore) -> None:
    first = datastore.store_resource(write(read_only_properties={"Arn": "a"}))
    second = datastore.store_resource(write(ksuid=first.ksuid, read_only_properties={"Arn": "b"}))
    assert second.changed and second.version == first.version
    current = datastore.get_resource(first.ksuid)
    assert current is not None and current.read_only_properties == {"Arn": "b"}
    assert len(datastore.resource_history(first.ksuid).items) == 1


def test_versions_increase_in_byte_order_even_within_one_second(datastore: Datastore) -> None:
    ksuid = datastore.store_resource(write(properties={"n": 0})).ksuid
    for n in range(1, 30):
        datastore.store_resource(write(ksuid=ksuid, properties={"n": n}))
    history = datastore.resource_history(ksuid, limit=7)
    versions = [v.version for v in all_pages(datastore.resource_history, 7, ksuid=ksuid)]
    assert len(history.items) == 7
    assert versions == sorted(versions) and len(set(versions)) == 30  # sorted() is byte (code point) order
    current = datastore.get_resource(ksuid)
    assert current is not None and current.version == versions[-1] and current.properties == {"n": 29}


def test_lists_sort_in_byte_order_not_locale_order(datastore: Datastore) -> None:
    labels = ["b", "B", "a", "A", "_x", "Z", "abd", "abc", "é"]
    for label in labels:
        datastore.store_resource(write(label))
    listed = [r.label for r in datastore.list_resources().items]
    assert listed == sorted(labels, key=lambda s: s.encode())


# -- tombstones and re-creation --------------------------------------------------------------------------

def test_delete_writes_a_tombstone_and_keeps_history(datastore: Datastore) -> None:
    created = datastore.store_resource(write())
    deleted = datastore.delete_resource(created.ksuid, command_id="cmd-1")
    assert deleted.changed and deleted.operation == "delete"
    again = datastore.delete_resource(created.ksuid)
    assert not again.changed and again.version == deleted.version
    assert datastore.get_resource(created.ksuid) is None
    assert datastore.get_resource_by_native_id("aws-eu", BUCKET, "native-bucket") is None
    assert datastore.get_resource_by_label("prod", BUCKET, "bucket") is None
    assert datastore.list_resources().items == ()
    history = datastore.resource_history(created.ksuid).items
    assert [(v.operation, v.deleted, v.current) for v in history] == [("create", False, False),
                                                                      ("delete", True, True)]
    assert history[1].command_id == "cmd-1" and history[1].native_id == "native-bucket"


def test_deleting_an_unknown_resource_changes_nothing(datastore: Datastore) -> None:
    outcome = datastore.delete_resource(new_id())
    assert (outcome.changed, outcome.version) == (False, None)


def test_recreating_with_the_same_native_id_gets_a_correct_ksuid(datastore: Datastore) -> None:
    old = datastore.store_resource(write())
    datastore.delete_resource(old.ksuid)
    fresh_ksuid = new_id()
    new = datastore.store_resource(write(ksuid=fresh_ksuid, properties={"Name": "again"}))
    assert new.ksuid == fresh_ksuid and new.operation == "create" and new.version and new.version != old.version
    found = datastore.get_resource_by_native_id("aws-eu", BUCKET, "native-bucket")
    assert found is not None and found.ksuid == fresh_ksuid
    assert datastore.get_resource(old.ksuid) is None
    revived = datastore.store_resource(write("other", ksuid=old.ksuid, native_id="native-other"))
    assert revived.ksuid == old.ksuid and revived.operation == "create"
    assert [v.operation for v in datastore.resource_history(old.ksuid).items] == ["create", "delete", "create"]


# -- identity: adoption, renames, lookups -----------------------------------------------------------------

def test_a_managed_write_adopts_a_discovered_resource_and_its_ksuid(datastore: Datastore) -> None:
    discovered = datastore.store_resource(write(stack="$unmanaged", managed=False))
    adopted = datastore.store_resource(write(ksuid=new_id()))
    assert adopted.ksuid == discovered.ksuid and adopted.operation == "update"
    current = datastore.get_resource(discovered.ksuid)
    assert current is not None and current.managed and current.stack == "prod"
    assert datastore.count_resources() == 1


def test_a_live_managed_resource_supersedes_a_discovered_duplicate(datastore: Datastore) -> None:
    managed = datastore.store_resource(write(native_id=None))
    discovered = datastore.store_resource(write("found", stack="$unmanaged", managed=False, native_id="n-1"))
    datastore.store_resource(write(ksuid=managed.ksuid, native_id="n-1"))
    owner = datastore.get_resource_by_native_id("aws-eu", BUCKET, "n-1")
    assert owner is not None and owner.ksuid == managed.ksuid
    assert datastore.get_resource(discovered.ksuid) is None
    assert datastore.count_resources() == 1


def test_two_managed_resources_cannot_share_a_native_id(datastore: Datastore) -> None:
    datastore.store_resource(write("one", native_id="shared"))
    other = datastore.store_resource(write("two", native_id=None))
    with pytest.raises(ConflictError):
        datastore.store_resource(write("two", ksuid=other.ksuid, native_id="shared"))


def test_the_same_native_id_on_another_target_is_another_resource(datastore: Datastore) -> None:
    """Identity is (target, type, native id): a new resource with another target's native id is created as a
    resource of its own, in its own stack, and never takes over the other target's (managed or discovered)."""
    home = datastore.store_resource(write("site", stack="quickstart", target="home", native_id="site"))
    found = datastore.store_resource(write("site", stack="$unmanaged", target="lab", managed=False, native_id="site"))
    hello = datastore.store_resource(write("site", ksuid=new_id(), stack="hello", target="hello", native_id="site"))
    assert len({home.ksuid, found.ksuid, hello.ksuid}) == 3 and hello.operation == "create"
    placed = {r.ksuid: (r.stack, r.target, r.managed) for r in datastore.list_resources().items}
    assert placed == {home.ksuid: ("quickstart", "home", True), found.ksuid: ("$unmanaged", "lab", False),
                      hello.ksuid: ("hello", "hello", True)}
    for target, ksuid in (("home", home.ksuid), ("lab", found.ksuid), ("hello", hello.ksuid)):
        owner = datastore.get_resource_by_native_id(target, BUCKET, "site")
        assert owner is not None and owner.ksuid == ksuid
    assert datastore.get_resource_by_native_id("elsewhere", BUCKET, "site") is None
    # A discovery of each target's native id finds the resource of that target only.
    again = datastore.store_resources([write("site", ksuid=new_id(), stack="$unmanaged", target=target,
                                             managed=False, native_id="site") for target in ("home", "lab")])
    assert [(o.ksuid, o.changed) for o in again] == [(home.ksuid, False), (found.ksuid, False)]
    assert datastore.count_resources() == 3


def test_a_managed_resource_is_never_taken_over_by_another(datastore: Datastore) -> None:
    """A second managed resource reporting the native id another stack's resource has on the same target is a
    conflict: the first stack keeps its resource (it used to be moved into the second stack)."""
    first = datastore.store_resource(write("site", stack="quickstart", target="home", native_id="site"))
    with pytest.raises(ConflictError, match="quickstart/site"):
        datastore.store_resource(write("site", ksuid=new_id(), stack="hello", target="home", native_id="site"))
    current = datastore.get_resource(first.ksuid)
    assert current is not None and (current.stack, current.version) == ("quickstart", first.version)
    assert datastore.count_resources() == 1


def test_adoption_is_per_target(datastore: Datastore) -> None:
    """A managed write adopts the discovered resource with its native id on its own target only."""
    here = datastore.store_resource(write("found", stack="$unmanaged", target="home", managed=False, native_id="n"))
    there = datastore.store_resource(write("found-1", stack="$unmanaged", target="lab", managed=False, native_id="n"))
    adopted = datastore.store_resource(write("mine", ksuid=new_id(), target="lab", native_id="n"))
    assert adopted.ksuid == there.ksuid and adopted.operation == "update"
    unchanged = datastore.get_resource(here.ksuid)
    assert unchanged is not None and (unchanged.stack, unchanged.managed) == ("$unmanaged", False)


def test_a_rename_keeps_the_ksuid_and_adds_a_version(datastore: Datastore) -> None:
    created = datastore.store_resource(write("old-name", native_id="n-1"))
    renamed = datastore.store_resource(write("new-name", ksuid=created.ksuid, native_id="n-1"))
    assert renamed.ksuid == created.ksuid and renamed.version != created.version
    assert datastore.get_resource_by_label("prod", BUCKET, "old-name") is None
    found = datastore.get_resource_by_label("prod", BUCKET, "new-name")
    assert found is not None and found.ksuid == created.ksuid
    assert [s.label for s in datastore.list_resource_summaries().items] == ["new-name"]


def test_lookups_by_ksuid_native_id_and_label(datastore: Datastore) -> None:
    bucket = datastore.store_resource(write("x", native_id="same"))
    queue = datastore.store_resource(write("x", type="AWS::SQS::Queue", native_id="same"))
    assert bucket.ksuid != queue.ksuid
    by_native = datastore.get_resource_by_native_id("aws-eu", "AWS::SQS::Queue", "same")
    assert by_native is not None and by_native.ksuid == queue.ksuid
    by_label = datastore.get_resource_by_label("prod", BUCKET, "x")
    assert by_label is not None and by_label.ksuid == bucket.ksuid
    by_ksuid = datastore.get_resource(bucket.ksuid)
    assert by_ksuid is not None and by_ksuid.type == BUCKET and by_ksuid.native_id == "same"
    assert datastore.get_resource(new_id()) is None
    assert datastore.get_resource_by_label("dev", BUCKET, "x") is None


def test_properties_are_stored_as_given(datastore: Datastore) -> None:
    opaque = {"$value": "9f86d081884c7d65", "$hashed": True, "$visibility": "Opaque"}
    properties = {"Password": opaque, "Tags": [{"Key": "a", "Value": "ü"}], "Nested": {"n": 1.5, "z": None}}
    created = datastore.store_resource(write(properties=properties, document={"Schema": {"Fields": ["a"]}}))
    current = datastore.get_resource(created.ksuid)
    assert current is not None
    assert current.properties == properties and current.document == {"Schema": {"Fields": ["a"]}}


# -- concurrency ------------------------------------------------------------------------------------------

def test_concurrent_writes_to_one_resource_keep_one_current_version(datastore: Datastore) -> None:
    ksuid = datastore.store_resource(write(properties={"n": -1})).ksuid
    barrier = threading.Barrier(8)

    def update(n: int) -> None:
        barrier.wait()
        for round_ in range(5):
            datastore.store_resource(write(ksuid=ksuid, properties={"n": n, "round": round_}))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(update, range(8)))
    history = all_pages(datastore.resource_history, 100, ksuid=ksuid)
    assert len(history) == 41  # nothing lost: every write changed the state
    assert [v.current for v in history].count(True) == 1 and history[-1].current
    versions = [v.version for v in history]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)


def test_concurrent_creates_of_one_native_id_yield_one_live_resource(datastore: Datastore) -> None:
    barrier = threading.Barrier(6)

    def create(n: int) -> str:
        barrier.wait()
        return datastore.store_resource(write("same", ksuid=new_id(), stack="$unmanaged", managed=False,
                                              properties={"writer": n})).ksuid

    with ThreadPoolExecutor(6) as pool:
        ksuids = set(pool.map(create, range(6)))
    assert len(ksuids) == 1
    assert datastore.count_resources() == 1


# -- pagination and queries ---------------------------------------------------------------------------------

def test_every_page_is_bounded_and_the_walk_is_complete(datastore: Datastore) -> None:
    total = 450
    for n in range(total):
        datastore.store_resource(write(f"r{n:04d}", stack=f"s{n % 3}", properties={"n": n, "pad": "x" * 200}))
    walked = all_pages(datastore.list_resources, 64)
    assert [r.label for r in walked] == [f"r{n:04d}" for n in range(total)]
    summaries = all_pages(datastore.list_resource_summaries, 100, query=parse_query("stack:s1"))
    assert [s.label for s in summaries] == [f"r{n:04d}" for n in range(total) if n % 3 == 1]
    versions = all_pages(datastore.list_resource_versions, 97)
    assert len(versions) == total and len({(v.ksuid, v.version) for v in versions}) == total


def test_a_foreign_or_garbled_cursor_is_rejected(datastore: Datastore) -> None:
    for n in range(3):
        datastore.store_resource(write(f"r{n}"))
    cursor = datastore.list_resources(limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursorError):
        datastore.list_stacks(cursor=cursor)
    with pytest.raises(InvalidCursorError):
        datastore.list_resources(cursor="not-a-cursor")


def _labels(datastore: Datastore, query: str) -> list[str]:
    return [r.label for r in all_pages(datastore.list_resource_summaries, 50, query=parse_query(query))]


def test_query_filters(datastore: Datastore) -> None:
    datastore.store_resource(write("web-1", stack="prod", target="aws-eu"))
    datastore.store_resource(write("web-2", stack="prod", target="aws-us"))
    datastore.store_resource(write("db", type="AWS::RDS::DBInstance", stack="prod", target="aws-us"))
    datastore.store_resource(write("found", stack="$unmanaged", target="aws-us", managed=False))
    datastore.store_resource(write("tmp", stack="dev", target="aws-eu"))
    assert _labels(datastore, "type:AWS::S3::Bucket") == ["found", "tmp", "web-1", "web-2"]
    assert _labels(datastore, "type:aws::s3::bucket stack:prod") == ["web-1", "web-2"]
    assert _labels(datastore, "target:aws-eu target:aws-us stack:prod") == ["db", "web-1", "web-2"]
    assert _labels(datastore, "-stack:prod -stack:dev") == ["found"]
    assert _labels(datastore, "managed:false") == ["found"]
    assert _labels(datastore, "+managed:true -type:AWS::RDS::*") == ["tmp", "web-1", "web-2"]
    assert _labels(datastore, "label:web-* -label:*2") == ["web-1"]
    assert _labels(datastore, "type:AWS::*::Bucket label:*e*") == ["web-1", "web-2"]
    assert _labels(datastore, 'label:"web-1"') == ["web-1"]
    assert _labels(datastore, "stack:$unmanaged") == ["found"]
    assert _labels(datastore, "label:WEB-*") == []  # values are case-sensitive (except type)


def test_like_metacharacters_match_literally(datastore: Datastore) -> None:
    for label in ("a%b", "axb", "a_b", "ayb", "a\\b", "a*b"):
        datastore.store_resource(write(label))
    assert _labels(datastore, "label:a%b") == ["a%b"]
    assert _labels(datastore, "label:a_b") == ["a_b"]
    assert _labels(datastore, "label:a%*") == ["a%b"]
    assert _labels(datastore, "label:*_b") == ["a_b"]
    assert _labels(datastore, "label:a\\\\*") == ["a\\b"]
    assert _labels(datastore, "label:a\\*b") == ["a*b"]
    assert _labels(datastore, "label:a*b") == sorted(["a%b", "axb", "a_b", "ayb", "a\\b", "a*b"],
                                                     key=lambda s: s.encode())


def test_counts(datastore: Datastore) -> None:
    datastore.store_resource(write("a", target="t1"))
    datastore.store_resource(write("b", target="t2", stack="dev"))
    gone = datastore.store_resource(write("c", target="t1"))
    datastore.delete_resource(gone.ksuid)
    assert datastore.count_resources() == 2
    assert datastore.count_resources(target="t1") == 1
    assert datastore.count_resources(stack="dev") == 1
    assert datastore.count_resources(managed=False) == 0
    # Counted no further than asked: whether there are more than N costs N rows, not the estate.
    assert [datastore.count_resources(up_to=n) for n in (0, 1, 2, 3)] == [0, 1, 2, 2]
    assert datastore.count_resources(target="t2", up_to=5) == 1


def test_batched_writes_follow_the_same_rules(datastore: Datastore) -> None:
    existing = datastore.store_resource(write("a"))
    outcomes = datastore.store_resources([
        write("a", ksuid=existing.ksuid),                            # unchanged: no version
        write("b"),                                                  # new
        write("c", stack="$unmanaged", managed=False),               # discovered
        write("c", ksuid=new_id()),                                  # adopts the discovered "c" in the same batch
    ] + [write(f"n{n}") for n in range(600)])                        # spans two transactions
    assert not outcomes[0].changed and outcomes[1].operation == "create"
    assert outcomes[3].ksuid == outcomes[2].ksuid and outcomes[3].operation == "update"
    assert datastore.count_resources() == 603


def test_conditional_writes_apply_only_to_the_version_they_were_based_on(datastore: Datastore) -> None:
    """``if_version``: synchronization stores what it read only if nobody rewrote the resource meanwhile."""
    first = datastore.store_resource(write("a", properties={"Size": 1}))
    moved = datastore.store_resource(write("a", ksuid=first.ksuid, properties={"Size": 2}))
    stale = datastore.store_resources([write("a", ksuid=first.ksuid, properties={"Size": 3}, if_version=first.version),
                                       write("b", if_version="0" * 27)])
    assert [(o.changed, o.operation) for o in stale] == [(False, None), (False, None)]
    assert datastore.get_resource(first.ksuid).properties == {"Size": 2}  # type: ignore[union-attr]
    assert datastore.get_resource_by_label("prod", BUCKET, "b") is None
    fresh = datastore.store_resource(write("a", ksuid=first.ksuid, properties={"Size": 3}, if_version=moved.version))
    assert fresh.changed and fresh.operation == "update"
    assert not datastore.delete_resource(first.ksuid, if_version=moved.version).changed
    assert datastore.get_resource(first.ksuid) is not None
    assert datastore.delete_resource(first.ksuid, if_version=fresh.version).operation == "delete"
    assert datastore.get_resource(first.ksuid) is None
