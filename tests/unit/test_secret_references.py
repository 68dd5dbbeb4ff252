"""References that read a secret (a property the producer's schema calls opaque, at any depth): never inside a
string, compared by the producer's stored hash at plan time, and no bar to creating the consumer."""

from __future__ import annotations

import dataclasses

import pytest

from support.planning import BUCKET, TYPES, forma, inventory, new_id, ref, res, resource, stored
from svc.engine import errors
from svc.engine.planner import Catalog, PlanRequest, plan
from svc.model import values
from svc.model.schema import Schema

HASHED_KEY = values.hashed_secret("k3y")
VAULT_SCHEMA = {"Identifier": "$.Id", "Fields": ["Name", "Db", "Routes"],
                "OpaquePaths": ["Db.Password", "Routes.*.Key"],
                "Hints": {"Name": {}, "Db": {}, "Db.Host": {}, "Db.Password": {"Opaque": True}, "Routes": {},
                          "Routes.Key": {"Opaque": True}}}
CATALOG = Catalog(frozenset({"T"}), {**TYPES, "T::App::Vault": Schema.model_validate(VAULT_SCHEMA)})


def apply(*resources: dict, stored_resources: tuple = ()) -> object:
    """A patch: what the forma does not name (a stored producer) stays."""
    return plan(PlanRequest("apply", "patch", forma(*resources)), inventory(*stored_resources), CATALOG, new_id)


def vault() -> dict:
    document = resource("v", "T::App::Vault", {"Name": "v", "Db": {"Host": "h", "Password": "pw"}})
    return {**document, "Schema": VAULT_SCHEMA}


def embedding(prop: str, type_: str = "T::App::Vault", label: str = "v") -> dict:
    return resource("c", "T::Test::Item", {"Value": {"$embed": True, "$parts": ["url: ", res(label, type_, prop)]}})


@pytest.mark.parametrize("prop", ["Db.Password", "Db"])  # the secret, or an object holding it
def test_a_secret_read_by_a_reference_cannot_be_embedded_in_a_string(prop: str) -> None:
    with pytest.raises(errors.InvalidForma, match="a secret reference cannot be embedded in a string"):
        apply(vault(), embedding(prop))


def test_a_clear_property_of_the_same_producer_can_be() -> None:
    assert {c.label for c in apply(vault(), embedding("Db.Host")).resources} == {"v", "c"}


def test_a_stored_producer_s_secret_is_known_by_its_schema_too() -> None:
    bucket = stored("K1", "T::Storage::Bucket", "b", {"Name": "b", "ApiKey": HASHED_KEY})
    with pytest.raises(errors.InvalidForma, match="a secret reference cannot be embedded in a string"):
        apply(embedding("ApiKey", "T::Storage::Bucket", "b"), stored_resources=(bucket,))


def test_a_reference_to_a_stored_secret_compares_by_its_hash_and_creates_its_consumer() -> None:
    assert BUCKET.hints["ApiKey"].opaque
    bucket = stored("K1", "T::Storage::Bucket", "b", {"Name": "b", "ApiKey": HASHED_KEY})
    consumer = resource("c", "T::Test::Item", {"Ref": res("b", "T::Storage::Bucket", "ApiKey")})
    [created] = apply(consumer, stored_resources=(bucket,)).resources  # not refused as "a hash given"
    assert created.operation == "create" and created.desired["Ref"]["$hashed"]
    kept = stored("K2", "T::Test::Item", "c", {"Ref": {**ref("K1", "ApiKey"), **HASHED_KEY}})
    assert apply(consumer, stored_resources=(bucket, kept)).resources == []
    other = values.hashed_secret("another")
    changed = stored("K1", "T::Storage::Bucket", "b", {"Name": "b", "ApiKey": other})
    [update] = apply(consumer, stored_resources=(changed, kept)).resources
    assert update.operation == "update"


def test_a_forma_from_an_older_svc_takes_the_installed_plugin_s_opaque_paths() -> None:
    older = {**vault(), "Schema": {k: v for k, v in VAULT_SCHEMA.items() if k != "OpaquePaths"}}
    [change] = apply(older).resources  # its dotted hints cannot tell that Routes is a mapping
    assert change.schema["OpaquePaths"] == ["Db.Password", "Routes.*.Key"]
    [own] = apply(vault()).resources
    assert own.schema["OpaquePaths"] == ["Db.Password", "Routes.*.Key"]


# A reference to a whole object that holds a secret: the consumer stores the object hashed whole, over its form
# with each secret as its own hash, so the planner can compute the same hash from the producer's stored state.

DB = {"Host": "h", "Password": "pw", "Replicas": [{"Host": "r", "Password": "rpw"}]}
DB_STORED = {"Host": "h", "Password": values.hashed_secret("pw"),
             "Replicas": [{"Host": "r", "Password": values.hashed_secret("rpw")}]}


def test_an_object_holding_secrets_hashes_alike_from_its_value_and_from_its_producer_s_stored_form() -> None:
    places = values.secret_places(DB_STORED)
    assert places == [["Password"], ["Replicas", 0, "Password"]]
    sent = {**ref("K1", "Db"), "$value": DB, "$visibility": "Opaque", "$secrets": places}
    assert values.hashed_secret(sent)["$value"] == values.stored_digest(DB_STORED)
    rotated = {**DB, "Replicas": [{"Host": "r", "Password": "rotated"}]}
    assert values.hashed_secret({**sent, "$value": rotated})["$value"] != values.stored_digest(DB_STORED)
    assert "pw" not in str(values.hashed_secret(sent)) and "rpw" not in str(values.hashed_secret(sent))


def stored_vault(db: dict) -> object:
    return dataclasses.replace(stored("K1", "T::Storage::Bucket", "v", {"Name": "v", "Db": db}),
                               type="T::App::Vault", document={"Schema": VAULT_SCHEMA})


def test_a_reference_to_an_object_holding_a_secret_plans_nothing_until_the_secret_changes() -> None:
    producer = stored_vault(DB_STORED)
    consumer = resource("c", "T::Test::Item", {"Ref": res("v", "T::App::Vault", "Db")})
    sent = {**ref("K1", "Db"), "$value": DB, "$visibility": "Opaque", "$secrets": values.secret_places(DB_STORED)}
    kept = stored("K2", "T::Test::Item", "c", {"Ref": values.hashed_secret(sent)})
    assert apply(consumer, stored_resources=(producer, kept)).resources == []
    rotated = {**DB_STORED, "Password": values.hashed_secret("rotated")}
    changed = stored_vault(rotated)
    [update] = apply(consumer, stored_resources=(changed, kept)).resources
    assert update.operation == "update" and update.label == "c"
