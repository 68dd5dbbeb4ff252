"""Minimal valid properties (tests/support/cloudcontrol/examples.py) for every registry type Cloud Control can
create and read: what the all-types sweep creates must pass the type's own schema, checked here with jsonschema
alone (no server)."""

from __future__ import annotations

import pytest

from support.cloudcontrol.examples import example_for
from support.cloudcontrol.models import with_read_only_values
from support.cloudcontrol.patterns import matching_string
from support.cloudcontrol.registry import TypeSchema, registry
from support.cloudcontrol.validation import model_errors
from support.cloudcontrol.values import present, without_empty

IN_SCOPE_TYPES = 1737  # cfn-lint 1.58.0: 1,854 types, these with create and read handlers (issue 26)


def test_the_pinned_registry_has_the_types_issue_26_counts():
    assert len(registry().type_names()) == 1854
    assert len(registry().in_scope_type_names()) == IN_SCOPE_TYPES


def test_every_type_gets_minimal_properties_and_second_values_its_schema_accepts():
    failures: dict[str, str] = {}
    for type_name in registry().in_scope_type_names():
        schema = registry().schema(type_name)
        try:
            example = example_for(schema)
        except Exception as error:  # noqa: BLE001 (collected: the assertion names every type that fails)
            failures[type_name] = f"no example: {error}"
            continue
        missing = set(schema.required) - set(example.properties)
        given_read_only = set(example.properties) & schema.read_only
        models = {"minimal": example.properties}
        for label, change in (("mutable", example.mutable), ("create-only", example.create_only)):
            if change is not None:
                models[label] = {**example.properties, change.name: change.after}
                if change.after == change.before:
                    failures[type_name] = f"{label} {change.name}: the second value is the first"
        errors = {label: model_errors(schema, model) for label, model in models.items()}
        if missing or given_read_only or any(errors.values()):
            failures[type_name] = f"missing {missing}, read-only given {given_read_only}, errors {errors}"
    assert failures == {}


def test_no_example_holds_a_value_svc_would_leave_out_as_empty():
    """svc counts "", [] and {} (and objects of only those) as unset and does not send them, so an example that
    needs one could not be written as a forma: required values and second values hold something at every depth."""
    empty: dict[str, object] = {}
    for type_name in registry().in_scope_type_names():
        example = example_for(registry().schema(type_name))
        if without_empty(example.properties) != example.properties:
            empty[type_name] = example.properties
        for change in (example.mutable, example.create_only):
            if change is not None and (not present(change.after)
                                       or without_empty(change.after) == without_empty(change.before)):
                empty[type_name] = change
    assert empty == {}


def test_an_empty_marker_is_chosen_only_when_nothing_else_fits():
    """``{"Drop": {}}`` is a valid rule action, but svc would send ``{}``: another choice that holds something."""
    [rule] = example_for(registry().schema("AWS::SES::MailManagerRuleSet")).properties["Rules"]
    assert all(present(action) for action in rule["Actions"]), rule
    assert example_for(registry().schema("AWS::WorkSpacesWeb::SessionLogger")).properties["EventFilter"] != {"All": {}}


def test_tags_hold_a_key_and_a_value():
    """The plugin's tag class requires both, where a registry schema may not."""
    example = example_for(registry().schema("AWS::S3Files::AccessPoint"))
    assert example.mutable is not None and example.mutable.name == "Tags"
    assert all({"Key", "Value"} <= set(tag) for tag in example.mutable.after)


def test_a_write_only_create_only_change_is_offered_only_for_a_value_the_example_sets():
    """svc tells such a change by the value it sent, and has none for a property the resource was created
    without: AppSync's MergedApiIdentifier (write-only) is not a replacement svc can see."""
    schema = registry().schema("AWS::AppSync::SourceApiAssociation")
    example = example_for(schema)
    assert example.create_only is None or example.create_only.name not in schema.write_only - set(example.properties)


def test_a_second_value_keeps_every_key_of_the_first():
    """svc never removes a key a forma drops (the provider's value stands), so a policy's definition cannot
    switch from its ``Static`` choice to ``TemplateLinked``: the second value changes the same choice."""
    change = example_for(registry().schema("AWS::VerifiedPermissions::Policy")).mutable
    assert change is not None and change.name == "Definition"
    assert set(change.before) <= set(change.after), change
    # Inside a list too, element by element, when the second value is longer: a gateway rule's first action.
    change = example_for(registry().schema("AWS::BedrockAgentCore::GatewayRule")).mutable
    assert change is not None and change.name == "Actions"
    assert set(change.before[0]) <= set(change.after[0]), change


def test_a_part_of_the_identifier_the_service_makes_up_is_changed_to_another_value():
    """A view created without a name gets one made up (the stand-in's from the first variant): a replacement
    asks for another."""
    schema = registry().schema("AWS::CloudWatch::View")
    made_up = with_read_only_values(schema, example_for(schema).properties, set())["Name"]
    change = example_for(schema).create_only
    assert change is not None and change.name == "Name" and change.after != made_up


