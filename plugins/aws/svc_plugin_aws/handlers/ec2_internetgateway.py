"""``AWS::EC2::InternetGateway``: a gateway and its tags (attaching it to a VPC is another resource type
in CloudFormation, ``AWS::EC2::VPCGatewayAttachment``). The native id is the ``InternetGatewayId``."""

from __future__ import annotations

from collections.abc import Iterable

from svc.plugins.sdk import Json
from svc_plugin_aws import ec2, tags
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.session import Aws


class InternetGateway(Handler):
    type_name = "AWS::EC2::InternetGateway"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        answer = aws.client("ec2").create_internet_gateway(**ec2.tagged("internet-gateway", properties))
        return answer["InternetGateway"]["InternetGatewayId"]

    def read(self, aws: Aws, native_id: str) -> Json | None:
        gateway = self._gateway(aws, native_id)
        if gateway is None:
            return None
        return compact({"InternetGatewayId": native_id, "Tags": tags.normalized(gateway.get("Tags"))})

    def update(self, aws: Aws, change: Change) -> None:
        if change.wants("Tags"):
            current = (self._gateway(aws, change.native_id) or {}).get("Tags")
            ec2.update_tags(aws.client("ec2"), change.native_id, current, change.desired.get("Tags"))

    def delete(self, aws: Aws, native_id: str) -> None:
        client = aws.client("ec2")
        # A gateway still attached cannot go; its attachments belong to it in this model.
        for attachment in (self._gateway(aws, native_id) or {}).get("Attachments") or []:
            client.detach_internet_gateway(InternetGatewayId=native_id, VpcId=attachment["VpcId"])
        client.delete_internet_gateway(InternetGatewayId=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        return [gateway["InternetGatewayId"] for gateway in ec2.describe_all(
            aws.client("ec2"), "describe_internet_gateways", "InternetGateways")]

    @staticmethod
    def _gateway(aws: Aws, native_id: str) -> Json | None:
        return ec2.describe_one(aws.client("ec2").describe_internet_gateways, "InternetGatewayIds", native_id,
                                "InternetGateways")
