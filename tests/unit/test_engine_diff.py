"""Every row of the hint-driven diff (engine.md §3): what changes produce which patch operations."""

from __future__ import annotations

import jsonpatch
import pytest

from support.planning import BUCKET, NETWORK, SERVER
from svc.engine.planner.diff import generate_patch, mask_patch
from svc.model import values
from svc.model.schema import FieldHint, Schema


def secret(value: str) -> dict:
    return {"$value": value, "$visibility": "Opaque", "$strategy": "Update"}


def test_no_change_is_an_empty_patch():
    stored = {"Cidr": "10.0.0.0/16", "Labels": ["a", "b"]}
    assert generate_patch(stored, dict(stored), NETWORK, exact=True).empty


def test_create_only_change_goes_to_the_create_only_patch():
    patch = generate_patch({"Cidr": "10.0.0.0/16"}, {"Cidr": "10.1.0.0/16"}, NETWORK, exact=True)
    assert patch.ops == []
    assert patch.create_only == [{"op": "replace", "path": "/Cidr", "value": "10.1.0.0/16"}]


def test_mutable_change_is_a_replace_op():
    patch = generate_patch({"Size": "s", "Image": "i"}, {"Size": "m", "Image": "i"}, SERVER, exact=True)
    assert patch.ops == [{"op": "replace", "path": "/Size", "value": "m"}] and not patch.create_only


def test_write_only_value_kept_in_stored_state_makes_no_drift():
    stored = {"Size": "s", "AdminPassword": values.hashed_secret(secret("pw"))}
    assert generate_patch(stored, {"Size": "s", "AdminPassword": secret("pw")}, SERVER, exact=True).empty


def test_write_only_create_only_field_without_a_stored_value_is_not_compared():
    # A discovered resource: Read never returns the field, so nothing tells what it holds.
    assert generate_patch({"Size": "s"}, {"Size": "s", "Boot": "x"}, SERVER, exact=True).empty


def test_write_only_create_only_change_against_the_stored_value_forces_a_replace():
    stored = {"Size": "s", "Boot": "x"}
    assert generate_patch(stored, {"Size": "s", "Boot": "x"}, SERVER, exact=True).empty
    patch = generate_patch(stored, {"Size": "s", "Boot": "y"}, SERVER, exact=True)
    assert patch.create_only == [{"op": "replace", "path": "/Boot", "value": "y"}] and patch.ops == []


def test_write_only_change_is_sent_in_the_update():
    schema = Schema(Identifier="$.Id", Fields=("Size", "Passphrase"),
                    Hints={"Size": FieldHint(), "Passphrase": FieldHint(WriteOnly=True)})
    stored = {"Size": "s", "Passphrase": "p1"}
    assert generate_patch(stored, {"Size": "s", "Passphrase": "p1"}, schema, exact=True).empty
    patch = generate_patch(stored, {"Size": "s", "Passphrase": "p2"}, schema, exact=True)
    assert patch.ops == [{"op": "replace", "path": "/Passphrase", "value": "p2"}] and not patch.create_only


def test_required_on_update_is_resent_in_plain_text_with_another_change():
    stored = {"Size": "s", "AdminPassword": values.hashed_secret(secret("pw"))}
    patch = generate_patch(stored, {"Size": "m", "AdminPassword": secret("pw")}, SERVER, exact=True)
    assert {"op": "add", "path": "/AdminPassword", "value": "pw"} in patch.ops
    masked = mask_patch(patch.ops, {"AdminPassword": secret("pw")}, SERVER)
    assert all("pw" != op.get("value") for op in masked)
    assert values.digest("pw") in str(masked)


def test_a_replace_lists_its_other_changes_without_the_fields_an_update_would_resend():
    # A replace sends no update: AdminPassword (requiredOnUpdate) is not a change of the new server.
    stored = {"Size": "s", "Image": "i1", "AdminPassword": values.hashed_secret(secret("pw"))}
    patch = generate_patch(stored, {"Size": "m", "Image": "i2", "AdminPassword": secret("pw")}, SERVER, exact=True)
    assert patch.create_only == [{"op": "replace", "path": "/Image", "value": "i2"}]
    assert patch.ops == [{"op": "replace", "path": "/Size", "value": "m"}]


def test_provider_default_taken_when_the_user_omits_it():
    assert generate_patch({"Cidr": "c", "Mtu": 1500}, {"Cidr": "c"}, NETWORK, exact=True).empty
    patch = generate_patch({"Cidr": "c", "Mtu": 1500}, {"Cidr": "c", "Mtu": 9000}, NETWORK, exact=True)
    assert patch.ops == [{"op": "replace", "path": "/Mtu", "value": 9000}]


