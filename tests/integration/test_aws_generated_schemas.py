"""The generated AWS modules, extracted by the real Pkl into the descriptors the agent plans with, checked
against the registry schemas they come from.

The expectations are read from the registry JSON here (cfn-lint's files, opened directly), not from the
generator: for a deterministic sample of a few hundred generated types, plus the tricky ones, the identifier,
createOnly, writeOnly, required, read-only (not a field), unordered arrays (Set), tags (EntitySet by Key),
JSON documents, nested createOnly paths and secrets must be what the registry says. A forma over generated
types shows the wire keys and values they render.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from svc.forma import evaluate_forma
from svc.model.schema import ResourceDescriptor, Schema
from svc.plugins import installed_plugins
from svc.schema.extract import extract_descriptors

SAMPLE_STRIDE = 6  # every sixth covered type, in name order: ~290 types
GENERATED_HEADER = "// Generated from the CloudFormation registry"

# Found in the registry by hand: each is a case the generator has to get right.
TRICKY = (
    "AWS::ApiGateway::Authorizer",  # a compound identifier; listed per RestApi
    "AWS::ApiGatewayV2::Api",  # a property named Target, as svc.Resource's member
    "AWS::Connect::Rule",  # a property named Function: a Pkl keyword
    "AWS::Omics::Workflow",  # wire keys in lowerCamelCase (readmeMarkdown)
    "AWS::Route53::DelegationSet",  # nothing to set
    "AWS::RDS::DBCluster",  # a write-only password: a secret
    "AWS::BCMDataExports::Export",  # createOnly paths below a property
    "AWS::WAFv2::WebACL",  # recursive and deep definitions (statements of statements)
    "AWS::Budgets::Budget",  # a recursive definition (an expression of expressions)
    "AWS::QuickSight::Dashboard",  # a definition too deep to type
    "AWS::SageMaker::ModelCard",  # arrays of arrays, anyOf
    "AWS::Bedrock::ResourcePolicy",  # a JSON document
    "AWS::ApiGateway::Method",  # maps (patternProperties)
    "AWS::EC2::Instance",
    "AWS::EC2::LaunchTemplate",
    "AWS::ECS::Service",
    "AWS::Lambda::Function",
    "AWS::ElasticLoadBalancingV2::LoadBalancer",
)


@cache
def registry() -> dict[str, dict[str, Any]]:
    schemas = resources.files("cfnlint") / "data" / "schemas"
    providers = json.loads((schemas / "providers" / "us-east-1.json").read_text())
    loaded = {name: json.loads((schemas / "resources" / f"{file}.json").read_text())
              for name, file in providers.items()}
    return {name: s for name, s in loaded.items() if {"create", "read"} <= (s.get("handlers") or {}).keys()}


def aws_plugin():
    return next(p for p in installed_plugins() if p.namespace == "AWS")


def is_generated(type_name: str) -> bool:
    _, service, resource = type_name.split("::")
    module = aws_plugin().schema_dir / service.lower() / f"{resource.lower()}.pkl"
    return module.read_text(encoding="utf-8").startswith(GENERATED_HEADER)


@pytest.fixture(scope="module")
def descriptors() -> dict[str, ResourceDescriptor]:
    return extract_descriptors(aws_plugin())  # the test run's shared cache: extracted once per package


def sample() -> list[str]:
    names = sorted(registry())
    return sorted(set(names[::SAMPLE_STRIDE]) | set(TRICKY))


def top_level(schema: dict, key: str) -> set[str]:
    return {p.split("/")[2] for p in schema.get(key) or () if p.count("/") == 2}


def resolved(schema: dict, node: dict) -> dict:
    ref = node.get("$ref", "")
    return schema["definitions"][ref.rsplit("/", 1)[-1]] if ref.startswith("#/definitions/") else node


def test_every_covered_type_has_a_descriptor(descriptors) -> None:
    assert sorted(descriptors) == sorted(registry())
    assert len(descriptors) == 1737


@pytest.mark.parametrize("type_name", sample())
def test_a_generated_type_has_the_hints_its_registry_schema_gives(descriptors, type_name: str) -> None:
    if not is_generated(type_name):
        pytest.skip("a hand-written module (native handler)")
    source = registry()[type_name]
    got: Schema = descriptors[type_name].schema_
    hints = got.hints
    read_only = top_level(source, "readOnlyProperties")
    settable = set(source["properties"]) - read_only

    assert got.identifier == "|".join("$." + ".".join(p.split("/")[2:]) for p in source["primaryIdentifier"])
    assert {f for f in got.fields if "." not in f} == settable
    assert {f for f in settable if hints[f].create_only} == top_level(source, "createOnlyProperties") & settable
    assert {f for f in settable if hints[f].write_only} == top_level(source, "writeOnlyProperties") & settable
    assert {f for f in settable if hints[f].required} == set(source.get("required") or ()) & settable
    if "list" not in source["handlers"]:
        assert not got.discoverable

    tagging = source.get("tagging") or {}
    tags = (tagging.get("tagProperty") or "/properties/Tags").removeprefix("/properties/")
    tag_node = source["properties"].get(tags, {})
    if tagging.get("taggable", True) and tags in settable and tag_node.get("type") == "array":
        item = resolved(source, tag_node.get("items") or {})
        if {"Key", "Value"} <= set(item.get("properties") or {}):
            assert (hints[tags].update_method, hints[tags].index_field) == ("EntitySet", "Key")

    for name in settable - {tags}:
        node = resolved(source, source["properties"][name])
        hint = hints[name]
        if hint.update_method == "Atomic":
            continue  # too deep to type: compared as a whole
        if node.get("type") == "array" and node.get("insertionOrder") is False:
            assert hint.update_method in ("Set", "EntitySet"), name
        elif node.get("type") == "array":
            assert hint.update_method == "Array", name
        if node.get("type") == "object" and not isinstance(node.get("additionalProperties"), dict) \
                and not any(node.get(k) for k in ("properties", "patternProperties", "oneOf", "anyOf", "allOf")):
            assert hint.format == "json", name

    for path in source.get("createOnlyProperties") or ():
        steps = [s for s in path.split("/")[2:] if s != "*"]
        prefixes = [".".join(steps[:n]) for n in range(1, len(steps))]
        if len(steps) > 1 and steps[0] in settable and path not in (source.get("readOnlyProperties") or ()) \
                and all(p in hints and hints[p].update_method != "Atomic" for p in prefixes):
            key = ".".join(steps)
            assert key in hints and hints[key].create_only, path


def test_a_compound_identifier_and_a_parent_from_the_list_handler(descriptors) -> None:
    authorizer = descriptors["AWS::ApiGateway::Authorizer"].schema_
    assert authorizer.identifier == "$.RestApiId|$.AuthorizerId"
    assert authorizer.parent == "AWS::ApiGateway::RestApi" and authorizer.discoverable
    assert [(m.parent_property, m.child_property) for m in authorizer.parent_mappings] == [("RestApiId", "RestApiId")]


def test_names_that_clash_with_pkl_or_svc_keep_their_wire_keys(descriptors) -> None:
    assert "Target" in descriptors["AWS::ApiGatewayV2::Api"].schema_.fields
    assert "Function" in descriptors["AWS::Connect::Rule"].schema_.fields
    assert "readmeMarkdown" in descriptors["AWS::Omics::Workflow"].schema_.fields
    assert descriptors["AWS::Route53::DelegationSet"].schema_.fields == ()  # every property is read-only


def test_a_write_only_password_is_a_secret_and_nested_hints_are_dotted(descriptors) -> None:
    cluster = descriptors["AWS::RDS::DBCluster"].schema_
    assert "MasterUserPassword" in cluster.opaque_paths and cluster.hints["MasterUserPassword"].write_only
    export = descriptors["AWS::BCMDataExports::Export"].schema_
    assert export.hints["Export.Name"].create_only and export.hints["Export.RefreshCadence"].create_only
    assert not export.hints["Export.Description"].create_only
    assert "Export.ExportArn" not in export.hints or export.hints["Export.ExportArn"].has_provider_default


def test_deep_and_recursive_definitions_stay_small(descriptors) -> None:
    dashboard = descriptors["AWS::QuickSight::Dashboard"].schema_
    assert dashboard.hints["Definition"].update_method == "Atomic"
    assert not any(key.startswith("Definition.") for key in dashboard.hints)
    assert max(len(d.schema_.hints) for d in descriptors.values()) < 5000
    assert descriptors["AWS::WAFv2::WebACL"].schema_.hints["Rules.Statement"].update_method == "Atomic"
    budget = descriptors["AWS::Budgets::Budget"].schema_.hints
    assert {"Budget.FilterExpression.Not", "Budget.FilterExpression.And", "Budget.FilterExpression.Dimensions.Key"} \
        <= budget.keys()
    assert "Budget.FilterExpression.Not.Not" not in budget  # the cycle is walked once


def test_a_forma_over_generated_types_renders_cloudformation_keys(tmp_path: Path) -> None:
    forma = tmp_path / "forma.pkl"
    forma.write_text("""
