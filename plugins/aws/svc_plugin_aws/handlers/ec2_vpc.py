"""``AWS::EC2::VPC``: the network, its DNS attributes and tags. The native id is the ``VpcId``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from svc.plugins.sdk import Json
from svc_plugin_aws import ec2, tags
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.session import Aws

_ATTRIBUTES = {"EnableDnsSupport": "enableDnsSupport", "EnableDnsHostnames": "enableDnsHostnames"}


class VPC(Handler):
    type_name = "AWS::EC2::VPC"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        client = aws.client("ec2")
        request: dict[str, Any] = compact({
            "CidrBlock": properties.get("CidrBlock"),
            "InstanceTenancy": properties.get("InstanceTenancy"),
            "Ipv4IpamPoolId": properties.get("Ipv4IpamPoolId"),
            "Ipv4NetmaskLength": properties.get("Ipv4NetmaskLength"),
        })
        request.update(ec2.tagged("vpc", properties))
        vpc_id = client.create_vpc(**request)["Vpc"]["VpcId"]
        # One attribute per call (EC2's rule); DNS support before hostnames, which need it.
        for key in ("EnableDnsSupport", "EnableDnsHostnames"):
            if properties.get(key) is not None:
                client.modify_vpc_attribute(VpcId=vpc_id, **{key: {"Value": bool(properties[key])}})
        return vpc_id

    def read(self, aws: Aws, native_id: str) -> Json | None:
        client = aws.client("ec2")
        vpc = ec2.describe_one(client.describe_vpcs, "VpcIds", native_id, "Vpcs")
        if vpc is None:
            return None
        attributes = {key: client.describe_vpc_attribute(VpcId=native_id, Attribute=name)[key]["Value"]
                      for key, name in _ATTRIBUTES.items()}
        default_group = next(ec2.describe_all(client, "describe_security_groups", "SecurityGroups", Filters=[
            {"Name": "vpc-id", "Values": [native_id]}, {"Name": "group-name", "Values": ["default"]}]), None)
        default_acl = next(ec2.describe_all(client, "describe_network_acls", "NetworkAcls", Filters=[
            {"Name": "vpc-id", "Values": [native_id]}, {"Name": "default", "Values": ["true"]}]), None)
        return compact({
            "VpcId": native_id,
            "CidrBlock": vpc.get("CidrBlock"),
            "InstanceTenancy": vpc.get("InstanceTenancy"),
            **attributes,
            "Tags": tags.normalized(vpc.get("Tags")),
            "CidrBlockAssociations": [a["AssociationId"] for a in vpc.get("CidrBlockAssociationSet") or []] or None,
            "Ipv6CidrBlocks": [a["Ipv6CidrBlock"] for a in vpc.get("Ipv6CidrBlockAssociationSet") or []
                               if a.get("Ipv6CidrBlock")] or None,
            "DefaultSecurityGroup": default_group["GroupId"] if default_group else None,
            "DefaultNetworkAcl": default_acl["NetworkAclId"] if default_acl else None,
        })

    def update(self, aws: Aws, change: Change) -> None:
        client = aws.client("ec2")
        defaults = {"EnableDnsSupport": True, "EnableDnsHostnames": False}
        for key in ("EnableDnsSupport", "EnableDnsHostnames"):
            if change.wants(key):
                value = change.desired.get(key)
                client.modify_vpc_attribute(VpcId=change.native_id,
                                            **{key: {"Value": defaults[key] if value is None else bool(value)}})
        if change.wants("Tags"):
            current = (ec2.describe_one(client.describe_vpcs, "VpcIds", change.native_id, "Vpcs") or {}).get("Tags")
            ec2.update_tags(client, change.native_id, current, change.desired.get("Tags"))

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("ec2").delete_vpc(VpcId=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        return [vpc["VpcId"] for vpc in ec2.describe_all(aws.client("ec2"), "describe_vpcs", "Vpcs")]

    def ready(self, aws: Aws, native_id: str, properties: Json) -> bool:
        vpc = ec2.describe_one(aws.client("ec2").describe_vpcs, "VpcIds", native_id, "Vpcs")
        return vpc is not None and vpc.get("State", "available") == "available"
