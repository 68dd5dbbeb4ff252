"""``AWS::IAM::ServerCertificate``: an uploaded TLS certificate with its chain, path and tags. The native id
is the certificate's name. The private key is sent once, on creation, and never read back."""

from __future__ import annotations

from collections.abc import Iterable

from botocore.exceptions import ClientError

from svc.plugins.sdk import ErrorCode, Json, PluginError
from svc_plugin_aws import tags
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.session import Aws


class ServerCertificate(Handler):
    type_name = "AWS::IAM::ServerCertificate"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        if not isinstance(properties.get("PrivateKey"), str):  # botocore would quote a wrongly typed value
            raise PluginError(ErrorCode.INVALID_REQUEST, "PrivateKey must be a string")
        name = properties.get("ServerCertificateName") or generated(label, max_length=128, allowed=r"\w+=,.@-")
        aws.client("iam").upload_server_certificate(**compact({
            "ServerCertificateName": name,
            "CertificateBody": properties["CertificateBody"],
            "PrivateKey": properties["PrivateKey"],
            "CertificateChain": properties.get("CertificateChain"),
            "Path": properties.get("Path"),
            "Tags": tags.listed(properties) or None,
        }))
        return name

    def read(self, aws: Aws, native_id: str) -> Json | None:
        try:
            certificate = aws.client("iam").get_server_certificate(ServerCertificateName=native_id)
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        found = certificate["ServerCertificate"]
        metadata = found["ServerCertificateMetadata"]
        return compact({
            "ServerCertificateName": metadata["ServerCertificateName"],
            "Arn": metadata["Arn"],
            "Path": metadata["Path"],
            "CertificateBody": found.get("CertificateBody"),
            "CertificateChain": found.get("CertificateChain"),
            "Tags": tags.normalized(found.get("Tags")),
        })

    def update(self, aws: Aws, change: Change) -> None:
        iam = aws.client("iam")
        name = change.native_id
        if change.wants("Path"):
            iam.update_server_certificate(ServerCertificateName=name, NewPath=change.desired.get("Path") or "/")
        if change.wants("Tags"):
            current = iam.get_server_certificate(ServerCertificateName=name)["ServerCertificate"].get("Tags")
            tags.retag(current, change.desired.get("Tags"),
                  lambda t: iam.tag_server_certificate(ServerCertificateName=name, Tags=t),
                  lambda keys: iam.untag_server_certificate(ServerCertificateName=name, TagKeys=keys))

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("iam").delete_server_certificate(ServerCertificateName=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        for page in aws.client("iam").get_paginator("list_server_certificates").paginate():
            for certificate in page.get("ServerCertificateMetadataList", []):
                yield certificate["ServerCertificateName"]
