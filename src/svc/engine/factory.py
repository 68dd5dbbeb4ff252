"""The composition root: ``build_engine`` makes the engine for an agent config (its enabled plugins, limits,
retries, datastore) and its background jobs."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from svc import __version__
from svc.config.model import AgentConfig, ResourcePluginConfig, RetryConfig
from svc.datastore.interface import Datastore
from svc.engine.background import PeriodicJob
from svc.engine.discovery import discovery_job
from svc.engine.discovery_settings import load_settings
from svc.engine.engine import Engine, EngineSettings
from svc.engine.expiry import StackExpirer
from svc.engine.gateway import PluginGateway, PluginLimits
from svc.engine.installed_by_agent import FILE_NAME as INSTALLED_BY_AGENT
from svc.engine.installed_by_agent import InstalledByAgent
from svc.engine.operations import RetryPolicy
from svc.engine.planner import Catalog
from svc.engine.plugin_manager import PluginManager
from svc.engine.reaper import TargetReaper
from svc.engine.reconciler import AutoReconciler
from svc.engine.sealing import Sealer
from svc.engine.sync import sync_report
from svc.engine.target_health import ReapSettings
from svc.model.lazy import LazyMapping
from svc.model.schema import Schema
from svc.paths import data_dir
from svc.plugins.host import HostedPlugin
from svc.plugins.installed import InstalledPlugin, installed_plugins
from svc.plugins.manifest import ManifestError, read_manifest
from svc.plugins.runner import InProcessRunner, PluginLoadError, PluginRunner
from svc.schema.extract import extract_descriptors

log = logging.getLogger("svc.engine")
DEFAULT_MAX_IN_FLIGHT = 32
DEFAULT_RATE = 10


def retry_policy(config: RetryConfig, call_timeout: float = 60.0) -> RetryPolicy:
    return RetryPolicy(max_retries=config.max_retries, retry_delay=config.retry_delay.total_seconds(),
                       status_interval=config.status_check_interval.total_seconds(), call_timeout=call_timeout)


def _plugin_entries(config: AgentConfig, remembered: InstalledByAgent) -> list[ResourcePluginConfig]:
    """The enabled plugins: the config's, and those installed through the agent that the config does not name
    (with the default settings of a ``PluginConfig``)."""
    named = {entry.type.upper() for entry in config.resource_plugins}
    entries = [entry for entry in config.resource_plugins if entry.enabled]
    try:
        listed = remembered.namespaces()
    except ValueError as error:
        log.error("%s", error)
        listed = []
    entries += [ResourcePluginConfig(type=namespace, enabled=True, discovery_filters=())
                for namespace in listed if namespace.upper() not in named]
    return entries


def _load(plugin: InstalledPlugin, entry: ResourcePluginConfig,
          in_process: bool) -> tuple[PluginRunner, PluginLimits, LazyMapping[Schema]]:
    """One plugin's runner (not started), its limits and its resource types."""
    settings = entry.settings
    runner: PluginRunner = (InProcessRunner.load(plugin.namespace, settings) if in_process
                            else HostedPlugin(plugin.namespace, plugin.version, settings))
    types = extract_descriptors(plugin).mapped(lambda descriptor: descriptor.schema_)  # each on first use
    rate = DEFAULT_RATE
    if entry.rate_limit is not None:
        rate = entry.rate_limit.max_requests_per_second_for_namespace
    else:
        try:
            rate = read_manifest(plugin).get("rateLimit", {}).get("maxRequestsPerSecondForNamespace", rate)
        except ManifestError as error:
            log.warning("%s; using %d requests per second", error, rate)
    limits = PluginLimits(requests_per_second=float(rate),
                          max_in_flight=int(settings.get("maxInFlight", DEFAULT_MAX_IN_FLIGHT)),
                          retry=retry_policy(entry.retry) if entry.retry is not None else None)
    return runner, limits, types


