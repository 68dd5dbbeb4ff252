"""What ``svc plugin list`` and ``GET /api/v1/plugins`` say about each installed plugin.

The reference's ``Plugin`` shape (camelCase): ``name``, ``type``, ``namespace``, ``summary``, … plus
``resourceTypes`` (added here). A plugin whose manifest or schema does not evaluate is still listed, with
``loadStatus: "invalid"`` and the reason, so one broken plugin never hides the others.
"""

from __future__ import annotations

import functools
from typing import Any

from svc.plugins.installed import InstalledPlugin, installed_plugins
from svc.plugins.manifest import ManifestError, read_manifest

Json = dict[str, Any]


@functools.lru_cache(maxsize=64)
def _describe(plugin: InstalledPlugin) -> tuple[tuple[str, Any], ...]:
    # Pkl evaluation is the slow part; an installed version's manifest and schema do not change.
    from svc.schema.extract import SchemaExtractionError, extract_descriptors

    info: Json = {"name": plugin.namespace.lower(), "type": "resource", "namespace": plugin.namespace,
                  "installedVersion": plugin.version, "localPath": str(plugin.package_dir)}
    try:
        manifest = read_manifest(plugin)
    except ManifestError as error:
        info.update(loadStatus="invalid", error=str(error).splitlines()[0])
        manifest = {}
    for key in ("name", "category", "summary", "description", "license"):
        if manifest.get(key):
            info[key] = manifest[key]
    if plugin.has_schema:
        try:
            info["resourceTypes"] = sorted(extract_descriptors(plugin))
        except SchemaExtractionError as error:
            info.update(loadStatus="invalid", error=str(error).splitlines()[0])
    else:
        info["resourceTypes"] = []
    return tuple(info.items())


def describe(plugin: InstalledPlugin) -> Json:
    return dict(_describe(plugin))


def installed_listing(name: str | None = None) -> list[Json]:
    """Every installed plugin, by namespace. With ``name``, only the plugin of that namespace (any case) when one
    has it, else every plugin, for the caller to match their manifests' names: describing a plugin extracts its
    schema until that is cached, which for the full AWS package takes seconds (15 on a loaded machine)."""
    plugins = installed_plugins()
    if name is not None:
        plugins = [plugin for plugin in plugins if plugin.namespace.lower() == name.lower()] or plugins
    return [describe(plugin) for plugin in plugins]
