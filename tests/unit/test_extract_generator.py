"""``svc extract``'s pure parts: Pkl literals (``svc.forma.pkl_text``) and the generator (``svc.forma.extract``)
from an agent's forma JSON and a hand-made catalog. Real Pkl evaluates such output in
``tests/integration/test_extract_roundtrip.py``."""

from __future__ import annotations

from typing import Any

import pytest

from svc.forma import pkl_text
from svc.forma.extract import ExtractOptions, generate
from svc.forma.extract_catalog import Catalog, ClassInfo, Field, Shape
from svc.forma.pkl_text import Expr

# -- literals ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "literal"), [
    ("plain", '"plain"'),
    ('{"a": 1}', '#"{"a": 1}"#'),  # quotes and nothing to escape: a raw literal
    ('say "\\n"', '"say \\"\\\\n\\""'),  # a backslash: escaped, never raw
    ("one line\n", '"one line\\n"'),  # a single line keeps its line break inline
    ("tab\there", '"tab\\there"'),
    ("bell\x07", '"bell\\u{7}"'),
    ("\\(not code)", '"\\\\(not code)"'),
    ("a\r\nb", '"a\\r\\nb"'),  # carriage returns never go into a multi-line literal
])
def test_string_literals(text: str, literal: str) -> None:
    assert pkl_text.string(text) == literal


def test_multi_line_text_is_a_block_indented_under_its_property() -> None:
    assert pkl_text.string('first "x"\n  second """ \\\n', "  ") == (
        '"""\n    first "x"\n      second ""\\" \\\\\n\n    """')


def test_interpolations_are_code_and_text_around_them_is_escaped() -> None:
    assert pkl_text.string(["in ", Expr("dir.res.path"), ' "here"']) == '"in \\(dir.res.path) \\"here\\""'
    assert pkl_text.string(["a\n", Expr("x.res.y"), "\nb"], "") == '"""\n  a\n  \\(x.res.y)\n  b\n  """'


@pytest.mark.parametrize(("name", "expected"), [("path", "path"), ("class", "`class`"), ("local", "`local`"),
                                                ("with-dash", "`with-dash`")])
def test_identifiers(name: str, expected: str) -> None:
    assert pkl_text.identifier(name) == expected


@pytest.mark.parametrize(("label", "name"), [("web-bucket", "webBucket"), ("site/index.html", "siteIndexHtml"),
                                             ("1st", "r1st"), ("---", "resource"), ("class", "class_"),
                                             ("MyVpc", "myVpc")])
def test_local_names_from_labels(label: str, name: str) -> None:
    assert pkl_text.camel_identifier(label, "resource") == name


@pytest.mark.parametrize(("value", "literal"), [(3, "3"), (1.5, "1.5"), (2.0, "2.0"), (1e-7, "1e-07"),
                                                (True, "true"), (float("inf"), "Infinity")])
def test_numbers(value: Any, literal: str) -> None:
    assert pkl_text.number(value) == literal


@pytest.mark.parametrize(("seconds", "literal"), [(86400, "1.d"), (7200, "2.h"), (300, "5.min"), (61, "61.s"),
                                                  (0, "0.s")])
def test_durations(seconds: int, literal: str) -> None:
    assert pkl_text.duration(seconds) == literal


# -- the generator -----------------------------------------------------------------------------------------

def _field(key: str, name: str | None, shape: Shape = Shape(), tracked: bool = True) -> Field:
    return Field(key, name, tracked, shape)


TAG = ClassInfo("@acme/acme.pkl#Tag", "@acme/acme.pkl", "Tag", (_field("Key", "key"), _field("Value", "value")))
CONFIG = ClassInfo("@acme/acme.pkl#Config", "@acme/acme.pkl", "Config",
                   (_field("Type", None, tracked=False), _field("Region", "region")))
BOX = ClassInfo("@acme/box.pkl#Box", "@acme/box.pkl", "Box", (
    _field("Name", "name"),
    _field("Size", "size", Shape("scalar", scalars=("Int",))),
    _field("Tags", "tags", Shape("listing", element=Shape("object", TAG.id))),
    _field("Zones", "zones", Shape("set", element=Shape())),
    _field("Labels", "labels", Shape("mapping", element=Shape())),
    _field("Secret", "secret"),
    _field("Password", "password"),
    _field("Target", "target"),  # a property named like a Resource member: written by its Pkl name
    _field("Peer", "peer"),
    _field("BoxId", "boxId", tracked=False),
))
# `local` is a keyword: the module's alias must differ; `box` clashes with nothing.
LOCAL_MODULE = ClassInfo("@acme/local.pkl#Thing", "@acme/local.pkl", "Thing", (_field("Text", "text"),))
CATALOG = Catalog(resources={"ACME::Store::Box": BOX.id, "ACME::Store::Thing": LOCAL_MODULE.id},
                  configs={"ACME": CONFIG.id},
                  classes={c.id: c for c in (TAG, CONFIG, BOX, LOCAL_MODULE)})
