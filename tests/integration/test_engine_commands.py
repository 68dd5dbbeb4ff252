"""The Engine in process, on a real datastore (SQLite and PostgreSQL), driving the FAKE plugin.

Each test runs one scenario in one event loop: submit commands, wait for them, and compare what the
engine reports and stores with what the FAKE cloud holds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from svc_plugin_fake import FakeCloud

from support.engine import CALLER, TIMEOUT, applied, fake_forma, finished, item, res, resource, run, shown
from svc.api.command_views import conflict_data
from svc.datastore import Datastore, DatastoreUnavailable
from svc.engine import errors
from svc.engine.engine import Engine
from svc.engine.service import ApplyRequest, DestroyRequest


@dataclass
class Env:
    datastore: Datastore
    tmp_path: Path

    @property
    def cloud_path(self) -> Path:
        return self.tmp_path / "cloud.db"

    @property
    def cloud(self) -> FakeCloud:
        return FakeCloud(self.cloud_path)

    def forma(self, *resources, **kwargs):
        return fake_forma(self.cloud_path, list(resources), **kwargs)

    def run(self, scenario: Callable[[Engine], Awaitable[None]]) -> None:
        run(self.datastore, self.tmp_path, scenario)


# The embedded default and PostgreSQL (the Data API backend speaks PostgreSQL's dialect and has its own
# contract tests).
pytestmark = pytest.mark.parametrize("datastore_config_for_backend", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def env(datastore: Datastore, tmp_path: Path) -> Env:
    return Env(datastore, tmp_path)


def by_label(view) -> dict[str, list]:
    out: dict[str, list] = {}
    for update in view.ResourceUpdates:
        out.setdefault(update.ResourceLabel, []).append(update)
    return out


def network_forma(env: Env, cidr: str = "10.0.0.0/16", **extra):
    net_ref = res("net", "FAKE::Net::Network", "NetworkId")
    return env.forma(
        resource("net", "FAKE::Net::Network", {"Cidr": cidr, "Tags": [{"Key": "Name", "Value": "net"}]}),
        resource("sub", "FAKE::Net::Subnet", {"NetworkId": net_ref, "Cidr": "10.0.1.0/24"}),
        resource("gw", "FAKE::Net::Gateway", {"NetworkId": net_ref, "Name": "gw"}),
        resource("srv", "FAKE::Compute::Server", {"SubnetId": res("sub", "FAKE::Net::Subnet", "SubnetId"),
                                                  "GatewayId": res("gw", "FAKE::Net::Gateway", "GatewayId"),
                                                  "Image": "img-1", "Size": extra.get("size", "small")}))


def test_creates_in_dependency_order_and_resolves_references(env: Env):
    async def scenario(engine: Engine) -> None:
        view = await applied(engine, network_forma(env))
        assert view.State == "Success", [(u.ResourceLabel, u.ErrorMessage) for u in view.ResourceUpdates]
        order = [call["type"].split("::")[-1] for call in env.cloud.calls("create")]
        assert order.index("Network") < order.index("Subnet") < order.index("Gateway") < order.index("Server")
        cloud = env.cloud.resources()
        network = next(i for i, r in cloud.items() if r["type"] == "FAKE::Net::Network")
        subnet = next(r for r in cloud.values() if r["type"] == "FAKE::Net::Subnet")
        server = next(r for r in cloud.values() if r["type"] == "FAKE::Compute::Server")
        assert subnet["properties"]["NetworkId"] == network
        assert server["properties"]["SubnetId"] == subnet["properties"]["SubnetId"]
        stored = {r.label: r for r in env.datastore.list_resources().items}
        assert {r.native_id for r in stored.values()} == set(cloud)
        assert stored["sub"].properties["NetworkId"]["$value"] == network

    env.run(scenario)


def test_a_command_is_stored_in_progress_with_its_updates_then_sends_its_first_calls_before_answering(
        env: Env, monkeypatch: pytest.MonkeyPatch):
    # One write stands between a submission and its first plugin calls: the command (InProgress already, as it
    # starts at once) with its updates. Those calls go out before ``apply`` answers, not after.
    states: list[str | None] = []
    set_command_state, end_command = env.datastore.set_command_state, env.datastore.end_command
    monkeypatch.setattr(env.datastore, "set_command_state",
                        lambda command_id, state, **kw: states.append(state) or set_command_state(command_id, state, **kw))
    monkeypatch.setattr(env.datastore, "end_command",
                        lambda command_id, state, **kw: states.append(state) or end_command(command_id, state, **kw))

    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("latency", {"create": 0.5})
        response = await shown(engine).apply(ApplyRequest(env.forma(item("a", "1"), item("b", "2", ref="a")), "reconcile"),
                                      CALLER)
        command = env.datastore.get_command(response.CommandId)
        assert command is not None and command.state == "InProgress" and command.end_ts is None
        updates = {u.resource_label: u.state for u in env.datastore.get_resource_updates(response.CommandId).items}
        assert updates == {"a": "NotStarted", "b": "NotStarted"}  # a's InProgress write waits for a slow call
        assert [call["op"] for call in env.cloud.calls()] == ["create"]  # a's, sent before the answer
        view = await shown(engine).wait(response.CommandId, TIMEOUT)
        assert view is not None and view.State == "Success"

    env.run(scenario)
    assert states == ["Success"]


def test_a_command_whose_storing_fails_leaves_no_stack_or_target_behind(env: Env, monkeypatch: pytest.MonkeyPatch):
    # The command, its new stack and target are one transaction: an outage as the updates are written leaves
    # nothing of it, and the same apply once the datastore is back stores and runs it whole.
    put_command = env.datastore.put_command
    outage = [True]

    def failing(command, updates=(), **kwargs):
        written = put_command(command, updates, **kwargs)
        if outage[0]:
            raise DatastoreUnavailable("datastore unavailable (test): connection lost before the commit")
        return written

    monkeypatch.setattr(env.datastore, "put_command", failing)

    async def scenario(engine: Engine) -> None:
        with pytest.raises(DatastoreUnavailable):
            await shown(engine).apply(ApplyRequest(env.forma(item("a", "1")), "reconcile"), CALLER)
        assert env.datastore.get_stack("app") is None and env.datastore.get_target("cloud") is None
        assert not env.datastore.list_commands().items and not env.cloud.calls()
        outage[0] = False
        view = await applied(engine, env.forma(item("a", "1")))
        assert view.State == "Success"
        assert env.datastore.get_stack("app") is not None and env.datastore.get_target("cloud") is not None

    env.run(scenario)


def test_a_dependent_starts_once_its_dependency_answered_and_its_end_commits_after_that_one(
        env: Env, monkeypatch: pytest.MonkeyPatch):
    # a's end is held back from the datastore until b's create reaches the cloud: b must not wait for that
    # commit (only for a's answer), and b's end must still commit no earlier than a's.
    commit_changes = env.datastore.commit_changes
    committed: list[set[str]] = []  # per commit, in order: the ksuids whose update it made Success
    creates_while_held: list[int] = []

    def held(batch):
        if not creates_while_held and any(s.state == "Success" for s in batch.states):
            deadline = time.monotonic() + 10
            while len(env.cloud.calls("create")) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            creates_while_held.append(len(env.cloud.calls("create")))
        outcome = commit_changes(batch)
        committed.append({s.ksuid for s, moved in zip(batch.states, outcome.moved, strict=True)
                          if moved and s.state == "Success"})
        return outcome

    monkeypatch.setattr(env.datastore, "commit_changes", held)

    async def scenario(engine: Engine) -> None:
        view = await applied(engine, env.forma(item("a", "1"), item("b", "2", ref="a")))
        assert view.State == "Success", [(u.ResourceLabel, u.ErrorMessage) for u in view.ResourceUpdates]
        assert creates_while_held == [2]  # b's create went out while a's end was still uncommitted
        ksuid = {u.resource_label: u.ksuid for u in env.datastore.get_resource_updates(view.CommandId).items}
        first = {label: next(i for i, done in enumerate(committed) if ksuid[label] in done) for label in ksuid}
        assert first["a"] <= first["b"]
        stored = {r.label: r for r in env.datastore.list_resources().items}
        assert stored["b"].properties["Ref"]["$value"] == stored["a"].native_id

    env.run(scenario)


def test_update_in_place_then_no_op(env: Env):
    async def scenario(engine: Engine) -> None:
        await applied(engine, env.forma(item("a", "1")))
        [native_id] = env.cloud.resources()
        view = await applied(engine, env.forma(item("a", "2")))
        [update] = view.ResourceUpdates
        assert (update.Operation, update.State) == ("update", "Success")
        assert update.PatchDocument == [{"op": "replace", "path": "/Value", "value": "2"}]
        assert env.cloud.get(native_id)["properties"]["Value"] == "2"
        again = await shown(engine).apply(ApplyRequest(env.forma(item("a", "2")), "reconcile"), CALLER)
        assert again.Simulation.ChangesRequired is False

    env.run(scenario)


def test_replace_on_create_only_change(env: Env):
    async def scenario(engine: Engine) -> None:
        await applied(engine, env.forma(item("a", "1", token="t1"), item("b", "x", ref="a")))
        old = {r["properties"]["Token"] if "Token" in r["properties"] else "b": i for i, r in env.cloud.resources().items()}
        view = await applied(engine, env.forma(item("a", "1", token="t2"), item("b", "x", ref="a")))
        assert view.State == "Success"
        ops = sorted((u.ResourceLabel, u.Operation) for u in view.ResourceUpdates)
        assert ops == [("a", "create"), ("a", "delete"), ("b", "update")]
        delete = next(u for u in view.ResourceUpdates if u.Operation == "delete")
        assert delete.CreateOnlyPatch == [{"op": "replace", "path": "/Token", "value": "t2"}] and delete.GroupId
        cloud = env.cloud.resources()
        new_a = next(i for i, r in cloud.items() if r["properties"].get("Token") == "t2")
        assert old["t1"] not in cloud and len(cloud) == 2
        assert cloud[old["b"]]["properties"]["Ref"] == new_a

    env.run(scenario)


def test_reconcile_deletes_what_the_forma_dropped_patch_does_not(env: Env):
    async def scenario(engine: Engine) -> None:
        await applied(engine, env.forma(item("a", "1"), item("b", "2")))
        patch = await shown(engine).apply(ApplyRequest(env.forma(item("a", "1")), "patch"), CALLER)
        assert patch.Simulation.ChangesRequired is False and len(env.cloud.resources()) == 2
        view = await applied(engine, env.forma(item("a", "1")))
        assert [(u.ResourceLabel, u.Operation, u.State) for u in view.ResourceUpdates] == [("b", "delete", "Success")]
        assert [r["properties"]["Value"] for r in env.cloud.resources().values()] == ["1"]

    env.run(scenario)


def test_simulate_changes_nothing(env: Env):
    async def scenario(engine: Engine) -> None:
        response = await shown(engine).apply(ApplyRequest(env.forma(item("a", "1")), "reconcile", simulate=True), CALLER)
        assert response.Simulation.ChangesRequired
        assert [u.Operation for u in response.Simulation.Command.ResourceUpdates] == ["create"]
        assert await shown(engine).command(response.CommandId) is None
        assert env.cloud.resources() == {} and env.datastore.list_resources().items == ()
        assert env.datastore.list_commands(sources=None).items == ()

    env.run(scenario)


def test_reconcile_refused_after_out_of_band_change_then_forced(env: Env):
    async def scenario(engine: Engine) -> None:
        await applied(engine, env.forma(item("a", "1"), item("b", "2")))
        native_a = next(i for i, r in env.cloud.resources().items() if r["properties"]["Value"] == "1")
        env.cloud.set_property(native_a, "Value", "changed-by-hand")
        assert await engine.synchronize() is not None
        with pytest.raises(errors.ReconcileRejected) as raised:
            await shown(engine).apply(ApplyRequest(env.forma(item("a", "1"), item("b", "3")), "reconcile"), CALLER)
        assert raised.value.data["ModifiedStacks"]["app"]["ModifiedResources"][0]["Label"] == "a"
        view = await applied(engine, env.forma(item("a", "1"), item("b", "3")), force=True)
        assert view.State == "Success"
        assert env.cloud.get(native_a)["properties"]["Value"] == "1"

    env.run(scenario)


def test_update_rejected_when_the_cloud_changed_since_planning(env: Env):
    async def scenario(engine: Engine) -> None:
        await applied(engine, env.forma(item("a", "1")))
        [native_a] = env.cloud.resources()
        env.cloud.set_property(native_a, "Value", "oob")
        view = await finished(engine, env.forma(item("a", "2")), mode="patch")
        [update] = view.ResourceUpdates
        assert (update.State, view.State) == ("Rejected", "Failed") and "outside svc" in update.ErrorMessage
        [stored] = env.datastore.list_resources().items
        assert stored.properties["Value"] == "oob"
        assert env.cloud.get(native_a)["properties"]["Value"] == "oob"
        # Stored as synchronization stores a change outside svc (issue 24 item 8): it is drift.
        assert env.datastore.get_command(stored.command_id).command == "sync"
        with pytest.raises(errors.ReconcileRejected):
            await shown(engine).apply(ApplyRequest(env.forma(item("a", "2")), "reconcile"), CALLER)

    env.run(scenario)


def test_a_read_only_refresh_is_no_change_outside_svc(env: Env):
    """As synchronization stores it: read-only properties are refreshed in place, no new version, so the update
    that read them goes on."""
    async def scenario(engine: Engine) -> None:
        await applied(engine, env.forma(item("a", "1")))
        [native_a] = env.cloud.resources()
        env.cloud.set_property(native_a, "Generation", 7)  # not a field of the type: a read-only property
        view = await applied(engine, env.forma(item("a", "2")))
        assert (view.State, view.ResourceUpdates[0].State) == ("Success", "Success")
        assert env.cloud.get(native_a)["properties"]["Value"] == "2"
        assert [c.command for c in env.datastore.list_commands(sources=None).items] == ["apply", "apply"]

    env.run(scenario)


def test_throttling_is_retried_then_succeeds(env: Env):
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("throttle", {"remaining": 2, "ops": ["create"]})
        view = await applied(engine, env.forma(item("a", "1")))
        [update] = view.ResourceUpdates
        assert (update.State, update.CurrentAttempt) == ("Success", 3)
        assert len(env.cloud.resources()) == 1 and env.cloud.knobs()["throttle"]["remaining"] == 0

    env.run(scenario)


def test_in_progress_answers_are_polled(env: Env):
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("in_progress", {"polls": 3, "ops": ["create"]})
        view = await applied(engine, env.forma(item("a", "1")))
        assert view.State == "Success" and len(env.cloud.resources()) == 1
        assert view.ResourceUpdates[0].NativeId in env.cloud.resources()

    env.run(scenario)


def test_a_create_answer_that_names_no_native_id_is_recorded_under_the_identifier(env: Env):
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("in_progress", {"polls": 2, "ops": ["create"]})  # the id comes with the final answer
        view = await applied(engine, env.forma(resource("rec", "FAKE::Test::Record", {"Value": "v"})))
        assert view.State == "Success", [u.ErrorMessage for u in view.ResourceUpdates]
        [(native_id, found)] = env.cloud.resources("FAKE::Test::Record").items()
        assert found["properties"]["Meta"]["RecordId"] == native_id
        [stored] = env.datastore.list_resources().items
        assert stored.native_id == native_id

    env.run(scenario)


def test_a_create_answer_under_the_provider_s_keys_is_warned_about_once_per_type(
        env: Env, caplog: pytest.LogCaptureFixture):
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("raw_keys", {"types": ["FAKE::Test::Item"]})  # answers {"id": …, "value": …}
        with caplog.at_level(logging.WARNING, logger="svc.engine.gateway"):
            view = await applied(engine, env.forma(item("a", "1"), item("b", "2"), item("c", "3")))
        assert view.State == "Success"  # the native id came with the answer
        [warning] = [r.getMessage() for r in caplog.records if r.name == "svc.engine.gateway"]
        assert warning.startswith("plugin FAKE answers creates of FAKE::Test::Item with properties that hold "
                                  "nothing at its identifier '$.Id' (keys: id, value)"), warning

    env.run(scenario)


def test_hard_failure_fails_dependents_without_running_them(env: Env):
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("fail", {"code": "AccessDenied", "ops": ["create"], "labels": ["a"]})
        view = await finished(engine, env.forma(item("a", "1"), item("b", "2", ref="a"), item("c", "3")))
        states = {u.ResourceLabel: (u.State, u.ErrorMessage or "") for u in view.ResourceUpdates}
        assert view.State == "Failed"
        assert states["a"][0] == "Failed" and "AccessDenied" in states["a"][1]
        assert states["b"][0] == "Failed" and "DependencyFailure" in states["b"][1]
        assert states["c"][0] == "Success"
        assert [c["subject"] for c in env.cloud.calls("create")] == ["c"]

    env.run(scenario)


async def _until(predicate: Callable[[], bool], timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_graceful_cancel_lets_running_finish_and_cancels_the_rest(env: Env):
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("hang", {"ops": ["create"], "labels": ["a"]})
        response = await shown(engine).apply(ApplyRequest(env.forma(item("a", "1"), item("b", "2", ref="a")), "reconcile"),
                                      CALLER)
        await _until(lambda: any(u.state == "InProgress"
                                 for u in env.datastore.get_resource_updates(response.CommandId).items))
        canceled = await shown(engine).cancel("", CALLER, force=False)
        assert canceled.CommandIds == [response.CommandId] and not canceled.Forced
        env.cloud.clear_knobs()
        view = await shown(engine).wait(response.CommandId, TIMEOUT)
        states = {u.ResourceLabel: u.State for u in view.ResourceUpdates}
        assert states == {"a": "Success", "b": "Canceled"} and view.State == "Canceled"
        assert len(env.cloud.resources()) == 1

    env.run(scenario)


def test_force_cancel_is_terminal_at_once_and_lists_abandoned(env: Env):
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("hang", {"ops": ["create"], "labels": ["a"]})
        response = await shown(engine).apply(ApplyRequest(env.forma(item("a", "1"), item("b", "2", ref="a")), "reconcile"),
                                      CALLER)
        await _until(lambda: any(u.state == "InProgress"
                                 for u in env.datastore.get_resource_updates(response.CommandId).items))
        canceled = await shown(engine).cancel(f"id:{response.CommandId}", CALLER, force=True)
        assert canceled.Forced
        abandoned = [uri for uri, s in canceled.ResourceUpdateStates.items() if s.ForceCanceled]
        assert len(abandoned) == 1
        view = await shown(engine).command(response.CommandId)
        assert view.State == "Canceled" and {u.State for u in view.ResourceUpdates} == {"Canceled"}
        env.cloud.clear_knobs()
        await shown(engine).wait(response.CommandId, TIMEOUT)
        assert (await shown(engine).command(response.CommandId)).State == "Canceled"
        assert await shown(engine).cancel("", CALLER, force=True) is None
        # The abandoned create still completed in the cloud: it is recorded, not orphaned.
        await _until(lambda: len(env.datastore.list_resources().items) == 1)
        assert {r.native_id for r in env.datastore.list_resources().items} == set(env.cloud.resources())
        view = await shown(engine).command(response.CommandId)
        assert view.State == "Canceled" and {u.State for u in view.ResourceUpdates} == {"Canceled"}

    env.run(scenario)


def test_destroy_by_forma_and_by_query(env: Env):
    async def scenario(engine: Engine) -> None:
        await applied(engine, env.forma(item("a", "1"), item("b", "2")))
        response = await shown(engine).destroy(DestroyRequest(forma=env.forma(item("a", "1"))), CALLER)
        view = await shown(engine).wait(response.CommandId, TIMEOUT)
        assert [(u.ResourceLabel, u.Operation, u.State) for u in view.ResourceUpdates] == [("a", "delete", "Success")]
        assert [r["properties"]["Value"] for r in env.cloud.resources().values()] == ["2"]
        response = await shown(engine).destroy(DestroyRequest(query="label:b"), CALLER)
        view = await shown(engine).wait(response.CommandId, TIMEOUT)
        assert view.State == "Success" and env.cloud.resources() == {}
        assert env.datastore.list_resources().items == () and env.datastore.get_stack("app") is None

    env.run(scenario)


def test_destroy_refuses_dependents_unless_cascading(env: Env):
    async def scenario(engine: Engine) -> None:
        await applied(engine, env.forma(item("a", "1"), item("b", "2", ref="a", stack="other", ref_stack="app"), stacks=("app", "other")))
        with pytest.raises(errors.ResourceHasDependents):
            await shown(engine).destroy(DestroyRequest(forma=env.forma(item("a", "1"))), CALLER)
        response = await shown(engine).destroy(DestroyRequest(forma=env.forma(item("a", "1")), on_dependents="cascade"),
                                        CALLER)
        view = await shown(engine).wait(response.CommandId, TIMEOUT)
        order = [c["subject"] for c in env.cloud.calls("delete")]
        assert view.State == "Success" and env.cloud.resources() == {} and len(order) == 2

    env.run(scenario)


def test_conflicting_apply_is_refused(env: Env):
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("hang", {"ops": ["create"]})
        first = await shown(engine).apply(ApplyRequest(env.forma(item("a", "1")), "reconcile"), CALLER)
        with pytest.raises(errors.ConflictingCommands) as raised:
            await shown(engine).apply(ApplyRequest(env.forma(item("a", "1"), item("b", "2")), "reconcile"), CALLER)
        assert conflict_data(raised.value)["ConflictingCommands"][0]["CommandId"] == first.CommandId
        env.cloud.clear_knobs()
        assert (await shown(engine).wait(first.CommandId, TIMEOUT)).State == "Success"

    env.run(scenario)


def test_a_command_on_other_stacks_reads_no_running_command_whole(env: Env, monkeypatch: pytest.MonkeyPatch):
    """The conflict check read every update of every running command, 0.6 s beside one of 20,000: it asks the
    updates' stack index whether they change the new command's stacks, and reads them only to answer a conflict."""
    async def scenario(engine: Engine) -> None:
        env.cloud.set_knob("hang", {"ops": ["create"]})
        first = await shown(engine).apply(ApplyRequest(env.forma(item("a", "1"), item("b", "2")), "reconcile"),
                                          CALLER)
        with monkeypatch.context() as patched:
            patched.setattr(type(env.datastore), "get_resource_updates",
                            lambda *_, **__: pytest.fail("a running command's updates were read whole"))
            other = env.forma(item("c", "3", stack="other"), stacks=("other",))
            await shown(engine).apply(ApplyRequest(other, "reconcile"), CALLER)  # no conflict: no whole read
        with pytest.raises(errors.ConflictingCommands) as raised:
            await shown(engine).apply(ApplyRequest(env.forma(item("a", "1")), "reconcile"), CALLER)
        assert [u["ResourceLabel"] for u in conflict_data(raised.value)["ConflictingCommands"][0]
                ["ResourceUpdates"]] == ["a", "b"]
        env.cloud.clear_knobs()
        assert (await shown(engine).wait(first.CommandId, TIMEOUT)).State == "Success"

    env.run(scenario)


@pytest.mark.parametrize(("make", "error"), [
    (lambda e: e.forma(resource("x", "FAKE::Nope::Thing", {})),
     errors.InvalidForma),
    (lambda e: e.forma(item("a", "1", target="elsewhere")), errors.TargetReferenceNotFound),
    (lambda e: e.forma(resource("s", "FAKE::Net::Subnet", {"NetworkId": "n-1"})), errors.RequiredFieldMissingOnCreate),
    (lambda e: e.forma(item("a", "1", ref="b"), item("b", "2", ref="a")), errors.CyclesDetected),
])
def test_bad_inputs_are_refused_and_nothing_is_stored(env: Env, make, error):
    async def scenario(engine: Engine) -> None:
        with pytest.raises(error):
            await shown(engine).apply(ApplyRequest(make(env), "reconcile"), CALLER)
        assert env.datastore.list_commands(sources=None).items == ()
        assert env.datastore.list_resources().items == () and env.datastore.list_stacks().items == ()
        assert env.cloud.resources() == {}

    env.run(scenario)


def test_secrets_are_stored_only_as_hashes(env: Env):
    async def scenario(engine: Engine) -> None:
        bucket = resource("bkt", "FAKE::Storage::Bucket",
                          {"Name": "bkt-1", "ApiKey": {"$value": "s3cr3t-key", "$visibility": "Opaque"}})
        server = resource("srv", "FAKE::Compute::Server", {"SubnetId": "sn", "Image": "i",
                                                           "AdminPassword": "hunter2-pw"})
        view = await applied(engine, env.forma(bucket, server))
        assert view.State == "Success"
        assert env.cloud.get("bkt-1")["properties"]["ApiKey"] == "s3cr3t-key"
        rows = [json.dumps(r.properties) for r in env.datastore.list_resources().items]
        rows += [json.dumps(u.data) for u in env.datastore.get_resource_updates(view.CommandId).items]
        rows.append(json.dumps(view.to_json()))
        for secret in ("s3cr3t-key", "hunter2-pw"):
            assert not any(secret in row for row in rows), secret
        # Unchanged secrets plan nothing; a changed one updates.
        again = await shown(engine).apply(ApplyRequest(env.forma(bucket, server), "reconcile"), CALLER)
        assert again.Simulation.ChangesRequired is False
        rotated = resource("bkt", "FAKE::Storage::Bucket",
                           {"Name": "bkt-1", "ApiKey": {"$value": "new-key", "$visibility": "Opaque"}})
        assert (await applied(engine, env.forma(rotated, server))).State == "Success"
        assert env.cloud.get("bkt-1")["properties"]["ApiKey"] == "new-key"

    env.run(scenario)


def test_the_collector_settles_once_the_agent_is_idle_not_as_a_command_ends(env: Env, monkeypatch) -> None:
    """What a command's end leaves to the collector (``svc.collector.settle``: a full collection, 0.1 s and more)
    waits until no command has run for ``SETTLE_AFTER_IDLE``: on the path of the command's last answer, or of the
    next submission, it was a pause users waited for."""
    from svc.engine import runs

    settled: list[datetime] = []
    monkeypatch.setattr(runs, "settle", lambda: settled.append(datetime.now(UTC)))
    monkeypatch.setattr(runs, "SETTLE_AFTER_IDLE", 0.3)

    async def scenario(engine: Engine) -> None:
        view = await applied(engine, env.forma(item("a", "1")))
        deadline = time.monotonic() + 10
        while not settled and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert len(settled) == 1, settled
        assert (settled[0] - view.EndTs).total_seconds() >= 0.29

    env.run(scenario)
