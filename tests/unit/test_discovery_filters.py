"""Discovery's pure rules: filters (seed 000 "Discovery filter"), labels (engine.md §5.3), settings precedence,
and adoption of a discovered resource by the planner (engine.md §5.1, §5.3)."""

from __future__ import annotations

import pytest

from support.planning import CATALOG, forma, inventory, new_id, resource, stored
from svc.config.model import ResourcePluginConfig
from svc.engine.discovery_filters import (
    Condition,
    LabelRules,
    MatchFilter,
    base_label,
    condition_matches,
    excluded,
    unique_label,
)
from svc.engine.discovery_settings import plugin_discovery
from svc.engine.planner import PlanRequest, plan
from svc.plugins.runner import PluginLoadError

SERVER = "AWS::EC2::Instance"
TAGGED = {"InstanceId": "i-1", "Tags": [{"Key": "Name", "Value": "web"}, {"Key": "svc:owner", "Value": "agent"}],
          "Size": 4, "Public": False, "Zones": ["a", "b"], "GatewayId": "local"}


def owned_by(value: str | None, *types: str) -> MatchFilter:
    return MatchFilter(types or (SERVER,), (Condition("$.Tags[?(@.Key=='svc:owner')].Value", value),))


# -- conditions -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "value", "expected"), [
    ("$.Tags[?(@.Key=='svc:owner')].Value", "agent", True),
    ("$.Tags[?(@.Key=='svc:owner')].Value", "someone", False),
    ("$.Tags[?@.Key=='svc:owner'].Value", "agent", True),          # RFC 9535 spelling, no parentheses
    ("$.Tags[?(@.Key=='svc:owner')]", "agent", True),               # a tag-like object stands for its Value
    ("$.Tags[?match(@.Key, 'svc:.*')].Value", "agent", True),       # function extensions
    ("$.GatewayId", "local", True),
    ("$.Zones", "b", True),                                         # arrays are searched
    ("$.Size", "4", True),                                          # numbers compare by their JSON spelling
    ("$.Public", "false", True),
    ("$.Missing", "x", False),
])
def test_a_condition_matches_when_a_selected_value_equals_its_value(path: str, value: str, expected: bool) -> None:
    assert condition_matches(Condition(path, value), TAGGED) is expected


@pytest.mark.parametrize("value", [None, ""])
def test_a_condition_without_a_value_matches_when_the_path_exists(value: str | None) -> None:
    assert condition_matches(Condition("$.Tags[?(@.Key=='Name')]", value), TAGGED)
    assert not condition_matches(Condition("$.Tags[?(@.Key=='Env')]", value), TAGGED)


# -- filters ------------------------------------------------------------------------------------------------

def test_a_filter_applies_only_to_its_resource_types() -> None:
    assert excluded([owned_by("agent")], SERVER, TAGGED)
    assert not excluded([owned_by("agent")], "AWS::EC2::Vpc", TAGGED)
    assert excluded([owned_by("agent", "AWS::EC2::Vpc", SERVER)], "AWS::EC2::Vpc", TAGGED)


def test_every_condition_of_a_filter_must_match() -> None:
    both = MatchFilter((SERVER,), (Condition("$.GatewayId", "local"), Condition("$.Size", "4")))
    one = MatchFilter((SERVER,), (Condition("$.GatewayId", "local"), Condition("$.Size", "8")))
    assert excluded([both], SERVER, TAGGED)
    assert not excluded([one], SERVER, TAGGED)


def test_any_of_several_filters_excludes() -> None:
    filters = [owned_by("someone"), MatchFilter(("AWS::EC2::Route",), (Condition("$.GatewayId", "local"),)),
               MatchFilter((SERVER,), (Condition("$.Tags[?(@.Key=='Name')].Value", "web"),))]
    assert excluded(filters, SERVER, TAGGED)
    assert excluded(filters, "AWS::EC2::Route", {"GatewayId": "local"})
    assert not excluded(filters, "AWS::EC2::Route", {"GatewayId": "igw-1"})
    assert not excluded(filters[:2], SERVER, TAGGED)


def test_filters_read_from_the_manifest_and_config_shape() -> None:
    parsed = MatchFilter.from_json({"resourceTypes": [SERVER], "conditions": [
        {"propertyPath": "$.GatewayId", "propertyValue": "local"}, {"propertyPath": "$.Tags"}]})
    assert parsed == MatchFilter((SERVER,), (Condition("$.GatewayId", "local"), Condition("$.Tags", None)))
    assert excluded([parsed], SERVER, TAGGED)


# -- labels -------------------------------------------------------------------------------------------------

def test_label_from_the_type_override_then_the_default_query() -> None:
    rules = LabelRules("$.Tags[?(@.Key=='Name')].Value", {SERVER: "$.InstanceId"})
    assert base_label(rules, SERVER, TAGGED, "native") == "i-1"
    assert base_label(rules, "AWS::EC2::Vpc", TAGGED, "native") == "web"
    assert base_label(rules, SERVER, {"Tags": []}, "native") == "native"  # neither matches: the native id