HINTS = {"Name": {"CreateOnly": True, "Required": True}, "Secret": {"Opaque": True},
         "Password": {"WriteOnly": True, "Opaque": True}}


def box(label: str, properties: dict[str, Any], stack: str = "prod", **extra: Any) -> dict[str, Any]:
    return {"Label": label, "Type": "ACME::Store::Box", "Stack": stack, "Target": "eu",
            "Schema": {"Identifier": "$.Name", "Hints": HINTS, **extra.pop("schema", {})},
            "Properties": properties, "Managed": True, **extra}


def forma(*resources: dict[str, Any], **sections: Any) -> dict[str, Any]:
    return {"Description": {}, "Resources": list(resources),
            "Stacks": sections.get("Stacks", [{"Label": "prod", "CreatedAt": "2026-01-01T00:00:00Z"}]),
            "Targets": sections.get("Targets", [{"Label": "eu", "Namespace": "ACME", "Discoverable": True,
                                                 "Config": {"Type": "ACME", "Region": "eu-west-1"}}]),
            **({"Policies": sections["Policies"]} if "Policies" in sections else {})}


def ref(label: str, prop: str, stack: str = "prod", **extra: Any) -> dict[str, Any]:
    return {"$res": True, "$label": label, "$type": "ACME::Store::Box", "$stack": stack, "$property": prop,
            "$visibility": "Clear", "$value": "x", **extra}


HASH = "a" * 64


def test_a_forma_amends_svc_and_imports_what_it_uses() -> None:
    text = generate(forma(box("web-box", {"Name": "web", "Tags": [{"Key": "k", "Value": "v"}]})), CATALOG,
                    ExtractOptions(query="stack:prod")).text
    assert text.startswith("// Extracted by `svc extract --query 'stack:prod'`: 1 resource(s)")
    assert 'amends "@svc/forma.pkl"' in text
    assert 'import "@svc/svc.pkl"\nimport "@acme/acme.pkl"\nimport "@acme/box.pkl"\n' in text
    assert "@acme/local.pkl" not in text  # not used
    assert 'new svc.Target { label = "eu"; config = new acme.Config { region = "eu-west-1" } }' in text
    assert "forma {\n  new svc.Stack { label = \"prod\" }\n" in text
    assert "  webBox\n}" in text
    assert ('local webBox = new box.Box {\n  label = "web-box"\n  name = "web"\n'
            '  tags = new { new acme.Tag { key = "k"; value = "v" } }\n}\n') in text  # too long for one line


def test_the_local_module_is_imported_under_another_name() -> None:
    thing = {"Label": "t", "Type": "ACME::Store::Thing", "Stack": "prod", "Target": "eu",
             "Schema": {"Identifier": "$.Text"}, "Properties": {"Text": "hi"}}
    text = generate(forma(thing), CATALOG).text
    assert 'import "@acme/local.pkl" as lcl' in text and "new lcl.Thing" in text


def test_references_are_pkl_expressions_when_the_producer_is_extracted_too() -> None:
    text = generate(forma(
        box("a", {"Name": "a"}),
        box("b", {"Name": "b", "Peer": ref("a", "BoxId"), "Target": ref("a", "Tags.0.Key", **{"$visibility": "Opaque"}),
                  "Labels": {"self": {"$embed": True, "$parts": ["id ", ref("a", "BoxId"), " ok"]}}}),
        box("c", {"Name": "c", "Peer": ref("gone", "BoxId", stack="other")}),
        box("d", {"Name": "d", "Peer": {"$res": True, "$ksuid": "2" * 27, "$property": "BoxId", "$value": "old"}}),
    ), CATALOG).text
    assert "peer = a.res.boxId" in text
    assert 'target = a.res.tags.at(0).at("Key").opaque' in text
    assert 'labels = new { ["self"] = "id \\(a.res.boxId) ok" }' in text
    assert ('peer = new svc.Resolvable { label = "gone"; type = "ACME::Store::Box"; stack = "other"; '
            'property = "BoxId" }') in text
    assert 'peer = "old"' in text  # its producer is gone: the last value is all there is


def test_a_reference_to_an_escaped_mapping_key_is_written_back_as_that_key() -> None:
    key = 'k.e:y/ "q\\'  # the path `.at()` built for it escapes the dot and the backslash
    text = generate(forma(box("a", {"Name": "a", "Labels": {key: "x"}}),
                          box("b", {"Name": "b", "Peer": ref("a", "Labels.k\\.e:y/ \"q\\\\")})), CATALOG).text
    assert f"peer = a.res.labels.at({pkl_text.string(key)})" in text


