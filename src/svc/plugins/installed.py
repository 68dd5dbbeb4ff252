"""Which plugins are installed: the ``svc.plugins`` entry-point group.

A plugin is a Python distribution with an entry point in the group ``svc.plugins``, named after
its namespace, whose module is the plugin's package. The package ships ``Config.pkl`` (its
``PluginConfig``) and ``schema/``, a Pkl package (``schema/PklProject``) with its resource types.
"""

from __future__ import annotations

import functools
import importlib
import importlib.resources
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

# importlib.metadata is imported where the entry points are read: a command that evaluates a forma imports this
# module (Pkl's plugins: reader) and most never read a plugin's module; its import (with email's parser) took
# ~15 ms of a short command's CPU.

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
    """Every plugin registered in the ``svc.plugins`` entry-point group, by namespace. Read again only once a
    directory of the import path changed (installing or removing a distribution changes its directory's
    modification time, as importlib's own lookups assume): reading every distribution's entry points took ~25 ms
    of each command the CLI server (``svc.cli.server``) ran, for the same answer."""
    return list(_installed_plugins(_import_path_state()))


def _import_path_state() -> tuple[tuple[str, int], ...]:
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            continue
    return tuple(state)


@functools.lru_cache(maxsize=1)
def _installed_plugins(path_state: tuple[tuple[str, int], ...]) -> tuple[InstalledPlugin, ...]:
    from importlib.metadata import entry_points

    plugins: dict[str, InstalledPlugin] = {}
    for entry in entry_points(group=PLUGIN_ENTRY_POINT_GROUP):
        plugins.setdefault(entry.name, _plugin(entry))
    return tuple(sorted(plugins.values(), key=lambda plugin: plugin.namespace))


def plugin_distributions() -> dict[str, list[InstalledPlugin]]:
    """The installed distributions that register plugins, by normalized distribution name (``svc-plugin-aws``)."""
    from importlib.metadata import entry_points

    importlib.invalidate_caches()  # pip may have just added or removed one while this process runs
    found: dict[str, list[InstalledPlugin]] = {}
    for entry in entry_points(group=PLUGIN_ENTRY_POINT_GROUP):
        if entry.dist is not None:
            found.setdefault(normalized_name(entry.dist.name), []).append(_plugin(entry))
    return found


def plugins_of(distribution: str) -> list[InstalledPlugin]:
    """The plugins an installed distribution registers (none: it is not a svc plugin, or not installed)."""
    import importlib.metadata

    importlib.invalidate_caches()
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return []
    return [_plugin(entry) for entry in dist.entry_points if entry.group == PLUGIN_ENTRY_POINT_GROUP]


def normalized_name(name: str) -> str:
    """A distribution's name as PEP 503 compares them: ``Svc_Plugin.AWS`` is ``svc-plugin-aws``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _plugin(entry: EntryPoint) -> InstalledPlugin:
    # Plugins are installed as directories (not zips): Pkl reads their files from disk.
    version = entry.dist.version if entry.dist is not None else "0.0.0"
    return InstalledPlugin(entry.name, version, _package_dir(entry.module))


def _package_dir(module: str) -> Path:
    """A plugin package's directory, found without importing the package: importing runs the plugin's code
    (the AWS plugin's imports boto3, ~0.2 s), which every command evaluating a forma would otherwise pay."""
    spec = importlib.util.find_spec(module) if "." not in module else None  # a dotted name imports its parents
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(str(importlib.resources.files(module)))
