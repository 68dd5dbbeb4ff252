"""Stack policies in the Engine, in process, on a real datastore with the FAKE plugin: policies stored at
submit, the auto-reconcile baseline (the stack as its last reconcile left it: later patches and changes
made outside svc undone, secrets in plain text again), and the expirer's passes (an empty expired stack,
``ExpiresAt``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from svc_plugin_fake import FakeCloud

from support import planning
from support.engine import CALLER, TIMEOUT, applied, fake_forma, item, resource, run, shown
from svc.datastore import Datastore
from svc.engine.engine import Engine
from svc.engine.expiry import StackExpirer
from svc.engine.planner import StoredPolicies
from svc.engine.policy_store import effective_policies, policies_in_force, stored_policies
from svc.engine.reconciler import AutoReconciler, baseline
from svc.model.forma import Forma
from svc.model.records import PolicyWrite

pytestmark = pytest.mark.parametrize("datastore_config_for_backend", ["sqlite"], indirect=True)


def with_policies(forma: Forma, *policies: dict[str, Any]) -> Forma:
    document = forma.to_json()
    document["Stacks"][0]["Policies"] = list(policies)
    return Forma.model_validate(document)


def test_policies_are_stored_at_submit_and_reconcile_deletes_undeclared_ones(datastore: Datastore,
                                                                           tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.db"

    async def scenario(engine: Engine) -> None:
        forma = fake_forma(cloud, [item("a", "1")])
        view = await applied(engine, with_policies(forma, {"Type": "ttl", "TTLSeconds": 3600, "OnDependents": "abort"},
                                                   {"Type": "auto-reconcile", "Label": "ar", "IntervalSeconds": 60}))
        assert [(u.PolicyType, u.Operation, u.State) for u in view.PolicyUpdates] == [
            ("ttl", "create", "Success"), ("auto-reconcile", "create", "Success")]
        stack = datastore.get_stack("app")
        assert stack is not None
        stored = {p.policy_type: p for p in datastore.list_policies(stack_id=stack.id).items}
        assert dict(stored["auto-reconcile"].data) == {"IntervalSeconds": 60} and stored["auto-reconcile"].label == "ar"
        # Only the auto-reconcile policy declared now: the TTL one is deleted, in a policy-only command.
        view = await applied(engine, with_policies(forma, {"Type": "auto-reconcile", "Label": "ar",
                                                           "IntervalSeconds": 60}))
        assert [(u.PolicyType, u.Operation) for u in view.PolicyUpdates] == [("ttl", "delete")]
        assert [p.label for p in datastore.list_policies(stack_id=stack.id).items] == ["ar"]

    run(datastore, tmp_path, scenario)


def test_the_baseline_is_the_stack_as_its_last_reconcile_left_it(datastore: Datastore, tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.db"
    policy = {"Type": "auto-reconcile", "IntervalSeconds": 3600}

    async def scenario(engine: Engine) -> None:
        await applied(engine, with_policies(fake_forma(cloud, [item("a", "1", token="t"), item("b", "1", token="t")]),
                                            policy))
        await applied(engine, fake_forma(cloud, [item("a", "patched", token="t"), item("c", "new")]), "patch")
        # The last reconcile takes c (created by the patch) in as it is, and replaces b (create-only Token).
        await applied(engine, with_policies(fake_forma(cloud, [item("a", "1", token="t"), item("b", "1", token="u"),
                                                               item("c", "new")]), policy), force=True)
        await applied(engine, fake_forma(cloud, [item("a", "patched again", token="t")]), "patch")
        forma = baseline(datastore, engine.sealer, "app")
        declared = {r.label: r.properties for r in forma.resources}
        assert declared == {"a": {"Value": "1", "Token": "t"}, "b": {"Value": "1", "Token": "u"},
                            "c": {"Value": "new"}}
        reconciler = engine.jobs.get("auto-reconciler") or AutoReconciler(engine)
        assert isinstance(reconciler, AutoReconciler)
        command_id = await reconciler.reconcile("app", CALLER)
        assert command_id is not None
        view = await shown(engine).wait(command_id, TIMEOUT)
        assert view is not None and view.State == "Success"
        assert [(u.ResourceLabel, u.Operation) for u in view.ResourceUpdates] == [("a", "update")]
        values = {r["properties"].get("Value") for r in FakeCloud(cloud).resources("FAKE::Test::Item").values()}
        assert values == {"1", "new"}  # a is back to what the last reconcile said
        assert await reconciler.reconcile("app", CALLER) is None  # nothing drifted any more

    run(datastore, tmp_path, scenario)


def test_an_empty_expired_stack_is_deleted_and_expires_at_is_a_deadline(datastore: Datastore,
                                                                        tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.db"

    async def scenario(engine: Engine) -> None:
        empty = datastore.create_stack("empty")
        datastore.put_policy(PolicyWrite("gone", "ttl", {"ExpiresAt": "2020-01-01T00:00:00Z"}, stack_id=empty.id))
        await applied(engine, with_policies(fake_forma(cloud, [item("a", "1", stack="later")], stacks=("later",)),
                                            {"Type": "ttl", "ExpiresAt": "2999-01-01T00:00:00+01:00"}))
        expirer = StackExpirer(engine, interval=3600)
        sweep = await expirer.run_now()
        assert sweep.to_json() == {"expired_stacks": ["empty"], "command_ids": []}
        assert datastore.get_stack("empty") is None and datastore.get_policy("gone", empty.id) is None
        assert datastore.get_stack("later") is not None  # not yet
        assert (await expirer.run_now()).to_json() == {"expired_stacks": [], "command_ids": []}

    run(datastore, tmp_path, scenario)


def test_an_expired_stack_others_refer_to_is_kept_its_dependents_read_by_key(
        datastore: Datastore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept for its dependents, a stack is checked again each pass: reading the whole inventory for it took seconds
    and hundreds of MB beside 100,000 resources."""
    cloud = tmp_path / "cloud.db"

    async def scenario(engine: Engine) -> None:
        base = with_policies(fake_forma(cloud, [item("b1", "1", stack="base"), item("b2", "2", stack="base")],
                                        stacks=("base",)), {"Type": "ttl", "TTLSeconds": 1, "OnDependents": "abort"})
        await applied(engine, base)
        await applied(engine, fake_forma(cloud, [item("u1", ref="b2", ref_stack="base", stack="users"),
                                                 item("u2", "x", stack="users"), item("n1", "y", stack="other")],
                                         stacks=("users", "other")))
        stack = datastore.get_stack("base")
        assert stack is not None
        monkeypatch.setattr(type(datastore), "list_resources", lambda *_, **__: pytest.fail("read the whole inventory"))
        monkeypatch.setattr(type(datastore), "list_stacks", lambda *_, **__: pytest.fail("read every stack"))
        expirer = StackExpirer(engine, interval=3600)
        monkeypatch.setattr("svc.engine.policy_store.Effective.deadline", lambda self, stack: stack.created_at)
        assert (await expirer.run_now()).to_json() == {"expired_stacks": [], "command_ids": []}
        assert expirer._dependents("base") == ["users/FAKE::Test::Item/u1"]
        assert datastore.count_resources(stack="base") == 2

    run(datastore, tmp_path, scenario)