def test_entity_set_provider_default_elements_are_kept():
    stored = {"Tags": [{"Key": "fake:owner", "Value": "x"}, {"Key": "Name", "Value": "a"}], "Image": "i"}
    assert generate_patch(stored, {"Tags": [{"Key": "Name", "Value": "a"}], "Image": "i"}, SERVER, exact=True).empty


def test_provider_default_under_a_list_inside_an_object_is_not_drift():
    # S3's BucketEncryption.ServerSideEncryptionConfiguration[].BucketKeyEnabled: read back false when omitted.
    schema = Schema(Identifier="$.Name", Fields=("Encryption",), Hints={
        "Encryption": FieldHint(), "Encryption.Rules": FieldHint(), "Encryption.Rules.Algorithm": FieldHint(),
        "Encryption.Rules.KeyEnabled": FieldHint(HasProviderDefault=True)})
    stored = {"Encryption": {"Rules": [{"Algorithm": "AES256", "KeyEnabled": False}]}}
    assert generate_patch(stored, {"Encryption": {"Rules": [{"Algorithm": "AES256"}]}}, schema, exact=True).empty
    changed = generate_patch(stored, {"Encryption": {"Rules": [{"Algorithm": "aws:kms"}]}}, schema, exact=True)
    assert not changed.empty


def test_opaque_compared_by_hash_unchanged_secret_not_resent():
    stored = {"Name": "b", "ApiKey": values.hashed_secret("k1")}
    assert generate_patch(stored, {"Name": "b", "ApiKey": "k1"}, BUCKET, exact=True).empty
    patch = generate_patch(stored, {"Name": "b", "ApiKey": "k2"}, BUCKET, exact=True)
    assert patch.ops == [{"op": "replace", "path": "/ApiKey", "value": "k2"}]
    assert "k2" not in str(mask_patch(patch.ops, {"ApiKey": "k2"}, BUCKET))


def test_json_format_compared_canonically():
    stored = {"Cidr": "c", "Settings": '{"a": 1, "b": [1, 2]}'}
    assert generate_patch(stored, {"Cidr": "c", "Settings": '{ "b":[1,2],"a":1 }'}, NETWORK, exact=True).empty
    assert not generate_patch(stored, {"Cidr": "c", "Settings": '{"a": 2, "b": [1, 2]}'}, NETWORK, exact=True).empty


def test_json_format_compared_canonically_at_any_depth():
    schema = Schema(Identifier="$.Id", Fields=("Settings",), Hints={
        "Settings": FieldHint(), "Settings.Document": FieldHint(Format="json"), "Settings.Layers": FieldHint(),
        "Settings.Layers.Policy": FieldHint(Format="json")})
    stored = {"Settings": {"Document": '{"a": 1, "b": [1, 2]}', "Layers": [{"Policy": '{"x": {"y": 1, "z": 2}}'}]}}
    same = {"Settings": {"Document": '{ "b":[1,2],"a":1 }', "Layers": [{"Policy": '{"x":{"z":2,"y":1}}'}]}}
    assert generate_patch(stored, same, schema, exact=True).empty
    changed = {"Settings": {"Document": '{ "b":[1,2],"a":1 }', "Layers": [{"Policy": '{"x":{"z":3,"y":1}}'}]}}
    assert generate_patch(stored, changed, schema, exact=True).ops == [  # the default list: a set
        {"op": "remove", "path": "/Settings/Layers/0"},
        {"op": "add", "path": "/Settings/Layers/0", "value": {"Policy": '{"x":{"y":1,"z":3}}'}}]


def test_default_collections_are_unordered_sets():
    stored = {"Cidr": "c", "Labels": ["a", "b"]}
    assert generate_patch(stored, {"Cidr": "c", "Labels": ["b", "a"]}, NETWORK, exact=True).empty
    exact = generate_patch(stored, {"Cidr": "c", "Labels": ["b", "c"]}, NETWORK, exact=True)
    assert exact.ops == [{"op": "remove", "path": "/Labels/0"}, {"op": "add", "path": "/Labels/1", "value": "c"}]
    ensure = generate_patch(stored, {"Cidr": "c", "Labels": ["b", "c"]}, NETWORK, exact=False)
    assert ensure.ops == [{"op": "add", "path": "/Labels/2", "value": "c"}]


def test_array_compared_by_position():
    stored = {"Image": "i", "Rules": [{"Port": 22}, {"Port": 80}]}
    patch = generate_patch(stored, {"Image": "i", "Rules": [{"Port": 22}, {"Port": 443}]}, SERVER, exact=True)
    assert patch.ops == [{"op": "replace", "path": "/Rules/1/Port", "value": 443}]
    swapped = generate_patch(stored, {"Image": "i", "Rules": [{"Port": 80}, {"Port": 22}]}, SERVER, exact=True)
    assert len(swapped.ops) == 2  # order matters for Array


