"""Formas and a plugin schema package written as users of the original product (formae) write them, with
`formae` renamed `svc` and nothing else (issue 27 items 1–6): the COMPAT plugin (tests/fixtures/compat_pkg) and
the formas under tests/fixtures/formas/compat, evaluated by the real ``svc eval`` and real Pkl, checked field by
field against the JSON the original product renders (reference: schema-plugins.md §2, §7; api-cli-config.md §4.5)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from support.extract_view import agent_view
from support.packages_eval import evaluate_with_packages
from support.processes import run_svc
from svc.forma import FormaError, evaluate_forma
from svc.forma.extract import generate
from svc.forma.extract_catalog import load_catalog
from svc.plugins import installed_plugins
from svc.schema.extract import extract_descriptors

FORMAS = Path(__file__).parent.parent / "fixtures" / "formas" / "compat"
FLAGS = {"main": ("--env", "prod", "--lb-type", "network"), "legacy": ("--ttl", "60")}


def svc_eval(name: str) -> dict[str, Any]:
    result = run_svc("eval", str(FORMAS / f"{name}.pkl"), "--output-consumer", "machine", *FLAGS[name])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def main(compat_plugin) -> dict[str, Any]:
    return svc_eval("main")


def resource(forma: dict[str, Any], label: str) -> dict[str, Any]:
    return next(r for r in forma["Resources"] if r["Label"] == label)


@pytest.mark.parametrize("name", ["main", "legacy"])
def test_the_formas_evaluate_to_the_expected_json_field_by_field(compat_plugin, name: str) -> None:
    got, want = svc_eval(name), json.loads((FORMAS / f"{name}.json").read_text())
    assert list(got) == list(want)
    for section in want:
        if section != "Resources":
            assert got[section] == want[section], section
    assert [r["Label"] for r in got["Resources"]] == [r["Label"] for r in want["Resources"]]
    for mine, theirs in zip(got["Resources"], want["Resources"], strict=True):
        assert list(mine) == list(theirs), mine["Label"]
        for key in theirs:
            if key in ("Schema", "Properties"):
                assert list(mine[key]) == list(theirs[key]), (mine["Label"], key)
                for field in theirs[key]:
                    assert mine[key][field] == theirs[key][field], (mine["Label"], key, field)
            else:
                assert mine[key] == theirs[key], (mine["Label"], key)


def test_a_plugin_property_named_type_beside_the_resource_type(main: dict[str, Any]) -> None:
    lb = resource(main, "web-lb")
    assert lb["Type"] == "COMPAT::ELBv2::LoadBalancer"  # from the ResourceHint
    assert lb["Properties"]["Type"] == "network"  # the plugin's own `type`, from a CLI flag
    assert lb["Schema"]["Hints"]["Type"]["CreateOnly"] is True
    record = resource(main, "www")
    assert (record["Type"], record["Properties"]["Type"]) == ("COMPAT::Route53::RecordSet", "CNAME")
    assert record["Schema"]["Hints"]["Type"]["Required"] is True


def test_plugin_resolvable_subclasses_render_as_references(main: dict[str, Any]) -> None:
    envelope = {"$res": True, "$label": "web-lb", "$type": "COMPAT::ELBv2::LoadBalancer", "$stack": "prod-app",
                "$visibility": "Clear"}
    api = resource(main, "api")["Properties"]
    assert api["LoadBalancerArn"] == {**envelope, "$property": "LoadBalancerArn"}
    assert resource(main, "www")["Properties"]["ResourceRecords"] == [{**envelope, "$property": "DNSName"}]
    # A ListingResolvable and a MappingResolvable subclass, indexed with .at().
    assert api["Settings"] == {"first-group": {**envelope, "$property": "SecurityGroups.0"},
                               "idle": {**envelope, "$property": "Attributes.idle_timeout\\.timeout_seconds"}}
    assert api["SecurityGroups"] == [{**envelope, "$property": "SecurityGroups.0", "$visibility": "Opaque"}]


def test_secret_references_scalar_with_a_json_path_and_map_by_key(main: dict[str, Any]) -> None:
    api = resource(main, "api")
    assert api["Properties"]["DatabasePassword"] == {
        "$res": True, "$label": "db-secret", "$type": "COMPAT::Secrets::Secret", "$stack": "prod-app",
        "$property": "SecretString", "$json": "password", "$visibility": "Clear"}
    assert api["Properties"]["ApiKey"] == {
        "$res": True, "$label": "kv", "$type": "COMPAT::Secrets::MapSecret", "$stack": "prod-app",
        "$property": "Data.api-key", "$visibility": "Clear"}
    # The consumer's fields are opaque by type (String|svc.SecretValue|…), and the secret's own value field too.
    assert api["Schema"]["Hints"]["DatabasePassword"]["Opaque"] and api["Schema"]["Hints"]["ApiKey"]["Opaque"]
    assert resource(main, "db-secret")["Schema"]["Hints"]["SecretString"]["Opaque"] is True


def test_a_map_secret_without_at_is_a_type_error(compat_plugin, tmp_path: Path) -> None:
    text = (FORMAS / "main.pkl").read_text().replace('kv.res.secretValue.at("api-key")', "kv.res.secretValue")
    path = tmp_path / "forgot.pkl"
    path.write_text(text)
    with pytest.raises(FormaError) as caught:
        evaluate_forma(path, flags={})
    assert "Expected value of type" in str(caught.value) and "SecretMapAccessor" in str(caught.value)


def test_values_cli_props_reaping_and_managed(compat_plugin, main: dict[str, Any]) -> None:
    api = resource(main, "api")["Properties"]
    assert api["Version"] == {"$value": "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
                              "$visibility": "Opaque", "$strategy": "Update", "$hashed": True}
    assert main["Targets"][0]["Reaping"] == {"Kind": "after", "MaxUnreachableSeconds": 7200}
    assert {r["Managed"] for r in main["Resources"]} == {True}
    legacy = svc_eval("legacy")
    assert legacy["Properties"]["ttl"] == {"Flag": "ttl", "Type": "Int", "Value": 60}  # Prop { type = Int }
    assert legacy["Properties"]["ratio"] == {"Flag": "ratio", "Type": "Float", "Default": 0.5, "Value": 0.5}
    assert resource(legacy, "apex")["Properties"]["Ttl"] == 60
    assert legacy["Targets"][0]["Reaping"] == {"Kind": "never"}


def test_the_json_shape_of_the_original_product(main: dict[str, Any]) -> None:
    assert "Description" not in main  # unset
    assert main["Stacks"][1] == {"Label": "bare"}  # no Description, no Policies
    assert resource(main, "bare-lb")["Properties"] == {}
    api = resource(main, "api")
    # Sub-resource fields under dotted keys, after the top-level ones.
    assert api["Schema"]["Fields"] == [
        "Name", "LoadBalancerArn", "LegacyLoadBalancer", "Endpoint", "UserData", "DatabasePassword", "ApiKey",
        "AdminPassword", "Version", "Settings", "SecurityGroups", "Containers",
        "Containers.Image", "Containers.Env", "Containers.Env.Name", "Containers.Env.Value"]
    assert api["Schema"]["Fields"] == list(api["Schema"]["Hints"])
    hints = api["Schema"]["Hints"]
    assert (hints["LegacyLoadBalancer"]["AttachesTo"], hints["LegacyLoadBalancer"]["EdgeKind"]) == (True, "default")
    assert (hints["LoadBalancerArn"]["AttachesTo"], hints["LoadBalancerArn"]["EdgeKind"]) == (False, "attachesTo")
    # A reference interpolated into a plain String stays a string, its span the reference's envelope.
    endpoint = api["Properties"]["Endpoint"]
    (span,) = re.fullmatch(r"https://\x1e([A-Za-z0-9+/=]+)\x1f/api", endpoint).groups()
    assert json.loads(base64.b64decode(span)) == {
        "$res": True, "$label": "web-lb", "$type": "COMPAT::ELBv2::LoadBalancer", "$stack": "prod-app",
        "$property": "DNSName", "$visibility": "Clear"}
    assert api["Properties"]["UserData"]["$embed"] is True  # svc.embed(...) keeps its envelope
    # new svc.SecretValue { … } in a field typed secret: as the original renders it.
    assert api["Properties"]["AdminPassword"] == {"$value": "root", "$visibility": "Clear", "$strategy": "Update"}


def compat_only():
    (plugin,) = [plugin for plugin in installed_plugins() if plugin.namespace == "COMPAT"]
    return plugin


def test_each_schema_class_gives_its_descriptor_from_the_package_alone(main: dict[str, Any], tmp_path: Path) -> None:
    descriptors = extract_descriptors(compat_only(), cache_dir=tmp_path)
    assert sorted(descriptors) == ["COMPAT::App::Service", "COMPAT::ELBv2::LoadBalancer",
                                   "COMPAT::Route53::RecordSet", "COMPAT::Secrets::MapSecret",
                                   "COMPAT::Secrets::Secret"]
    for r in main["Resources"]:
        assert descriptors[r["Type"]].schema_.to_json() == r["Schema"], r["Type"]
    lb = descriptors["COMPAT::ELBv2::LoadBalancer"].schema_
    assert lb.fields == ("Name", "Type", "SecurityGroups", "Attributes", "Tags", "Attributes.Key", "Attributes.Value")
    assert lb.identifier == "LoadBalancerArn" and lb.hints["Tags"].update_method == "EntitySet"
    # AttachesTo as given on the wire; read as the edge kind.
    service = descriptors["COMPAT::App::Service"].schema_
    assert service.hints["LegacyLoadBalancer"].kind == service.hints["LoadBalancerArn"].kind == "attachesTo"


FQ = """
import "pkl:reflect"
import "@svc/svc.pkl"
import "@compat/compat.pkl"
import "@compat/elbv2/loadbalancer.pkl"
import "@compat/app/service.pkl"

