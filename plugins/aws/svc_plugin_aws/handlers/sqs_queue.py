"""``AWS::SQS::Queue``: a queue, its attributes and tags. The native id is the ``QueueUrl``.

SQS keeps every attribute as a string; the plugin gives each its CloudFormation type (integers,
booleans, JSON text), so a forma's values compare equal to what is read back.
"""

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

_INTEGERS = ("DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds",
             "VisibilityTimeout", "KmsDataKeyReusePeriodSeconds")
_BOOLEANS = ("FifoQueue", "ContentBasedDeduplication", "SqsManagedSseEnabled")
_STRINGS = ("DeduplicationScope", "FifoThroughputLimit", "KmsMasterKeyId", "RedrivePolicy", "RedriveAllowPolicy")
_MUTABLE = tuple(key for key in _INTEGERS + _BOOLEANS + _STRINGS if key != "FifoQueue")
# What an attribute goes back to when a forma stops setting it (SQS has no "unset").
_DEFAULTS = {"DelaySeconds": "0", "MaximumMessageSize": "262144", "MessageRetentionPeriod": "345600",
             "ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "30", "RedrivePolicy": "",
             "RedriveAllowPolicy": "", "KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300",
             "ContentBasedDeduplication": "false"}


def _wire(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _typed(key: str, text: str) -> Any:
    if key in _INTEGERS:
        return int(text)
    if key in _BOOLEANS:
        return text.lower() == "true"
    return text


def _name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


class Queue(Handler):
    type_name = "AWS::SQS::Queue"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        fifo = bool(properties.get("FifoQueue"))
        name = properties.get("QueueName") or (generated(label, max_length=75, allowed="A-Za-z0-9_-")
                                               + (".fifo" if fifo else ""))
        attributes = {key: _wire(key, properties[key]) for key in _INTEGERS + _BOOLEANS + _STRINGS
                      if properties.get(key) is not None}
        if not fifo:
            attributes.pop("FifoQueue", None)  # SQS refuses FifoQueue=false
        request: dict[str, Any] = {"QueueName": name, "Attributes": attributes}
        wanted = tags.to_map(properties.get("Tags"))
        if wanted:
            request["tags"] = wanted
        return aws.client("sqs").create_queue(**request)["QueueUrl"]

    def read(self, aws: Aws, native_id: str) -> Json | None:
        sqs = aws.client("sqs")
        try:
            attributes = sqs.get_queue_attributes(QueueUrl=native_id, AttributeNames=["All"])["Attributes"]
            tagged = sqs.list_queue_tags(QueueUrl=native_id).get("Tags")
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        properties: Json = {"QueueUrl": native_id, "QueueName": _name(native_id),
                            "Arn": attributes.get("QueueArn"), "FifoQueue": False}
        for key in _INTEGERS + _BOOLEANS + _STRINGS:
            if attributes.get(key) not in (None, ""):
                properties[key] = _typed(key, attributes[key])
        properties["Tags"] = tags.from_map(tagged)
        return compact(properties)

    def update(self, aws: Aws, change: Change) -> None:
        sqs = aws.client("sqs")
        attributes: dict[str, str] = {}
        for key in _MUTABLE:
            if change.wants(key):
                value = change.desired.get(key)
                if value is not None:
                    attributes[key] = _wire(key, value)
                elif key in _DEFAULTS:
                    attributes[key] = _DEFAULTS[key]
        if attributes:
            sqs.set_queue_attributes(QueueUrl=change.native_id, Attributes=attributes)
        if change.wants("Tags"):
            current = sqs.list_queue_tags(QueueUrl=change.native_id).get("Tags") or {}
            to_set, to_remove = tags.difference(current, tags.to_map(change.desired.get("Tags")))
            if to_set:
                sqs.tag_queue(QueueUrl=change.native_id, Tags=to_set)
            if to_remove:
                sqs.untag_queue(QueueUrl=change.native_id, TagKeys=to_remove)

    def delete(self, aws: Aws, native_id: str) -> None:
        aws.client("sqs").delete_queue(QueueUrl=native_id)

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        for page in aws.client("sqs").get_paginator("list_queues").paginate(PaginationConfig={"PageSize": 1000}):
            yield from page.get("QueueUrls") or []
