"""A plan's fingerprint (what a saved or confirmed plan expects the agent to plan again) and a saved plan's sealed
secrets, pure parts: the same forma against the same inventory fingerprints the same though planning mints new
ids; any move of what the plan starts from changes it, and ``moved`` says what."""

from __future__ import annotations

import json

import pytest
from cryptography.fernet import Fernet

from support.planning import CATALOG, forma, inventory, new_id, ref, res, resource, stored
from svc.engine.command_records import shown_change
from svc.engine.errors import SealedSecretUnreadable
from svc.engine.planner import Inventory, PlanRequest, plan
from svc.engine.planner.fingerprint import fingerprint, moved
from svc.engine.sealed_formas import seal_forma, unseal_forma
from svc.engine.sealing import Sealer
from svc.model.forma import Forma

ITEM, BUCKET = "T::Test::Item", "T::Storage::Bucket"


def planned(desired: Forma, stock: Inventory) -> dict[str, str]:
    changeset = plan(PlanRequest("apply", "reconcile", desired, force=True), stock, CATALOG, new_id)
    return fingerprint(changeset, [shown_change(change) for change in changeset.resources])


def desired() -> Forma:
    return forma(resource("a", ITEM, {"Value": "2"}), resource("b", ITEM, {"Value": "new", "Ref": res("c", ITEM, "Id")}),
                 resource("c", ITEM, {"Value": "c"}), resource("s", BUCKET, {"Name": "n", "ApiKey": "key-1"}))


def stock(value: str = "1") -> Inventory:
    return inventory(stored("K1", ITEM, "a", {"Value": value}), stored("K9", ITEM, "gone", {"Value": "x"}))


def test_the_same_plan_twice_has_the_same_fingerprint_though_new_ids_are_minted() -> None:
    first, second = planned(desired(), stock()), planned(desired(), stock())
    assert first == second
    assert {key: value.partition(":")[0] for key, value in first.items()} == {
        "resource app/T::Test::Item/a": "update", "resource app/T::Test::Item/b": "create",
        "resource app/T::Test::Item/c": "create", "resource app/T::Storage::Bucket/s": "create",
        "resource app/T::Test::Item/gone": "delete"} | {
        key: "create" for key in first if key.startswith(("target", "stack"))}
    assert not any("key-1" in value for value in first.values())


def test_what_moved_in_the_inventory_changes_the_fingerprint_and_is_named() -> None:
    before = planned(desired(), stock())
    changed_start = planned(desired(), stock(value="3"))  # a's update starts from another state
    assert moved(before, changed_start) == [{"Change": "resource app/T::Test::Item/a", "Planned": "update",
                                             "Now": "update"}]
    already = planned(desired(), stock(value="2"))  # someone made a's change meanwhile
    assert moved(before, already) == [{"Change": "resource app/T::Test::Item/a", "Planned": "update"}]
    extra = inventory(stored("K1", ITEM, "a", {"Value": "1"}), stored("K9", ITEM, "gone", {"Value": "x"}),
                      stored("K8", ITEM, "more", {"Value": "m"}))
    assert moved(before, planned(desired(), extra)) == [{"Change": "resource app/T::Test::Item/more",
                                                         "Now": "delete"}]


def test_a_consumer_of_a_changed_producer_fingerprints_the_value_it_would_get() -> None:
    producer = stored("K1", ITEM, "a", {"Value": "1"})
    consumer = stored("K2", ITEM, "b", {"Value": "b", "Ref": ref("K1", "Value", "1")})
    keep = forma(resource("a", ITEM, {"Value": "1"}), resource("b", ITEM, {"Value": "b2", "Ref": res("a", ITEM, "Value")}))
    first = planned(keep, inventory(producer, consumer))
    moved_producer = stored("K1", ITEM, "a", {"Value": "0"})
    assert "resource app/T::Test::Item/b" in {entry["Change"] for entry in moved(
        first, planned(keep, inventory(moved_producer, consumer)))}


def test_fingerprints_stay_those_an_earlier_svc_made_so_a_plan_saved_before_still_applies() -> None:
    # Digests made by svc 0.1.0 (the standard library's JSON text); the same plan must give the same ones, with
    # text beyond ASCII, a DEL, an integer beyond 64 bits, nested maps and a reference to a new producer.
    odd = {"Value": "café € 😀 \x7f end", "Ratio": 0.25,
           "Nested": {"z": [1, None, True], "é": {"b": "x", "a": "y"}}}
    entries = planned(forma(resource("a", ITEM, odd), resource("b", ITEM, {"Value": "new", "Ref": res("c", ITEM, "Id")}),
                            resource("c", ITEM, {"Value": "c", "Count": 2**70}),
                            resource("s", BUCKET, {"Name": "n", "ApiKey": "key-1"})),
                      inventory(
        stored("K1", ITEM, "a", {"Value": "old"}), stored("K9", ITEM, "gone", {"Value": "x"})))
    assert {key: value for key, value in entries.items() if key.startswith("resource")} == {
        "resource app/T::Test::Item/a": "update:1ef9718d82382d84714f2887db0e802d",
        "resource app/T::Test::Item/b": "create:321da56793f8b8adbb3b2d704ee60b1c",
        "resource app/T::Test::Item/c": "create:d8c43efccb646bc698ea21886dd8fdf0",
        "resource app/T::Storage::Bucket/s": "create:807b785360fd3dae5ebb86f6724b0cc0",
        "resource app/T::Test::Item/gone": "delete:0792630abfadf3dc638ce9a2c29ff4a5"}


def test_a_saved_plans_forma_holds_its_secrets_sealed_and_only_this_agents_key_opens_them() -> None:
    sealer = Sealer(Fernet.generate_key())
    original = forma(resource("s", BUCKET, {"Name": "n", "ApiKey": "key-1", "Version": "v"}),
                     resource("t", BUCKET, {"Name": "m", "Version": {"$value": "hidden-2", "$visibility": "Opaque"}}))
    sealed = seal_forma(original, sealer, CATALOG)
    text = json.dumps(sealed)
    assert "key-1" not in text and "hidden-2" not in text
    properties = [entry["Properties"] for entry in sealed["Resources"]]
    assert properties[0]["Name"] == "n" and properties[0]["Version"] == "v" and set(properties[0]["ApiKey"]) == {
        "$sealed"}
    reopened = unseal_forma(Forma.model_validate(sealed), sealer)
    assert reopened == original
    assert unseal_forma(original, sealer) is original  # nothing sealed: nothing to open
    with pytest.raises(SealedSecretUnreadable, match="sealed by another agent"):
        unseal_forma(Forma.model_validate(sealed), Sealer(Fernet.generate_key()))
