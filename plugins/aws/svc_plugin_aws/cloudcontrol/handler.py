"""One registry type through the Cloud Control API (boto3's ``cloudcontrol`` client).

Properties cross as CloudFormation names both ways: the desired state is sent as it is, read-back properties
are Cloud Control's JSON model. The native id is Cloud Control's identifier: the primary identifier's value,
or for a compound one its values joined with ``|`` in the schema's order, exactly as Cloud Control answers it.

Create, update and delete answer at once with a progress event; the ``Plugin`` journals the event's request
token and follows it (GetResourceRequestStatus) when the agent polls ``status``. The agent's request token is
the ClientToken of each call, so the same call sent again (after a crash) is the same Cloud Control request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from botocore.exceptions import ClientError

from svc.plugins.sdk import ErrorCode, Json, PluginError
from svc_plugin_aws.cloudcontrol.events import started
from svc_plugin_aws.cloudcontrol.patch import fit_patch
from svc_plugin_aws.cloudcontrol.tokens import client_token
from svc_plugin_aws.errors import is_not_found
from svc_plugin_aws.handler import Change, Handler, Started
from svc_plugin_aws.session import Aws

SERVICE = "cloudcontrol"


def resource_model(filters: dict[str, str]) -> str | None:
    """ListResources' ``ResourceModel`` for a child type: the parent's values under the list-handler's required
    properties, as the agent's discovery gives them (``{childProperty: value}``); None for a top-level type."""
    return json.dumps(filters, sort_keys=True) if filters else None


class CloudControlHandler(Handler):
    provider_keeps_tokens = True

    def __init__(self, resource_type: str) -> None:
        self.resource_type = resource_type

    def _client(self, aws: Aws) -> Any:
        return aws.client(SERVICE)

    # -- changes: each answers Cloud Control's request to follow --------------------------------------------------

    def start_create(self, aws: Aws, label: str, properties: Json, token: str) -> Started:
        answer = self._client(aws).create_resource(TypeName=self.resource_type, DesiredState=json.dumps(properties),
                                                   ClientToken=client_token(token))
        return started(answer["ProgressEvent"])

    def start_update(self, aws: Aws, change: Change, token: str) -> Started:
        current = self.read(aws, change.native_id)
        if current is None:
            raise PluginError(ErrorCode.NOT_FOUND, f"{self.resource_type} {change.native_id} does not exist")
        ops = fit_patch(change.patch, current, change.desired)
        if not ops:  # what the planner changed is already so
            return Started(change.native_id)
        answer = self._client(aws).update_resource(TypeName=self.resource_type, Identifier=change.native_id,
                                                   PatchDocument=json.dumps(ops), ClientToken=client_token(token))
        return started(answer["ProgressEvent"])

    def start_delete(self, aws: Aws, native_id: str, token: str) -> Started:
        answer = self._client(aws).delete_resource(TypeName=self.resource_type, Identifier=native_id,
                                                   ClientToken=client_token(token))
        return started(answer["ProgressEvent"])

    def follow(self, aws: Aws, request: str) -> Started:
        answer = self._client(aws).get_resource_request_status(RequestToken=request)
        return started(answer["ProgressEvent"])

    # -- reads ----------------------------------------------------------------------------------------------------

    def read(self, aws: Aws, native_id: str) -> Json | None:
        try:
            answer = self._client(aws).get_resource(TypeName=self.resource_type, Identifier=native_id)
        except ClientError as error:
            if is_not_found(error):
                return None
            raise
        properties = json.loads(answer["ResourceDescription"].get("Properties") or "{}")
        return properties if isinstance(properties, dict) else {}

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        return self._identifiers(aws, resource_model(filters))

    def _identifiers(self, aws: Aws, model: str | None) -> Iterator[str]:
        arguments: dict[str, Any] = {"TypeName": self.resource_type}  # pages as large as Cloud Control makes them
        if model is not None:
            arguments["ResourceModel"] = model
        for page in self._client(aws).get_paginator("list_resources").paginate(**arguments):
            for description in page.get("ResourceDescriptions") or ():
                if description.get("Identifier"):
                    yield str(description["Identifier"])