def test_second_values_are_only_for_the_properties_a_module_declares():
    schema = registry().schema("AWS::Logs::LogGroup")
    example = example_for(schema, settable={"LogGroupName", "RetentionInDays"})
    assert example.mutable is not None and example.mutable.name == "RetentionInDays"
    assert example.create_only is not None and example.create_only.name == "LogGroupName"
    nothing = example_for(schema, settable=set())
    assert nothing.mutable is None and nothing.create_only is None


def test_a_map_whose_key_pattern_python_cannot_compile_is_not_refused():
    """A Java-only key pattern (``\\p{L}``) matches keys jsonschema cannot check: every key counts as matched."""
    schema = TypeSchema("AWS::Test::Map", {"primaryIdentifier": ["/properties/Id"], "properties": {
        "Id": {"type": "string"},
        "Labels": {"type": "object", "additionalProperties": False,
                   "patternProperties": {"^[\\p{L}]+$": {"type": "string"}}}}})
    assert model_errors(schema, {"Labels": {"name": "x"}}) == []


def test_examples_are_the_same_on_every_run():
    for type_name in ("AWS::EC2::Instance", "AWS::ECS::Service", "AWS::Lambda::Function", "AWS::MSK::Replicator"):
        schema = registry().schema(type_name)
        assert example_for(schema) == example_for(schema)


def test_a_mutable_change_is_neither_create_only_nor_read_only_nor_write_only():
    schema = registry().schema("AWS::Logs::LogGroup")
    example = example_for(schema)
    assert example.mutable is not None and example.create_only is not None
    assert example.mutable.name not in schema.create_only | schema.read_only | schema.write_only
    assert example.create_only.name in schema.create_only


def test_the_schema_check_names_what_is_wrong():
    schema = registry().schema("AWS::Logs::LogGroup")
    assert model_errors(schema, {"RetentionInDays": "long"}) == [
        "#/RetentionInDays: failed validation constraint for keyword [enum]",
        "#/RetentionInDays: expected type: Integer, found: String"]
    assert model_errors(schema, {"LogGroupClass": "HOT"}) == [
        "#/LogGroupClass: failed validation constraint for keyword [enum]"]
    assert model_errors(schema, {"Colour": "red"}) == ["#: extraneous key [Colour] is not permitted"]
    assert model_errors(registry().schema("AWS::IAM::Role"), {}) == [
        "#: required key [AssumeRolePolicyDocument] not found"]


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"^[a-z][a-z0-9-]{2,5}$", "aaa"),
    (r"^arn:aws[a-z-]*:iam::\d{12}:role/.+$", "arn:aws:iam::000000000000:role/a"),
    (r"^(?!aws:)[A-Za-z]+$", "a"),
    (r"^(GET|PUT)$", "GET"),
])
def test_a_pattern_gets_its_shortest_readable_match(pattern: str, expected: str):
    assert matching_string(pattern) == expected
    second = matching_string(pattern, variant=1)
    assert second is not None and second != expected


def test_a_pattern_match_meets_a_minimum_length_and_java_patterns_are_left_to_the_caller():
    assert matching_string(r"^[a-z]+$", min_length=5) == "aaaaa"
    assert matching_string(r"^[\p{L}]+$") is None


def test_made_up_arns_and_ids_are_what_other_types_patterns_accept():
    """A role's ARN names no region and a key's id is a UUID, as AWS's do: a Lambda function's Role and an EFS
    file system's KmsKeyId refer to them, and their patterns say so."""
    role = with_read_only_values(registry().schema("AWS::IAM::Role"), {"RoleName": "runner",
                                                                       "AssumeRolePolicyDocument": {}}, set())
    key = with_read_only_values(registry().schema("AWS::KMS::Key"), {}, set())
    assert role["Arn"] == "arn:aws:iam::123456789012:role/runner"
    assert key["Arn"].endswith(f":key/{key['KeyId']}")
    function_role = registry().schema("AWS::Lambda::Function").properties["Role"]
    assert not model_errors(registry().schema("AWS::Lambda::Function"),
                            {"Role": role["Arn"], "Code": {"ZipFile": "x"}}), function_role
    assert not model_errors(registry().schema("AWS::EFS::FileSystem"), {"KmsKeyId": key["Arn"]})
    group = with_read_only_values(registry().schema("AWS::EC2::SecurityGroup"), {"GroupDescription": "web"}, set())
    subnet = with_read_only_values(registry().schema("AWS::EC2::Subnet"), {"VpcId": "vpc-0123456789abcdef"}, set())
    files = with_read_only_values(registry().schema("AWS::EFS::FileSystem"), {}, set())
    assert not model_errors(registry().schema("AWS::EFS::MountTarget"), {
        "FileSystemId": files["FileSystemId"], "SubnetId": subnet["SubnetId"], "SecurityGroups": [group["GroupId"]]})
    function = with_read_only_values(registry().schema("AWS::Lambda::Function"),
                                     {"FunctionName": "nightly", "Role": role["Arn"], "Code": {"ZipFile": "x"}}, set())
    assert not model_errors(registry().schema("AWS::Lambda::Permission"), {
        "FunctionName": function["Arn"], "Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com"})
