"""``AWS::SecretsManager::Secret``: a secret, its description, KMS key and tags, and its value. The native id
is the secret's ARN.

The value (``SecretString``, or one made from ``GenerateSecretString``) is write-only: it goes to AWS on
creation and when the forma changes it, and is never read back, logged or returned, so reads need no
``secretsmanager:GetSecretValue`` permission. The agent keeps only its hash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from svc.plugins.sdk import ErrorCode, Json, PluginError
from svc_plugin_aws import tags
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.session import Aws

DEFAULT_KMS_KEY = "alias/aws/secretsmanager"
# GenerateSecretString member → GetRandomPassword parameter (the template and key are applied here).
_PASSWORD_OPTIONS = ("ExcludeCharacters", "ExcludeLowercase", "ExcludeNumbers", "ExcludePunctuation",
                     "ExcludeUppercase", "IncludeSpace", "PasswordLength", "RequireEachIncludedType")


class Secret(Handler):
    type_name = "AWS::SecretsManager::Secret"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        sm = aws.client("secretsmanager")
        answer = sm.create_secret(**compact({
            "Name": properties.get("Name") or generated(label, max_length=512, allowed=r"\w/+=.@-"),
            "Description": properties.get("Description"),
            "KmsKeyId": properties.get("KmsKeyId"),
            "SecretString": _value(sm, properties),
            "Tags": tags.listed(properties) or None,
        }))
        return str(answer["ARN"])

    def read(self, aws: Aws, native_id: str) -> Json | None:
        try:
            secret = aws.client("secretsmanager").describe_secret(SecretId=native_id)
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        if secret.get("DeletedDate"):  # scheduled for deletion (outside svc): as good as gone
            return None
        kms_key = secret.get("KmsKeyId")
        return compact({
            "Id": secret["ARN"],
            "Name": secret["Name"],
            "Description": secret.get("Description") or None,
            "KmsKeyId": kms_key if kms_key and kms_key != DEFAULT_KMS_KEY else None,
            "Tags": tags.normalized(secret.get("Tags")),
        })

    def update(self, aws: Aws, change: Change) -> None:
        sm = aws.client("secretsmanager")
        arn, desired = change.native_id, change.desired
        settings: Json = {}
        if change.wants("Description"):
            settings["Description"] = desired.get("Description") or ""
        if change.wants("KmsKeyId"):
            settings["KmsKeyId"] = desired.get("KmsKeyId") or DEFAULT_KMS_KEY
        if settings:
            sm.update_secret(SecretId=arn, **settings)
        if change.wants("SecretString") or change.wants("GenerateSecretString"):
            value = _value(sm, desired)
            if value is not None:  # a value taken out of the forma stays in AWS: a secret cannot be emptied
                sm.put_secret_value(SecretId=arn, SecretString=value)
        if change.wants("Tags"):
            tags.retag(sm.describe_secret(SecretId=arn).get("Tags"), desired.get("Tags"),
                       lambda t: sm.tag_resource(SecretId=arn, Tags=t),
                       lambda keys: sm.untag_resource(SecretId=arn, TagKeys=keys))

    def delete(self, aws: Aws, native_id: str) -> None:
        # At once, not after a recovery window: a replaced secret's name must be free for its successor.
        aws.client("secretsmanager").delete_secret(SecretId=native_id, ForceDeleteWithoutRecovery=True)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        for page in aws.client("secretsmanager").get_paginator("list_secrets").paginate():
            for secret in page.get("SecretList", []):
                if not secret.get("DeletedDate"):
                    yield secret["ARN"]


def _value(sm: Any, properties: Json) -> str | None:
    """The value to store: the forma's ``SecretString``, else one generated as ``GenerateSecretString`` says."""
    value = properties.get("SecretString")
    if value is not None:
        if not isinstance(value, str):  # botocore would quote a wrongly typed value in its error
            raise PluginError(ErrorCode.INVALID_REQUEST, "SecretString must be a string")
        return value
    spec = properties.get("GenerateSecretString")
    if not spec:
        return None
    password = sm.get_random_password(**{key: spec[key] for key in _PASSWORD_OPTIONS if spec.get(key) is not None})
    password = password["RandomPassword"]
    template, key = spec.get("SecretStringTemplate"), spec.get("GenerateStringKey")
    if template and key:
        document = json.loads(template)
        document[key] = password
        return json.dumps(document)
    return str(password)
