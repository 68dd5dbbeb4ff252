"""``svc upgrade --version V``: real wheels, real pip, throwaway virtualenvs, an index on loopback.

svc and the AWS plugin are built at two made-up versions; a decoy project named ``svc`` (and one named like the
plugin) sits where the environment's pip configuration points, as an unrelated same-named project on a public
index would. The upgrade must install ours, from where svc came from or from the index the CLI config names,
and never the decoy. Nothing leaves the machine: every pip source here is a directory or a loopback server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from svc import __version__

REPO = Path(__file__).resolve().parents[2]
OLD, NEW = "97.0.0", "97.0.1"  # versions no index serves
PLUGIN = "svc-plugin-aws"
OURS = "Infrastructure-as-code agent: Pkl formas in, managed cloud resources out."  # svc's Summary


def pip_wheel(project: Path, wheels: Path) -> None:
    """Builds offline with the hatchling of this environment: no isolated build, no index."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--disable-pip-version-check", "-w", str(wheels), str(project)], check=True)


def build_svc(version: str, work: Path, wheels: Path) -> None:
    project = work / f"svc-{version}"
    shutil.copytree(REPO / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    (project / "src" / "svc" / "_version.py").write_text(f'__version__ = "{version}"\n')
    pip_wheel(project, wheels)


def build_plugin(version: str, work: Path, wheels: Path) -> None:
    project = work / f"aws-{version}"
    shutil.copytree(REPO / "plugins" / "aws", project, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = project / "pyproject.toml"
    pyproject.write_text(re.sub(r'(?m)^version = ".*"$', f'version = "{version}"', pyproject.read_text()))
    pip_wheel(project, wheels)


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


def simple_index(wheels: Path, root: Path) -> Path:
    """A PEP 503 index of ``wheels``: one directory per project, whose index.html links its files (pip reads
    that file of a file: index, and a server answers a directory with it)."""
    for wheel in wheels.glob("*.whl"):
        project = root / re.sub(r"[-_.]+", "-", wheel.name.split("-", 1)[0]).lower()
        project.mkdir(parents=True, exist_ok=True)
        shutil.copy(wheel, project / wheel.name)
    for project in root.iterdir():
        links = "".join(f'<a href="{file.name}">{file.name}</a>\n' for file in sorted(project.glob("*.whl")))
        (project / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
    return root


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


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
        build_plugin(version, work, ours)
        for name in ("svc", PLUGIN):
            build_decoy(name, version, work, decoys)
    build_decoy("svc", "99.0.0", work, decoys)
    served = simple_index(ours, work / "served" / "simple")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(served.parent)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Sources(ours, f"http://127.0.0.1:{server.server_address[1]}/simple",
                      simple_index(decoys, work / "decoy-index").as_uri(), decoys)
    finally:
        server.shutdown()
        thread.join()


@dataclass(frozen=True)
class Environment:
    venv: Path
    env: dict[str, str]
    home: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, timeout=300, env=self.env)

    def svc(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.venv / "bin" / "svc"), *args)

    def pip_install(self, *args: str) -> None:
        """How the user installed svc in the first place: from ``args`` alone, not pip's configured sources."""
        env = {key: value for key, value in self.env.items()
               if key not in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS")}
        result = subprocess.run([str(self.venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                                 *args], capture_output=True, text=True, timeout=300, env=env)
        assert result.returncode == 0, result.stderr

    def installed(self, name: str) -> tuple[str, str]:
        """(version, summary) of ``name`` as the environment's own Python sees it."""
        probe = f"import importlib.metadata as m; d = m.distribution({name!r}); print(d.version); print(d.metadata['Summary'])"
        result = self.run(str(self.venv / "bin" / "python"), "-c", probe)
        assert result.returncode == 0, result.stderr
        version, summary = result.stdout.splitlines()
        return version, summary


def _dependencies_view(work: Path) -> Path:
    """svc's dependencies (and pip) without installing them: links to this environment's packages, minus svc, its
    plugins and .pth hooks, so the throwaway environment's own svc is the only one it sees. pip installs into the
    throwaway environment's prefix and never removes what lies outside it, so this one stays untouched."""
    view = work / "dependencies"
    view.mkdir()
    skipped = re.compile(r"(svc|_editable_impl_|__editable__|_virtualenv|__pycache__)|.*\.pth$")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not skipped.match(entry.name):
            (view / entry.name).symlink_to(entry)
    return view


@pytest.fixture
def environment(tmp_path: Path, sources: Sources) -> Environment:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "svc_test_dependencies.pth").write_text(f"{_dependencies_view(tmp_path)}\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "SVC_", "VIRTUAL_ENV"))}
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "SVC_PKL": str(Path(sys.executable).parent / "pkl"),
        # This environment's pip configuration, as a user's might be: an index, an extra index and a link
        # directory that all hold an unrelated project named svc. No config file at all, so the host's settings
        # play no part.
        "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": sources.decoy_index,
        "PIP_EXTRA_INDEX_URL": sources.decoy_index, "PIP_FIND_LINKS": str(sources.decoy_links),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1",
    })
    return Environment(venv, env, home)


def assert_ours(environment: Environment, version: str) -> None:
    assert environment.installed("svc") == (version, OURS)
    plugin_version, plugin_summary = environment.installed(PLUGIN)
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
