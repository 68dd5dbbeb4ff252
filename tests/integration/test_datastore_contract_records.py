"""The persistence contract, non-resource part: stacks, targets, policies, commands with their write-fenced
resource updates, background-run bookkeeping, and migrations. Runs against every backend."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from svc.config.model import DatastoreConfig
from svc.datastore import (
    COMMAND_FIELDS,
    ConflictError,
    Datastore,
    LeadershipLost,
    NotFoundError,
    open_datastore,
    parse_query,
)
from svc.datastore.migrate import head_revision, migrate
from svc.datastore.sql_store import SqlDatastore
from svc.datastore.tables import metadata
from svc.datastore.update_writes import UpdateStateWrite
from svc.ids import new_id
from svc.model.records import (
    CommandRecord,
    PolicyWrite,
    ResourceUpdateRecord,
    ResourceWrite,
    TargetFilter,
    TargetWrite,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


# -- stacks -------------------------------------------------------------------------------------------------

def test_stack_lifecycle(datastore: Datastore) -> None:
    created = datastore.create_stack("prod", "production")
    with pytest.raises(ConflictError):
        datastore.create_stack("prod")
    updated = datastore.update_stack("prod", "production, updated")
    assert (updated.id, updated.created_at) == (created.id, created.created_at)
    assert updated.version != created.version and updated.description == "production, updated"
    assert datastore.update_stack("prod", "production, updated").version == updated.version  # no-op
    with pytest.raises(NotFoundError):
        datastore.update_stack("nope", "x")
    assert datastore.delete_stack("prod") and not datastore.delete_stack("prod")
    assert datastore.get_stack("prod") is None
    recreated = datastore.create_stack("prod")
    assert recreated.id != created.id


def test_concurrent_stack_creates_have_one_winner(datastore: Datastore) -> None:
    barrier = threading.Barrier(5)

    def create(_: int) -> bool:
        barrier.wait()
        try:
            datastore.create_stack("race")
            return True
        except ConflictError:
            return False

    with ThreadPoolExecutor(5) as pool:
        assert sorted(pool.map(create, range(5))) == [False] * 4 + [True]


def test_stacks_are_listed_by_label_in_pages(datastore: Datastore) -> None:
    for n in range(25):
        datastore.create_stack(f"stack-{n:02d}")
    first = datastore.list_stacks(limit=10)
    second = datastore.list_stacks(cursor=first.next_cursor, limit=10)
    third = datastore.list_stacks(cursor=second.next_cursor, limit=10)
    labels = [s.label for page in (first, second, third) for s in page.items]
    assert labels == [f"stack-{n:02d}" for n in range(25)] and third.next_cursor is None


# -- targets ------------------------------------------------------------------------------------------------

def test_target_versions_and_filters(datastore: Datastore) -> None:
    first = datastore.put_target(TargetWrite("aws-eu", "AWS", {"Region": "eu-west-1"}, discoverable=True))
    assert (first.version, first.health_state) == (1, "unknown")
    assert datastore.put_target(TargetWrite("aws-eu", "AWS", {"Region": "eu-west-1"}, discoverable=True)) == first
    second = datastore.put_target(TargetWrite("aws-eu", "AWS", {"Region": "eu-west-2"}, discoverable=True))
    assert second.version == 2 and second.incarnation_id == first.incarnation_id
    datastore.put_target(TargetWrite("aws_us", "AWS", {}))
    datastore.put_target(TargetWrite("local", "LOCAL", {}))
    assert [t.label for t in datastore.list_targets(TargetFilter(namespace="AWS")).items] == ["aws-eu", "aws_us"]
    assert [t.label for t in datastore.list_targets(TargetFilter(label="aws_*")).items] == ["aws_us"]
    assert [t.label for t in datastore.list_targets(TargetFilter(discoverable=True)).items] == ["aws-eu"]
    assert datastore.delete_target("local") and datastore.get_target("local") is None


def test_target_health_ignores_older_observations(datastore: Datastore) -> None:
    datastore.put_target(TargetWrite("t", "AWS", {}))
    assert datastore.observe_target("t", reachable=True, at=T0 + timedelta(seconds=10), max_gap=60)
    assert not datastore.observe_target("t", reachable=False, at=T0 + timedelta(seconds=5), max_gap=60)
    target = datastore.get_target("t")
    assert target is not None and target.health_state == "reachable"
    assert target.observed_at == T0 + timedelta(seconds=10)
    updated = datastore.put_target(TargetWrite("t", "AWS", {"changed": True}))
    assert updated.health_state == "reachable"  # health carries over to new versions


# -- policies -----------------------------------------------------------------------------------------------

def test_policies_inline_standalone_and_attached(datastore: Datastore) -> None:
    stack = datastore.create_stack("prod")
    ttl = datastore.put_policy(PolicyWrite("ttl", "ttl", {"TTLSeconds": 60}, stack_id=stack.id))
    shared = datastore.put_policy(PolicyWrite("nightly", "auto-reconcile", {"IntervalSeconds": 3600}))
    assert datastore.put_policy(PolicyWrite("ttl", "ttl", {"TTLSeconds": 60}, stack_id=stack.id)) == ttl
    changed = datastore.put_policy(PolicyWrite("ttl", "ttl", {"TTLSeconds": 120}, stack_id=stack.id))
    assert changed.id == ttl.id and changed.version != ttl.version
    assert [p.label for p in datastore.list_policies().items] == ["nightly"]
    assert [p.data for p in datastore.list_policies(stack_id=stack.id).items] == [{"TTLSeconds": 120}]
    assert datastore.attach_policy(stack.id, shared.id) and not datastore.attach_policy(stack.id, shared.id)
    assert [p.id for p in datastore.list_attached_policies(stack.id).items] == [shared.id]
    assert datastore.detach_policy(stack.id, shared.id)
    assert datastore.delete_policy(ttl.id) and not datastore.delete_policy(ttl.id)
    assert datastore.get_policy("ttl", stack.id) is None
    assert datastore.get_policy("nightly") == shared


def test_whether_any_policy_lives_inline_or_standalone(datastore: Datastore) -> None:
    assert not datastore.has_live_policies()
    stack = datastore.create_stack("prod")
    assert not datastore.has_live_policies()
    inline = datastore.put_policy(PolicyWrite("ttl", "ttl", {"TTLSeconds": 60}, stack_id=stack.id))
    assert datastore.has_live_policies()
    assert datastore.delete_policy(inline.id)
    assert not datastore.has_live_policies()  # its deleted version is no live policy
    standalone = datastore.put_policy(PolicyWrite("nightly", "auto-reconcile", {"IntervalSeconds": 3600}))
    assert datastore.has_live_policies()
    assert datastore.delete_policy(standalone.id)
    assert not datastore.has_live_policies()


def test_policies_in_force_lists_each_stacks_policies_of_a_type_inline_first_then_attached_by_label(
        datastore: Datastore) -> None:
    inline_and_attached, attached_only, other_type, bare = (datastore.create_stack(label) for label in (
        "inline-and-attached", "attached-only", "other-type", "bare"))
    own = datastore.put_policy(PolicyWrite("zz-own", "auto-reconcile", {"IntervalSeconds": 60},
                                           stack_id=inline_and_attached.id))
    nightly = datastore.put_policy(PolicyWrite("nightly", "auto-reconcile", {"IntervalSeconds": 3600}))
    hourly = datastore.put_policy(PolicyWrite("hourly", "auto-reconcile", {"IntervalSeconds": 600}))
    gone = datastore.put_policy(PolicyWrite("gone", "auto-reconcile", {"IntervalSeconds": 1}))
    datastore.put_policy(PolicyWrite("ttl", "ttl", {"TTLSeconds": 60}, stack_id=other_type.id))
    for stack, policy in ((inline_and_attached, nightly), (attached_only, nightly), (attached_only, hourly),
                          (attached_only, gone), (bare, hourly)):
        datastore.attach_policy(stack.id, policy.id)
    datastore.detach_policy(bare.id, hourly.id)
    datastore.delete_policy(gone.id)

    held = datastore.policies_in_force("auto-reconcile")

    expected = sorted([(inline_and_attached.id, own.label), (inline_and_attached.id, nightly.label),
                       (attached_only.id, hourly.label), (attached_only.id, nightly.label)],
                      key=lambda pair: (pair[0], pair[1] != own.label, pair[1]))
    assert [(stack_id, policy.label) for stack_id, policy in held] == expected
    assert [p.data for s, p in held if s == inline_and_attached.id] == [{"IntervalSeconds": 60},
                                                                         {"IntervalSeconds": 3600}]
    assert [(s, p.label) for s, p in datastore.policies_in_force("ttl")] == [(other_type.id, "ttl")]


def test_policy_attachments_pair_live_standalone_policies_with_live_stacks(datastore: Datastore) -> None:
    prod, dev, temp = (datastore.create_stack(label) for label in ("prod", "dev", "temp"))
    nightly = datastore.put_policy(PolicyWrite("nightly", "auto-reconcile", {"IntervalSeconds": 3600}))
    ttl = datastore.put_policy(PolicyWrite("short", "ttl", {"TTLSeconds": 60}))
    gone = datastore.put_policy(PolicyWrite("gone", "ttl", {"TTLSeconds": 1}))
    for stack, policy in ((prod, nightly), (dev, nightly), (temp, nightly), (dev, ttl), (prod, gone)):
        datastore.attach_policy(stack.id, policy.id)
    datastore.put_policy(PolicyWrite("own", "ttl", {"TTLSeconds": 60}, stack_id=prod.id))  # inline: no attachment
    datastore.delete_policy(gone.id)
    datastore.delete_stack("temp")
    datastore.update_stack("prod", "a new version of the stack keeps its attachments")
    assert datastore.policy_attachments() == [("nightly", "dev"), ("nightly", "prod"), ("short", "dev")]


def test_the_policies_of_many_stacks_are_read_at_once_as_stack_by_stack(datastore: Datastore) -> None:
    prod, dev, bare = (datastore.create_stack(label) for label in ("prod", "dev", "bare"))
    nightly = datastore.put_policy(PolicyWrite("nightly", "auto-reconcile", {"IntervalSeconds": 3600}))
    short = datastore.put_policy(PolicyWrite("short", "ttl", {"TTLSeconds": 60}))
    gone = datastore.put_policy(PolicyWrite("gone", "ttl", {"TTLSeconds": 1}))
    for stack, policy in ((prod, short), (prod, nightly), (dev, nightly), (prod, gone)):
        datastore.attach_policy(stack.id, policy.id)
    for label, stack in (("b-own", prod), ("a-own", prod), ("dev-own", dev)):
        datastore.put_policy(PolicyWrite(label, "ttl", {"TTLSeconds": 60}, stack_id=stack.id))
    datastore.delete_policy(gone.id)
    held = datastore.policies_of_stacks([prod.id, dev.id, bare.id, "no-such-stack"])
    for stack in (prod, dev, bare):  # as asking each stack: its own policies, then those attached, each by label
        assert held[stack.id].inline == list(datastore.list_policies(stack_id=stack.id).items)
        assert held[stack.id].attached == list(datastore.list_attached_policies(stack.id).items)
    assert [p.label for p in held[prod.id].inline] == ["a-own", "b-own"]
    assert [p.label for p in held[prod.id].attached] == ["nightly", "short"]
    assert held[bare.id].inline == held[bare.id].attached == held["no-such-stack"].inline == []
    unknown = [new_id() for _ in range(1_000)]  # before it, they sort before it: it is in a third IN list
    late = datastore.create_stack("late")
    datastore.attach_policy(late.id, short.id)
    held = datastore.policies_of_stacks([*unknown, late.id])
    assert [p.label for p in held[late.id].attached] == ["short"] and not any(held[i].attached for i in unknown)


def test_deleting_a_stack_takes_its_inline_policies_and_detaches_standalone_ones(datastore: Datastore) -> None:
    stack = datastore.create_stack("temp")
    datastore.put_policy(PolicyWrite("temp-ttl", "ttl", {"TTLSeconds": 60}, stack_id=stack.id))
    shared = datastore.put_policy(PolicyWrite("shared", "ttl", {"TTLSeconds": 600}))
    datastore.attach_policy(stack.id, shared.id)
    assert datastore.delete_stack("temp")
    assert datastore.get_policy("temp-ttl", stack.id) is None
    assert datastore.list_policies(stack_id=stack.id).items == ()
    assert datastore.get_policy("shared") == shared  # standalone policies outlive the stacks using them
    again = datastore.create_stack("temp")  # a new stack with the label starts without policies
    assert datastore.list_policies(stack_id=again.id).items == ()
    assert datastore.list_attached_policies(again.id).items == ()


# -- commands and resource updates ------------------------------------------------------------------------

def command(command_id: str | None = None, **fields: object) -> CommandRecord:
    values: dict[str, object] = {"id": command_id or new_id(), "command": "apply", "state": "InProgress",
                                 "start_ts": T0, "client_id": "client-a", "mode": "reconcile"}
    values.update(fields)
    return CommandRecord(**values)  # type: ignore[arg-type]


def update(command_id: str, n: int, state: str = "NotStarted", stack: str = "prod") -> ResourceUpdateRecord:
    return ResourceUpdateRecord(command_id=command_id, ksuid=f"k{n:03d}", operation="create", state=state,
                                resource_type="AWS::S3::Bucket", resource_label=f"b{n}", stack_label=stack,
                                data={"DesiredState": {"n": n}})


def test_command_round_trip_with_updates(datastore: Datastore) -> None:
    record = command(data={"TargetUpdates": [{"TargetLabel": "t"}]}, subject="alice", force=True)
    assert datastore.put_command(record, [update(record.id, n) for n in range(1200)])
    assert datastore.get_command(record.id) == record
    page = datastore.get_resource_updates(record.id, limit=500)
    assert len(page.items) == 500 and page.items[0].data == {"DesiredState": {"n": 0}}
    rest = datastore.get_resource_updates(record.id, cursor=page.next_cursor, limit=1000)
    assert len(rest.items) == 700 and rest.next_cursor is None


def test_terminal_resource_update_states_are_final(datastore: Datastore) -> None:
    record = command()
    datastore.put_command(record, [update(record.id, 1)])
    assert datastore.set_resource_update_state(record.id, "k001", "create", "InProgress", start_ts=T0)
    assert datastore.set_resource_update_state(record.id, "k001", "create", "Success", version="v1")
    assert not datastore.set_resource_update_state(record.id, "k001", "create", "Failed")
    datastore.put_command(record, [update(record.id, 1, state="NotStarted")])  # a re-put cannot revive it
    stored = datastore.get_resource_updates(record.id).items[0]
    assert (stored.state, stored.version, stored.start_ts) == ("Success", "v1", T0)


def test_terminal_states_hold_under_concurrent_writers(datastore: Datastore) -> None:
    record = command()
    datastore.put_command(record, [update(record.id, n) for n in range(20)])
    barrier = threading.Barrier(8)
    wins: dict[str, list[str]] = {f"k{n:03d}": [] for n in range(20)}
    lock = threading.Lock()

    def race(writer: int) -> None:
        state = "Success" if writer % 2 else "Failed"
        barrier.wait()
        for n in range(20):
            if datastore.set_resource_update_state(record.id, f"k{n:03d}", "create", state):
                with lock:
                    wins[f"k{n:03d}"].append(state)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(race, range(8)))
    stored = {u.ksuid: u.state for u in datastore.get_resource_updates(record.id).items}
    for ksuid, winners in wins.items():
        assert len(winners) == 1, ksuid
        assert stored[ksuid] == winners[0]


def test_batched_update_states_apply_in_order_with_the_fence(datastore: Datastore) -> None:
    record, other = command(), command()
    datastore.put_command(record, [update(record.id, n) for n in range(3)])
    datastore.put_command(other, [update(other.id, 1)])
    assert datastore.set_resource_update_state(record.id, "k002", "create", "Failed")
    moved = datastore.set_resource_update_states([
        UpdateStateWrite(record.id, "k000", "create", "InProgress", data={"step": 1}, start_ts=T0),
        UpdateStateWrite(record.id, "k001", "create", "InProgress"),
        UpdateStateWrite(record.id, "k000", "create", "Success", version="v1", data={"step": 2}),
        UpdateStateWrite(record.id, "k000", "create", "Failed", data={"step": 3}),  # after Success: fenced
        UpdateStateWrite(record.id, "k002", "create", "Success"),  # terminal before the batch
        UpdateStateWrite(record.id, "k009", "create", "Success"),  # no such update
        UpdateStateWrite(other.id, "k001", "create", "Canceled"),  # another command's k001
        UpdateStateWrite(record.id, "k001", "delete", "Success"),  # another operation
    ])
    assert moved == [True, True, True, False, False, False, True, False]
    stored = {u.ksuid: u for u in datastore.get_resource_updates(record.id).items}
    assert (stored["k000"].state, stored["k000"].version, stored["k000"].start_ts, stored["k000"].data) == (
        "Success", "v1", T0, {"step": 2})
    assert stored["k001"].state == "InProgress" and stored["k002"].state == "Failed"
    assert datastore.get_resource_updates(other.id).items[0].state == "Canceled"


def test_batched_terminal_states_hold_under_concurrent_writers(datastore: Datastore) -> None:
    record = command()
    datastore.put_command(record, [update(record.id, n) for n in range(20)])
    barrier = threading.Barrier(6)
    wins: dict[str, list[str]] = {f"k{n:03d}": [] for n in range(20)}
    lock = threading.Lock()

    def race(writer: int) -> None:
        state = "Success" if writer % 2 else "Canceled"
        keys = [f"k{n:03d}" for n in range(20)][::1 if writer % 3 else -1]
        barrier.wait()
        moved = datastore.set_resource_update_states([UpdateStateWrite(record.id, k, "create", state) for k in keys])
        with lock:
            for key, won in zip(keys, moved, strict=True):
                if won:
                    wins[key].append(state)

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(race, range(6)))
    stored = {u.ksuid: u.state for u in datastore.get_resource_updates(record.id).items}
    for ksuid, winners in wins.items():
        assert len(winners) == 1, ksuid
        assert stored[ksuid] == winners[0]


def test_command_states_are_fenced_too(datastore: Datastore) -> None:
    record = command()
    datastore.put_command(record)
    assert datastore.set_command_state(record.id, "Success", end_ts=T0 + timedelta(seconds=3))
    assert not datastore.set_command_state(record.id, "Failed")
    assert not datastore.put_command(command(record.id, state="InProgress"))
    stored = datastore.get_command(record.id)
    assert stored is not None and stored.state == "Success" and stored.end_ts == T0 + timedelta(seconds=3)


def test_a_commands_end_deletes_what_it_emptied_and_stores_its_state_in_one_transaction(
        datastore: Datastore) -> None:
    for stack in ("emptied", "still-used"):
        datastore.create_stack(stack)
    for target in ("emptied-target", "used-target"):
        datastore.put_target(TargetWrite(target, "FAKE", {}))
    datastore.store_resource(ResourceWrite(type="FAKE::Test::Item", label="left", stack="still-used",
                                           target="used-target", properties={}, native_id="n-left"))
    record = command()
    datastore.put_command(record)
    ended = T0 + timedelta(seconds=2)
    assert datastore.end_command(record.id, "Success", end_ts=ended, emptied_targets=["emptied-target", "used-target"],
                                 emptied_stacks=["emptied", "still-used", "never-existed"])
    assert datastore.get_stack("emptied") is None and datastore.get_stack("still-used") is not None
    assert datastore.get_target("emptied-target") is None and datastore.get_target("used-target") is not None
    stored = datastore.get_command(record.id)
    assert stored is not None and (stored.state, stored.end_ts) == ("Success", ended)
    # Again (a retry after an outage that committed it): nothing moves, nothing fails.
    assert not datastore.end_command(record.id, "Failed", end_ts=T0, emptied_targets=["emptied-target"],
                                     emptied_stacks=["emptied"])
    assert datastore.get_command(record.id) == stored
    # No state: the deletions alone, the command left as it is.
    other = command()
    datastore.put_command(other)
    datastore.create_stack("later")
    assert not datastore.end_command(other.id, None, end_ts=T0, emptied_stacks=["later"])
    assert datastore.get_stack("later") is None
    left = datastore.get_command(other.id)
    assert left is not None and left.state == "InProgress" and left.end_ts is None


def test_a_commands_end_is_fenced_and_writes_nothing_when_refused(datastore: Datastore) -> None:
    datastore.create_stack("kept")
    record = command()
    datastore.put_command(record)
    datastore.fence_writes(None)  # this process does not lead: every write is refused
    with pytest.raises(LeadershipLost):
        datastore.end_command(record.id, "Success", end_ts=T0, emptied_stacks=["kept"])
    assert datastore.get_stack("kept") is not None
    stored = datastore.get_command(record.id)
    assert stored is not None and stored.state == "InProgress"


def test_cancel_is_a_compare_and_swap(datastore: Datastore) -> None:
    record = command()
    datastore.put_command(record, [update(record.id, 1), update(record.id, 2, "InProgress"),
                                   update(record.id, 3, "Success")])
    graceful = datastore.cancel_resource_updates(record.id)
    assert graceful.canceled_not_started == (("k001", "create"),)
    assert graceful.canceled_in_progress == ()
    forced = datastore.cancel_resource_updates(record.id, force=True)
    assert forced.canceled_in_progress == (("k002", "create"),) and forced.canceled_not_started == ()
    again = datastore.cancel_resource_updates(record.id, force=True)
    assert again.canceled_in_progress == () and again.canceled_not_started == ()
    assert set(again.skipped) == {("k001", "create"), ("k002", "create"), ("k003", "create")}


def test_command_queries_and_pages(datastore: Datastore) -> None:
    ids = []
    for n in range(30):
        record = command(start_ts=T0 + timedelta(minutes=n), client_id="me-client" if n % 2 else "other",
                         command="destroy" if n % 5 == 0 else "apply", state="Success")
        datastore.put_command(record, [update(record.id, n, stack="dev" if n % 3 == 0 else "prod")])
        ids.append(record.id)
    datastore.put_command(command(source="synchronizer", command="sync"))
    first = datastore.list_commands(limit=12)
    rest = datastore.list_commands(cursor=first.next_cursor, limit=100)
    assert [c.id for c in first.items + rest.items] == ids[::-1]  # newest first, user commands only

    def listed(text: str, **kwargs: object) -> list[str]:
        return [c.id for c in datastore.list_commands(parse_query(text, COMMAND_FIELDS), limit=100,
                                                      **kwargs).items]  # type: ignore[arg-type]

    assert listed("client:me", client_id="me-client") == [ids[n] for n in range(29, -1, -1) if n % 2]
    assert listed("command:DESTROY") == [ids[n] for n in range(25, -1, -5)]
    assert listed("stack:dev -command:destroy") == [ids[n] for n in range(29, -1, -1) if n % 3 == 0 and n % 5]
    assert listed("status:success id:" + ids[4]) == [ids[4]]
    assert len(listed("command:sync", sources=None)) == 1


def test_stacks_a_command_covers_without_updates_match_stack_queries(datastore: Datastore) -> None:
    """A reconcile that changes nothing in a stack is still that stack's baseline (drift.last_reconcile)."""
    older = command(state="Success", mode="reconcile")
    datastore.put_command(older, [update(older.id, 1, stack="web")], stacks=["web", "db"])
    marker = command(state="Success", mode="reconcile", start_ts=T0 + timedelta(minutes=1))
    assert datastore.put_command(marker, stacks=["db", "db"])  # repeats are one row

    def listed(text: str) -> list[str]:
        return [c.id for c in datastore.list_commands(parse_query(text, COMMAND_FIELDS), limit=100).items]

    assert listed("stack:db") == [marker.id, older.id] and listed("stack:web") == [older.id]
    assert listed("stack:d*") == [marker.id, older.id] and listed("stack:elsewhere") == []
    assert datastore.stacks_covered(older.id) == ["db", "web"] and datastore.stacks_covered(marker.id) == ["db"]
    assert datastore.delete_command(marker.id) and listed("stack:db") == [older.id]
    assert datastore.stacks_covered(marker.id) == [] and datastore.stacks_covered("nope") == []


