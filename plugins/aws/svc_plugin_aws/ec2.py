"""What the EC2 types share: tags at creation and on update, describing one resource, and paging."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError

from svc.plugins.sdk import Json
from svc_plugin_aws import tags
from svc_plugin_aws.errors import is_not_found


def tagged(resource_type: str, properties: Json) -> Json:
    """The ``TagSpecifications`` argument of a create call (none without tags): the resource is tagged the moment
    it exists."""
    listed = tags.listed(properties)
    return {"TagSpecifications": [{"ResourceType": resource_type, "Tags": listed}]} if listed else {}


def update_tags(ec2: Any, resource_id: str, current: list[Json] | None, desired: list[Json] | None) -> None:
    tags.retag(current, desired, lambda t: ec2.create_tags(Resources=[resource_id], Tags=t),
               lambda keys: ec2.delete_tags(Resources=[resource_id], Tags=[{"Key": k} for k in keys]))


def describe_one(call: Any, ids_parameter: str, native_id: str, result_key: str) -> Json | None:
    """The one resource ``native_id`` from a ``describe_*`` call, or None when EC2 says it does not exist."""
    try:
        found = call(**{ids_parameter: [native_id]}).get(result_key) or []
    except ClientError as error:
        if is_not_found(error):
            return None
        raise
    return found[0] if found else None


def describe_all(ec2: Any, operation: str, result_key: str, **kwargs: Any) -> Iterator[Json]:
    """Every item of a paginated ``describe_*`` call."""
    for page in ec2.get_paginator(operation).paginate(**kwargs):
        yield from page.get(result_key) or []


def vpc_filter(filters: dict[str, str]) -> list[Json]:
    """The ``vpc-id`` filter of a child type's list (its parent's ``VpcId``), if any."""
    return [{"Name": "vpc-id", "Values": [filters["VpcId"]]}] if filters.get("VpcId") else []
