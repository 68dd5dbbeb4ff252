"""Custom Pkl module readers: ``svc:`` for the bundled modules, ``plugins:`` for plugin configs."""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import Protocol
from urllib.parse import urlparse

from svc.plugins.installed import installed_plugins


@dataclass(frozen=True)
class PathElement:
    name: str
    is_directory: bool


class ModuleReader(Protocol):
    """What the Pkl server asks of a client-side module reader."""

    scheme: str
    is_hierarchical: bool
    is_globbable: bool
    is_local: bool

    def read(self, uri: str) -> str: ...

    def list(self, uri: str) -> list[PathElement]: ...


class ResourceReader(Protocol):
    """What the Pkl server asks of a client-side resource reader (``read("<scheme>:…")``)."""

    scheme: str
    is_hierarchical: bool
    is_globbable: bool

    def read(self, uri: str) -> bytes: ...

    def list(self, uri: str) -> list[PathElement]: ...


def _relative_path(uri: str, scheme: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme != scheme:
        raise ValueError(f"{uri} is not a {scheme}: URI")
    return parsed.path.lstrip("/")


class TreeModuleReader:
    """Serves a read-only tree of ``.pkl`` files under one URI scheme."""

    is_hierarchical = True
    is_globbable = True
    is_local = True

    def __init__(self, scheme: str, root: Traversable) -> None:
        self.scheme = scheme
        self._root = root

    def _node(self, uri: str) -> Traversable:
        node = self._root
        for part in _relative_path(uri, self.scheme).split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                raise FileNotFoundError(f"{uri}: '..' is not allowed")
            node = node / part
        return node

    def read(self, uri: str) -> str:
        node = self._node(uri)
        if not node.is_file():
            raise FileNotFoundError(f"module {uri} does not exist")
        return node.read_text(encoding="utf-8")

    def list(self, uri: str) -> list[PathElement]:
        node = self._node(uri)
        if not node.is_dir():
            return []
        return [PathElement(child.name, child.is_dir()) for child in node.iterdir()]


def bundled_modules() -> TreeModuleReader:
    """``svc:/Config.pkl`` and the other modules shipped inside the Python package."""
    return TreeModuleReader("svc", importlib.resources.files("svc.pkl_assets"))


class PluginConfigReader:
    """``plugins:/<Namespace>.pkl``: the ``Config.pkl`` of the installed plugin with that namespace."""

    scheme = "plugins"
    is_hierarchical = True
    is_globbable = False
    is_local = True

    def __init__(self, configs: Mapping[str, Traversable] | None = None) -> None:
        self._given = None if configs is None else dict(configs)

    @functools.cached_property
    def _configs(self) -> dict[str, Traversable]:
        """``configs`` as given, or (None) the installed plugins', looked up when a module is first read: most
        evaluations (the CLI's own config) read no ``plugins:`` module, and the lookup reads every installed
        distribution's entry points."""
        return installed_plugin_configs() if self._given is None else self._given

    def _lookup(self, namespace: str) -> Traversable:
        if namespace in self._configs:
            return self._configs[namespace]
        folded = [name for name in self._configs if name.lower() == namespace.lower()]
        if len(folded) == 1:
            return self._configs[folded[0]]
        installed = ", ".join(sorted(self._configs)) or "none"
        raise FileNotFoundError(f"no installed plugin has namespace {namespace!r} (installed plugins: {installed})")

    def read(self, uri: str) -> str:
        name = _relative_path(uri, self.scheme)
        if "/" in name or not name.endswith(".pkl"):
            raise FileNotFoundError(f"{uri}: plugin config modules are named plugins:/<Namespace>.pkl")
        return self._lookup(name.removesuffix(".pkl")).read_text(encoding="utf-8")

    def list(self, uri: str) -> list[PathElement]:
        return [PathElement(f"{name}.pkl", False) for name in sorted(self._configs)]


def installed_plugin_configs() -> dict[str, Traversable]:
    """Namespace → ``Config.pkl`` of every installed plugin (``svc.plugins.installed``), found without importing
    the plugins: every command that loads the configuration asks."""
    return {plugin.namespace: plugin.config for plugin in installed_plugins()}


def plugin_modules() -> PluginConfigReader:
    """The installed plugins' ``Config.pkl`` modules (found on first read)."""
    return PluginConfigReader()