def test_the_auto_reconcile_schedule_looks_up_again_only_what_new_commands_reconciled(
        datastore: Datastore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The schedule is read again after every command; looking up each policy stack's last reconcile each time
    took ~0.3 s of the agent's CPU a command beside 2,000 such stacks. The reconciles among the new commands say
    when the stacks they cover were reconciled."""
    cloud = tmp_path / "cloud.db"
    policy = {"Type": "auto-reconcile", "IntervalSeconds": 3600}

    def guarded(*stacks: str, value: str = "1") -> Forma:
        document = fake_forma(cloud, [item(f"{s}1", value, stack=s) for s in stacks], stacks=stacks).to_json()
        for stack in document["Stacks"]:
            stack["Policies"] = [policy]
        return Forma.model_validate(document)

    async def scenario(engine: Engine) -> None:
        await applied(engine, guarded("a", "b", "c"))
        await applied(engine, fake_forma(cloud, [item(f"{s}1", "1", stack=s) for s in "xyz"], stacks=tuple("xyz")))
        reconciler = AutoReconciler(engine, enabled=False)
        asked: list[str] = []

        def due() -> list[str]:  # the stacks holding a policy are read by key: not every stack after every command
            with monkeypatch.context() as patched:
                patched.setattr(type(datastore), "list_stacks", lambda *args, **kwargs: pytest.fail("every stack"))
                return reconciler._due()

        last_reconcile = datastore.last_reconcile
        monkeypatch.setattr(datastore, "last_reconcile", lambda stack: asked.append(stack) or last_reconcile(stack))
        assert due() == [] and sorted(asked) == ["a", "b", "c"]  # the first read: every policy stack's
        view = await applied(engine, guarded("b", value="2"))  # a reconcile of b
        await applied(engine, fake_forma(cloud, [item("c1", "3", stack="c")], stacks=("c",)), "patch")
        before = dict(reconciler._last)
        asked.clear()  # planning a reconcile looks its stacks' up too
        assert due() == [] and asked == []  # b's reconcile is the new commands': its end is b's anchor
        reconcile_b = datastore.last_reconcile("b")
        assert reconcile_b is not None and reconcile_b.id == view.CommandId
        assert reconciler._last == {**before, "b": reconcile_b.end_ts} and reconcile_b.end_ts > before["b"]
        asked.clear()
        assert due() == [] and asked == []  # no command since: nothing read again

    run(datastore, tmp_path, scenario)


def test_a_resource_deleted_outside_svc_comes_back_with_its_secret(datastore: Datastore, tmp_path: Path) -> None:
    cloud = tmp_path / "cloud.db"
    bucket = resource("bkt", "FAKE::Storage::Bucket",
                      {"Name": "bkt-1", "ApiKey": {"$value": "s3cr3t-key", "$visibility": "Opaque"}})

    async def scenario(engine: Engine) -> None:
        await applied(engine, with_policies(fake_forma(cloud, [bucket, item("a", "1")]),
                                            {"Type": "auto-reconcile", "IntervalSeconds": 3600}))
        FakeCloud(cloud).remove("bkt-1")
        FakeCloud(cloud).set_property(next(iter(FakeCloud(cloud).resources("FAKE::Test::Item"))), "Value", "oob")
        assert await engine.synchronize() is not None
        forma = baseline(datastore, engine.sealer, "app")
        assert forma is not None
        secret = next(r for r in forma.resources if r.label == "bkt").properties["ApiKey"]
        assert secret == {"$value": "s3cr3t-key", "$visibility": "Opaque"}  # unsealed, never a hash
        command_id = await AutoReconciler(engine).reconcile("app", CALLER)
        assert command_id is not None
        view = await shown(engine).wait(command_id, TIMEOUT)
        assert view is not None and view.State == "Success", view
        assert sorted((u.ResourceLabel, u.Operation) for u in view.ResourceUpdates) == [("a", "update"),
                                                                                         ("bkt", "create")]
        assert FakeCloud(cloud).get("bkt-1")["properties"]["ApiKey"] == "s3cr3t-key"
        assert [i["properties"]["Value"] for i in FakeCloud(cloud).resources("FAKE::Test::Item").values()] == ["1"]

    run(datastore, tmp_path, scenario)


def test_the_jobs_one_query_finds_each_stacks_effective_policy(datastore: Datastore) -> None:
    stacks = [datastore.create_stack(label) for label in ("a", "b", "c", "d")]
    shared = [datastore.put_policy(PolicyWrite(label, kind, {"IntervalSeconds": 60}))
              for label, kind in (("x-nightly", "auto-reconcile"), ("a-hourly", "auto-reconcile"), ("ttl", "ttl"))]
    datastore.put_policy(PolicyWrite("own", "auto-reconcile", {"IntervalSeconds": 5}, stack_id=stacks[0].id))
    datastore.put_policy(PolicyWrite("own-ttl", "ttl", {"TTLSeconds": 5}, stack_id=stacks[2].id))
    for stack in stacks[:3]:
        for policy in shared:
            datastore.attach_policy(stack.id, policy.id)

    for kind in ("auto-reconcile", "ttl"):
        one_by_one = {stack.id: found for stack in stacks if (found := effective_policies(datastore, stack).get(kind))}
        assert policies_in_force(datastore, kind) == one_by_one
    assert policies_in_force(datastore, "auto-reconcile")[stacks[1].id].record.label == "a-hourly"


def test_with_no_policy_stored_a_plan_reads_one_answer_and_gets_what_the_long_way_gives(
        datastore: Datastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Most agents hold no policy: a plan then asks whether any lives (one query) instead of reading each of its
    stacks' inline and attached ones and the standalone ones, and gets the same answer."""
    datastore.create_stack("app")
    plain = planning.forma(stacks=("app", "new"))
    declaring = Forma.model_validate({**plain.to_json(), "Policies": [
        {"Type": "ttl", "Label": "nightly", "TTLSeconds": 60}]})
    stacks = {stack.label: stack for stack in datastore.list_stacks().items}
    with monkeypatch.context() as quickly:
        for name in ("list_policies", "list_attached_policies", "get_stack", "list_stacks"):
            quickly.setattr(type(datastore), name, lambda *args, **kwargs: pytest.fail("asked the long way"))
        quick = [stored_policies(datastore, forma, stacks) for forma in (plain, declaring)]
    assert quick[0] == StoredPolicies({"app": ()})
    monkeypatch.setattr(type(datastore), "has_live_policies", lambda self: True)  # the long way
    assert [stored_policies(datastore, forma) for forma in (plain, declaring)] == quick


def test_a_forma_declaring_a_standalone_policy_reads_its_attachments_in_one_query(
        datastore: Datastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its destroy must know every stack still using the policy; asking each stack for its attachments made a plan
    beside 2,000 stacks take 0.3 s."""
    shared = datastore.put_policy(PolicyWrite("nightly", "auto-reconcile", {"IntervalSeconds": 3600}))
    for n in range(30):
        datastore.attach_policy(datastore.create_stack(f"s{n}").id, shared.id)
    app = datastore.create_stack("app")
    own = datastore.put_policy(PolicyWrite("own", "ttl", {"TTLSeconds": 60}, stack_id=app.id))
    declaring = Forma.model_validate({**planning.forma(stacks=("app",)).to_json(), "Policies": [
        {"Type": "auto-reconcile", "Label": "nightly", "IntervalSeconds": 3600}]})
    for name in ("list_attached_policies", "get_stack", "list_stacks"):
        monkeypatch.setattr(type(datastore), name, lambda *args, **kwargs: pytest.fail("asked a stack at a time"))
    stored = stored_policies(datastore, declaring)
    assert stored.inline == {"app": (own,)} and stored.standalone == {"nightly": shared}
    assert stored.attached == {"nightly": frozenset(f"s{n}" for n in range(30))}
