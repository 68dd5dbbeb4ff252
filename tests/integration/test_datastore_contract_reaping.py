"""The persistence contract of target health and reaping (datastore-tests.md §2.2 "Targets"), on every backend:
observations in order only, accrual between close samples, the reap's guards and its one transaction (resources
invisible and refused to late writes, one immutable audit row, one winner among concurrent reapers), and recovery
by declaring the target again."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from svc.datastore import Datastore
from svc.ids import new_id
from svc.model.records import CommandRecord, ResourceUpdateRecord, ResourceWrite, TargetFilter, TargetWrite

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GAP = 60.0  # seconds between samples beyond which the unreachable clock stops


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def bucket(label: str, target: str = "eu", stack: str = "app", native_id: str | None = None) -> ResourceWrite:
    return ResourceWrite(type="FAKE::Storage::Bucket", label=label, stack=stack, target=target,
                         properties={"Name": label}, native_id=native_id or f"n-{label}")


def unreachable_for(datastore: Datastore, label: str, seconds: float, step: float = 30) -> str:
    """Observations every ``step`` seconds, all failing, spanning ``seconds``; the target's incarnation."""
    elapsed = 0.0
    while elapsed <= seconds:
        assert datastore.observe_target(label, reachable=False, at=at(elapsed), max_gap=GAP,
                                        error_code="NetworkFailure")
        elapsed += step
    target = datastore.get_target(label)
    assert target is not None
    return target.incarnation_id


def test_health_defaults_and_carries_over_versions(datastore: Datastore) -> None:
    first = datastore.put_target(TargetWrite("eu", "FAKE", {}, reap_kind="after", reap_after_seconds=600))
    assert (first.health_state, first.unreachable_seconds, first.reap_kind, first.reap_after_seconds) == (
        "unknown", 0.0, "after", 600)
    datastore.observe_target("eu", reachable=False, at=at(0), max_gap=GAP, error_code="NetworkFailure")
    datastore.observe_target("eu", reachable=False, at=at(20), max_gap=GAP, error_code="NetworkFailure")
    second = datastore.put_target(TargetWrite("eu", "FAKE", {"Region": "x"}, reap_kind="after",
                                              reap_after_seconds=600))
    assert second.version == 2 and second.incarnation_id == first.incarnation_id
    assert (second.health_state, second.unreachable_seconds, second.last_error_code) == (
        "unreachable", 20.0, "NetworkFailure")
    policy = datastore.put_target(TargetWrite("eu", "FAKE", {"Region": "x"}, reap_kind="never"))
    assert policy.version == 3 and policy.reap_kind == "never"  # a changed reap policy is a new version


def test_accrual_counts_close_samples_only_and_success_zeroes_it(datastore: Datastore) -> None:
    datastore.put_target(TargetWrite("eu", "FAKE", {}))
    assert datastore.observe_target("eu", reachable=False, at=at(0), max_gap=GAP)
    assert datastore.observe_target("eu", reachable=False, at=at(40), max_gap=GAP)
    assert not datastore.observe_target("eu", reachable=False, at=at(30), max_gap=GAP)  # older: ignored
    incarnation = datastore.get_target("eu").incarnation_id
    assert datastore.advance_target_accrual("eu", incarnation, at(90), GAP)  # a reaper tick within the gap
    assert datastore.get_target("eu").unreachable_seconds == 90
    assert not datastore.advance_target_accrual("eu", incarnation, at(500), GAP)  # no sample for too long
    assert not datastore.advance_target_accrual("eu", "another incarnation", at(100), GAP)
    assert datastore.observe_target("eu", reachable=False, at=at(600), max_gap=GAP)
    assert datastore.get_target("eu").unreachable_seconds == 90  # the clock stopped in between
    target = datastore.get_target("eu")
    assert target.first_unreachable_at == at(0)
    assert datastore.observe_target("eu", reachable=True, at=at(601), max_gap=GAP)
    target = datastore.get_target("eu")
    assert (target.health_state, target.unreachable_seconds, target.first_unreachable_at, target.last_seen_at) == (
        "reachable", 0.0, None, at(601))


