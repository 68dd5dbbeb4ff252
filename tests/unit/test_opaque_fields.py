"""Where a schema's secrets are, at any depth (``svc.model.opaque``), and every walk that follows it: hashing
for storage, redaction for a plugin's prior state and for logs, the unchanged-secret comparison and the
patch as it is shown."""

from __future__ import annotations

from svc.engine.planner.diff import generate_patch, mask_patch
from svc.model import values
from svc.model.opaque import NONE, OpaqueFields, opaque_fields
from svc.model.schema import FieldHint, Schema
from svc.telemetry.redaction import opaque_strings

PATHS = ("ApiKey", "Database.Password", "Database.Replica.Password", "Users.Token", "Routes.*.Key", "Env.*")
VAULT = Schema(Identifier="$.VaultId", Fields=("Name", "ApiKey", "Database", "Users", "Routes", "Env"),
               OpaquePaths=PATHS)
SECRETS = ("api-1", "db-pw-1", "rep-pw-1", "tok-a-1", "route-key-1", "env-a-1", "0-key-1")


def desired(**changed: str) -> dict:
    """A vault's properties as a forma gives them: plain strings for schema-typed secrets, an envelope too."""
    plain = dict(zip(("api", "db", "rep", "tok", "route", "env", "zero"), SECRETS, strict=True)) | changed
    return {
        "Name": "v", "ApiKey": plain["api"],
        "Database": {"Host": "db", "Password": plain["db"],
                     "Replica": {"Host": "r", "Password": {"$value": plain["rep"], "$visibility": "Opaque"}}},
        "Users": [{"Name": "a", "Token": plain["tok"]}, {"Name": "b"}],
        "Routes": {"r1": {"Target": "x", "Key": plain["route"]}, "0": {"Target": "y", "Key": plain["zero"]}},
        "Env": {"A": plain["env"]},
    }


def test_paths_name_fields_and_a_mapping_level_and_pass_list_elements() -> None:
    tree = OpaqueFields.of_paths(PATHS)
    assert tree.source == tuple(sorted(PATHS))
    assert tree.at("ApiKey").secret and not tree.at("Name").secret and tree.at("Name") is NONE
    assert tree.at("Database").at("Password").secret and not tree.at("Database").at("Host").secret
    assert tree.at("Users").at(3).at("Token").secret  # a list's element is reached without a step
    assert tree.at("Routes").at("any-key").at("Key").secret and not tree.at("Routes").at("k").at("Target").secret
    assert tree.at("Env").at("WHATEVER").secret
    assert tree.at_path(["Database", "Replica", "Password"]).secret
    assert tree.at_path(["ApiKey", "inside"]).secret  # below a secret is the secret


def test_a_schema_stored_before_opaque_paths_falls_back_to_its_dotted_opaque_hints() -> None:
    schema = Schema(Identifier="$.Id", Hints={"Db": FieldHint(), "Db.Password": FieldHint(Opaque=True),
                                              "Db.Host": FieldHint(), "Key": FieldHint(Opaque=True)})
    assert opaque_fields(schema).source == ("Db.Password", "Key")
    assert opaque_fields(VAULT).source == tuple(sorted(PATHS))


def test_a_self_referencing_sub_resource_has_its_secrets_at_every_depth() -> None:
    tree = OpaqueFields.of_paths(["Root.Password", "Root.Children=Root", "Root.Links.*=Root"])
    deep = {"Root": {"Password": "pw-0", "Children": [{"Password": "pw-1", "Name": "a", "Children": [
        {"Password": "pw-2", "Links": {"x": {"Password": "pw-3"}}}]}]}}
    stored = values.hash_secrets(deep, tree)
    assert not [n for n in range(4) if f"pw-{n}" in str(stored)]
    assert stored["Root"]["Children"][0]["Name"] == "a"
    assert sorted(opaque_strings(deep, tree)) == ["pw-0", "pw-1", "pw-2", "pw-3"]


def test_hashing_for_storage_reaches_every_secret_and_nothing_else() -> None:
    stored = values.hash_secrets(desired(), opaque_fields(VAULT))
    text = str(stored)
    assert not [secret for secret in SECRETS if secret in text]
    assert stored["Database"]["Password"] == values.hashed_secret("db-pw-1")
    assert stored["Users"][0]["Token"] == values.hashed_secret("tok-a-1") and stored["Users"][1] == {"Name": "b"}
    assert stored["Routes"]["r1"] == {"Target": "x", "Key": values.hashed_secret("route-key-1")}
    assert stored["Env"]["A"] == values.hashed_secret("env-a-1")
    assert (stored["Name"], stored["Database"]["Host"]) == ("v", "db")
    assert values.hash_secrets(stored, opaque_fields(VAULT)) == stored  # never hashed twice


def test_redaction_of_the_prior_state_a_plugin_sees() -> None:
    prior = values.redact(desired(), opaque_fields(VAULT))
    assert not [secret for secret in SECRETS if secret in str(prior)]
    assert prior["Users"][0] == {"Name": "a", "Token": values.REDACTED} and prior["Routes"]["r1"]["Target"] == "x"


def test_the_secrets_an_operation_remembers_for_log_redaction() -> None:
    assert sorted(opaque_strings(desired(), opaque_fields(VAULT))) == sorted(SECRETS)


def test_unchanged_nested_secrets_plan_nothing_and_a_changed_one_is_sent_but_shown_hashed() -> None:
    stored = values.hash_secrets(desired(), opaque_fields(VAULT))
    assert generate_patch(stored, desired(), VAULT, exact=True).empty
    for name in ("db", "rep", "tok", "route", "zero", "env"):
        wanted = desired(**{name: "changed-secret"})
        patch = generate_patch(stored, wanted, VAULT, exact=True)
        assert "changed-secret" in str(patch.ops), name  # the plugin is sent the secret itself
        assert "changed-secret" not in str(mask_patch(patch.ops, wanted, VAULT)), name
    patch = generate_patch(stored, desired(zero="changed-secret"), VAULT, exact=True)
    assert patch.ops == [{"op": "replace", "path": "/Routes/0/Key", "value": "changed-secret"}]


def test_a_whole_element_or_entry_added_is_shown_with_its_secret_hashed() -> None:
    stored = values.hash_secrets(desired(), opaque_fields(VAULT))
    wanted = desired()
    wanted["Users"].append({"Name": "c", "Token": "tok-c-1"})
    wanted["Routes"]["7"] = {"Target": "z", "Key": "route-7-1"}
    patch = generate_patch(stored, wanted, VAULT, exact=True)
    assert {op["path"] for op in patch.ops} == {"/Users/2", "/Routes/7"}
    masked = mask_patch(patch.ops, wanted, VAULT)
    assert "tok-c-1" not in str(masked) and "route-7-1" not in str(masked)
    assert {"op": "add", "path": "/Routes/7", "value": {"Target": "z", "Key": values.hashed_secret("route-7-1")}} \
        in masked
