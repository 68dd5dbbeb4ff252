"""The FIXTURE plugin's schema package (every annotation, field and value type) through real Pkl:
a forma over it, schema extraction from the package alone, its manifest, and svc's own package."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest

from support.packages_eval import evaluate_with_packages
from svc import __version__
from svc.forma import evaluate_forma
from svc.pkl.packages import svc_package
from svc.plugins import installed_plugins
from svc.schema.extract import extract_descriptors, read_cache, write_cache

FORMAS = Path(__file__).parent.parent / "fixtures" / "formas"
EXPECTED = json.loads((FORMAS / "everything.json").read_text())


@pytest.fixture
def everything(fixture_plugin) -> dict:
    return evaluate_forma(FORMAS / "everything.pkl").to_json()


def test_the_fixture_plugin_is_found_through_its_entry_point(fixture_plugin) -> None:
    plugin = fixture_only()
    assert (plugin.namespace, plugin.version, plugin.dependency_name) == ("FIXTURE", "1.0.0", "fixture")
    assert plugin.has_schema and plugin.config.is_file()


def test_everything_matches_the_expected_forma_field_by_field(everything: dict) -> None:
    assert everything.keys() == EXPECTED.keys()
    for section in ("Description", "Properties", "Stacks", "Targets", "Policies"):
        assert everything[section] == EXPECTED[section], section
    assert [r["Label"] for r in everything["Resources"]] == [r["Label"] for r in EXPECTED["Resources"]]
    for got, want in zip(everything["Resources"], EXPECTED["Resources"], strict=True):
        assert got.keys() == want.keys(), got["Label"]
        for key in got:
            if key not in ("Schema", "Properties"):
                assert got[key] == want[key], (got["Label"], key)
        for key in ("Schema", "Properties"):
            assert got[key].keys() == want[key].keys(), (got["Label"], key)
            for field in want[key]:
                assert got[key][field] == want[key][field], (got["Label"], key, field)


def resource(forma: dict, label: str) -> dict:
    return next(r for r in forma["Resources"] if r["Label"] == label)


def test_dotted_sub_resource_keys_and_output_key_casing(everything: dict) -> None:
    bucket = resource(everything, "data")
    hints = bucket["Schema"]["Hints"]
    # The bucket's hint keeps names; its Lifecycle sub-resource capitalizes them; Transition does not.
    assert {"lifecycle", "lifecycle.ExpireDays", "lifecycle.Transition", "lifecycle.Transition.storageClass",
            "rules.id", "rules.prefix", "root.name", "root.children"} <= hints.keys()
    assert "root.children.name" not in hints  # a self-referencing sub-resource stops at the cycle
    assert bucket["Properties"]["lifecycle"] == {"ExpireDays": 30, "Transition": {"storageClass": "COLD", "days": 30}}
    vpc = resource(everything, "net")
    assert vpc["Schema"]["Fields"] == ["CidrBlock", "EnableDnsSupport", "Tags", "LegacyTags"]
    assert "VpcId" not in vpc["Schema"]["Hints"]  # not annotated: not tracked


def fixture_only():
    """The FIXTURE plugin; other plugins (FAKE, LOCAL …) may be installed beside it."""
    (plugin,) = [plugin for plugin in installed_plugins() if plugin.namespace == "FIXTURE"]
    return plugin


def test_required_and_opaque_derivations(everything: dict) -> None:
    hints = resource(everything, "data")["Schema"]["Hints"]
    assert (hints["bucketName"]["Required"], hints["policy"]["Required"]) == (True, False)
    assert [key for key, hint in hints.items() if hint["Opaque"]] == ["password", "apiKey", "token"]
    vm = resource(everything, "vm")["Schema"]["Hints"]
    assert vm["UserData"]["Required"] and vm["Tags"]["Required"] and vm["AdminPassword"]["Opaque"]


def test_envelopes_for_references_values_and_templates(everything: dict) -> None:
    subnet = resource(everything, "sub")["Properties"]
    assert subnet["VpcId"] == {"$res": True, "$label": "net", "$type": "FIXTURE::Network::Vpc",
                               "$property": "VpcId", "$visibility": "Clear", "$stack": "dev-stack"}
    bucket = resource(everything, "data")["Properties"]
    assert bucket["password"] == {"$value": "hunter2", "$visibility": "Opaque", "$strategy": "SetOnce"}
    assert bucket["greeting"]["$embed"] is True
    assert re.fullmatch(r"network \x1e[A-Za-z0-9+/=]+\x1f in \x1e[A-Za-z0-9+/=]+\x1f", bucket["greeting"]["$template"])
    settings = resource(everything, "vm")["Properties"]["Settings"]
    assert settings["vpc"]["$property"] == "Tags.0.Key"  # .at() into a listing, then a mapping


def test_schema_extraction_from_the_package_alone_matches_the_forma(fixture_plugin, tmp_path: Path) -> None:
    plugin = fixture_only()
    descriptors = extract_descriptors(plugin, cache_dir=tmp_path)
    assert sorted(descriptors) == ["FIXTURE::Compute::Instance", "FIXTURE::Network::Route", "FIXTURE::Network::Subnet",
                                   "FIXTURE::Network::Vpc", "FIXTURE::Storage::Bucket"]
    for r in EXPECTED["Resources"]:
        assert descriptors[r["Type"]].schema_.to_json() == r["Schema"], r["Type"]
    assert descriptors["FIXTURE::Compute::Instance"].doc_comment == "A virtual machine."
    assert descriptors["FIXTURE::Network::Vpc"].doc_comment == "A virtual network."  # the class's own doc


def test_schema_extraction_is_cached_by_plugin_version(fixture_plugin, tmp_path: Path) -> None:
    plugin = fixture_only()
    extract_descriptors(plugin, cache_dir=tmp_path)
    (cache,) = tmp_path.glob("*.json")  # beside the lock file that keeps two processes from extracting at once
    assert cache.name.startswith(f"FIXTURE-1.0.0-svc-{__version__}-")  # then the schema files' fingerprint
    texts = read_cache(cache)
    vpc = json.loads(texts["FIXTURE::Network::Vpc"])
    vpc["Schema"]["Identifier"] = "$.FromTheCache"
    write_cache(cache, {**texts, "FIXTURE::Network::Vpc": json.dumps(vpc)})
    assert extract_descriptors(plugin, cache_dir=tmp_path)["FIXTURE::Network::Vpc"].schema_.identifier == "$.FromTheCache"
    newer = type(plugin)(plugin.namespace, "1.0.1", plugin.package_dir)
    assert extract_descriptors(newer, cache_dir=tmp_path)["FIXTURE::Network::Vpc"].schema_.identifier == "$.VpcId"


def test_a_schema_file_edited_without_a_version_bump_is_extracted_again(fixture_plugin, tmp_path: Path) -> None:
    installed = fixture_only()
    plugin = type(installed)(installed.namespace, installed.version, tmp_path / "package")
    shutil.copytree(installed.package_dir, plugin.package_dir)
    cache_dir = tmp_path / "cache"
    assert extract_descriptors(plugin, cache_dir=cache_dir)["FIXTURE::Network::Vpc"].schema_.identifier == "$.VpcId"
    vpc = plugin.schema_dir / "network" / "vpc.pkl"
    vpc.write_text(vpc.read_text().replace('identifier = "$.VpcId"', 'identifier = "$.NetworkId"'))
    assert extract_descriptors(plugin, cache_dir=cache_dir)["FIXTURE::Network::Vpc"].schema_.identifier == \
        "$.NetworkId"
    assert len(list(cache_dir.glob("*.json"))) == 2  # one per state of the package


@pytest.mark.parametrize("damage", ["truncated", "edited", "old layout", "empty"])
def test_a_damaged_schema_cache_is_extracted_again_with_a_warning(fixture_plugin, tmp_path: Path, damage: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    plugin = fixture_only()
    expected = {name: d.schema_ for name, d in extract_descriptors(plugin, cache_dir=tmp_path).items()}
    (cache,) = tmp_path.glob("*.json")
    whole = cache.read_bytes()
    cache.write_bytes({"truncated": whole[: len(whole) // 2],
                       "edited": whole.replace(b"VpcId", b"VpcIx"),
                       "old layout": json.dumps([json.loads(text) for text in read_cache(cache).values()]).encode(),
                       "empty": b""}[damage])
    with caplog.at_level(logging.WARNING, logger="svc.schema.extract"):
        again = extract_descriptors(plugin, cache_dir=tmp_path)
    assert {name: d.schema_ for name, d in again.items()} == expected
    [warning] = [record.getMessage() for record in caplog.records if record.name == "svc.schema.extract"]
    assert f"the schema cache file {cache} is damaged" in warning
    assert read_cache(cache).keys() == expected.keys()  # written anew, whole


def test_cached_descriptors_are_validated_when_first_read(fixture_plugin, tmp_path: Path) -> None:
    plugin = fixture_only()
    extract_descriptors(plugin, cache_dir=tmp_path)
    descriptors = extract_descriptors(plugin, cache_dir=tmp_path)
    assert len(descriptors) == 5 and "FIXTURE::Network::Vpc" in descriptors and descriptors.made() == 0
    assert descriptors["FIXTURE::Network::Vpc"] is descriptors["FIXTURE::Network::Vpc"]
    assert descriptors.made() == 1


def test_the_plugin_manifest_amends_the_manifest_module(fixture_plugin) -> None:
    plugin = fixture_only()
    manifest = evaluate_with_packages((plugin.package_dir / "manifest.pkl").as_uri())
    assert manifest["namespace"] == "FIXTURE" and manifest["rateLimit"]["maxRequestsPerSecondForNamespace"] == 5
    assert manifest["runtime"] == {"python": ">=3.11", "entrypoint": "svc_fixture_plugin:Plugin"}


def test_svc_package_version_is_svc_version() -> None:
    text = svc_package().project_file.read_text()
    assert re.search(r'version = "([^"]+)"', text)[1] == __version__
