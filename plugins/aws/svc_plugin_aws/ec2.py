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
    wanted = tags.to_map(properties.get("Tags"))
    if not wanted:
        return {}
    return {"TagSpecifications": [{"ResourceType": resource_type,
                                   "Tags": [{"Key": k, "Value": v} for k, v in sorted(wanted.items())]}]}


def update_tags(ec2: Any, resource_id: str, current: list[Json] | None, desired: list[Json] | None) -> None:
    to_set, to_remove = tags.difference(tags.to_map(current), tags.to_map(desired))
    if to_set:
        ec2.create_tags(Resources=[resource_id], Tags=[{"Key": k, "Value": v} for k, v in sorted(to_set.items())])
    if to_remove:
        ec2.delete_tags(Resources=[resource_id], Tags=[{"Key": k} for k in to_remove])


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
