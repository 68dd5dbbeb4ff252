"""``AWS::DynamoDB::Table``: a table, its keys and indexes, capacity, stream, expiry, point-in-time recovery,
class, deletion protection and tags. The native id is the table name.

DynamoDB works asynchronously: a new table is ``CREATING``, a changed one ``UPDATING``, and most changes
are refused until it is ``ACTIVE`` again. ``ready`` tells the agent to wait for ``ACTIVE`` after a create
or update; between the steps of one update the handler waits itself, briefly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from svc.plugins.sdk import ErrorCode, Json, PluginError
from svc_plugin_aws import tags
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, compact
from svc_plugin_aws.names import generated
from svc_plugin_aws.rollback import undone_on_failure
from svc_plugin_aws.session import Aws

_log = logging.getLogger("svc.plugin.aws")
STEP_WAIT_SECONDS = 30.0  # how long one step of an update waits for ACTIVE (the agent's call deadline is 60 s)


def _throughput(value: Json | None) -> Json | None:
    if not value:
        return None
    return {"ReadCapacityUnits": int(value["ReadCapacityUnits"]),
            "WriteCapacityUnits": int(value["WriteCapacityUnits"])}


def _projection(value: Json) -> Json:
    return compact({"ProjectionType": value.get("ProjectionType"),
                    "NonKeyAttributes": list(value["NonKeyAttributes"]) if value.get("NonKeyAttributes") else None})


def _keys(value: list[Json]) -> list[Json]:
    return [{"AttributeName": key["AttributeName"], "KeyType": key["KeyType"]} for key in value]


def _index(value: Json, *, provisioned: bool) -> Json:
    """An index in CloudFormation's form (also the form CreateTable and UpdateTable take)."""
    return compact({
        "IndexName": value["IndexName"],
        "KeySchema": _keys(value["KeySchema"]),
        "Projection": _projection(value.get("Projection") or {}),
        "ProvisionedThroughput": _throughput(value.get("ProvisionedThroughput")) if provisioned else None,
    })


def _provisioned(properties: Json) -> bool:
    return (properties.get("BillingMode") or "PROVISIONED") == "PROVISIONED"


