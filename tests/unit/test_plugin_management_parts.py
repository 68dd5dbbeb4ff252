"""The parts of plugin management that need no pip run: the catalog learning and forgetting a namespace, the
plugins remembered across restarts, pip's failures summarised, a source's password kept out of messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from svc.engine.installed_by_agent import InstalledByAgent
from svc.engine.planner import Catalog
from svc.model.schema import Schema
from svc.plugins.package_source import PackageSource, redacted
from svc.plugins.pip_runs import PipResult, outside_requirements


def _schema() -> Schema:
    return Schema.model_validate({"Identifier": "$.Id", "Fields": ["Id"]})


def test_the_catalog_learns_and_forgets_a_namespace_in_any_spelling() -> None:
    catalog = Catalog(frozenset({"FAKE"}), {"FAKE::Test::Item": _schema()})
    before = catalog.types
    catalog.add("LOCAL", {"LOCAL::FS::File": _schema(), "LOCAL::FS::Directory": _schema()})
    assert catalog.namespaces == {"FAKE", "LOCAL"}
    assert sorted(catalog.types) == ["FAKE::Test::Item", "LOCAL::FS::Directory", "LOCAL::FS::File"]
    assert list(before) == ["FAKE::Test::Item"]  # a plan holding the old mapping keeps reading it whole
    catalog.add("LOCAL", {"LOCAL::FS::File": _schema()})  # a new version's types replace the old ones
    assert sorted(catalog.types) == ["FAKE::Test::Item", "LOCAL::FS::File"]
    catalog.remove("local")
    assert catalog.namespaces == {"FAKE"} and list(catalog.types) == ["FAKE::Test::Item"]


def test_plugins_installed_through_the_agent_are_remembered_in_a_file_replaced_whole(tmp_path: Path) -> None:
    remembered = InstalledByAgent(tmp_path / "data" / "plugins-installed.json")
    assert remembered.namespaces() == []
    remembered.add("LOCAL")
    remembered.add("AWS")
    remembered.add("local")  # any spelling is the same plugin
    assert remembered.namespaces() == ["AWS", "LOCAL"]
    assert json.loads(remembered.path.read_text()) == ["AWS", "LOCAL"]
    remembered.remove("Aws")
    assert remembered.namespaces() == ["LOCAL"]
    assert [path.name for path in remembered.path.parent.iterdir()] == ["plugins-installed.json"]
    remembered.path.write_text("{not json")
    with pytest.raises(ValueError, match="is not a JSON list of plugin namespaces"):
        remembered.namespaces()


def test_pips_failure_is_summarised_by_its_error_lines() -> None:
    output = ("Looking in links: /tmp/x\nCollecting svc-plugin-x\n"
              "ERROR: Could not find a version that satisfies the requirement svc-plugin-x (from versions: none)\n"
              "ERROR: No matching distribution found for svc-plugin-x==2.0\n")
    failed = PipResult(1, output)
    assert not failed.ok and failed.missing() == "svc-plugin-x==2.0"
    assert failed.summary() == ("Could not find a version that satisfies the requirement svc-plugin-x (from "
                                "versions: none); No matching distribution found for svc-plugin-x==2.0")
    assert PipResult(1, "Traceback …\nOSError: disk full\n").summary() == "OSError: disk full"
    assert len(PipResult(1, "ERROR: " + "x" * 1000).summary()) == 400


def test_requirements_on_other_distributions_go_to_the_second_pip_run() -> None:
    assert outside_requirements({"svc-plugin-a": ["boto3>=1.34", "svc_plugin_b==1.0"],
                                 "svc-plugin-b": ["boto3>=1.34", "pyyaml"]}) == ["boto3>=1.34", "pyyaml"]


def test_a_sources_password_never_appears_in_a_message() -> None:
    assert redacted("https://user:s3cret@pkgs.example.com:8443/simple") == "https://user:***@pkgs.example.com:8443/simple"
    assert redacted("/srv/wheels") == "/srv/wheels"
    source = PackageSource("https://user:s3cret@pkgs.example.com/simple", ("https://t:tok@files.example.com/",),
                           "named in the request")
    assert "s3cret" not in source.describe() and "tok@" not in source.describe()
    assert source.pip_arguments()[:2] == ["--index-url", "https://user:s3cret@pkgs.example.com/simple"]  # pip needs it
