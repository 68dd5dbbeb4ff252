"""``GET /stats``: version, agent id and what the datastore holds, counted by the database."""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request

from svc.api import deps
from svc.config.model import AgentConfig, ResourcePluginConfig
from svc.datastore.sql_stats import by_namespace
from svc.model import wire
from svc.model.records import DatastoreCounts

router = APIRouter()


@router.get("/stats", summary="The agent's version, id and counts.", response_model_exclude_none=True)
async def stats(request: Request) -> dict[str, Any]:
    info = request.app.state.info
    leadership = request.app.state.leadership
    service = deps.service(request)
    running = service.plugin_processes()  # installed or updated since the agent started too
    counts: DatastoreCounts = await deps.in_thread(deps.datastore(request).counts)
    managed = by_namespace(counts.managed_by_type)
    resource_types = dict(counts.managed_by_type)
    for resource_type, count in counts.unmanaged_by_type.items():
        resource_types[resource_type] = resource_types.get(resource_type, 0) + count
    view = wire.StatsView(
        Version=info.version, AgentId=info.agent_id, Clients=counts.clients, Commands=dict(counts.commands),
        States=dict(counts.command_states), Stacks=counts.stacks, Resources=managed,
        UnmanagedResources=by_namespace(counts.unmanaged_by_type), Targets=dict(counts.targets_by_namespace),
        ResourceTypes=dict(sorted(resource_types.items())),
        Plugins=plugin_infos(request.app.state.config, {**info.plugin_versions, **_running_versions(running)},
                             managed, running=running, rates=service.plugin_rates()),
        ReapPendingTargets=counts.reap_pending_targets, ReapedTargets=counts.reaped_targets,
        Role=leadership.role, Leader=leader.agent_id if (leader := leadership.leader()) is not None else None,
    )
    return view.to_json()


def node_name(namespace: str) -> str:
    """Where the plugin runs, named as the reference names its plugin nodes: a process of its own on the agent's
    host (``svc.plugins.host``)."""
    return f"svc-plugin-{namespace.lower()}@{socket.gethostname()}"


def _nanoseconds(value: timedelta) -> int:
    return int(value.total_seconds() * 1_000_000_000)


def _running_versions(running: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    return {namespace: str(process["version"]) for namespace, process in running.items() if process.get("version")}


def plugin_infos(config: AgentConfig, versions: Mapping[str, str], managed_by_namespace: dict[str, int],
                 running: Iterable[str] = (), rates: Mapping[str, float] | None = None) -> list[wire.PluginInfo]:
    """The enabled resource plugins of the config, then those the agent runs that the config does not name
    (installed while it runs), with their installed versions (``versions``: upper-case namespace → version),
    managed counts and the rate limits their calls are held to (``rates``, by upper-case namespace; a plugin not
    running: its config's)."""
    configured = [plugin for plugin in config.resource_plugins if plugin.enabled]
    unnamed = sorted({name.upper() for name in running} - {plugin.type.upper() for plugin in config.resource_plugins})
    defaults = [ResourcePluginConfig(type=namespace, enabled=True, discovery_filters=()) for namespace in unnamed]
    return [_plugin_info(plugin, versions, managed_by_namespace, rates or {}) for plugin in [*configured, *defaults]]


def _plugin_info(plugin: ResourcePluginConfig, versions: Mapping[str, str], managed_by_namespace: dict[str, int],
                 rates: Mapping[str, float]) -> wire.PluginInfo:
    namespace = plugin.type.upper()
    configured = plugin.rate_limit.max_requests_per_second_for_namespace if plugin.rate_limit else 0
    retry = plugin.retry
    return wire.PluginInfo(
        Namespace=namespace,
        Version=versions.get(namespace, "not installed"),
        NodeName=node_name(namespace),
        MaxRequestsPerSecond=round(rates[namespace]) if namespace in rates else configured,
        ResourceCount=managed_by_namespace.get(namespace, 0),
        ResourceTypesToDiscover=list(plugin.resource_types_to_discover or ()) or None,
        RetryConfig=wire.RetryConfigView(StatusCheckInterval=_nanoseconds(retry.status_check_interval),
                                         MaxRetries=retry.max_retries,
                                         RetryDelay=_nanoseconds(retry.retry_delay)) if retry else None,
        LabelConfig=_label_config(plugin),
        DiscoveryFilters=[{"ResourceTypes": list(f.resource_types),
                           "Conditions": [{"PropertyPath": c.property_path, "PropertyValue": c.property_value}
                                          for c in f.conditions]}
                          for f in plugin.discovery_filters] or None,
    )


def _label_config(plugin: ResourcePluginConfig) -> dict[str, Any] | None:
    config = plugin.label_config
    if config is None:
        return None
    out = {"DefaultQuery": config.default_query, "ResourceOverrides": config.resource_overrides}
    return {key: value for key, value in out.items() if value is not None}
