"""``AWS::S3::Bucket``: a bucket, its versioning, ownership controls, public access block, default
encryption and tags. The native id is the bucket name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from svc.plugins.sdk import ErrorCode, Json, PluginError
from svc_plugin_aws import tags
from svc_plugin_aws.errors import code_of, is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.session import Aws

_CANNED_ACL = {
    "Private": "private", "PublicRead": "public-read", "PublicReadWrite": "public-read-write",
    "AuthenticatedRead": "authenticated-read", "LogDeliveryWrite": "log-delivery-write",
    "BucketOwnerRead": "bucket-owner-read", "BucketOwnerFullControl": "bucket-owner-full-control",
    "AwsExecRead": "aws-exec-read",
}
_ABSENT = frozenset({"OwnershipControlsNotFoundError", "NoSuchPublicAccessBlockConfiguration",
                     "ServerSideEncryptionConfigurationNotFoundError", "NoSuchTagSet", "NoSuchTagSetError"})


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code") or "")


def _exists(s3: Any, name: str) -> bool:
    """Whether the bucket exists (ours, or someone else's: 403)."""
    try:
        s3.head_bucket(Bucket=name)
    except ClientError as error:
        if is_not_found(error):
            return False
        if code_of(error) is ErrorCode.ACCESS_DENIED:
            return True
        raise
    return True


def _optional(call: Any, **kwargs: Any) -> dict[str, Any] | None:
    """A sub-configuration of the bucket, or None when the bucket has none."""
    try:
        return call(**kwargs)
    except ClientError as error:
        if _code(error) in _ABSENT:
            return None
        raise


class Bucket(Handler):
    type_name = "AWS::S3::Bucket"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        s3 = aws.client("s3")
        name = properties.get("BucketName") or generated(label, max_length=63, lower=True, allowed="a-z0-9-")
        if properties.get("BucketName") and _exists(s3, name):
            # us-east-1 answers a create of one's own bucket with success: svc would silently take it over.
            raise PluginError(ErrorCode.ALREADY_EXISTS, f"the bucket {name} already exists; choose another name, "
                                                        "or adopt it through discovery")
        request: dict[str, Any] = {"Bucket": name}
        if aws.region != "us-east-1":
            request["CreateBucketConfiguration"] = {"LocationConstraint": aws.region}
        if properties.get("AccessControl"):
            request["ACL"] = _CANNED_ACL.get(properties["AccessControl"], properties["AccessControl"])
        ownership = _ownership(properties.get("OwnershipControls"))
        if ownership:
            request["ObjectOwnership"] = ownership
        s3.create_bucket(**request)
        self._configure(aws, name, properties, set(properties))
        return name

    def read(self, aws: Aws, native_id: str) -> Json | None:
        s3 = aws.client("s3")
        try:
            s3.head_bucket(Bucket=native_id)
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        versioning = s3.get_bucket_versioning(Bucket=native_id)
        ownership = _optional(s3.get_bucket_ownership_controls, Bucket=native_id)
        public = _optional(s3.get_public_access_block, Bucket=native_id)
        encryption = _optional(s3.get_bucket_encryption, Bucket=native_id)
        tagging = _optional(s3.get_bucket_tagging, Bucket=native_id)
        return compact({
            "BucketName": native_id,
            "Arn": f"arn:aws:s3:::{native_id}",
            "DomainName": f"{native_id}.s3.amazonaws.com",
            "RegionalDomainName": f"{native_id}.s3.{aws.region}.amazonaws.com",
            "VersioningConfiguration": {"Status": versioning["Status"]} if versioning.get("Status") else None,
            "OwnershipControls": {"Rules": [{"ObjectOwnership": rule["ObjectOwnership"]} for rule in
                                            ownership["OwnershipControls"]["Rules"]]} if ownership else None,
            "PublicAccessBlockConfiguration": dict(public["PublicAccessBlockConfiguration"]) if public else None,
            "BucketEncryption": _encryption_of(encryption),
            "Tags": tags.normalized(tagging["TagSet"]) if tagging else None,
        })

    def update(self, aws: Aws, change: Change) -> None:
        if change.wants("AccessControl") and change.desired.get("AccessControl"):
            acl = change.desired["AccessControl"]
            aws.client("s3").put_bucket_acl(Bucket=change.native_id, ACL=_CANNED_ACL.get(acl, acl))
        self._configure(aws, change.native_id, change.desired, set(change.touched))

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("s3").delete_bucket(Bucket=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        s3 = aws.client("s3")
        token: str | None = None
        while True:
            page = s3.list_buckets(BucketRegion=aws.region, MaxBuckets=1000,
                                   **({"ContinuationToken": token} if token else {}))
            for bucket in page.get("Buckets", []):
                if bucket.get("BucketRegion", aws.region) == aws.region:
                    yield bucket["Name"]
            token = page.get("ContinuationToken")
            if not token:
                return

    # -- sub-configurations -------------------------------------------------------------------------------------

    @staticmethod
    def _configure(aws: Aws, name: str, properties: Json, keys: set[str]) -> None:
        """Applies each sub-configuration in ``keys``: put when set, delete (AWS's default) when absent."""
        s3 = aws.client("s3")
        if "VersioningConfiguration" in keys:
            status = (properties.get("VersioningConfiguration") or {}).get("Status")
            if status:
                s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})
            elif s3.get_bucket_versioning(Bucket=name).get("Status") == "Enabled":
                s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Suspended"})
        if "OwnershipControls" in keys:
            ownership = _ownership(properties.get("OwnershipControls"))
            if ownership:
                s3.put_bucket_ownership_controls(
                    Bucket=name, OwnershipControls={"Rules": [{"ObjectOwnership": ownership}]})
            else:
                s3.delete_bucket_ownership_controls(Bucket=name)
        if "PublicAccessBlockConfiguration" in keys:
            public = properties.get("PublicAccessBlockConfiguration")
            if public:
                s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=dict(public))
            else:
                s3.delete_public_access_block(Bucket=name)
        if "BucketEncryption" in keys:
            encryption = properties.get("BucketEncryption")
            if encryption:
                s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={
                    "Rules": [_rule_to_api(rule) for rule in encryption.get("ServerSideEncryptionConfiguration", [])]})
            else:
                s3.delete_bucket_encryption(Bucket=name)
        if "Tags" in keys:
            if listed := tags.listed(properties):
                s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": listed})
            else:
                s3.delete_bucket_tagging(Bucket=name)


def _ownership(controls: Json | None) -> str | None:
    rules = (controls or {}).get("Rules") or []
    return rules[0].get("ObjectOwnership") if rules else None


def _rule_to_api(rule: Json) -> Json:
    default = rule.get("ServerSideEncryptionByDefault") or {}
    return compact({
        "ApplyServerSideEncryptionByDefault": compact({
            "SSEAlgorithm": default.get("SSEAlgorithm"), "KMSMasterKeyID": default.get("KMSMasterKeyID"),
        }) or None,
        "BucketKeyEnabled": rule.get("BucketKeyEnabled"),
    })


def _encryption_of(answer: dict[str, Any] | None) -> Json | None:
    if not answer:
        return None
    rules = []
    for rule in answer["ServerSideEncryptionConfiguration"].get("Rules", []):
        default = rule.get("ApplyServerSideEncryptionByDefault") or {}
        rules.append(compact({
            "ServerSideEncryptionByDefault": compact({
                "SSEAlgorithm": default.get("SSEAlgorithm"), "KMSMasterKeyID": default.get("KMSMasterKeyID"),
            }) or None,
            "BucketKeyEnabled": rule.get("BucketKeyEnabled"),
        }))
    return {"ServerSideEncryptionConfiguration": rules} if rules else None