amends "@svc/forma.pkl"

import "@svc/svc.pkl"
import "@aws/aws.pkl"
import "@aws/ec2/instance.pkl"
import "@aws/apigatewayv2/api.pkl"
import "@aws/bedrock/resourcepolicy.pkl"
import "@aws/ec2/subnet.pkl"

local net = new subnet.Subnet { label = "net"; vpcId = "vpc-1"; cidrBlock = "10.0.0.0/24" }

forma {
  new svc.Stack { label = "s" }
  new svc.Target { label = "aws"; config = new aws.Config { region = "eu-west-1" } }
  net
  new instance.Instance {
    label = "vm"
    imageId = "ami-12345678"
    subnetId = net.res.subnetId
    creditSpecification { cpuCredits = "standard" }
    tags { new { key = "Name"; value = "vm" } }
  }
  new api.Api { label = "api"; name = "a"; protocolType = "HTTP"; awsTarget = "arn:aws:lambda:x" }
  new resourcepolicy.ResourcePolicy {
    label = "policy"
    resourceArn = "arn:aws:bedrock:x"
    policyDocument = new Mapping { ["Version"] = "2012-10-17" }
  }
}
""")
    evaluated = evaluate_forma(forma).to_json()
    by_label = {r["Label"]: r for r in evaluated["Resources"]}
    vm = by_label["vm"]["Properties"]
    assert vm["CreditSpecification"] == {"CPUCredits": "standard"}
    assert vm["Tags"] == [{"Key": "Name", "Value": "vm"}]
    assert vm["SubnetId"]["$res"] is True and vm["SubnetId"]["$property"] == "SubnetId"
    assert by_label["api"]["Properties"]["Target"] == "arn:aws:lambda:x"
    assert by_label["policy"]["Properties"]["PolicyDocument"] == {"Version": "2012-10-17"}
    assert by_label["vm"]["Type"] == "AWS::EC2::Instance"
