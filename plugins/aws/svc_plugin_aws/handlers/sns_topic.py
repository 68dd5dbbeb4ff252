"""``AWS::SNS::Topic``: a topic, its attributes, subscriptions and tags. The native id is the ``TopicArn``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from svc.plugins.sdk import Json
from svc_plugin_aws import tags
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.session import Aws

# CloudFormation property → SNS attribute, for the attributes that are plain strings.
_STRINGS = {"DisplayName": "DisplayName", "KmsMasterKeyId": "KmsMasterKeyId", "SignatureVersion": "SignatureVersion",
            "TracingConfig": "TracingConfig", "DataProtectionPolicy": "DataProtectionPolicy",
            "ArchivePolicy": "ArchivePolicy"}
_BOOLEANS = {"ContentBasedDeduplication": "ContentBasedDeduplication"}
_DEFAULTS = {"DisplayName": "", "KmsMasterKeyId": "", "SignatureVersion": "1", "TracingConfig": "PassThrough",
             "DataProtectionPolicy": "", "ArchivePolicy": "", "ContentBasedDeduplication": "false"}


def _subscriptions(sns: Any, arn: str) -> list[Json]:
    found = []
    for page in sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=arn):
        for subscription in page.get("Subscriptions") or []:
            found.append({"Endpoint": subscription["Endpoint"], "Protocol": subscription["Protocol"],
                          "Arn": subscription["SubscriptionArn"]})
    return found


class Topic(Handler):
    type_name = "AWS::SNS::Topic"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        fifo = bool(properties.get("FifoTopic"))
        name = properties.get("TopicName") or (generated(label, max_length=251, allowed="A-Za-z0-9_-")
                                               + (".fifo" if fifo else ""))
        attributes = {attribute: str(properties[key]) for key, attribute in _STRINGS.items()
                      if properties.get(key) is not None}
        attributes.update({attribute: "true" if properties[key] else "false" for key, attribute in _BOOLEANS.items()
                           if properties.get(key) is not None})
        if fifo:
            attributes["FifoTopic"] = "true"
        request: dict[str, Any] = {"Name": name, "Attributes": attributes}
        if listed := tags.listed(properties):
            request["Tags"] = listed
        sns = aws.client("sns")
        arn = sns.create_topic(**request)["TopicArn"]
        for subscription in properties.get("Subscription") or []:
            sns.subscribe(TopicArn=arn, Protocol=subscription["Protocol"], Endpoint=subscription["Endpoint"])
        return arn

    def read(self, aws: Aws, native_id: str) -> Json | None:
        sns = aws.client("sns")
        try:
            attributes = sns.get_topic_attributes(TopicArn=native_id)["Attributes"]
            tagged = sns.list_tags_for_resource(ResourceArn=native_id).get("Tags")
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        properties: Json = {"TopicArn": native_id, "TopicName": native_id.rsplit(":", 1)[-1],
                            "FifoTopic": attributes.get("FifoTopic", "false").lower() == "true"}
        for key, attribute in _STRINGS.items():
            if attributes.get(attribute) not in (None, ""):
                properties[key] = attributes[attribute]
        for key, attribute in _BOOLEANS.items():
            if attribute in attributes:
                properties[key] = attributes[attribute].lower() == "true"
        subscriptions = [{"Endpoint": s["Endpoint"], "Protocol": s["Protocol"]}
                         for s in _subscriptions(sns, native_id)]
        properties["Subscription"] = sorted(subscriptions, key=lambda s: (s["Protocol"], s["Endpoint"])) or None
        properties["Tags"] = tags.normalized(tagged)
        return compact(properties)

    def update(self, aws: Aws, change: Change) -> None:
        sns = aws.client("sns")
        arn = change.native_id
        for key, attribute in {**_STRINGS, **_BOOLEANS}.items():
            if change.wants(key):
                value = change.desired.get(key)
                text = _DEFAULTS[key] if value is None else ("true" if value is True else "false"
                                                             if value is False else str(value))
                sns.set_topic_attributes(TopicArn=arn, AttributeName=attribute, AttributeValue=text)
        if change.wants("Subscription"):
            wanted = {(s["Protocol"], s["Endpoint"]) for s in change.desired.get("Subscription") or []}
            current = _subscriptions(sns, arn)
            for subscription in current:
                if (subscription["Protocol"], subscription["Endpoint"]) not in wanted \
                        and subscription["Arn"].startswith("arn:"):
                    sns.unsubscribe(SubscriptionArn=subscription["Arn"])
            have = {(s["Protocol"], s["Endpoint"]) for s in current}
            for protocol, endpoint in sorted(wanted - have):
                sns.subscribe(TopicArn=arn, Protocol=protocol, Endpoint=endpoint)
        if change.wants("Tags"):
            tags.retag(sns.list_tags_for_resource(ResourceArn=arn).get("Tags"), change.desired.get("Tags"),
                       lambda t: sns.tag_resource(ResourceArn=arn, Tags=t),
                       lambda keys: sns.untag_resource(ResourceArn=arn, TagKeys=keys))

    def delete(self, aws: Aws, native_id: str) -> None:
        sns = aws.client("sns")
        try:
            sns.get_topic_attributes(TopicArn=native_id)
        except ClientError as error:
            if is_not_found(error):
                return  # SNS deletes a missing topic without complaint; be explicit anyway
            raise
        sns.delete_topic(TopicArn=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        for page in aws.client("sns").get_paginator("list_topics").paginate():
            for topic in page.get("Topics") or []:
                yield topic["TopicArn"]