def test_secrets_known_by_hash_are_marked_and_write_only_fields_left_out() -> None:
    extraction = generate(forma(box("b", {
        "Name": "b",
        "Secret": {"$value": HASH, "$visibility": "Opaque", "$hashed": True, "$strategy": "SetOnce"},
        "Password": {"$value": HASH, "$visibility": "Opaque", "$hashed": True},
    })), CATALOG)
    text = extraction.text
    assert f'  secret = svc.hashedSecret("{HASH}").setOnce\n' in text
    assert "// A secret: svc keeps only its hash" in text
    assert "// password: write-only (never read back), so not extracted" in text
    assert text.count(HASH) == 1
    assert extraction.hashed_secrets == ["b.secret"] and extraction.write_only == ["b.password"]


def test_a_required_write_only_field_is_written_since_the_forma_needs_it() -> None:
    hints = {**HINTS, "Password": {"WriteOnly": True, "Required": True}}
    text = generate(forma(box("b", {"Name": "b", "Password": "pw"}, schema={"Hints": hints})), CATALOG).text
    assert 'password = "pw"' in text


def test_values_collections_and_coercion() -> None:
    text = generate(forma(box("b", {
        "Name": {"$value": "n", "$visibility": "Clear", "$strategy": "SetOnce"},
        "Size": "100",  # rendered with toString by the plugin; the property takes an Int
        "Zones": ["a", "b"],
        "Secret": {"$value": "plain", "$visibility": "Opaque", "$strategy": "Update"},
        "Unknown": 1,
    })), CATALOG).text
    assert 'name = svc.value("n").setOnce' in text
    assert "size = 100\n" in text
    assert 'zones = Set("a", "b")' in text
    assert 'secret = svc.value("plain").opaque' in text
    assert "// Unknown: not a property of Box in the installed schema, left out" in text


def test_a_union_of_a_class_and_a_mapping_takes_a_value_by_its_keys() -> None:
    """``RecipeParameters | Mapping<String, String>``: keys the class declares make an object of it, others the
    mapping, rather than being left out."""
    union = Shape("object", TAG.id, alternatives=(Shape("mapping", element=Shape()),))
    catalog = Catalog(resources=CATALOG.resources, configs=CATALOG.configs, classes={**CATALOG.classes, BOX.id: ClassInfo(
        BOX.id, BOX.module, BOX.name, (*BOX.fields, _field("Parameters", "parameters", union)))})
    text = generate(forma(box("b", {"Name": "n", "Parameters": {"Key": "k", "Value": "v"}}),
                          box("c", {"Name": "m", "Parameters": {"limit": "10"}})), catalog).text
    assert 'parameters = new acme.Tag { key = "k"; value = "v" }' in text
    assert 'parameters = new Mapping { ["limit"] = "10" }' in text  # `new` alone: Pkl cannot tell which
    assert "not a property" not in text


def test_labels_that_make_the_same_name_get_distinct_locals() -> None:
    text = generate(forma(box("web", {"Name": "1"}), box("web", {"Name": "2"}, stack="other"),
                          box("svc", {"Name": "3"}), box("forma", {"Name": "4"}),
                          Stacks=[{"Label": "prod"}, {"Label": "other"}]), CATALOG).text
    for name in ("local web = ", "local web2 = ", "local svc2 = ", "local forma2 = "):
        assert name in text
    assert 'stack = "other"' in text  # several stacks: each resource names its own


def test_types_that_are_not_extractable_are_left_out_and_listed() -> None:
    extraction = generate(forma(box("in", {"Name": "in"}),
                                box("out", {"Name": "out"}, schema={"Extractable": False})), CATALOG)
    assert [r["Label"] for r in extraction.resources] == ["in"]
    assert extraction.excluded == [{"Label": "out", "Type": "ACME::Store::Box", "Stack": "prod"}]
    assert '//   ACME::Store::Box "out" (stack prod)' in extraction.text
    assert "local out" not in extraction.text


def test_discovered_resources_go_to_the_chosen_stack() -> None:
    extraction = generate(forma(box("d", {"Name": "d", "Peer": ref("e", "BoxId", stack="$unmanaged")},
                                    stack="$unmanaged", Managed=False),
                                box("e", {"Name": "e"}, stack="$unmanaged"), Stacks=[]),
                          CATALOG, ExtractOptions(unmanaged_stack="found"))
    assert 'new svc.Stack { label = "found" }' in extraction.text
    assert "peer = e.res.boxId" in extraction.text
    assert "$unmanaged" not in extraction.text.split("amends", 1)[1]
    assert {r["Stack"] for r in extraction.resources} == {"found"}