def test_the_stacks_a_command_still_changes_are_those_of_its_updates_not_ended(datastore: Datastore) -> None:
    running = command()
    states = ("Success", "Failed", "Rejected", "InProgress", "NotStarted", "Canceled")
    datastore.put_command(running, [update(running.id, n, state, stack=f"s-{state}") for n, state in enumerate(states)])
    every = [f"s-{state}" for state in states] + ["elsewhere"]
    assert datastore.stacks_changing(running.id, every) == {"s-InProgress", "s-NotStarted", "s-Canceled"}
    assert datastore.stacks_changing(running.id, ["s-Success", "elsewhere"]) == set()
    assert datastore.stacks_changing("nope", every) == set() and datastore.stacks_changing(running.id, []) == set()
    assert datastore.stacks_updated(running.id) == set(every) - {"elsewhere"} and datastore.stacks_updated("x") == set()


def test_the_last_reconcile_of_a_stack_is_the_newest_reconcile_apply_in_it(datastore: Datastore) -> None:
    """Drift's baseline: a reconcile apply that changed the stack or whose forma named it; patches, destroys,
    synchronizations and the reconciles of other stacks (one whose label merely starts the same) do not count. It is
    answered without its data document (the changes it made to targets, stacks and policies): which and when."""
    def put(minutes: int, stack: str, **fields: object) -> CommandRecord:
        record = command(state="Success", start_ts=T0 + timedelta(minutes=minutes), end_ts=T0 + timedelta(
            minutes=minutes, seconds=30), data={"stacks": [{"label": stack, "operation": "create"}]}, **fields)
        datastore.put_command(record, [update(record.id, minutes, stack=stack)])
        return replace(record, data={})

    baseline = put(1, "web")
    put(2, "web", mode="patch")
    put(3, "web", command="destroy", mode=None)
    put(4, "web", command="sync", source="sync")
    other = put(5, "webby")
    assert datastore.last_reconcile("web") == baseline and datastore.last_reconcile("webby") == other
    covering = command(state="Success", start_ts=T0 + timedelta(minutes=6))  # changed db only, named web too
    datastore.put_command(covering, [update(covering.id, 6, stack="db")], stacks=["db", "web"])
    assert datastore.get_command(baseline.id).data == {"stacks": [{"label": "web", "operation": "create"}]}
    assert datastore.last_reconcile("web") == covering and datastore.last_reconcile("db") == covering
    assert datastore.last_reconcile("elsewhere") is None
    for minutes in range(10, 260):  # more newer commands of the stack than a page of them holds
        put(minutes, "web", mode="patch")
    assert datastore.last_reconcile("web") == covering


