"""``AWS::EC2::Subnet``: a child of its VPC (listed by ``VpcId``). The native id is the ``SubnetId``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from svc.plugins.sdk import Json
from svc_plugin_aws import ec2, tags
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.session import Aws

_BOOLEAN_ATTRIBUTES = ("MapPublicIpOnLaunch", "AssignIpv6AddressOnCreation", "EnableDns64")


class Subnet(Handler):
    type_name = "AWS::EC2::Subnet"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        client = aws.client("ec2")
        request: dict[str, Any] = compact({
            "VpcId": properties.get("VpcId"),
            "CidrBlock": properties.get("CidrBlock"),
            "AvailabilityZone": properties.get("AvailabilityZone"),
            "AvailabilityZoneId": properties.get("AvailabilityZoneId"),
            "Ipv6CidrBlock": properties.get("Ipv6CidrBlock"),
            "Ipv6Native": properties.get("Ipv6Native"),
            "OutpostArn": properties.get("OutpostArn"),
        })
        request.update(ec2.tagged("subnet", properties))
        subnet_id = client.create_subnet(**request)["Subnet"]["SubnetId"]
        for key in _BOOLEAN_ATTRIBUTES:
            if properties.get(key):  # all three are false on a new subnet
                client.modify_subnet_attribute(SubnetId=subnet_id, **{key: {"Value": True}})
        return subnet_id

    def read(self, aws: Aws, native_id: str) -> Json | None:
        subnet = ec2.describe_one(aws.client("ec2").describe_subnets, "SubnetIds", native_id, "Subnets")
        if subnet is None:
            return None
        return compact({
            "SubnetId": native_id,
            "VpcId": subnet.get("VpcId"),
            "CidrBlock": subnet.get("CidrBlock"),
            "AvailabilityZone": subnet.get("AvailabilityZone"),
            "AvailabilityZoneId": subnet.get("AvailabilityZoneId"),
            "MapPublicIpOnLaunch": bool(subnet.get("MapPublicIpOnLaunch", False)),
            "AssignIpv6AddressOnCreation": bool(subnet.get("AssignIpv6AddressOnCreation", False)),
            "EnableDns64": bool(subnet.get("EnableDns64", False)),
            "Ipv6Native": bool(subnet.get("Ipv6Native", False)),
            "OutpostArn": subnet.get("OutpostArn"),
            "Ipv6CidrBlocks": [a["Ipv6CidrBlock"] for a in subnet.get("Ipv6CidrBlockAssociationSet") or []
                               if a.get("Ipv6CidrBlock")] or None,
            "Tags": tags.normalized(subnet.get("Tags")),
        })

    def update(self, aws: Aws, change: Change) -> None:
        client = aws.client("ec2")
        for key in _BOOLEAN_ATTRIBUTES:
            if change.wants(key):
                client.modify_subnet_attribute(SubnetId=change.native_id,
                                               **{key: {"Value": bool(change.desired.get(key))}})
        if change.wants("Tags"):
            current = ec2.describe_one(client.describe_subnets, "SubnetIds", change.native_id, "Subnets") or {}
            ec2.update_tags(client, change.native_id, current.get("Tags"), change.desired.get("Tags"))

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("ec2").delete_subnet(SubnetId=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        return [subnet["SubnetId"] for subnet in ec2.describe_all(
            aws.client("ec2"), "describe_subnets", "Subnets", Filters=ec2.vpc_filter(filters))]
