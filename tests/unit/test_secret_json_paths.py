"""A reference to a part of a secret (``secret.res.secretValue.json("password")``, ``$json``): the planner knows
only the producer's hash of the whole secret, so the consumer's stored value records which state of the secret
it was taken from (``$of``); while that state is the stored one, the reference plans nothing."""

from __future__ import annotations

from support.planning import CATALOG, forma, inventory, new_id, ref, res, resource, stored
from svc.engine.observed import merge
from svc.engine.planner import PlanRequest, plan
from svc.model import values

SECRET = values.hashed_secret('{"password": "pw"}')
PART = values.hashed_secret("pw")


def apply(*stored_resources) -> list:
    consumer = resource("c", "T::Test::Item", {"Ref": {**res("b", "T::Storage::Bucket", "ApiKey"), "$json": "password"}})
    return plan(PlanRequest("apply", "patch", forma(consumer)), inventory(*stored_resources), CATALOG, new_id).resources


def bucket(secret: dict) -> object:
    return stored("K1", "T::Storage::Bucket", "b", {"Name": "b", "ApiKey": secret})


def consumer(**taken) -> object:
    envelope = {**ref("K1", "ApiKey"), "$json": "password", **PART, **taken}
    return stored("K2", "T::Test::Item", "c", {"Ref": envelope})


def test_a_part_taken_from_the_stored_state_of_the_secret_plans_nothing() -> None:
    assert apply(bucket(SECRET), consumer(**{"$of": SECRET["$value"]})) == []


def test_a_part_of_a_secret_that_changed_since_is_updated() -> None:
    changed = values.hashed_secret('{"password": "new"}')
    [update] = apply(bucket(changed), consumer(**{"$of": SECRET["$value"]}))
    assert update.operation == "update" and update.desired["Ref"]["$of"] == changed["$value"]
    assert "$value" not in update.desired["Ref"]  # the part itself: known once execution reads the secret


def test_a_part_stored_without_its_source_is_updated_once() -> None:
    [update] = apply(bucket(SECRET), consumer())
    assert update.operation == "update"


def test_a_read_back_that_changed_outside_svc_forgets_the_source() -> None:
    taken = {**ref("K1", "ApiKey"), "$json": "password", **PART, "$of": SECRET["$value"]}
    assert merge(taken, "pw")["$of"] == SECRET["$value"]  # what was written: still the secret's part
    assert "$of" not in merge(taken, "edited by hand")
    written = {**ref("K1", "ApiKey"), "$json": "password", "$value": "pw", "$of": SECRET["$value"]}
    assert merge(written, "pw")["$of"] == SECRET["$value"]  # a create's answer, before hashing