class Table(Handler):
    type_name = "AWS::DynamoDB::Table"

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        ddb = aws.client("dynamodb")
        name = properties.get("TableName") or generated(label, max_length=255, allowed=r"\w.-")
        provisioned = _provisioned(properties)
        stream = properties.get("StreamSpecification")
        try:
            ddb.create_table(**compact({
                "TableName": name,
                "AttributeDefinitions": [{"AttributeName": a["AttributeName"], "AttributeType": a["AttributeType"]}
                                         for a in properties["AttributeDefinitions"]],
                "KeySchema": _keys(properties["KeySchema"]),
                "BillingMode": properties.get("BillingMode"),
                "ProvisionedThroughput": _throughput(properties.get("ProvisionedThroughput")) if provisioned else None,
                "GlobalSecondaryIndexes": [_index(i, provisioned=provisioned)
                                           for i in properties.get("GlobalSecondaryIndexes") or []] or None,
                "LocalSecondaryIndexes": [_index(i, provisioned=False)
                                          for i in properties.get("LocalSecondaryIndexes") or []] or None,
                "StreamSpecification": {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
                if stream else None,
                "TableClass": properties.get("TableClass"),
                "DeletionProtectionEnabled": properties.get("DeletionProtectionEnabled"),
                "Tags": tags.listed(properties) or None,
            }))
        except ClientError as error:
            raise _in_use(ddb, name, error) from None
        if properties.get("TimeToLiveSpecification") or properties.get("PointInTimeRecoverySpecification"):
            with undone_on_failure(f"table {name}", lambda: ddb.delete_table(TableName=name)):
                # These settings need an ACTIVE table. If it takes longer, the table is still the agent's (its
                # read-back shows the settings missing) and the next apply sets them.
                if _wait_active(ddb, name):
                    _set_time_to_live(ddb, name, properties.get("TimeToLiveSpecification"))
                    _set_recovery(ddb, name, properties.get("PointInTimeRecoverySpecification"))
                else:
                    _log.warning("table %s is not ACTIVE yet: its expiry and recovery settings wait for the next "
                                 "apply", name)
        return name

    def read(self, aws: Aws, native_id: str) -> Json | None:
        ddb = aws.client("dynamodb")
        try:
            table = ddb.describe_table(TableName=native_id)["Table"]
            if table.get("TableStatus") == "DELETING":
                return None
            ttl = ddb.describe_time_to_live(TableName=native_id)["TimeToLiveDescription"]
            backups = ddb.describe_continuous_backups(TableName=native_id)["ContinuousBackupsDescription"]
            found_tags = [tag for page in ddb.get_paginator("list_tags_of_resource").paginate(
                ResourceArn=table["TableArn"]) for tag in page.get("Tags", [])]
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        billing = (table.get("BillingModeSummary") or {}).get("BillingMode") or "PROVISIONED"
        provisioned = billing == "PROVISIONED"
        stream = table.get("StreamSpecification") or {}
        recovery = (backups.get("PointInTimeRecoveryDescription") or {}).get("PointInTimeRecoveryStatus")
        return compact({
            "TableName": table["TableName"],
            "Arn": table["TableArn"],
            "StreamArn": table.get("LatestStreamArn") if stream.get("StreamEnabled") else None,
            "AttributeDefinitions": [{"AttributeName": a["AttributeName"], "AttributeType": a["AttributeType"]}
                                     for a in table.get("AttributeDefinitions", [])],
            "KeySchema": _keys(table["KeySchema"]),
            "BillingMode": billing,
            "ProvisionedThroughput": _throughput(table.get("ProvisionedThroughput")) if provisioned else None,
            "GlobalSecondaryIndexes": sorted((_index(i, provisioned=provisioned)
                                              for i in table.get("GlobalSecondaryIndexes") or []),
                                             key=lambda i: i["IndexName"]) or None,
            "LocalSecondaryIndexes": sorted((_index(i, provisioned=False)
                                             for i in table.get("LocalSecondaryIndexes") or []),
                                            key=lambda i: i["IndexName"]) or None,
            "StreamSpecification": {"StreamViewType": stream["StreamViewType"]} if stream.get("StreamEnabled")
            else None,
            "TableClass": (table.get("TableClassSummary") or {}).get("TableClass") or "STANDARD",
            "DeletionProtectionEnabled": bool(table.get("DeletionProtectionEnabled", False)),
            "TimeToLiveSpecification": {"AttributeName": ttl["AttributeName"], "Enabled": True}
            if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") and ttl.get("AttributeName") else None,
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": recovery == "ENABLED"},
            "Tags": tags.normalized(found_tags),
        })

    def ready(self, aws: Aws, native_id: str, properties: Json) -> bool:
        return _is_active(aws.client("dynamodb").describe_table(TableName=native_id)["Table"])

    def update(self, aws: Aws, change: Change) -> None:
        ddb = aws.client("dynamodb")
        name, desired = change.native_id, change.desired
        provisioned = _provisioned(desired)
        if change.wants("BillingMode") or change.wants("ProvisionedThroughput"):
            _step(ddb, name, **compact({
                "BillingMode": desired.get("BillingMode") or "PROVISIONED",
                "ProvisionedThroughput": _throughput(desired.get("ProvisionedThroughput")) if provisioned else None,
            }))
        if change.wants("GlobalSecondaryIndexes") or change.wants("AttributeDefinitions"):
            _update_indexes(ddb, name, desired, provisioned=provisioned)
        if change.wants("StreamSpecification"):
            stream = desired.get("StreamSpecification")
            current = ddb.describe_table(TableName=name)["Table"].get("StreamSpecification") or {}
            if current.get("StreamEnabled"):  # another view type needs the old stream switched off first
                _step(ddb, name, StreamSpecification={"StreamEnabled": False})
            if stream:
                _step(ddb, name, StreamSpecification={"StreamEnabled": True,
                                                      "StreamViewType": stream["StreamViewType"]})
        if change.wants("TableClass"):
            _step(ddb, name, TableClass=desired.get("TableClass") or "STANDARD")
        if change.wants("DeletionProtectionEnabled"):
            _step(ddb, name, DeletionProtectionEnabled=bool(desired.get("DeletionProtectionEnabled")))
        if change.wants("TimeToLiveSpecification"):
            _set_time_to_live(ddb, name, desired.get("TimeToLiveSpecification"))
        if change.wants("PointInTimeRecoverySpecification"):
            _set_recovery(ddb, name, desired.get("PointInTimeRecoverySpecification") or
                          {"PointInTimeRecoveryEnabled": False})
        if change.wants("Tags"):
            arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
            current = [tag for page in ddb.get_paginator("list_tags_of_resource").paginate(ResourceArn=arn)
                       for tag in page.get("Tags", [])]
            tags.retag(current, desired.get("Tags"), lambda t: ddb.tag_resource(ResourceArn=arn, Tags=t),
                       lambda keys: ddb.untag_resource(ResourceArn=arn, TagKeys=keys))

    def delete(self, aws: Aws, native_id: str) -> None:
        ddb = aws.client("dynamodb")
        try:
            ddb.delete_table(TableName=native_id)
        except ClientError as error:
            if not is_not_found(error) and _status(ddb, native_id) == "DELETING":
                return  # already on its way out
            raise

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        for page in aws.client("dynamodb").get_paginator("list_tables").paginate():
            yield from page.get("TableNames", [])


def _is_active(table: Json) -> bool:
    return table.get("TableStatus") == "ACTIVE" and all(
        index.get("IndexStatus", "ACTIVE") == "ACTIVE" for index in table.get("GlobalSecondaryIndexes") or [])


def _status(ddb: Any, name: str) -> str | None:
    try:
        return str(ddb.describe_table(TableName=name)["Table"].get("TableStatus"))
    except ClientError as error:
        if is_not_found(error):
            return None
        raise


def _wait_active(ddb: Any, name: str, seconds: float = STEP_WAIT_SECONDS) -> bool:
    """Whether the table (and its indexes) became ACTIVE within ``seconds``."""
    deadline = time.monotonic() + seconds
    pause = 0.2
    while True:
        if _is_active(ddb.describe_table(TableName=name)["Table"]):
            return True
        if time.monotonic() + pause > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 3.0)