def test_reap_tombstones_resources_writes_one_audit_row_and_hides_the_target(datastore: Datastore) -> None:
    datastore.put_target(TargetWrite("eu", "FAKE", {}, reap_kind="after", reap_after_seconds=100))
    datastore.put_target(TargetWrite("us", "FAKE", {}))
    kept = datastore.store_resource(bucket("kept", target="us"))
    first = datastore.store_resource(bucket("a"))
    datastore.store_resource(bucket("b", stack="other"))
    incarnation = unreachable_for(datastore, "eu", 120)
    assert datastore.reap_target("eu", incarnation, threshold=1000, at=at(121)) is None  # not yet due
    assert datastore.reap_target("eu", "stale", threshold=100, at=at(121)) is None  # another incarnation
    reap = datastore.reap_target("eu", incarnation, threshold=100, at=at(121))
    assert reap is not None and (reap.resource_count, reap.stacks) == (2, ("app", "other"))
    assert datastore.reap_target("eu", incarnation, threshold=100, at=at(122)) is None  # reaped once
    assert [r.label for r in datastore.list_resources().items] == ["kept"]
    assert datastore.get_resource(first.ksuid) is None and datastore.count_resources(target="eu") == 0
    assert datastore.get_resource(kept.ksuid) is not None
    assert [r.label for r in datastore.list_reaped_resources("eu")] == ["a", "b"]
    # A late write (a sync read, a change that raced the reap) does not bring a reaped resource back.
    late = datastore.store_resource(replace(bucket("a"), ksuid=first.ksuid, properties={"Name": "late"}))
    assert not late.changed and datastore.get_resource(first.ksuid) is None
    assert not datastore.delete_resource(first.ksuid).changed
    assert [t.label for t in datastore.list_targets().items] == ["us"]
    assert [t.label for t in datastore.list_targets(TargetFilter(reaped=True)).items] == ["eu", "us"]
    assert datastore.reaped_targets(["eu", "us", "nope"]) == {"eu"}
    assert not datastore.observe_target("eu", reachable=True, at=at(200), max_gap=GAP)  # reaped stays reaped
    [audit] = datastore.reap_audit("eu")
    assert (audit.incarnation_id, audit.resource_count, audit.unreachable_seconds, audit.last_error_code) == (
        incarnation, 2, 120.0, "NetworkFailure")
    counts = datastore.counts()
    assert (counts.reaped_targets, dict(counts.targets_by_namespace)) == (1, {"FAKE": 1})


def test_reap_guards_never_reap_and_active_commands(datastore: Datastore) -> None:
    datastore.put_target(TargetWrite("never", "FAKE", {}, reap_kind="never"))
    never = unreachable_for(datastore, "never", 120)
    assert datastore.reap_target("never", never, threshold=10, at=at(200)) is None
    datastore.put_target(TargetWrite("eu", "FAKE", {}))
    resource = datastore.store_resource(bucket("a"))
    incarnation = unreachable_for(datastore, "eu", 120)
    assert datastore.counts().reap_pending_targets == 1  # eu; never is excluded by its policy
    command = CommandRecord(id=new_id(), command="apply", state="InProgress", start_ts=T0)
    update = ResourceUpdateRecord(command_id=command.id, ksuid=resource.ksuid, operation="update",
                                  state="InProgress", resource_type="FAKE::Storage::Bucket", resource_label="a",
                                  stack_label="app", change={"target": "eu", "ksuid": resource.ksuid})
    datastore.put_command(command, [update])
    assert datastore.reap_target("eu", incarnation, threshold=10, at=at(200)) is None  # a command changes it
    assert datastore.get_target("eu").health_state == "unreachable" and datastore.get_resource(resource.ksuid)
    datastore.set_command_state(command.id, "Success", end_ts=at(199))
    assert datastore.reap_target("eu", incarnation, threshold=10, at=at(200)) is not None


def test_concurrent_reaps_have_one_winner(datastore: Datastore) -> None:
    datastore.put_target(TargetWrite("eu", "FAKE", {}))
    for n in range(5):
        datastore.store_resource(bucket(f"r{n}"))
    incarnation = unreachable_for(datastore, "eu", 120)
    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda n: datastore.reap_target("eu", incarnation, threshold=60, at=at(130 + n)),
                                 range(4)))
    assert len([o for o in outcomes if o is not None]) == 1
    assert len(datastore.reap_audit("eu")) == 1 and len(datastore.list_reaped_resources("eu")) == 5


