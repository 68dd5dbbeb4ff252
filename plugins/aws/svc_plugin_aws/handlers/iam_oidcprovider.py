"""``AWS::IAM::OIDCProvider``: an OpenID Connect identity provider, its audiences, thumbprints and tags.
The native id is the provider's ARN."""

from __future__ import annotations

from collections.abc import Iterable

from botocore.exceptions import ClientError

from svc.plugins.sdk import Json
from svc_plugin_aws import tags
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.session import Aws


class OIDCProvider(Handler):
    type_name = "AWS::IAM::OIDCProvider"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        answer = aws.client("iam").create_open_id_connect_provider(**compact({
            "Url": properties["Url"],
            "ClientIDList": properties.get("ClientIdList") or [],
            "ThumbprintList": properties.get("ThumbprintList") or None,
            "Tags": tags.listed(properties) or None,
        }))
        return str(answer["OpenIDConnectProviderArn"])

    def read(self, aws: Aws, native_id: str) -> Json | None:
        try:
            provider = aws.client("iam").get_open_id_connect_provider(OpenIDConnectProviderArn=native_id)
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        url = provider["Url"]  # IAM keeps the issuer without its scheme
        return compact({
            "Arn": native_id,
            "Url": url if "://" in url else f"https://{url}",
            "ClientIdList": sorted(provider.get("ClientIDList") or []) or None,
            "ThumbprintList": sorted(provider.get("ThumbprintList") or []) or None,
            "Tags": tags.normalized(provider.get("Tags")),
        })

    def update(self, aws: Aws, change: Change) -> None:
        iam = aws.client("iam")
        arn, desired = change.native_id, change.desired
        if change.wants("ClientIdList"):
            current = set(iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn).get("ClientIDList") or [])
            wanted = set(desired.get("ClientIdList") or [])
            for client_id in sorted(wanted - current):
                iam.add_client_id_to_open_id_connect_provider(OpenIDConnectProviderArn=arn, ClientID=client_id)
            for client_id in sorted(current - wanted):
                iam.remove_client_id_from_open_id_connect_provider(OpenIDConnectProviderArn=arn, ClientID=client_id)
        if change.wants("ThumbprintList") and desired.get("ThumbprintList"):
            iam.update_open_id_connect_provider_thumbprint(OpenIDConnectProviderArn=arn,
                                                           ThumbprintList=desired["ThumbprintList"])
        if change.wants("Tags"):
            current_tags = iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn).get("Tags")
            tags.retag(current_tags, desired.get("Tags"),
                  lambda t: iam.tag_open_id_connect_provider(OpenIDConnectProviderArn=arn, Tags=t),
                  lambda keys: iam.untag_open_id_connect_provider(OpenIDConnectProviderArn=arn, TagKeys=keys))

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("iam").delete_open_id_connect_provider(OpenIDConnectProviderArn=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        answer = aws.client("iam").list_open_id_connect_providers()  # one answer: IAM does not page this list
        return [provider["Arn"] for provider in answer.get("OpenIDConnectProviderList", [])]
