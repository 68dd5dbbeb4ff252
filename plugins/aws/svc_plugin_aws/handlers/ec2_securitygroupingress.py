"""``AWS::EC2::SecurityGroupIngress``: one inbound rule of a security group, listed under its group
(``GroupId``). The native id is the rule's id (``sgr-…``); everything but the description is create-only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from svc.plugins.sdk import ErrorCode, Json, PluginError
from svc_plugin_aws import ec2
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.session import Aws


def _permission(properties: Json) -> Json:
    """The rule as EC2's ``IpPermissions`` element."""
    permission: dict[str, Any] = compact({
        "IpProtocol": str(properties["IpProtocol"]),
        "FromPort": properties.get("FromPort"),
        "ToPort": properties.get("ToPort"),
    })
    described = compact({"Description": properties.get("Description")})
    if properties.get("CidrIp"):
        permission["IpRanges"] = [{"CidrIp": properties["CidrIp"], **described}]
    elif properties.get("CidrIpv6"):
        permission["Ipv6Ranges"] = [{"CidrIpv6": properties["CidrIpv6"], **described}]
    elif properties.get("SourcePrefixListId"):
        permission["PrefixListIds"] = [{"PrefixListId": properties["SourcePrefixListId"], **described}]
    elif properties.get("SourceSecurityGroupId") or properties.get("SourceSecurityGroupName"):
        permission["UserIdGroupPairs"] = [compact({
            "GroupId": properties.get("SourceSecurityGroupId"),
            "GroupName": properties.get("SourceSecurityGroupName"),
            "UserId": properties.get("SourceSecurityGroupOwnerId"),
            **described,
        })]
    else:
        raise PluginError(ErrorCode.INVALID_REQUEST, "a security group ingress rule needs one source: CidrIp, "
                                                     "CidrIpv6, SourcePrefixListId or SourceSecurityGroupId/Name")
    return permission


class SecurityGroupIngress(Handler):
    type_name = "AWS::EC2::SecurityGroupIngress"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        target = compact({"GroupId": properties.get("GroupId"), "GroupName": properties.get("GroupName")})
        answer = aws.client("ec2").authorize_security_group_ingress(**target, IpPermissions=[_permission(properties)])
        rules = answer.get("SecurityGroupRules") or []
        if not rules:
            raise PluginError(ErrorCode.GENERAL_SERVICE_EXCEPTION, "EC2 authorized the rule without naming it")
        return rules[0]["SecurityGroupRuleId"]

    def read(self, aws: Aws, native_id: str) -> Json | None:
        rule = self._rule(aws, native_id)
        if rule is None or rule.get("IsEgress"):
            return None
        referenced = rule.get("ReferencedGroupInfo") or {}
        return compact({
            "Id": native_id,
            "GroupId": rule.get("GroupId"),
            "IpProtocol": rule.get("IpProtocol"),
            "FromPort": rule.get("FromPort"),
            "ToPort": rule.get("ToPort"),
            "CidrIp": rule.get("CidrIpv4"),
            "CidrIpv6": rule.get("CidrIpv6"),
            "SourcePrefixListId": rule.get("PrefixListId"),
            "SourceSecurityGroupId": referenced.get("GroupId"),
            "SourceSecurityGroupOwnerId": referenced.get("UserId") if referenced else None,
            "Description": rule.get("Description") or None,
        })

    def update(self, aws: Aws, change: Change) -> None:
        if not change.wants("Description"):
            return
        rule = self._rule(aws, change.native_id) or {}
        specification = compact({
            "IpProtocol": rule.get("IpProtocol"), "FromPort": rule.get("FromPort"), "ToPort": rule.get("ToPort"),
            "CidrIpv4": rule.get("CidrIpv4"), "CidrIpv6": rule.get("CidrIpv6"),
            "PrefixListId": rule.get("PrefixListId"),
            "ReferencedGroupId": (rule.get("ReferencedGroupInfo") or {}).get("GroupId"),
            "Description": change.desired.get("Description") or "",
        })
        aws.client("ec2").modify_security_group_rules(GroupId=rule["GroupId"], SecurityGroupRules=[
            {"SecurityGroupRuleId": change.native_id, "SecurityGroupRule": specification}])

    def delete(self, aws: Aws, native_id: str) -> None:
        rule = self._rule(aws, native_id)
        if rule is None:
            return
        aws.client("ec2").revoke_security_group_ingress(GroupId=rule["GroupId"], SecurityGroupRuleIds=[native_id])

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        group = [{"Name": "group-id", "Values": [filters["GroupId"]]}] if filters.get("GroupId") else []
        return [rule["SecurityGroupRuleId"] for rule in ec2.describe_all(
            aws.client("ec2"), "describe_security_group_rules", "SecurityGroupRules", Filters=group)
            if not rule.get("IsEgress")]

    @staticmethod
    def _rule(aws: Aws, native_id: str) -> Json | None:
        client = aws.client("ec2")
        return ec2.describe_one(client.describe_security_group_rules, "SecurityGroupRuleIds", native_id,
                                "SecurityGroupRules")