def test_declaring_a_reaped_target_again_recovers_it_and_its_resources(datastore: Datastore) -> None:
    old = datastore.put_target(TargetWrite("eu", "FAKE", {}))
    resource = datastore.store_resource(bucket("a"))
    taken = datastore.store_resource(bucket("b"))
    incarnation = unreachable_for(datastore, "eu", 120)
    assert datastore.reap_target("eu", incarnation, threshold=60, at=at(130)) is not None
    # Meanwhile another resource on eu took b's native id: b stays reaped rather than clash with it. The same
    # native id on another target is another resource, and keeps nothing from coming back.
    datastore.store_resource(bucket("b2", native_id="n-b"))
    datastore.put_target(TargetWrite("us", "FAKE", {}))
    datastore.store_resource(bucket("a-us", target="us", native_id="n-a"))
    recovered = datastore.put_target(TargetWrite("eu", "FAKE", {}))
    assert recovered.incarnation_id != old.incarnation_id and recovered.version == old.version + 1
    assert (recovered.health_state, recovered.unreachable_seconds) == ("unknown", 0.0)
    again = datastore.get_resource(resource.ksuid)
    assert again is not None and again.version == resource.version and again.operation == "update"
    assert datastore.get_resource(taken.ksuid) is None
    assert datastore.reaped_targets(["eu"]) == set() and len(datastore.reap_audit("eu")) == 1


def test_deleting_a_reaped_target_ends_its_resources(datastore: Datastore) -> None:
    datastore.put_target(TargetWrite("eu", "FAKE", {}))
    resource = datastore.store_resource(bucket("a"))
    incarnation = unreachable_for(datastore, "eu", 120)
    assert datastore.reap_target("eu", incarnation, threshold=60, at=at(130)) is not None
    assert datastore.delete_target("eu")  # a destroy of the reaped target
    assert datastore.list_reaped_resources("eu") == []
    [history] = datastore.resource_history(resource.ksuid).items
    assert history.deleted and history.operation == "delete"
    datastore.put_target(TargetWrite("eu", "FAKE", {}))  # a new target of that name brings nothing back
    assert datastore.get_resource(resource.ksuid) is None


def test_targets_and_stacks_are_read_by_label_reaped_targets_included(datastore: Datastore) -> None:
    datastore.put_target(TargetWrite("eu", "FAKE", {}, reap_kind="after", reap_after_seconds=100))
    datastore.put_target(TargetWrite("gone", "FAKE", {}))
    datastore.delete_target("gone")
    datastore.store_resource(bucket("a"))
    assert datastore.reap_target("eu", unreachable_for(datastore, "eu", 120), threshold=100, at=at(121)) is not None
    labels = [f"t-{n:03d}" for n in range(600)]  # more than one IN list
    for label in labels[::30]:
        datastore.put_target(TargetWrite(label, "FAKE", {"Path": label}))
        datastore.create_stack(label)
    datastore.create_stack("deleted")
    datastore.delete_stack("deleted")
    found = datastore.targets_named([*labels, "eu", "gone", "nope"])
    assert sorted(t.label for t in found) == sorted([*labels[::30], "eu"])
    assert {t.label: t.health_state for t in found}["eu"] == "reaped"
    assert {t.label: t.config for t in found}["t-330"] == {"Path": "t-330"}
    assert sorted(s.label for s in datastore.stacks_named([*labels, "deleted", "nope"])) == labels[::30]
    assert datastore.targets_named([]) == [] and datastore.stacks_named(set()) == []
    live = datastore.stacks_named(labels)
    deleted = datastore.create_stack("deleted")
    datastore.delete_stack("deleted")
    by_id = datastore.stacks_with_ids([*(new_id() for _ in range(600)), *(s.id for s in live), deleted.id])
    assert by_id == sorted(live, key=lambda s: s.label) and datastore.stacks_with_ids([]) == []