@pytest.mark.parametrize(("before", "after"), [
    (["a", "b"], ["b", "a", "c"]),  # reordered and grown
    (["a", "b", "c"], ["c", "a"]),  # reordered and shrunk
    ([], ["a", "b"]),
    ([{"Port": 22}, {"Port": 80}], [{"Port": 80}, {"Port": 22}, {"Port": 443}]),
])
def test_array_is_position_based_at_any_length_and_one_patch_converges(before, after):
    stored = {"Image": "i", "Rules": before}
    patch = generate_patch(stored, {"Image": "i", "Rules": after}, SERVER, exact=True)
    assert jsonpatch.apply_patch(stored, patch.ops)["Rules"] == after
    assert generate_patch({"Image": "i", "Rules": after}, {"Image": "i", "Rules": after}, SERVER, exact=True).empty


def test_array_in_patch_mode_keeps_the_surplus_tail():
    stored = {"Image": "i", "Rules": [{"Port": 1}, {"Port": 2}, {"Port": 3}]}
    patch = generate_patch(stored, {"Image": "i", "Rules": [{"Port": 2}]}, SERVER, exact=False)
    assert patch.ops == [{"op": "replace", "path": "/Rules/0/Port", "value": 2}]


def test_entity_set_matched_by_index_field():
    stored = {"Cidr": "c", "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]}
    changed = generate_patch(stored, {"Cidr": "c", "Tags": [{"Key": "b", "Value": "3"}, {"Key": "a", "Value": "1"}]},
                             NETWORK, exact=True)
    assert changed.ops == [{"op": "replace", "path": "/Tags/1/Value", "value": "3"}]
    dropped = generate_patch(stored, {"Cidr": "c", "Tags": [{"Key": "a", "Value": "1"}]}, NETWORK, exact=True)
    assert dropped.ops == [{"op": "remove", "path": "/Tags/1"}]
    assert generate_patch(stored, {"Cidr": "c", "Tags": [{"Key": "a", "Value": "1"}]}, NETWORK, exact=False).empty


def test_entity_set_field_dropped_is_removed_only_in_reconcile():
    stored = {"Cidr": "c", "Tags": [{"Key": "a", "Value": "1"}]}
    assert generate_patch(stored, {"Cidr": "c"}, NETWORK, exact=True).ops == [{"op": "remove", "path": "/Tags"}]
    assert generate_patch(stored, {"Cidr": "c"}, NETWORK, exact=False).empty


def test_atomic_object_replaced_whole():
    stored = {"Image": "i", "Placement": {"Zone": "a", "Rack": "1"}}
    patch = generate_patch(stored, {"Image": "i", "Placement": {"Zone": "a", "Rack": "2"}}, SERVER, exact=True)
    assert patch.ops == [{"op": "replace", "path": "/Placement", "value": {"Zone": "a", "Rack": "2"}}]


def test_set_once_value_keeps_the_stored_one():
    stored = {"Name": "b", "Version": {"$value": "v1", "$strategy": "SetOnce", "$visibility": "Clear"}}
    desired = {"Name": "b", "Version": {"$value": "v2", "$strategy": "SetOnce", "$visibility": "Clear"}}
    assert generate_patch(stored, desired, BUCKET, exact=True).empty
    fresh = generate_patch({"Name": "b"}, desired, BUCKET, exact=True)
    assert fresh.ops == [{"op": "add", "path": "/Version", "value": "v2"}]


def test_removed_scalar_is_not_unset_and_empty_and_unknown_fields_ignored():
    stored = {"Size": "s", "Image": "i"}
    assert generate_patch(stored, {"Image": "i", "Size": "", "NotInSchema": 1}, SERVER, exact=True).empty


def test_reference_values_are_compared_by_their_value():
    stored = {"Value": "x", "Ref": {"$ref": "svc://A#/Id", "$value": "item-1"}}
    same = {"Value": "x", "Ref": {"$ref": "svc://A#/Id", "$value": "item-1"}}
    assert generate_patch(stored, same, SERVER.model_copy(update={"hints": {}, "fields": ()}), exact=True).empty
    unknown = {"Value": "x", "Ref": {"$ref": "svc://A#/Id"}}
    patch = generate_patch(stored, unknown, SERVER.model_copy(update={"hints": {}, "fields": ()}), exact=True)
    assert patch.ops == [{"op": "replace", "path": "/Ref", "value": "(known after apply)"}]
