"""``AWS::IAM::SAMLProvider``: a SAML 2.0 identity provider, its metadata and tags. The native id is the
provider's ARN."""

from __future__ import annotations

from collections.abc import Iterable

from botocore.exceptions import ClientError

from svc.plugins.sdk import Json
from svc_plugin_aws import tags
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.session import Aws


class SAMLProvider(Handler):
    type_name = "AWS::IAM::SAMLProvider"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        answer = aws.client("iam").create_saml_provider(**compact({
            "Name": properties.get("Name") or generated(label, max_length=128, allowed=r"\w.-"),
            "SAMLMetadataDocument": properties["SamlMetadataDocument"],
            "Tags": tags.listed(properties) or None,
        }))
        return str(answer["SAMLProviderArn"])

    def read(self, aws: Aws, native_id: str) -> Json | None:
        try:
            provider = aws.client("iam").get_saml_provider(SAMLProviderArn=native_id)
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        return compact({
            "Arn": native_id,
            "Name": native_id.rsplit("/", 1)[-1],  # arn:aws:iam::<account>:saml-provider/<name>
            "SamlMetadataDocument": provider.get("SAMLMetadataDocument"),
            "Tags": tags.normalized(provider.get("Tags")),
        })

    def update(self, aws: Aws, change: Change) -> None:
        iam = aws.client("iam")
        arn = change.native_id
        if change.wants("SamlMetadataDocument"):
            iam.update_saml_provider(SAMLProviderArn=arn, SAMLMetadataDocument=change.desired["SamlMetadataDocument"])
        if change.wants("Tags"):
            tags.retag(iam.get_saml_provider(SAMLProviderArn=arn).get("Tags"), change.desired.get("Tags"),
                  lambda t: iam.tag_saml_provider(SAMLProviderArn=arn, Tags=t),
                  lambda keys: iam.untag_saml_provider(SAMLProviderArn=arn, TagKeys=keys))

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("iam").delete_saml_provider(SAMLProviderArn=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        answer = aws.client("iam").list_saml_providers()  # one answer: IAM does not page this list
        return [provider["Arn"] for provider in answer.get("SAMLProviderList", [])]
