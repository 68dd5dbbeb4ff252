"""``AWS::IAM::Group``: a group, its path, and its inline and managed policies. The native id is the group
name. IAM groups cannot be tagged."""

from __future__ import annotations

from collections.abc import Iterable

from botocore.exceptions import ClientError

from svc.plugins.sdk import Json
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.iam import Principal
from svc_plugin_aws.names import generated
from svc_plugin_aws.rollback import undone_on_failure
from svc_plugin_aws.session import Aws


class Group(Handler):
    type_name = "AWS::IAM::Group"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        iam = aws.client("iam")
        name = properties.get("GroupName") or generated(label, max_length=128, allowed=r"\w+=,.@-")
        iam.create_group(**compact({"GroupName": name, "Path": properties.get("Path")}))
        with undone_on_failure(f"group {name}", lambda: self.delete(aws, name)):
            Principal(iam, "group", name).set_policy_properties(properties)
        return name

    def read(self, aws: Aws, native_id: str) -> Json | None:
        iam = aws.client("iam")
        try:
            group = iam.get_group(GroupName=native_id, MaxItems=1)["Group"]
            policies = Principal(iam, "group", native_id).policy_properties()
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        return compact({
            "GroupName": group["GroupName"],
            "Arn": group["Arn"],
            "Path": group["Path"],
            **policies,
        })

    def update(self, aws: Aws, change: Change) -> None:
        iam = aws.client("iam")
        if change.wants("Path"):
            iam.update_group(GroupName=change.native_id, NewPath=change.desired.get("Path") or "/")
        Principal(iam, "group", change.native_id).set_policy_properties(change.desired, change.wants)

    def delete(self, aws: Aws, native_id: str) -> None:
        iam = aws.client("iam")
        # IAM deletes no group that has members or policies; the users themselves stay.
        for page in iam.get_paginator("get_group").paginate(GroupName=native_id):
            for user in page.get("Users", []):
                iam.remove_user_from_group(GroupName=native_id, UserName=user["UserName"])
        Principal(iam, "group", native_id).strip()
        iam.delete_group(GroupName=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        for page in aws.client("iam").get_paginator("list_groups").paginate():
            for group in page.get("Groups", []):
                yield group["GroupName"]
