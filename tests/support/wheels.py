"""Real wheels, a local package index and throwaway virtualenvs, all offline (``svc upgrade`` and plugin tests).

Wheels are built with the hatchling of this environment (no isolated build, no index); an index is a PEP 503
directory tree, read by pip as a ``file:`` URL or served on loopback; a throwaway environment sees this one's
dependencies through a ``.pth`` (never svc or its plugins), so pip installs svc and plugins into it alone.
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
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def pip_wheel(project: Path, wheels: Path) -> None:
    """Builds offline with the hatchling of this environment: no isolated build, no index."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--disable-pip-version-check", "-w", str(wheels), str(project)], check=True)


def build_svc(version: str, work: Path, wheels: Path) -> None:
    """A wheel of this tree's svc at ``version``."""
    project = work / f"svc-{version}"
    shutil.copytree(REPO / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    (project / "src" / "svc" / "_version.py").write_text(f'__version__ = "{version}"\n')
    pip_wheel(project, wheels)


def build_plugin(plugin: str, version: str, work: Path, wheels: Path) -> None:
    """A wheel of this tree's plugin ``plugins/<plugin>`` at ``version``."""
    project = work / f"{plugin}-{version}"
    shutil.copytree(REPO / "plugins" / plugin, project, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = project / "pyproject.toml"
    pyproject.write_text(re.sub(r'(?m)^version = ".*"$', f'version = "{version}"', pyproject.read_text()))
    pip_wheel(project, wheels)


def build_package(name: str, version: str, files: dict[str, str], work: Path, wheels: Path, *,
                  entry_points: str = "", description: str = "a test package") -> None:
    """A wheel of a small made-up distribution: ``files`` (path → text) in its one package, named after
    ``name``; ``entry_points`` the body of ``[project.entry-points."svc.plugins"]`` (none: no such table)."""
    package = name.replace("-", "_")
    project = work / f"{name}-{version}"
    for path, text in files.items():
        (project / package / path).parent.mkdir(parents=True, exist_ok=True)
        (project / package / path).write_text(text)
    (project / package).mkdir(parents=True, exist_ok=True)
    (project / package / "__init__.py").touch()
    table = f'[project.entry-points."svc.plugins"]\n{entry_points}\n' if entry_points else ""
    (project / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\ndescription = "{description}"\n{table}'
        f'[tool.hatch.build.targets.wheel]\npackages = ["{package}"]\n')
    pip_wheel(project, wheels)


def simple_index(wheels: Path, root: Path) -> Path:
    """A PEP 503 index of ``wheels``: a root page linking each project, one directory per project whose
    index.html links its files (pip reads that file of a file: index, and a server answers a directory with it)."""
    for wheel in wheels.glob("*.whl"):
        project = root / re.sub(r"[-_.]+", "-", wheel.name.split("-", 1)[0]).lower()
        project.mkdir(parents=True, exist_ok=True)
        shutil.copy(wheel, project / wheel.name)
    projects = sorted(path for path in root.iterdir() if path.is_dir())
    for project in projects:
        links = "".join(f'<a href="{file.name}">{file.name}</a>\n' for file in sorted(project.glob("*.whl")))
        (project / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
    links = "".join(f'<a href="{project.name}/">{project.name}</a>\n' for project in projects)
    (root / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
    return root


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@contextmanager
def served(directory: Path) -> Iterator[str]:
    """``directory`` served over HTTP on loopback while the block runs; yields its URL (no trailing slash)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()


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


@dataclass(frozen=True)
class Environment:
    """A throwaway virtualenv with its own HOME; ``env`` is what its processes run with."""

    venv: Path
    env: dict[str, str]
    home: Path

    @property
    def site_packages(self) -> Path:
        return next(self.venv.glob("lib/python*/site-packages"))

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

    def installed(self, name: str) -> tuple[str, str] | None:
        """(version, summary) of ``name`` as the environment's own Python sees it; None when not installed."""
        probe = ("import importlib.metadata as m, sys\ntry: d = m.distribution(sys.argv[1])\n"
                 "except m.PackageNotFoundError: sys.exit(3)\nprint(d.version); print(d.metadata['Summary'])")
        result = self.run(str(self.venv / "bin" / "python"), "-c", probe, name)
        if result.returncode == 3:
            return None
        assert result.returncode == 0, result.stderr
        version, summary = result.stdout.splitlines()
        return version, summary


def throwaway_environment(work: Path, pip_settings: dict[str, str] | None = None) -> Environment:
    """A new virtualenv under ``work`` that sees this environment's dependencies but no svc and no plugin, with
    HOME and the XDG directories under ``work/home``; ``pip_settings``: its ``PIP_*`` variables (none by default:
    no config file, so the host's settings play no part)."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "svc_test_dependencies.pth").write_text(f"{_dependencies_view(work)}\n")
    home = work / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "SVC_", "VIRTUAL_ENV"))}
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / "data"),
        "SVC_PKL": str(Path(sys.executable).parent / "pkl"),
        "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1",
        **(pip_settings or {}),
    })
    return Environment(venv, env, home)
