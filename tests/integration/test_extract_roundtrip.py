"""``svc extract``'s generator against real Pkl and the real schema packages: a forma evaluated, turned into
what the agent stores and returns (secrets hashed, templates split into parts), written back as Pkl and
evaluated again gives the same resources, stacks, targets and policies.

The FIXTURE plugin's ``everything.pkl`` covers every part of the svc schema (sub-resources, output keys and
transformations, mappings, dynamic objects, policies, reaping); a LOCAL and FAKE forma covers text that is
hard to write back (line breaks, quotes, interpolation marks, control characters) and references.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from support.extract_view import agent_view
from svc.forma import evaluate_forma
from svc.forma.extract import ExtractOptions, generate, namespaces, resource_types
from svc.forma.extract_catalog import ExtractError, load_catalog

FORMAS = Path(__file__).parent.parent / "fixtures" / "formas"
Json = dict[str, Any]


def _comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if not (k == "$strategy" and v == "Update")}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def resources_of(forma: Json, *, drop_write_only: bool = False) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for resource in agent_view(forma)["Resources"]:
        hints = resource["Schema"].get("Hints") or {}
        properties = {key: value for key, value in resource["Properties"].items()
                      if not (drop_write_only and hints.get(key, {}).get("WriteOnly")
                              and not hints.get(key, {}).get("Required"))}
        out[resource["Label"]] = _comparable({**resource, "Properties": properties})
    return out


def round_trip(source: Path, tmp_path: Path, options: ExtractOptions = ExtractOptions()) -> tuple[Json, Json, Any]:
    original = evaluate_forma(source).to_json()
    view = agent_view(original)
    # As `svc extract` loads it: only what the extracted types and targets need.
    extraction = generate(view, load_catalog(namespaces(view), resource_types(view)), options)
    written = tmp_path / "extracted.pkl"
    written.write_text(extraction.text)
    return original, evaluate_forma(written).to_json(), extraction


def test_the_everything_forma_round_trips(fixture_plugin, tmp_path: Path) -> None:
    original, extracted, extraction = round_trip(FORMAS / "everything.pkl", tmp_path)

    # The instance's type sets extractable = false: left out, and said so at the top of the file.
    assert [(r["Type"], r["Label"]) for r in extraction.excluded] == [("FIXTURE::Compute::Instance", "vm")]
    assert 'FIXTURE::Compute::Instance "vm"' in extraction.text
    want = {label: r for label, r in resources_of(original, drop_write_only=True).items() if label != "vm"}
    got = resources_of(extracted)
    assert got.keys() == want.keys()
    for label in want:
        assert got[label] == want[label], label

    # Secrets are written as their hashes, marked as such, never as values; write-only ones are left out.
    assert sorted(extraction.hashed_secrets) == ["data.apiKey", "data.token", "empty.apiKey"]
    assert extraction.write_only == ["data.password"]
    assert "plain-key" not in extraction.text and "hunter2" not in extraction.text
    assert extraction.text.count("svc.hashedSecret(") == 3

    stacks = {s["Label"]: s for s in extracted["Stacks"]}
    for stack in original["Stacks"]:
        assert stacks[stack["Label"]] == stack
    assert extracted["Policies"] == original["Policies"]
    assert {t["Label"]: t for t in extracted["Targets"]} == {t["Label"]: t for t in original["Targets"]}


LOCAL_AND_FAKE = r'''
amends "@svc/forma.pkl"

import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"
import "@fake/fake.pkl"
import "@fake/net/network.pkl"
import "@fake/net/subnet.pkl"
import "@fake/compute/server.pkl"
import "@fake/storage/bucket.pkl"
import "@fake/test/item.pkl"

local dir = new fs.Directory { label = "etc/app"; path = "etc/app"; mode = "0750" }
local net = new network.Network {
  label = "net"
  stack = "cloud"
  target = "fake"
  cidr = "10.0.0.0/16"
  mtu = 9000
  tags { new fake.Tag { key = "Name"; value = "net" } }
  labels { "a"; "b" }
  settings = #"{"b": 1, "a": [1, 2]}"#
}

forma {
  new svc.Stack { label = "files"; description = "Files\nwith \"quotes\"" }
  new svc.Stack { label = "cloud" }
  new svc.Target { label = "disk"; config = new lcl.Config { root = "/srv/root" } }
  new svc.Target { label = "fake"; config = new fake.Config { path = "/tmp/cloud.db"; note = "n" } }
  dir
  new fs.File {
    label = "config"
    path = "etc/app/app.conf"
    mode = "0640"
    content = """
      # in \(dir.res.path): "quoted", \\(not interpolated), a tab\there, a ""\" run,
      unicode é ✓ and a control \u{1} char
        indented line

      """
  }
  new fs.File { label = "one-line"; path = "etc/one"; content = "single line\n" }
  new fs.File { label = "raw"; path = "etc/raw"; content = #"{"json": true}"# }
  new fs.File { label = "class"; path = "etc/keyword-label"; content = "" }
  new item.Item { stack = "cloud"; target = "fake"; label = "first"; value = "1"; token = "t" }
  net
  new subnet.Subnet { stack = "cloud"; target = "fake"; label = "sub"; networkId = net.res.networkId; cidr = "10.0.1.0/24"; zones { "z1"; "z2" } }
  new server.Server {
    stack = "cloud"
    target = "fake"
    label = "vm"
    subnetId = new svc.Resolvable { label = "elsewhere"; type = "FAKE::Net::Subnet"; stack = "other"; property = "SubnetId" }
    image = "ubuntu"
    adminPassword = svc.value("hunter2").opaque
    rules { new { port = 80 } new { port = 443; protocol = "udp" } }
    placement { zone = "z1" }
    tags { new fake.Tag { key = "k"; value = "v" } }
  }
  new bucket.Bucket {
    stack = "cloud"
    target = "fake"
    label = "data"
    name = "data"
    apiKey = svc.value("s3cret").opaque.setOnce
    version = svc.value("v1").setOnce
    policy = #"{"Version": "1"}"#
    versioning = true
    note = "network \(net.res.networkId) in \(net.res.tags.at(0).at("Value"))"
  }
}
'''


def test_local_and_fake_resources_round_trip(tmp_path: Path) -> None:
    source = tmp_path / "source.pkl"
    source.write_text(textwrap.dedent(LOCAL_AND_FAKE).lstrip())
    for item in evaluate_forma(source).resources:  # the stacks and targets are placed where the test means
        assert item.stack in ("files", "cloud")
    original, extracted, extraction = round_trip(source, tmp_path)

    want = resources_of(original, drop_write_only=True)
    got = resources_of(extracted)
    assert got.keys() == want.keys()
    for label in want:
        assert got[label] == want[label], label
    assert {s["Label"]: s for s in extracted["Stacks"]} == {s["Label"]: s for s in original["Stacks"]}
    assert extracted["Targets"] == original["Targets"]

    text = extraction.text
    assert 'import "@local/local.pkl" as lcl' in text  # `local` is a keyword
    assert "local etcApp = new fs.Directory" in text  # a label that is no identifier
    assert "content = \"single line\\n\"" in text  # one line stays one line
    assert 'new svc.Resolvable { label = "elsewhere"' in text  # outside the extract: named
    assert "note = \"network \\(net.res.networkId) in \\(net.res.tags.at(0).at(\"Value\"))\"" in text
    assert extraction.write_only == ["vm.adminPassword"] and "hunter2" not in text
    assert extraction.hashed_secrets == ["data.apiKey"] and ".setOnce" in text


def test_discovered_resources_go_to_the_stack_named_for_them(tmp_path: Path) -> None:
    source = tmp_path / "source.pkl"
    source.write_text(textwrap.dedent('''
        amends "@svc/forma.pkl"
        import "@svc/svc.pkl"
        import "@fake/fake.pkl"
        import "@fake/test/item.pkl"
        local a = new item.Item { label = "a"; value = "1" }
        forma {
          new svc.Stack { label = "$unmanaged" }
          new svc.Target { label = "fake"; config = new fake.Config { path = "/tmp/cloud.db" } }
          a
          new item.Item { label = "b"; ref = a.res.value }
        }
    ''').lstrip())
    original, extracted, extraction = round_trip(source, tmp_path, ExtractOptions(unmanaged_stack="found"))
    assert [s["Label"] for s in extracted["Stacks"]] == ["found"]
    assert {r["Label"]: r["Stack"] for r in extracted["Resources"]} == {"a": "found", "b": "found"}
    assert extracted["Resources"][1]["Properties"]["Ref"]["$stack"] == "found"
    assert 'stack "found": applying this file adopts them' in extraction.text


def test_the_catalog_reads_only_what_the_extracted_types_need_and_writes_what_whole_packages_would(
        tmp_path: Path) -> None:
    source = tmp_path / "source.pkl"
    source.write_text(textwrap.dedent(LOCAL_AND_FAKE).lstrip())
    view = agent_view(evaluate_forma(source).to_json())
    needed = load_catalog(namespaces(view), resource_types(view))
    whole = load_catalog(namespaces(view))

    assert needed.modules() == ["@fake/compute/server.pkl", "@fake/fake.pkl", "@fake/net/network.pkl",
                                "@fake/net/subnet.pkl", "@fake/storage/bucket.pkl", "@fake/test/item.pkl",
                                "@local/fs.pkl", "@local/local.pkl", "@svc/svc.pkl"]
    assert "@fake/dns/dnsrecord.pkl" in whole.modules()  # a module no extracted type needs
    for class_id, info in needed.classes.items():
        assert whole.classes[class_id] == info, class_id
    # What is written does not depend on what else the catalog holds (names, import aliases).
    assert generate(view, needed).text == generate(view, whole).text


def test_a_local_may_share_its_name_with_a_module_the_file_does_not_import(tmp_path: Path) -> None:
    source = tmp_path / "source.pkl"
    source.write_text(textwrap.dedent('''
        amends "@svc/forma.pkl"
        import "@svc/svc.pkl"
        import "@fake/fake.pkl"
        import "@fake/test/item.pkl"
        forma {
          new svc.Stack { label = "s" }
          new svc.Target { label = "fake"; config = new fake.Config { path = "/tmp/cloud.db" } }
          new item.Item { label = "vault"; value = "1" }
        }
    ''').lstrip())
    view = agent_view(evaluate_forma(source).to_json())
    for catalog in (load_catalog(namespaces(view), resource_types(view)), load_catalog(namespaces(view))):
        assert "@fake/app/vault.pkl" not in generate(view, catalog).text
        assert "local vault = new item.Item" in generate(view, catalog).text  # not vault2, whatever was read


def test_extracting_a_few_aws_types_reads_their_modules_not_the_package() -> None:
    """The AWS package holds ~1,700 modules; describing them all took minutes per `svc extract`."""
    catalog = load_catalog({"AWS"}, {"AWS::S3::Bucket", "AWS::IAM::Role"})
    # The types' modules, the modules they reach (the role's IAM policy documents, the package's tags and its
    # target config), and svc's.
    assert catalog.modules() == ["@aws/aws.pkl", "@aws/iam/iam.pkl", "@aws/iam/role.pkl", "@aws/s3/bucket.pkl",
                                 "@svc/svc.pkl"]
    assert set(catalog.resources) == {"AWS::S3::Bucket", "AWS::IAM::Role"}
    assert catalog.config_class("AWS") is not None
    tags = catalog.resource_class("AWS::S3::Bucket").field("Tags").shape
    assert tags.element is not None and tags.element.class_id == "@aws/aws.pkl#Tag"


def test_a_type_no_module_names_plainly_makes_its_package_read_whole(fixture_plugin) -> None:
    """The text search finds a type's module when a line sets `type = "<type>"`; otherwise the whole package is
    read, so a type declared another way is still found (and an unknown one is said to be unknown)."""
    found = load_catalog({"FIXTURE"}, {"FIXTURE::Network::Vpc"})
    assert "@fixture/storage/bucket.pkl" not in found.modules()
    whole = load_catalog({"FIXTURE"}, {"FIXTURE::No::Such"})
    assert whole.modules() == load_catalog({"FIXTURE"}).modules()
    assert "@fixture/storage/bucket.pkl" in whole.modules()


def test_a_namespace_without_an_installed_plugin_is_refused() -> None:
    with pytest.raises(ExtractError, match="NOPE"):
        load_catalog(["NOPE"])
