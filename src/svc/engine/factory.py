"""The composition root: ``build_engine`` makes the engine for an agent config (its enabled plugins, limits,
retries, datastore) and its background jobs."""

from __future__ import annotations

import logging
from pathlib import Path

from svc import __version__
from svc.config.model import AgentConfig, RetryConfig
from svc.datastore.interface import Datastore
from svc.engine.background import PeriodicJob
from svc.engine.discovery import discovery_job
from svc.engine.discovery_settings import load_settings
from svc.engine.engine import Engine, EngineSettings
from svc.engine.expiry import StackExpirer
from svc.engine.gateway import PluginGateway, PluginLimits
from svc.engine.operations import RetryPolicy
from svc.engine.planner import Catalog
from svc.engine.reconciler import AutoReconciler
from svc.engine.sealing import Sealer
from svc.engine.sync import synchronize
from svc.model.schema import Schema
from svc.paths import data_dir
from svc.plugins.host import HostedPlugin
from svc.plugins.installed import installed_plugins
from svc.plugins.manifest import ManifestError, read_manifest
from svc.plugins.runner import InProcessRunner, PluginLoadError, PluginRunner
from svc.schema.extract import extract_descriptors

log = logging.getLogger("svc.engine")
DEFAULT_MAX_IN_FLIGHT = 32
DEFAULT_RATE = 10


def retry_policy(config: RetryConfig, call_timeout: float = 60.0) -> RetryPolicy:
    return RetryPolicy(max_retries=config.max_retries, retry_delay=config.retry_delay.total_seconds(),
                       status_interval=config.status_check_interval.total_seconds(), call_timeout=call_timeout)


def build_engine(config: AgentConfig, datastore: Datastore, *, key_file: Path | None = None, agent_id: str = "",
                 agent_version: str = __version__, in_process: bool = False) -> Engine:
    """Loads each enabled plugin of ``config``, its resource types and its limits.

    Each plugin runs in its own process (``HostedPlugin``, started by ``Engine.start``); ``in_process``
    loads them into this process instead (tools and tests that need no isolation).
    Raises ``PluginLoadError`` naming a plugin that is enabled but not installed.
    """
    installed = {plugin.namespace.upper(): plugin for plugin in installed_plugins()}
    runners: dict[str, PluginRunner] = {}
    types: dict[str, Schema] = {}
    limits: dict[str, PluginLimits] = {}
    for entry in config.resource_plugins:
        if not entry.enabled:
            continue
        plugin = installed.get(entry.type.upper())
        if plugin is None:
            raise PluginLoadError(f"agent.resourcePlugins: plugin {entry.type} is enabled but not installed; "
                                  f"installed: {', '.join(sorted(installed)) or 'none'}")
        settings = entry.settings
        runners[plugin.namespace] = (InProcessRunner.load(plugin.namespace, settings) if in_process
                                     else HostedPlugin(plugin.namespace, plugin.version, settings))
        types.update({name: d.schema_ for name, d in extract_descriptors(plugin).items()})
        rate = DEFAULT_RATE
        if entry.rate_limit is not None:
            rate = entry.rate_limit.max_requests_per_second_for_namespace
        else:
            try:
                rate = read_manifest(plugin).get("rateLimit", {}).get("maxRequestsPerSecondForNamespace", rate)
            except ManifestError as error:
                log.warning("%s; using %d requests per second", error, rate)
        limits[plugin.namespace] = PluginLimits(
            requests_per_second=float(rate), max_in_flight=int(settings.get("maxInFlight", DEFAULT_MAX_IN_FLIGHT)),
            retry=retry_policy(entry.retry) if entry.retry is not None else None)
    gateway = PluginGateway(runners, retry=retry_policy(config.retry), plugins=limits)
    catalog = Catalog(frozenset(runners), types)
    engine = Engine(datastore, gateway, catalog, Sealer.from_file(key_file or data_dir() / "engine.key"),
                    EngineSettings(agent_id=agent_id, agent_version=agent_version))
    sync = config.synchronization
    discovery = load_settings(config)  # synchronization evicts unmanaged resources by the discovery filters
    engine.jobs["synchronization"] = PeriodicJob("synchronization",
                                                 lambda: synchronize(datastore, gateway, catalog, discovery),
                                                 enabled=sync.enabled, interval=sync.interval.total_seconds(),
                                                 first_delay=2.0)
    engine.jobs["discovery"] = discovery_job(datastore, gateway, catalog, config, discovery)
    expirer = config.stack_expirer
    engine.jobs["stack-expirer"] = StackExpirer(engine, enabled=expirer.enabled,
                                                interval=expirer.interval.total_seconds())
    engine.jobs["auto-reconciler"] = AutoReconciler(engine)
    return engine