local lb = reflect.Class(loadbalancer.LoadBalancer)
output {
  renderer = new JsonRenderer {}
  value = new Dynamic {
    fields = svc.fq.fields(lb)
    hintKeys = svc.fq.hints(lb).keys.toList()
    identifier = svc.fq.schema(lb).Identifier
    type = svc.fq.type(lb)
    configHints = svc.fq.configHints(reflect.Class(compat.Config)).toMap().mapValues((_, h) -> h.CreateOnly)
    byClass = svc.fq.type(service.Service)
    properties = svc.fq.allProperties(lb).keys.toList()
    instance = let (r = new loadbalancer.LoadBalancer { label = "x"; type = "gateway" }) new Dynamic {
      type = r.type()
      fields = r.fields()
      props = r.props()
      rendered = r.render().toMap().keys.toList()
    }
  }
}
"""


def test_the_reflection_helpers_under_the_original_names(compat_plugin) -> None:
    got = evaluate_with_packages("file:///fq-test.pkl", module_text=FQ)
    expected_fields = ["Name", "Type", "SecurityGroups", "Attributes", "Tags", "Attributes.Key", "Attributes.Value"]
    assert got["fields"] == got["hintKeys"] == expected_fields
    assert (got["identifier"], got["type"], got["byClass"]) == (
        "LoadBalancerArn", "COMPAT::ELBv2::LoadBalancer", "COMPAT::App::Service")
    assert got["configHints"] == {"Profile": False}
    assert got["properties"] == ["name", "type", "securityGroups", "attributes", "tags", "res"]
    assert got["instance"] == {"type": "COMPAT::ELBv2::LoadBalancer", "fields": expected_fields,
                               "props": {"Type": "gateway"},
                               "rendered": ["Label", "Group", "Target", "Stack", "Alias", "Managed", "Type", "Schema",
                                            "Properties"]}


def test_extract_writes_back_a_formae_dialect_plugin(compat_plugin) -> None:
    """The plugin's resolvable classes default a `type` too (a resource type): they are no target configs."""
    catalog = load_catalog({"COMPAT"})
    assert dict(catalog.configs) == {"COMPAT": "@compat/compat.pkl#Config"}
    assert catalog.resource_class("COMPAT::Route53::RecordSet").field("Type").name == "type"
    view = agent_view(svc_eval("legacy"))
    text = generate(view, catalog).text
    assert 'type = "A"' in text and "config = new compat.Config { region = \"us-east-1\" }" in text
