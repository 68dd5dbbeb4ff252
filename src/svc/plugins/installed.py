"""Which plugins are installed: the ``svc.plugins`` entry-point group.

A plugin is a Python distribution with an entry point in the group ``svc.plugins``, named after
its namespace, whose module is the plugin's package. The package ships ``Config.pkl`` (its
``PluginConfig``) and ``schema/``, a Pkl package (``schema/PklProject``) with its resource types.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

PLUGIN_ENTRY_POINT_GROUP = "svc.plugins"


@dataclass(frozen=True)
class InstalledPlugin:
    namespace: str
    version: str
    package_dir: Path

    @property
    def dependency_name(self) -> str:
        """The name formas import its schema package by: ``@<namespace in lower case>/…``."""
        return self.namespace.lower()

    @property
    def config(self) -> Path:
        return self.package_dir / "Config.pkl"

    @property
    def schema_dir(self) -> Path:
        return self.package_dir / "schema"

    @property
    def has_schema(self) -> bool:
        return (self.schema_dir / "PklProject").is_file()


def installed_plugins() -> list[InstalledPlugin]:
    """Every plugin registered in the ``svc.plugins`` entry-point group, by namespace."""
    plugins: dict[str, InstalledPlugin] = {}
    for entry in entry_points(group=PLUGIN_ENTRY_POINT_GROUP):
        # Plugins are installed as directories (not zips): Pkl reads their files from disk.
        package_dir = _package_dir(entry.module)
        version = entry.dist.version if entry.dist is not None else "0.0.0"
        plugins.setdefault(entry.name, InstalledPlugin(entry.name, version, package_dir))
    return sorted(plugins.values(), key=lambda plugin: plugin.namespace)


def _package_dir(module: str) -> Path:
    """A plugin package's directory, found without importing the package: importing runs the plugin's code
    (the AWS plugin's imports boto3, ~0.2 s), which every command evaluating a forma would otherwise pay."""
    spec = importlib.util.find_spec(module) if "." not in module else None  # a dotted name imports its parents
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(str(importlib.resources.files(module)))
