"""``AWS::EC2::RouteTable``: a route table of a VPC (listed by ``VpcId``). The native id is the
``RouteTableId``. A VPC's main route table is never listed: it comes and goes with its VPC."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from svc.plugins.sdk import Json
from svc_plugin_aws import ec2, tags
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.session import Aws


class RouteTable(Handler):
    type_name = "AWS::EC2::RouteTable"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        request: dict[str, Any] = {"VpcId": properties.get("VpcId")}
        request.update(ec2.tagged("route-table", properties))
        return aws.client("ec2").create_route_table(**request)["RouteTable"]["RouteTableId"]

    def read(self, aws: Aws, native_id: str) -> Json | None:
        table = self._table(aws, native_id)
        if table is None:
            return None
        return compact({"RouteTableId": native_id, "VpcId": table.get("VpcId"),
                        "Tags": tags.normalized(table.get("Tags"))})

    def update(self, aws: Aws, change: Change) -> None:
        if change.wants("Tags"):
            current = (self._table(aws, change.native_id) or {}).get("Tags")
            ec2.update_tags(aws.client("ec2"), change.native_id, current, change.desired.get("Tags"))

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("ec2").delete_route_table(RouteTableId=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        return [table["RouteTableId"] for table in ec2.describe_all(
            aws.client("ec2"), "describe_route_tables", "RouteTables", Filters=ec2.vpc_filter(filters))
            if not any(association.get("Main") for association in table.get("Associations") or [])]

    @staticmethod
    def _table(aws: Aws, native_id: str) -> Json | None:
        return ec2.describe_one(aws.client("ec2").describe_route_tables, "RouteTableIds", native_id, "RouteTables")