def test_incomplete_commands_and_deletion(datastore: Datastore) -> None:
    done, running = command(state="Success"), command(state="InProgress", start_ts=T0 + timedelta(seconds=1))
    datastore.put_command(done)
    datastore.put_command(running, [update(running.id, 1)])
    assert [c.id for c in datastore.list_incomplete_commands().items] == [running.id]
    assert datastore.delete_command(running.id)
    assert datastore.get_command(running.id) is None and datastore.get_resource_updates(running.id).items == ()


def test_incomplete_commands_and_targets_are_walked_in_pages(datastore: Datastore) -> None:
    # Both are read by every command's admission from statements built once (``PagedQuery``): the first page's and
    # the next pages', newest first for the commands.
    started = [command(state="InProgress", start_ts=T0 + timedelta(seconds=n)) for n in range(5)]
    for record in [*started, command(state="Failed", start_ts=T0 + timedelta(seconds=9))]:
        datastore.put_command(record)
    pages, cursor = [], None
    while True:
        page = datastore.list_incomplete_commands(cursor=cursor, limit=2)
        pages.append([c.id for c in page.items])
        if (cursor := page.next_cursor) is None:
            break
    assert pages == [[started[4].id, started[3].id], [started[2].id, started[1].id], [started[0].id]]
    for label in ("t-c", "t-a", "t-e", "t-b", "t-d"):
        datastore.put_target(TargetWrite(label, "FAKE", {}))
    first = datastore.list_targets(TargetFilter(reaped=True), limit=3)
    rest = datastore.list_targets(TargetFilter(reaped=True), cursor=first.next_cursor, limit=3)
    assert [t.label for t in (*first.items, *rest.items)] == ["t-a", "t-b", "t-c", "t-d", "t-e"]
    assert rest.next_cursor is None and [t.label for t in datastore.list_targets().items][:2] == ["t-a", "t-b"]


