"""``AWS::ECS::Cluster``: a cluster, its settings, capacity providers, Service Connect defaults and tags.
The native id is the cluster name.

ECS spells its members in camelCase (``clusterName``, ``key``/``value`` tags); CloudFormation's
PascalCase is the wire form here, converted both ways.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from svc.plugins.sdk import ErrorCode, Json, PluginError
from svc_plugin_aws import tags
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.session import Aws

_LIVE = ("ACTIVE", "PROVISIONING", "DEPROVISIONING", "FAILED")  # INACTIVE: deleted, kept visible a while
_DEFAULT_SETTINGS = [{"name": "containerInsights", "value": "disabled"}]
_DESCRIBE_BATCH = 100


def _settings(properties: Json) -> list[dict[str, str]]:
    return [{"name": s["Name"], "value": s["Value"]} for s in properties.get("ClusterSettings") or []]


def _strategy(properties: Json) -> list[dict[str, Any]]:
    return [{"capacityProvider": item["CapacityProvider"], "weight": item.get("Weight") or 0,
             "base": item.get("Base") or 0} for item in properties.get("DefaultCapacityProviderStrategy") or []]


class Cluster(Handler):
    type_name = "AWS::ECS::Cluster"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        ecs = aws.client("ecs")
        name = properties.get("ClusterName") or generated(label, max_length=255, allowed=r"\w-")
        # CreateCluster answers an existing cluster's name with that cluster (and may reconfigure it): refuse.
        if self._describe(aws, name) is not None:
            raise PluginError(ErrorCode.ALREADY_EXISTS, f"the ECS cluster {name} already exists")
        connect = properties.get("ServiceConnectDefaults")
        ecs.create_cluster(**compact({
            "clusterName": name,
            "settings": _settings(properties) or None,
            "capacityProviders": properties.get("CapacityProviders") or None,
            "defaultCapacityProviderStrategy": _strategy(properties) or None,
            "serviceConnectDefaults": {"namespace": connect["Namespace"]} if connect else None,
            "tags": [{"key": k, "value": v} for k, v in sorted(tags.to_map(properties.get("Tags")).items())] or None,
        }))
        return name

    def read(self, aws: Aws, native_id: str) -> Json | None:
        cluster = self._describe(aws, native_id)
        if cluster is None:
            return None
        connect = cluster.get("serviceConnectDefaults") or {}
        return compact({
            "ClusterName": cluster["clusterName"],
            "Arn": cluster["clusterArn"],
            "ClusterSettings": [{"Name": s["name"], "Value": s["value"]} for s in cluster.get("settings") or []]
            or None,
            "CapacityProviders": sorted(cluster.get("capacityProviders") or []) or None,
            # ECS leaves out a weight or base of 0, its default; the forma renders both.
            "DefaultCapacityProviderStrategy": [{
                "CapacityProvider": item["capacityProvider"], "Weight": item.get("weight", 0),
                "Base": item.get("base", 0),
            } for item in cluster.get("defaultCapacityProviderStrategy") or []] or None,
            "ServiceConnectDefaults": {"Namespace": connect["namespace"]} if connect.get("namespace") else None,
            "Tags": tags.normalized(cluster.get("tags"), key="key", value="value"),
        })

    def ready(self, aws: Aws, native_id: str, properties: Json) -> bool:
        cluster = self._describe(aws, native_id)
        return cluster is not None and cluster.get("status") == "ACTIVE"

    def update(self, aws: Aws, change: Change) -> None:
        ecs = aws.client("ecs")
        name, desired = change.native_id, change.desired
        if change.wants("ClusterSettings"):
            ecs.update_cluster(cluster=name, settings=_settings(desired) or _DEFAULT_SETTINGS)
        if change.wants("ServiceConnectDefaults"):
            connect = desired.get("ServiceConnectDefaults") or {}
            ecs.update_cluster(cluster=name, serviceConnectDefaults={"namespace": connect.get("Namespace", "")})
        if change.wants("CapacityProviders") or change.wants("DefaultCapacityProviderStrategy"):
            ecs.put_cluster_capacity_providers(cluster=name, capacityProviders=desired.get("CapacityProviders") or [],
                                               defaultCapacityProviderStrategy=_strategy(desired))
        if change.wants("Tags"):
            cluster = self._describe(aws, name) or {}
            to_set, to_remove = tags.difference(tags.to_map(cluster.get("tags"), "key", "value"),
                                                tags.to_map(desired.get("Tags")))
            if to_set:
                ecs.tag_resource(resourceArn=cluster["clusterArn"],
                                 tags=[{"key": k, "value": v} for k, v in sorted(to_set.items())])
            if to_remove:
                ecs.untag_resource(resourceArn=cluster["clusterArn"], tagKeys=to_remove)

    def delete(self, aws: Aws, native_id: str) -> None:
        if self._describe(aws, native_id) is not None:
            aws.client("ecs").delete_cluster(cluster=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        ecs = aws.client("ecs")
        arns = [arn for page in ecs.get_paginator("list_clusters").paginate() for arn in page.get("clusterArns", [])]
        for start in range(0, len(arns), _DESCRIBE_BATCH):  # the list may still hold deleted (INACTIVE) clusters
            for cluster in ecs.describe_clusters(clusters=arns[start:start + _DESCRIBE_BATCH]).get("clusters", []):
                if cluster.get("status") in _LIVE:
                    yield cluster["clusterName"]

    @staticmethod
    def _describe(aws: Aws, name: str) -> Json | None:
        """The cluster as ECS describes it, or None when there is none (ECS keeps deleted ones as INACTIVE)."""
        answer = aws.client("ecs").describe_clusters(clusters=[name], include=["TAGS", "SETTINGS"])
        for cluster in answer.get("clusters", []):
            if cluster.get("status") in _LIVE:
                return dict(cluster)
        return None
