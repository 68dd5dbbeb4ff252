"""The Pkl packages svc supplies: ``@svc`` (shipped in this Python package) and each installed
plugin's schema package (``@<namespace in lower case>``), as local dependencies, with no network.

A forma without a ``PklProject`` still imports ``@svc/forma.pkl``: dependency notation needs a
project whose directory contains the importing module, and a resolved ``PklProject.deps.json``
beside the project file. svc declares a project at the file-system root and serves its deps file
itself, through a client reader for ``file:`` that otherwise reads the disk as Pkl would. Nothing
is written next to the user's files.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from svc import __version__
from svc.pkl.readers import PathElement
from svc.plugins import InstalledPlugin, installed_plugins

PACKAGE_HOST = "pkg.svc.invalid"  # never contacted: every package is local
SVC_DEPENDENCY = "svc"
_ROOT_PROJECT = "file:///PklProject"
_ROOT_DEPS = "/PklProject.deps.json"


@dataclass(frozen=True)
class LocalPackage:
    """A Pkl package on disk: a directory with a ``PklProject`` that declares the package."""

    name: str
    directory: Path
    base_uri: str
    version: str

    @property
    def project_file(self) -> Path:
        return self.directory / "PklProject"

    @property
    def uri(self) -> str:
        return f"{self.base_uri}@{self.version}"

    @property
    def module_uri_prefix(self) -> str:
        """How the URIs of this package's modules start when :func:`implicit_environment` serves it."""
        return f"project{self.uri}#/"

    @property
    def canonical_uri(self) -> str:
        """Pkl resolves packages by major version."""
        return f"{self.base_uri}@{self.version.split('.')[0]}"

    def declaration(self, svc: LocalPackage | None = None) -> dict[str, Any]:
        """This package as a local dependency of Pkl's message-passing ``project``.

        Plugin schema packages import ``@svc`` without declaring it (they cannot know where svc is
        installed): the host gives each of them the one svc package it ships, which also keeps a
        single identity for svc's classes and annotations.
        """
        dependencies = {SVC_DEPENDENCY: svc.declaration()} if svc is not None and svc != self else {}
        return {
            "type": "local",
            "projectFileUri": self.project_file.as_uri(),
            "packageUri": self.uri,
            "dependencies": dependencies,
        }


def svc_package() -> LocalPackage:
    directory = Path(str(importlib.resources.files("svc.pkl_assets")))
    return LocalPackage(SVC_DEPENDENCY, directory, f"package://{PACKAGE_HOST}/svc", __version__)


def plugin_package(plugin: InstalledPlugin) -> LocalPackage:
    """A plugin's schema package; its PklProject declares ``package://pkg.svc.invalid/plugins/<name>``."""
    name = plugin.dependency_name
    return LocalPackage(name, plugin.schema_dir, f"package://{PACKAGE_HOST}/plugins/{name}", plugin.version)


def available_packages() -> list[LocalPackage]:
    """``@svc`` and the schema package of every installed plugin that has one."""
    return [svc_package(), *(plugin_package(p) for p in installed_plugins() if p.has_schema)]


class FileReader:
    """Reads ``file:`` modules from disk, and serves one project's deps file (the root project's by default)."""

    scheme = "file"
    is_hierarchical = True
    is_globbable = True
    is_local = True

    def __init__(self, deps_json: str, deps_path: str = _ROOT_DEPS) -> None:
        self._deps_json = deps_json
        self._deps_path = deps_path

    def read(self, uri: str) -> str:
        path = unquote(urlparse(uri).path)
        if path == self._deps_path:
            return self._deps_json
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise FileNotFoundError(f"cannot read {path}: {exc.strerror or exc}") from exc

    def list(self, uri: str) -> list[PathElement]:
        directory = Path(unquote(urlparse(uri).path))
        if not directory.is_dir():
            return []
        return [PathElement(child.name, child.is_dir()) for child in directory.iterdir()]


@dataclass(frozen=True)
class PackageEnvironment:
    """What an evaluation needs so that its modules can import ``@<name>/…``."""

    project: dict[str, Any]
    readers: tuple[Any, ...] = ()


def implicit_environment(packages: list[LocalPackage] | None = None) -> PackageEnvironment:
    """The environment of a module outside any ``PklProject``: every package in ``packages``
    (by default :func:`available_packages`) importable by name."""
    packages = available_packages() if packages is None else packages
    svc = next((p for p in packages if p.name == SVC_DEPENDENCY), None)
    deps = {"schemaVersion": 1, "resolvedDependencies": resolved_dependencies(packages)}
    project = {
        "projectFileUri": _ROOT_PROJECT,
        "dependencies": {p.name: p.declaration(svc) for p in packages},
    }
    return PackageEnvironment(project, (FileReader(json.dumps(deps)),))


def resolved_dependencies(packages: list[LocalPackage]) -> dict[str, Any]:
    """``packages`` as the entries of a ``PklProject.deps.json``."""
    return {p.canonical_uri: {"type": "local", "uri": "project" + p.uri, "path": str(p.directory)} for p in packages}
