"""Each enabled plugin's discovery settings: its manifest's defaults, overridden by the agent config.

* ``discoveryFilters``: the manifest's filters, replaced by the user's ``discoveryFilters`` when that
  listing is not empty (the config cannot tell "unset" from "empty", so an empty listing keeps the
  plugin's defaults);
* ``labelConfig``: the user's, else the manifest's; ``agent.discovery.labelTagKeys`` after both;
* ``resourceTypesToDiscover``: the user's list, else every type whose schema says ``discoverable``.

Every JSONPath is compiled here, so a bad one stops the agent at start with the plugin and the path
named, instead of failing every discovery run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from svc.config.model import AgentConfig, ResourcePluginConfig
from svc.engine.discovery_filters import FilterError, LabelRules, MatchFilter, check_paths
from svc.plugins.installed import installed_plugins
from svc.plugins.manifest import ManifestError, read_manifest
from svc.plugins.runner import PluginLoadError

log = logging.getLogger("svc.engine.discovery")


@dataclass(frozen=True)
class PluginDiscovery:
    namespace: str
    filters: tuple[MatchFilter, ...] = ()
    labels: LabelRules = field(default_factory=LabelRules)
    types: frozenset[str] | None = None  # None: every discoverable type

    def wants(self, resource_type: str) -> bool:
        return self.types is None or resource_type in self.types


def plugin_discovery(namespace: str, entry: ResourcePluginConfig, manifest: Mapping[str, Any],
                     tag_keys: tuple[str, ...]) -> PluginDiscovery:
    """The settings of one plugin from its config entry and its rendered manifest."""
    if entry.discovery_filters:
        filters = tuple(MatchFilter.from_json(f.model_dump(by_alias=True)) for f in entry.discovery_filters)
    else:
        filters = tuple(MatchFilter.from_json(f) for f in manifest.get("discoveryFilters") or ())
    if entry.label_config is not None:
        default_query = entry.label_config.default_query
        overrides = dict(entry.label_config.resource_overrides or {})
    else:
        label_config = manifest.get("labelConfig") or {}
        default_query = label_config.get("defaultQuery")
        overrides = dict(label_config.get("resourceOverrides") or {})
    labels = LabelRules(default_query, overrides, tag_keys)
    try:
        check_paths(filters, labels)
    except FilterError as error:
        raise PluginLoadError(f"plugin {namespace}: discovery: {error}") from None
    types = frozenset(entry.resource_types_to_discover) if entry.resource_types_to_discover else None
    return PluginDiscovery(namespace, filters, labels, types)


def load_settings(config: AgentConfig) -> dict[str, PluginDiscovery]:
    """Settings by namespace (upper case) for every enabled, installed plugin."""
    installed = {plugin.namespace.upper(): plugin for plugin in installed_plugins()}
    settings: dict[str, PluginDiscovery] = {}
    for entry in config.resource_plugins:
        plugin = installed.get(entry.type.upper())
        if not entry.enabled or plugin is None:
            continue
        try:
            manifest = read_manifest(plugin)
        except ManifestError as error:
            log.warning("%s; discovering %s without its default filters and labels", error, plugin.namespace)
            manifest = {}
        settings[plugin.namespace.upper()] = plugin_discovery(plugin.namespace, entry, manifest,
                                                              tuple(config.discovery.label_tag_keys))
    return settings
