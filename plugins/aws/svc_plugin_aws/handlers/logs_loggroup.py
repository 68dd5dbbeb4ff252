"""``AWS::Logs::LogGroup``: a log group, its retention, encryption key, data protection policy and tags.
The native id is the ``LogGroupName``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from svc.plugins.sdk import Json
from svc_plugin_aws import tags
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.session import Aws


def _describe(logs: Any, name: str) -> Json | None:
    """The group named exactly ``name`` (describe matches by prefix)."""
    for page in logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix=name):
        for group in page.get("logGroups") or []:
            if group["logGroupName"] == name:
                return group
    return None


def _unstarred(arn: str) -> str:
    """The group's ARN as the tagging API wants it: without the ``:*`` of describe's answer."""
    return arn[:-2] if arn.endswith(":*") else arn


class LogGroup(Handler):
    type_name = "AWS::Logs::LogGroup"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        logs = aws.client("logs")
        name = properties.get("LogGroupName") or generated(label, max_length=512, allowed="A-Za-z0-9_./#-")
        request: dict[str, Any] = compact({"logGroupName": name, "kmsKeyId": properties.get("KmsKeyId"),
                                           "logGroupClass": properties.get("LogGroupClass")})
        wanted = tags.to_map(properties.get("Tags"))
        if wanted:
            request["tags"] = wanted
        logs.create_log_group(**request)
        if properties.get("RetentionInDays") is not None:
            logs.put_retention_policy(logGroupName=name, retentionInDays=int(properties["RetentionInDays"]))
        if properties.get("DataProtectionPolicy"):
            logs.put_data_protection_policy(logGroupIdentifier=name,
                                            policyDocument=properties["DataProtectionPolicy"])
        return name

    def read(self, aws: Aws, native_id: str) -> Json | None:
        logs = aws.client("logs")
        group = _describe(logs, native_id)
        if group is None:
            return None
        arn = group.get("arn") or ""
        tagged = logs.list_tags_for_resource(resourceArn=_unstarred(arn)).get("tags") if arn else None
        return compact({
            "LogGroupName": native_id,
            "Arn": arn or None,
            "RetentionInDays": group.get("retentionInDays"),
            "KmsKeyId": group.get("kmsKeyId"),
            "LogGroupClass": group.get("logGroupClass") or "STANDARD",
            "DataProtectionPolicy": self._data_protection(logs, native_id, group),
            "Tags": tags.from_map(tagged),
        })

    def update(self, aws: Aws, change: Change) -> None:
        logs = aws.client("logs")
        name = change.native_id
        desired = change.desired
        if change.wants("RetentionInDays"):
            if desired.get("RetentionInDays") is None:
                logs.delete_retention_policy(logGroupName=name)
            else:
                logs.put_retention_policy(logGroupName=name, retentionInDays=int(desired["RetentionInDays"]))
        if change.wants("KmsKeyId"):
            if desired.get("KmsKeyId"):
                logs.associate_kms_key(logGroupName=name, kmsKeyId=desired["KmsKeyId"])
            else:
                logs.disassociate_kms_key(logGroupName=name)
        if change.wants("DataProtectionPolicy"):
            if desired.get("DataProtectionPolicy"):
                logs.put_data_protection_policy(logGroupIdentifier=name, policyDocument=desired["DataProtectionPolicy"])
            else:
                logs.delete_data_protection_policy(logGroupIdentifier=name)
        if change.wants("Tags"):
            arn = _unstarred((_describe(logs, name) or {}).get("arn") or "")
            current = logs.list_tags_for_resource(resourceArn=arn).get("tags") or {}
            to_set, to_remove = tags.difference(current, tags.to_map(desired.get("Tags")))
            if to_set:
                logs.tag_resource(resourceArn=arn, tags=to_set)
            if to_remove:
                logs.untag_resource(resourceArn=arn, tagKeys=to_remove)

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("logs").delete_log_group(logGroupName=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        for page in aws.client("logs").get_paginator("describe_log_groups").paginate():
            for group in page.get("logGroups") or []:
                yield group["logGroupName"]

    @staticmethod
    def _data_protection(logs: Any, name: str, group: Json) -> str | None:
        if group.get("dataProtectionStatus") not in ("ACTIVATED", "ARCHIVED"):
            return None
        return logs.get_data_protection_policy(logGroupIdentifier=name).get("policyDocument") or None