def test_stacks_policies_and_targets() -> None:
    stacks = [{"Label": "prod", "Description": "Production", "Policies": [
        {"Type": "ttl", "Label": "short", "TTLSeconds": 7200, "OnDependents": "abort"},
        {"Type": "auto-reconcile", "IntervalSeconds": 300},
        {"$ref": "policy://shared-ttl"}, {"$ref": "policy://unknown"}]}]
    policies = [{"Type": "ttl", "Label": "shared-ttl", "ExpiresAt": "2030-01-01T00:00:00Z", "OnDependents": "cascade"}]
    targets = [{"Label": "eu", "Namespace": "ACME", "Config": {"Type": "ACME", "Region": "eu"}, "Discoverable": False,
                "Reaping": {"Kind": "after", "MaxUnreachableSeconds": 86400}},
               {"Label": "raw", "Namespace": "OTHER", "Config": {"Type": "OTHER", "Url": "u"}, "Discoverable": True}]
    extraction = generate(forma(box("a", {"Name": "a"}), {**box("b", {"Name": "b"}), "Target": "raw"},
                                {**box("c", {"Name": "c"}), "Target": "gone"},
                                Stacks=stacks, Policies=policies, Targets=targets), CATALOG)
    text = extraction.text
    assert 'description = "Production"' in text
    assert '      new svc.TTLPolicy { label = "short"; ttl = 2.h }' in text
    assert "      new svc.AutoReconcilePolicy { interval = 5.min }" in text
    assert "      sharedTtlPolicy.res\n" in text
    assert '      new svc.PolicyResolvable { label = "unknown" }' in text
    assert ('local sharedTtlPolicy = new svc.TTLPolicy {\n  label = "shared-ttl"\n'
            '  expiresAt = "2030-01-01T00:00:00Z"\n  onDependents = "cascade"\n}') in text
    assert "  sharedTtlPolicy\n" in text  # declared in the forma, once
    assert "discoverable = false" in text and "reap = new svc.ReapAfter { maxUnreachable = 1.d }" in text
    assert 'namespace = "OTHER"' in text and 'config = new Dynamic { ["Type"] = "OTHER"; ["Url"] = "u" }' in text
    assert 'new svc.TargetResolvable { label = "gone" }' in text
    assert 'target = "raw"' in text


def test_values_changed_outside_svc_are_written_as_they_are_now() -> None:
    """After a synchronization, a templated or referenced field whose value was changed by hand holds that
    value: the extract writes it, not the template or reference that no longer produce it."""
    text = generate(forma(
        box("a", {"Name": "a"}, ReadOnlyProperties={"BoxId": "box-1"}),
        box("same", {"Name": "s", "Peer": ref("a", "BoxId", **{"$value": "box-1"})}),
        box("edited", {"Name": "e", "Peer": ref("a", "BoxId", **{"$value": "typed by hand"}),
                       "Target": {"$embed": True, "$parts": ["id ", ref("a", "BoxId", **{"$value": "box-1"})],
                                  "$value": "edited\nby hand\n"}}),
        box("stale", {"Name": "t", "Target": {"$embed": True, "$parts": [
            "id ", ref("a", "BoxId", **{"$value": "box-0"}), " and ", ref("a", "Name", **{"$value": "a"})]}}),
    ), CATALOG).text
    assert "local same = new box.Box { label = \"same\"; name = \"s\"; peer = a.res.boxId }" in text
    assert 'peer = "typed by hand"' in text
    assert 'target = """\n    edited\n    by hand\n\n    """' in text
    assert 'target = "id box-0 and \\(a.res.name)"' in text


def test_the_modules_a_file_may_import_are_those_its_classes_reach() -> None:
    assert CATALOG.modules_reachable([BOX.id]) == ["@acme/acme.pkl", "@acme/box.pkl"]  # its tags are acme.Tag
    assert CATALOG.modules_reachable([LOCAL_MODULE.id, "@acme/gone.pkl#Gone"]) == ["@acme/local.pkl"]
    node = ClassInfo("@acme/tree.pkl#Node", "@acme/tree.pkl", "Node",
                     (_field("Children", "children", Shape("listing", element=Shape("object", "@acme/tree.pkl#Node"))),
                      _field("Tag", "tag", Shape("mapping", element=Shape("object", TAG.id)))))
    cyclic = Catalog(classes={c.id: c for c in (node, TAG)})
    assert cyclic.modules_reachable([node.id]) == ["@acme/acme.pkl", "@acme/tree.pkl"]
