"""The descriptors kept from one forma evaluation to the next: which classes, watching which files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from svc.forma.descriptor_cache import DescriptorCache
from svc.forma.module_files import Package, packages_of

PLUGIN = "projectpackage://pkg.svc.invalid/plugins/box@1.0.0#/"
SVC = "projectpackage://pkg.svc.invalid/svc@0.1.0#/"
SCHEMA = {"Identifier": "$.Id", "Fields": ["Id"], "Hints": {"Id": {"CreateOnly": True}}}


@pytest.fixture
def packages(tmp_path: Path) -> dict[str, Package]:
    """A plugin package whose type module imports the package's shared module and svc's, and svc's package."""
    (tmp_path / "box" / "things").mkdir(parents=True)
    (tmp_path / "box" / "box.pkl").write_text('import "@svc/svc.pkl"\nimport "pkl:json"\n')
    (tmp_path / "box" / "things" / "thing.pkl").write_text('import "@svc/svc.pkl"\nimport "../box.pkl"\n'
                                                           "class Thing extends svc.Resource {}\n")
    (tmp_path / "box" / "unrelated.pkl").write_text("x = 1\n")
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "svc.pkl").write_text('import "pkl:reflect"\n')
    return {"box": Package(PLUGIN, tmp_path / "box"), "svc": Package(SVC, tmp_path / "svc")}


def cache(directory: Path, packages: dict[str, Package]) -> DescriptorCache:
    opened = DescriptorCache.open({}, directory)
    opened.packages = packages
    return opened


def edit(path: Path, text: str) -> None:
    path.write_text(text)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a later time, whatever the clock's grain


def test_a_kept_descriptor_is_offered_to_the_next_evaluation(tmp_path: Path, packages) -> None:
    first = cache(tmp_path / "cache", packages)
    first.keep(f"{PLUGIN}things/thing.pkl#Thing", SCHEMA)
    first.save()
    later = cache(tmp_path / "cache", packages)
    assert later.offered() == [f"{PLUGIN}things/thing.pkl#Thing"]
    assert later.schema(f"{PLUGIN}things/thing.pkl#Thing") == '{"Identifier":"$.Id","Fields":["Id"],"Hints":{"Id":{"CreateOnly":true}}}'


@pytest.mark.parametrize("changed", ["box/things/thing.pkl", "box/box.pkl", "svc/svc.pkl"])
def test_a_change_to_the_module_or_a_module_it_imports_drops_it(tmp_path: Path, packages, changed: str) -> None:
    kept = cache(tmp_path / "cache", packages)
    kept.keep(f"{PLUGIN}things/thing.pkl#Thing", SCHEMA)
    kept.save()
    edit(tmp_path / "box" / "unrelated.pkl", "x = 2\n")
    assert cache(tmp_path / "cache", packages).offered() != []  # a module it does not import changes nothing
    edit(tmp_path / changed, (tmp_path / changed).read_text() + "// edited\n")
    assert cache(tmp_path / "cache", packages).offered() == []


def test_the_same_module_served_from_another_directory_is_another_class(tmp_path: Path, packages) -> None:
    kept = cache(tmp_path / "cache", packages)
    kept.keep(f"{PLUGIN}things/thing.pkl#Thing", SCHEMA)
    kept.save()
    moved = {**packages, "box": Package(PLUGIN, tmp_path / "copy-of-box")}
    assert cache(tmp_path / "cache", moved).offered() == []


@pytest.mark.parametrize(("key", "module_text"), [
    ("file:///home/me/main.pkl#Thing", None),  # the forma's own class
    (f"{PLUGIN}things/thing.pkl#Thing", 'import* "../**.pkl" as all\n'),  # a glob: which files is not known
    (f"{PLUGIN}things/thing.pkl#Thing", 'import "@elsewhere/x.pkl"\n'),  # a package this evaluation lacks
    (f"{PLUGIN}things/thing.pkl#Thing", 'import "https://example.com/x.pkl"\n'),
])
def test_what_cannot_be_watched_is_not_kept(tmp_path: Path, packages, key: str, module_text: str | None) -> None:
    if module_text is not None:
        (tmp_path / "box" / "things" / "thing.pkl").write_text(module_text)
    kept = cache(tmp_path / "cache", packages)
    kept.keep(key, SCHEMA)
    assert not kept.changed and kept.entries == {}


def test_an_unreadable_cache_file_is_none(tmp_path: Path, packages) -> None:
    (tmp_path / "cache").mkdir()
    kept = cache(tmp_path / "cache", packages)
    kept.path.write_text("{not json")
    assert cache(tmp_path / "cache", packages).offered() == []


def test_the_packages_of_an_evaluator_project_and_their_dependencies() -> None:
    project = {"dependencies": {
        "box": {"type": "local", "projectFileUri": "file:///opt/box/PklProject",
                "packageUri": "package://pkg.svc.invalid/plugins/box@1.0.0",
                "dependencies": {"svc": {"type": "local", "projectFileUri": "file:///opt/svc/PklProject",
                                         "packageUri": "package://pkg.svc.invalid/svc@0.1.0", "dependencies": {}}}},
        "remote": {"type": "remote", "uri": "package://example.com/remote@1.0.0"},
    }}
    assert packages_of(project) == {"box": Package(PLUGIN, Path("/opt/box")), "svc": Package(SVC, Path("/opt/svc"))}
