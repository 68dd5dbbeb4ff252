"""``AWS::EC2::SecurityGroup``: a group without inline rules (rules are ``AWS::EC2::SecurityGroupIngress``
resources of their own). The native id is the ``GroupId``. A VPC's ``default`` group is never listed: it
comes and goes with its VPC and cannot be managed on its own."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from svc.plugins.sdk import Json
from svc_plugin_aws import ec2, tags
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.session import Aws


class SecurityGroup(Handler):
    type_name = "AWS::EC2::SecurityGroup"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        request: dict[str, Any] = compact({
            "GroupName": properties.get("GroupName") or generated(label, max_length=255),
            "Description": properties.get("GroupDescription"),
            "VpcId": properties.get("VpcId"),
        })
        request.update(ec2.tagged("security-group", properties))
        return aws.client("ec2").create_security_group(**request)["GroupId"]

    def read(self, aws: Aws, native_id: str) -> Json | None:
        group = ec2.describe_one(aws.client("ec2").describe_security_groups, "GroupIds", native_id, "SecurityGroups")
        if group is None:
            return None
        return compact({
            "GroupId": native_id,
            "GroupName": group.get("GroupName"),
            "GroupDescription": group.get("Description"),
            "VpcId": group.get("VpcId"),
            "Tags": tags.normalized(group.get("Tags")),
        })

    def update(self, aws: Aws, change: Change) -> None:
        if change.wants("Tags"):
            client = aws.client("ec2")
            current = ec2.describe_one(client.describe_security_groups, "GroupIds", change.native_id,
                                       "SecurityGroups") or {}
            ec2.update_tags(client, change.native_id, current.get("Tags"), change.desired.get("Tags"))

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("ec2").delete_security_group(GroupId=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        return [group["GroupId"] for group in ec2.describe_all(
            aws.client("ec2"), "describe_security_groups", "SecurityGroups", Filters=ec2.vpc_filter(filters))
            if group.get("GroupName") != "default"]
