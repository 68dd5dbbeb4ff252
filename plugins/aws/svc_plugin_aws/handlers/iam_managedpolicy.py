"""``AWS::IAM::ManagedPolicy``: a customer managed policy and the roles, groups and users it is attached to.
The native id is the policy's ARN."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from svc.plugins.sdk import Json
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.iam import attaching, document_text
from svc_plugin_aws.names import generated
from svc_plugin_aws.rollback import undone_on_failure
from svc_plugin_aws.session import Aws

MAX_VERSIONS = 5  # IAM keeps at most five versions of a managed policy
# Property → (the key of list_entities_for_policy's answer, its name field, the attach call's kind)
_ENTITIES = {"Roles": ("PolicyRoles", "RoleName", "role"), "Groups": ("PolicyGroups", "GroupName", "group"),
             "Users": ("PolicyUsers", "UserName", "user")}


class ManagedPolicy(Handler):
    type_name = "AWS::IAM::ManagedPolicy"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        iam = aws.client("iam")
        name = properties.get("ManagedPolicyName") or generated(label, max_length=128, allowed=r"\w+=,.@-")
        arn = iam.create_policy(**compact({
            "PolicyName": name,
            "PolicyDocument": document_text(properties["PolicyDocument"]),
            "Path": properties.get("Path"),
            "Description": properties.get("Description"),
        }))["Policy"]["Arn"]
        with undone_on_failure(f"managed policy {arn}", lambda: self.delete(aws, arn)):
            _attach(iam, arn, properties, set(_ENTITIES))
        return str(arn)

    def read(self, aws: Aws, native_id: str) -> Json | None:
        iam = aws.client("iam")
        try:
            policy = iam.get_policy(PolicyArn=native_id)["Policy"]
            version = iam.get_policy_version(PolicyArn=native_id, VersionId=policy["DefaultVersionId"])
            attached = _attached(iam, native_id)
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        return compact({
            "PolicyArn": policy["Arn"],
            "PolicyId": policy["PolicyId"],
            "ManagedPolicyName": policy["PolicyName"],
            "Path": policy["Path"],
            "Description": policy.get("Description") or None,
            "PolicyDocument": document_text(version["PolicyVersion"]["Document"]),
            **{key: sorted(names) or None for key, names in attached.items()},
        })

    def update(self, aws: Aws, change: Change) -> None:
        iam = aws.client("iam")
        if change.wants("PolicyDocument"):
            versions = iam.get_paginator("list_policy_versions").paginate(PolicyArn=change.native_id)
            older = sorted((v for page in versions for v in page["Versions"] if not v["IsDefaultVersion"]),
                           key=lambda v: v["CreateDate"])
            if len(older) >= MAX_VERSIONS - 1:  # make room for the new default version
                iam.delete_policy_version(PolicyArn=change.native_id, VersionId=older[0]["VersionId"])
            iam.create_policy_version(PolicyArn=change.native_id, SetAsDefault=True,
                                      PolicyDocument=document_text(change.desired["PolicyDocument"]))
        _attach(iam, change.native_id, change.desired, set(_ENTITIES) & change.touched)

    def delete(self, aws: Aws, native_id: str) -> None:
        iam = aws.client("iam")
        _attach(iam, native_id, {}, set(_ENTITIES))
        for page in iam.get_paginator("list_policy_versions").paginate(PolicyArn=native_id):
            for version in page["Versions"]:
                if not version["IsDefaultVersion"]:
                    iam.delete_policy_version(PolicyArn=native_id, VersionId=version["VersionId"])
        iam.delete_policy(PolicyArn=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        # Scope=Local: only the account's own policies; AWS managed ones are not resources of anybody's.
        for page in aws.client("iam").get_paginator("list_policies").paginate(Scope="Local"):
            for policy in page.get("Policies", []):
                yield policy["Arn"]


def _attached(iam: Any, arn: str) -> dict[str, list[str]]:
    """The names of the roles, groups and users the policy is attached to, by property."""
    found: dict[str, list[str]] = {key: [] for key in _ENTITIES}
    for page in iam.get_paginator("list_entities_for_policy").paginate(PolicyArn=arn):
        for key, (answer_key, name_key, _) in _ENTITIES.items():
            found[key].extend(entity[name_key] for entity in page.get(answer_key, []))
    return found


def _attach(iam: Any, arn: str, properties: Json, keys: set[str]) -> None:
    """Attaches and detaches so that each property in ``keys`` lists exactly the entities attached."""
    current = _attached(iam, arn)
    for key in sorted(keys):
        _, name_key, kind = _ENTITIES[key]
        wanted = set(properties.get(key) or [])
        for name in sorted(wanted - set(current[key])):
            with attaching(f"managed policy {arn} to {kind} {name}"):
                getattr(iam, f"attach_{kind}_policy")(PolicyArn=arn, **{name_key: name})
        for name in sorted(set(current[key]) - wanted):
            getattr(iam, f"detach_{kind}_policy")(PolicyArn=arn, **{name_key: name})
