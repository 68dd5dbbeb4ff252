"""``svc upgrade --version V``: real wheels, real pip, throwaway virtualenvs, an index on loopback.

svc and the AWS plugin are built at two made-up versions; a decoy project named ``svc`` (and one named like the
plugin) sits where the environment's pip configuration points, as an unrelated same-named project on a public
index would. The upgrade must install ours, from where svc came from or from the index the CLI config names,
and never the decoy. Nothing leaves the machine: every pip source here is a directory or a loopback server.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.wheels import (
    REPO,
    Environment,
    build_plugin,
    build_svc,
    pip_wheel,
    served,
    simple_index,
    throwaway_environment,
)
from svc import __version__

OLD, NEW = "97.0.0", "97.0.1"  # versions no index serves
PLUGIN = "svc-plugin-aws"
OURS = "Infrastructure-as-code agent: Pkl formas in, managed cloud resources out."  # svc's Summary


def build_decoy(name: str, version: str, work: Path, wheels: Path) -> None:
    project = work / f"decoy-{name}-{version}"
    (project / "decoy").mkdir(parents=True)
    (project / "decoy" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\ndescription = "decoy"\n'
        f'[tool.hatch.build.targets.wheel]\npackages = ["decoy"]\n')
    pip_wheel(project, work)
    # Tagged for exactly this Python, which pip prefers to our py3 wheels of the same version: wherever pip
    # sees the decoy next to ours, it takes the decoy.
    stem = f"{name.replace('-', '_')}-{version}"
    [built] = work.glob(f"{stem}-*.whl")
    wheels.mkdir(exist_ok=True)
    built.rename(wheels / f"{stem}-py{sys.version_info.major}{sys.version_info.minor}-none-any.whl")


@dataclass(frozen=True)
class Sources:
    ours: Path  # a directory of our wheels, both versions
    index_url: str  # the same wheels as an index served on loopback
    decoy_index: str  # what pip is configured with here: a decoy svc and plugin, at every version asked for
    decoy_links: Path


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sources]:
    work = tmp_path_factory.mktemp("upgrade")
    ours, decoys = work / "ours", work / "decoys"
    for version in (OLD, NEW):
        build_svc(version, work, ours)
        build_plugin("aws", version, work, ours)
        for name in ("svc", PLUGIN):
            build_decoy(name, version, work, decoys)
    build_decoy("svc", "99.0.0", work, decoys)
    index = simple_index(ours, work / "served" / "simple")
    with served(index.parent) as url:
        yield Sources(ours, f"{url}/simple", simple_index(decoys, work / "decoy-index").as_uri(), decoys)


@pytest.fixture
def environment(tmp_path: Path, sources: Sources) -> Environment:
    # This environment's pip configuration, as a user's might be: an index, an extra index and a link directory
    # that all hold an unrelated project named svc.
    return throwaway_environment(tmp_path, {"PIP_INDEX_URL": sources.decoy_index,
                                            "PIP_EXTRA_INDEX_URL": sources.decoy_index,
                                            "PIP_FIND_LINKS": str(sources.decoy_links)})


def assert_ours(environment: Environment, version: str) -> None:
    assert environment.installed("svc") == (version, OURS)
    plugin_version, plugin_summary = environment.installed(PLUGIN) or (None, None)
    assert plugin_version == version and plugin_summary != "decoy"
    assert environment.svc("--version").stdout.strip() == f"svc version {version}"


def wheel(sources: Sources, name: str, version: str) -> str:
    return str(next(sources.ours.glob(f"{name.replace('-', '_')}-{version}-*.whl")))


@pytest.mark.slow
def test_upgrade_installs_ours_from_where_svc_came_from_never_a_same_named_project(
        environment: Environment, sources: Sources) -> None:
    environment.pip_install("--no-index", wheel(sources, "svc", OLD), wheel(sources, PLUGIN, OLD))
    assert_ours(environment, OLD)

    upgraded = environment.svc("upgrade", "--version", NEW)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"from {sources.ours} (where svc {OLD} was installed from)" in upgraded.stderr
    assert upgraded.stdout.strip() == f"svc {NEW} is installed. Plugins: {PLUGIN} {NEW}."
    assert_ours(environment, NEW)

    # Installed by name from a directory, pip recorded nothing this time: the upgrade remembered its source.
    back = environment.svc("upgrade", "--version", OLD)
    assert back.returncode == 0, back.stderr
    assert f"from {sources.ours} (recorded when svc was last upgraded)" in back.stderr
    assert_ours(environment, OLD)
    # The record is listed in RECORD, so pip took it away with svc 97.0.1: no half-removed .dist-info remains.
    assert sorted(path.name for path in environment.venv.glob("lib/python*/site-packages/svc-*.dist-info")) == [
        f"svc-{OLD}.dist-info"]

    missing = environment.svc("upgrade", "--version", "99.0.0")  # only the decoy has it
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines()[-1] == (
        f"Error: svc==99.0.0 was not found in {sources.ours} (recorded when svc was last upgraded); check the "
        "version, or pass --index-url / --find-links where that release is published")
    assert_ours(environment, OLD)


@pytest.mark.slow
def test_upgrade_from_the_index_the_cli_config_names_and_never_a_guess(
        environment: Environment, sources: Sources) -> None:
    environment.pip_install("--index-url", sources.index_url, f"svc=={OLD}", f"{PLUGIN}=={OLD}")
    assert_ours(environment, OLD)

    # Installed by name, svc cannot know the index: it refuses rather than ask pip's configured one.
    refused = environment.svc("upgrade", "--version", NEW)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].startswith(
        f"Error: svc {OLD} was installed by name from a package index, and pip records no index")
    assert_ours(environment, OLD)

    config = environment.home / ".config" / "svc" / "svc.conf.pkl"
    config.parent.mkdir(parents=True)
    config.write_text(f'amends "svc:/Config.pkl"\ncli {{ upgrade {{ indexUrl = "{sources.index_url}" }} }}\n')
    upgraded = environment.svc("upgrade", "--version", NEW)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"from {sources.index_url} (cli.upgrade in {config})" in upgraded.stderr
    assert_ours(environment, NEW)


@pytest.mark.slow
def test_an_install_from_a_source_tree_is_not_upgraded_behind_the_users_back(environment: Environment, tmp_path: Path) -> None:
    project = tmp_path / "tree"
    shutil.copytree(REPO / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    environment.pip_install("--no-build-isolation", "--no-index", str(project))
    refused = environment.svc("upgrade", "--version", NEW)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].startswith(
        f"Error: svc {__version__} is installed from the source tree {project}; update that tree instead")