def build_engine(config: AgentConfig, datastore: Datastore, *, key_file: Path | None = None, agent_id: str = "",
                 agent_version: str = __version__, in_process: bool = False) -> Engine:
    """Loads each enabled plugin of ``config`` (and each installed through the agent), its resource types and
    its limits.

    Each plugin runs in its own process (``HostedPlugin``, started by ``Engine.start``); ``in_process``
    loads them into this process instead (tools and tests that need no isolation).
    Raises ``PluginLoadError`` naming a plugin that the config enables but is not installed.
    """
    key_file = key_file or data_dir() / "engine.key"
    remembered = InstalledByAgent(key_file.parent / INSTALLED_BY_AGENT)
    installed = {plugin.namespace.upper(): plugin for plugin in installed_plugins()}
    configured = {entry.type.upper() for entry in config.resource_plugins}
    runners: dict[str, PluginRunner] = {}
    types: LazyMapping[Schema] = LazyMapping()
    limits: dict[str, PluginLimits] = {}
    for entry in _plugin_entries(config, remembered):
        plugin = installed.get(entry.type.upper())
        if plugin is None:
            if entry.type.upper() not in configured:  # removed behind the agent's back: nothing to serve
                log.warning("plugin %s was installed through the agent but is no longer installed", entry.type)
                continue
            raise PluginLoadError(f"agent.resourcePlugins: plugin {entry.type} is enabled but not installed; "
                                  f"installed: {', '.join(sorted(installed)) or 'none'}")
        runner, limits[plugin.namespace], plugin_types = _load(plugin, entry, in_process)
        runners[plugin.namespace] = runner
        types = types.merged(plugin_types)
    gateway = PluginGateway(runners, retry=retry_policy(config.retry), plugins=limits)
    catalog = Catalog(frozenset(runners), types)
    sealer = Sealer(config.sealing_key.encode()) if config.sealing_key else Sealer.from_file(key_file)
    engine = Engine(datastore, gateway, catalog, sealer,
                    EngineSettings(agent_id=agent_id, agent_version=agent_version))
    engine.plugins = _plugin_manager(config, engine, remembered, in_process)
    sync = config.synchronization
    reaper = config.target_reaper
    health = ReapSettings.derived(sync_interval=sync.interval.total_seconds(),
                                  reaper_interval=reaper.interval.total_seconds(),
                                  default_after=reaper.default_max_unreachable.total_seconds())
    discovery = load_settings(config)  # synchronization evicts unmanaged resources by the discovery filters
    engine.jobs["synchronization"] = PeriodicJob("synchronization",
                                                 lambda: sync_report(datastore, gateway, catalog, discovery, health),
                                                 enabled=sync.enabled, interval=sync.interval.total_seconds(),
                                                 first_delay=2.0)
    engine.jobs["discovery"] = discovery_job(datastore, gateway, catalog, config, discovery, health)
    expirer = config.stack_expirer
    engine.jobs["stack-expirer"] = StackExpirer(engine, enabled=expirer.enabled,
                                                interval=expirer.interval.total_seconds())
    engine.jobs["auto-reconciler"] = AutoReconciler(engine)
    engine.jobs["target-reaper"] = TargetReaper(datastore, health, enabled=reaper.enabled)
    return engine


def _plugin_manager(config: AgentConfig, engine: Engine, remembered: InstalledByAgent,
                    in_process: bool) -> PluginManager:
    """Plugin management for ``engine``: it starts and stops plugins the way ``build_engine`` does."""
    gateway, catalog = engine.gateway, engine.catalog

    async def load(plugin: InstalledPlugin) -> bool:
        entry = next((entry for entry in config.resource_plugins if entry.type.upper() == plugin.namespace.upper()),
                     ResourcePluginConfig(type=plugin.namespace, enabled=True, discovery_filters=()))
        if not entry.enabled:
            return False
        runner, limits, types = await asyncio.to_thread(_load, plugin, entry, in_process)
        await gateway.add(runner, limits)
        catalog.add(plugin.namespace, types)
        return True

    async def unload(namespace: str) -> None:
        catalog.remove(namespace)
        await gateway.remove(namespace)

    return PluginManager(catalog, engine.runs, load, unload, remembered)