def _step(ddb: Any, name: str, **request: Any) -> None:
    """One UpdateTable, once the table accepts one (DynamoDB takes one change at a time)."""
    if not _wait_active(ddb, name):
        raise PluginError(ErrorCode.RESOURCE_CONFLICT, f"table {name} is still busy with an earlier change")
    ddb.update_table(TableName=name, **request)


def _in_use(ddb: Any, name: str, error: ClientError) -> Exception:
    """CreateTable's "in use": a table of that name exists (already exists), or is being deleted (try later)."""
    if str(error.response.get("Error", {}).get("Code")) != "ResourceInUseException":
        return error
    if _status(ddb, name) == "DELETING":
        return PluginError(ErrorCode.RESOURCE_CONFLICT, f"table {name} is still being deleted")
    return PluginError(ErrorCode.ALREADY_EXISTS, f"the DynamoDB table {name} already exists")


def _update_indexes(ddb: Any, name: str, desired: Json, *, provisioned: bool) -> None:
    """Deletes, creates and re-sizes global secondary indexes, one per UpdateTable as DynamoDB requires."""
    table = ddb.describe_table(TableName=name)["Table"]
    current = {i["IndexName"]: _index(i, provisioned=provisioned) for i in table.get("GlobalSecondaryIndexes") or []}
    wanted = {i["IndexName"]: _index(i, provisioned=provisioned) for i in desired.get("GlobalSecondaryIndexes") or []}
    definitions = [{"AttributeName": a["AttributeName"], "AttributeType": a["AttributeType"]}
                   for a in desired.get("AttributeDefinitions") or []]
    for index in sorted(set(current) - set(wanted)):
        _step(ddb, name, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": index}}])
    for index, spec in sorted(wanted.items()):
        before = current.get(index)
        if before is None:
            _step(ddb, name, AttributeDefinitions=definitions, GlobalSecondaryIndexUpdates=[{"Create": spec}])
        elif before != spec:
            if before["KeySchema"] != spec["KeySchema"] or before["Projection"] != spec["Projection"]:
                # An index's keys and projection are fixed: a changed index is a new index.
                _step(ddb, name, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": index}}])
                _step(ddb, name, AttributeDefinitions=definitions, GlobalSecondaryIndexUpdates=[{"Create": spec}])
            elif spec.get("ProvisionedThroughput"):
                _step(ddb, name, GlobalSecondaryIndexUpdates=[{"Update": {
                    "IndexName": index, "ProvisionedThroughput": spec["ProvisionedThroughput"]}}])


def _set_time_to_live(ddb: Any, name: str, wanted: Json | None) -> None:
    current = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    enabled = current.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")
    if wanted and (not enabled or current.get("AttributeName") != wanted["AttributeName"]):
        if enabled:  # one attribute at a time: switch the old one off first
            ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={
                "AttributeName": current["AttributeName"], "Enabled": False})
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={
            "AttributeName": wanted["AttributeName"], "Enabled": True})
    elif not wanted and enabled:
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={
            "AttributeName": current["AttributeName"], "Enabled": False})


def _set_recovery(ddb: Any, name: str, wanted: Json | None) -> None:
    if wanted is not None:
        ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification={
            "PointInTimeRecoveryEnabled": bool(wanted.get("PointInTimeRecoveryEnabled"))})