# -- background runs ----------------------------------------------------------------------------------------

def test_background_runs_do_not_overlap(datastore: Datastore) -> None:
    run = datastore.begin_run("discovery", "aws-eu", stale_after=timedelta(minutes=10))
    assert run is not None
    assert datastore.begin_run("discovery", "aws-eu", stale_after=timedelta(minutes=10)) is None
    assert datastore.begin_run("synchronization", "aws-eu", stale_after=timedelta(minutes=10)) is not None
    assert datastore.finish_run("discovery", "aws-eu", run, succeeded=True, details={"found": 3})
    record = datastore.get_run("discovery", "aws-eu")
    assert record is not None and record.state == "succeeded" and record.details == {"found": 3}
    assert record.last_success_at is not None
    stale = datastore.begin_run("discovery", "aws-eu", stale_after=timedelta(0))
    took_over = datastore.begin_run("discovery", "aws-eu", stale_after=timedelta(0))
    assert stale and took_over and stale != took_over
    assert not datastore.finish_run("discovery", "aws-eu", stale, succeeded=False)


# -- migrations ---------------------------------------------------------------------------------------------

def _schema_of(config: DatastoreConfig) -> str | None:
    return config.postgres.schema_ or None if config.datastore_type == "postgres" else None


def test_migrations_are_idempotent_and_match_the_table_definition(
        datastore: Datastore, datastore_config_for_backend: DatastoreConfig) -> None:
    assert isinstance(datastore, SqlDatastore)
    result = migrate(datastore.engine, schema=_schema_of(datastore_config_for_backend))
    assert not result.changed and result.after == head_revision()
    with datastore.engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), metadata)
    assert differences == []


def test_concurrent_starts_migrate_once(datastore_config_for_backend: DatastoreConfig) -> None:
    barrier = threading.Barrier(4)

    def start(_: int) -> Datastore:
        barrier.wait()
        return open_datastore(datastore_config_for_backend)

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(start, range(4)))
    try:
        stores[0].create_stack("after-concurrent-start")
        assert all(s.get_stack("after-concurrent-start") is not None for s in stores)
        engine = stores[0].engine  # type: ignore[attr-defined]
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    finally:
        for store in stores:
            store.close()

