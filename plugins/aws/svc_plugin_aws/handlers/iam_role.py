"""``AWS::IAM::Role``: a role, its trust policy, inline and managed policies, permissions boundary and tags.
The native id is the role name."""

from __future__ import annotations

from collections.abc import Iterable

from botocore.exceptions import ClientError

from svc.plugins.sdk import Json
from svc_plugin_aws import tags
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.iam import Principal, document_text
from svc_plugin_aws.names import generated
from svc_plugin_aws.rollback import undone_on_failure
from svc_plugin_aws.session import Aws

DEFAULT_SESSION_SECONDS = 3600
# Roles AWS makes and owns (service-linked, IAM Identity Center): nobody manages them through svc.
AWS_OWNED_PATHS = ("/aws-service-role/", "/aws-reserved/")


class Role(Handler):
    type_name = "AWS::IAM::Role"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        iam = aws.client("iam")
        name = properties.get("RoleName") or generated(label, max_length=64, allowed=r"\w+=,.@-")
        iam.create_role(**compact({
            "RoleName": name,
            "AssumeRolePolicyDocument": document_text(properties["AssumeRolePolicyDocument"]),
            "Description": properties.get("Description"),
            "MaxSessionDuration": properties.get("MaxSessionDuration"),
            "Path": properties.get("Path"),
            "PermissionsBoundary": properties.get("PermissionsBoundary"),
            "Tags": tags.listed(properties) or None,
        }))
        with undone_on_failure(f"role {name}", lambda: self.delete(aws, name)):
            Principal(iam, "role", name).set_policy_properties(properties)
        return name

    def read(self, aws: Aws, native_id: str) -> Json | None:
        iam = aws.client("iam")
        try:
            role = iam.get_role(RoleName=native_id)["Role"]
            policies = Principal(iam, "role", native_id).policy_properties()
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        return compact({
            "RoleName": role["RoleName"],
            "Arn": role["Arn"],
            "RoleId": role["RoleId"],
            "Path": role["Path"],
            "AssumeRolePolicyDocument": document_text(role["AssumeRolePolicyDocument"]),
            "Description": role.get("Description") or None,
            "MaxSessionDuration": role.get("MaxSessionDuration", DEFAULT_SESSION_SECONDS),
            "PermissionsBoundary": (role.get("PermissionsBoundary") or {}).get("PermissionsBoundaryArn"),
            **policies,
            "Tags": tags.normalized(role.get("Tags")),
        })

    def update(self, aws: Aws, change: Change) -> None:
        iam = aws.client("iam")
        name, desired = change.native_id, change.desired
        if change.wants("AssumeRolePolicyDocument"):
            iam.update_assume_role_policy(RoleName=name,
                                          PolicyDocument=document_text(desired["AssumeRolePolicyDocument"]))
        settings: Json = {}
        if change.wants("Description"):
            settings["Description"] = desired.get("Description") or ""
        if change.wants("MaxSessionDuration"):
            settings["MaxSessionDuration"] = desired.get("MaxSessionDuration") or DEFAULT_SESSION_SECONDS
        if settings:
            iam.update_role(RoleName=name, **settings)
        if change.wants("PermissionsBoundary"):
            if desired.get("PermissionsBoundary"):
                iam.put_role_permissions_boundary(RoleName=name, PermissionsBoundary=desired["PermissionsBoundary"])
            else:
                iam.delete_role_permissions_boundary(RoleName=name)
        Principal(iam, "role", name).set_policy_properties(desired, change.wants)
        if change.wants("Tags"):
            current = iam.get_role(RoleName=name)["Role"].get("Tags")
            tags.retag(current, desired.get("Tags"), lambda t: iam.tag_role(RoleName=name, Tags=t),
                  lambda keys: iam.untag_role(RoleName=name, TagKeys=keys))

    def delete(self, aws: Aws, native_id: str) -> None:
        iam = aws.client("iam")
        Principal(iam, "role", native_id).strip()
        iam.delete_role(RoleName=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        for page in aws.client("iam").get_paginator("list_roles").paginate():
            for role in page.get("Roles", []):
                if not role.get("Path", "/").startswith(AWS_OWNED_PATHS):
                    yield role["RoleName"]