def test_several_matches_of_a_query_are_joined() -> None:
    rules = LabelRules("$['Name','Type']")
    assert base_label(rules, "AWS::Route53::RecordSet", {"Name": "example.com", "Type": "A"}, "n") == "example.com-A"


def test_label_falls_back_to_tag_keys_in_order_then_the_native_id() -> None:
    rules = LabelRules(None, {}, ("Env", "Name"))
    assert base_label(rules, SERVER, TAGGED, "native") == "web"
    assert base_label(rules, SERVER, {"Tags": [{"Key": "Env", "Value": "prod"}, {"Key": "Name", "Value": "web"}]},
                      "n") == "prod"
    assert base_label(rules, SERVER, {"Tags": {"Name": "mapped"}}, "n") == "mapped"  # tags as a map
    assert base_label(rules, SERVER, {"Tags": [{"Key": "Name", "Value": "  "}]}, "native") == "native"
    assert base_label(LabelRules("$.Nothing"), SERVER, {}, "i-9") == "i-9"


def test_labels_are_made_unique_with_numbered_suffixes() -> None:
    taken = {"web", "web-1"}
    assert unique_label("web", taken) == "web-2"
    assert unique_label("web", taken) == "web-3"
    assert unique_label("db", taken) == "db"
    assert {"web-2", "web-3", "db"} <= taken


# -- settings -----------------------------------------------------------------------------------------------

MANIFEST = {"labelConfig": {"defaultQuery": "$.Name", "resourceOverrides": {SERVER: "$.InstanceId"}},
            "discoveryFilters": [{"resourceTypes": ["AWS::EC2::Route"],
                                  "conditions": [{"propertyPath": "$.GatewayId", "propertyValue": "local"}]}]}


def entry(**fields: object) -> ResourcePluginConfig:
    return ResourcePluginConfig.model_validate({"type": "AWS", "enabled": True, "discoveryFilters": [], **fields})


def test_the_manifest_gives_the_defaults() -> None:
    settings = plugin_discovery("AWS", entry(), MANIFEST, ("Name",))
    assert settings.filters == (MatchFilter(("AWS::EC2::Route",), (Condition("$.GatewayId", "local"),)),)
    assert settings.labels == LabelRules("$.Name", {SERVER: "$.InstanceId"}, ("Name",))
    assert settings.wants("AWS::Anything")


def test_the_users_filters_labels_and_types_replace_the_manifests() -> None:
    user = entry(discoveryFilters=[{"resourceTypes": [SERVER], "conditions": [{"propertyPath": "$.Size"}]}],
                 labelConfig={"defaultQuery": "$.Id"}, resourceTypesToDiscover=[SERVER])
    settings = plugin_discovery("AWS", user, MANIFEST, ("Env",))
    assert settings.filters == (MatchFilter((SERVER,), (Condition("$.Size", None),)),)
    assert settings.labels == LabelRules("$.Id", {}, ("Env",))
    assert settings.wants(SERVER) and not settings.wants("AWS::EC2::Route")


def test_a_path_that_does_not_parse_stops_the_agent_naming_it() -> None:
    user = entry(discoveryFilters=[{"resourceTypes": [SERVER], "conditions": [{"propertyPath": "$.Tags[?"}]}])
    with pytest.raises(PluginLoadError, match=r"plugin AWS: discovery: invalid JSONPath '\$\.Tags\[\?'"):
        plugin_discovery("AWS", user, {}, ("Name",))


# -- adoption (the planner) ---------------------------------------------------------------------------------

def apply(f, inv):
    return plan(PlanRequest("apply", "reconcile", f, force=False), inv, CATALOG, new_id)


def test_a_discovered_resource_is_adopted_in_place_with_its_ksuid_and_native_id() -> None:
    inv = inventory(stored("K7", "T::Test::Item", "found", {"Value": "1"}, stack="$unmanaged", managed=False,
                           native_id="item-7"))
    [change] = apply(forma(resource("found", "T::Test::Item", {"Value": "2"})), inv).resources
    assert (change.operation, change.ksuid, change.native_id, change.stack, change.old_stack) == (
        "update", "K7", "item-7", "app", "$unmanaged")
    assert change.patch == [{"op": "replace", "path": "/Value", "value": "2"}] and not change.metadata_only


def test_an_alias_adopts_and_renames_a_discovered_resource() -> None:
    inv = inventory(stored("K8", "T::Test::Item", "item-8", {"Value": "1"}, stack="$unmanaged", managed=False,
                           native_id="item-8"))
    [change] = apply(forma(resource("mine", "T::Test::Item", {"Value": "1"}, alias="item-8")), inv).resources
    assert (change.operation, change.ksuid, change.native_id, change.label, change.old_label) == (
        "update", "K8", "item-8", "mine", "item-8")
    assert change.metadata_only  # no property differs: no plugin call at all
