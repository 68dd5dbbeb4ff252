"""The Cloud Control API's operations over an in-memory account, behaving as the registry schemas say.

Which failures are answered at once and which end a request FAILED follows the real service: what Cloud Control
checks itself (the type, the handler, the desired state against the schema, a patch touching create-only or
read-only properties, the resource to read or patch, a ClientToken reused for another request, a second request
on a resource that has one in progress) is an error answer; what the resource's handler finds (the identifier
already taken, the resource gone by the time of a delete, an injected failure) ends the request FAILED with an
ErrorCode.
"""

from __future__ import annotations

import base64
import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import jsonpatch

from .errors import CloudControlError, invalid_request, not_found, type_not_found, unsupported_action
from .faults import Faults
from .models import (
    identifier_of,
    parse_identifier,
    read_view,
    touches,
    with_read_only_values,
    with_values_at,
    without_paths,
)
from .registry import Json, Registry, TypeSchema
from .resource_requests import TERMINAL, Request, Timing, new_token
from .validation import first_model_error
from .values import Unsatisfiable

_MAX_RESULTS = 100  # the model's MaxResults upper bound


class CloudControl:
    """One account in one region: resources per type, resource requests, and the test's injected faults."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.reset()

    def reset(self) -> None:
        self.resources: dict[str, dict[str, Json]] = {}  # type name → identifier → stored model
        self.requests: dict[str, Request] = {}  # request token → request
        self.client_tokens: dict[str, str] = {}  # ClientToken → request token
        self.calls: Counter[str] = Counter()
        self.timing = Timing()
        self.page_size = 20  # ListResources / ListResourceRequests page without MaxResults
        self.faults = Faults()

    # -- dispatch --------------------------------------------------------------------------------------------

    def call(self, operation: str, body: Json) -> Json:
        """One API call (``operation`` from ``X-Amz-Target``): its answer, or a ``CloudControlError``."""
        handlers: dict[str, Callable[[Json], Json]] = {
            "CreateResource": self.create_resource, "GetResource": self.get_resource,
            "UpdateResource": self.update_resource, "DeleteResource": self.delete_resource,
            "ListResources": self.list_resources, "GetResourceRequestStatus": self.get_resource_request_status,
            "ListResourceRequests": self.list_resource_requests, "CancelResourceRequest": self.cancel_resource_request,
        }
        handler = handlers.get(operation)
        if handler is None:
            raise CloudControlError("UnknownOperationException", f"Unknown operation {operation}")
        self.calls[operation] += 1
        type_name = body.get("TypeName")
        self.faults.before_call(operation, type_name if isinstance(type_name, str) else None)
        self._advance()
        return handler(body)

    # -- resource operations ---------------------------------------------------------------------------------

    def create_resource(self, body: Json) -> Json:
        schema = self._schema(body, "create")
        desired = _properties_document(body, "DesiredState")
        replay = self._replay(body, ("CREATE", schema.type_name, desired))
        if replay is not None:
            return replay
        given_read_only = sorted(f"/properties/{name}" for name in desired if name in schema.read_only)
        if given_read_only:
            raise invalid_request(f"Invalid desired state: readOnlyProperties {given_read_only} cannot be set")
        check_desired_state(schema, desired)
        return {"ProgressEvent": self.accept_create(schema, desired, body.get("ClientToken")).event()}

    def accept_create(self, schema: TypeSchema, desired: Json, client_token: str | None = None) -> Request:
        taken = set(self.resources.get(schema.type_name, {})) | self._pending_identifiers(schema.type_name)
        try:
            # An identifier the caller chose is not made up again when taken: the request fails AlreadyExists below.
            model = with_read_only_values(schema, desired, taken - {identifier_of(schema, desired)})
        except Unsatisfiable as error:
            raise CloudControlError("GeneralServiceException", str(error)) from error
        identifier = identifier_of(schema, model)
        request = Request(new_token(), schema.type_name, "CREATE", identifier,
                          ("CREATE", schema.type_name, desired), client_token)
        if identifier in taken:
            request.error_code = "AlreadyExists"
            request.status_message = (f"Resource of type '{schema.type_name}' with identifier '{identifier}' "
                                      "already exists.")
        else:
            request.result = model
        return self._register(request)

    def get_resource(self, body: Json) -> Json:
        schema = self._schema(body, "read")
        identifier = self._identifier(schema, body)
        model = self._stored(schema, identifier)
        return {"TypeName": schema.type_name, "ResourceDescription": _description(schema, identifier, model)}

    def update_resource(self, body: Json) -> Json:
        schema = self._schema(body, "update")
        identifier = self._identifier(schema, body)
        patch = _patch_document(body)
        replay = self._replay(body, ("UPDATE", schema.type_name, identifier, patch))
        if replay is not None:
            return replay
        current = self._stored(schema, identifier)
        self._check_no_request_in_progress(schema, identifier)
        for kind, paths in (("createOnlyProperties", schema.create_only_paths),
                            ("readOnlyProperties", schema.read_only_paths)):
            touched = sorted({found for op in patch for pointer in (op.get("path"), op.get("from"))
                              if isinstance(pointer, str) and (found := touches(pointer, paths))})
            if touched:
                raise invalid_request(f"Invalid patch update: {kind} [{', '.join(touched)}] cannot be updated")
        settable = without_paths(current, schema.read_only_paths)
        try:
            patched = jsonpatch.apply_patch(settable, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
            raise invalid_request(f"Invalid patch document: {error}") from error
        check_desired_state(schema, patched)
        request = Request(new_token(), schema.type_name, "UPDATE", identifier,
                          ("UPDATE", schema.type_name, identifier, patch), body.get("ClientToken"))
        request.result = with_values_at(patched, current, schema.read_only_paths)  # the service's values stay
        return {"ProgressEvent": self._register(request).event()}

    def delete_resource(self, body: Json) -> Json:
        schema = self._schema(body, "delete")
        identifier = self._identifier(schema, body)
        replay = self._replay(body, ("DELETE", schema.type_name, identifier))
        if replay is not None:
            return replay
        self._check_no_request_in_progress(schema, identifier)
        request = Request(new_token(), schema.type_name, "DELETE", identifier, ("DELETE", schema.type_name,
                                                                                  identifier), body.get("ClientToken"))
        if identifier not in self.resources.get(schema.type_name, {}):
            request.error_code = "NotFound"
            request.status_message = not_found(schema.type_name, identifier).message
        return {"ProgressEvent": self._register(request).event()}

    def list_resources(self, body: Json) -> Json:
        schema = self._schema(body, "list")
        parent = _properties_document(body, "ResourceModel") if body.get("ResourceModel") else {}
        missing = [name for name in schema.list_required if name not in parent]
        if missing:
            raise invalid_request(f"Missing Or Invalid ResourceModel property in {schema.type_name} list handler "
                                  f"request input. Required property: {missing}")
        models = [(identifier, model) for identifier, model in sorted(self.resources.get(schema.type_name, {}).items())
                  if all(model.get(name) == parent[name] for name in schema.list_required)]
        page, next_token = self._page(body, ("ListResources", schema.type_name), models)
        answer: Json = {"TypeName": schema.type_name,
                        "ResourceDescriptions": [_description(schema, identifier, model) for identifier, model in page]}
        if next_token:
            answer["NextToken"] = next_token
        return answer

    # -- request operations ----------------------------------------------------------------------------------

    def get_resource_request_status(self, body: Json) -> Json:
        request = self._request(body)
        request.polls += 1
        if request.due(self.timing, polled=True):
            self._complete(request)
        return {"ProgressEvent": request.event()}

    def list_resource_requests(self, body: Json) -> Json:
        wanted = body.get("ResourceRequestStatusFilter") or {}
        operations, statuses = wanted.get("Operations"), wanted.get("OperationStatuses")
        chosen = [request for request in self.requests.values()
                  if (not operations or request.operation in operations)
                  and (not statuses or request.status in statuses)]
        page, next_token = self._page(body, ("ListResourceRequests",), chosen)
        answer: Json = {"ResourceRequestStatusSummaries": [request.event() for request in page]}
        if next_token:
            answer["NextToken"] = next_token
        return answer

    def cancel_resource_request(self, body: Json) -> Json:
        request = self._request(body)
        if request.status in TERMINAL:
            raise CloudControlError("ConcurrentModificationException",
                                    f"Request {request.token} is {request.status} and cannot be cancelled")
        request.status, request.event_time = "CANCEL_COMPLETE", time.time()  # nothing of it took effect
        return {"ProgressEvent": {**request.event(), "OperationStatus": "CANCEL_IN_PROGRESS"}}

    # -- state -----------------------------------------------------------------------------------------------

    def _register(self, request: Request) -> Request:
        injected = self.faults.failure_for(request.operation, request.type_name)
        if injected is not None:
            request.result, request.error_code, request.status_message = None, injected.error_code, injected.message
        self.requests[request.token] = request
        if request.client_token:
            self.client_tokens[request.client_token] = request.token
        return request

    def _complete(self, request: Request) -> None:
        request.event_time = time.time()
        if request.error_code:
            request.status = "FAILED"
            return
        schema = self.registry.schema(request.type_name)
        stored = self.resources.setdefault(request.type_name, {})
        assert request.identifier is not None
        if request.operation == "DELETE":
            stored.pop(request.identifier, None)
        else:
            result = request.result or {}
            if request.operation == "UPDATE":
                # A few schemas let an update change a part of the primary identifier (Route 53 record sets):
                # the resource is known by its new identifier from then on.
                stored.pop(request.identifier, None)
                request.identifier = identifier_of(schema, result) or request.identifier
            stored[request.identifier] = result
            request.shown_model = read_view(schema, result)
        request.status = "SUCCESS"

    def _advance(self) -> None:
        """Completes the requests whose time is up when nobody needs to poll them (``Timing.polls`` = 0)."""
        for request in list(self.requests.values()):
            if request.due(self.timing, polled=False):
                self._complete(request)

    def _pending_identifiers(self, type_name: str) -> set[str]:
        return {request.identifier for request in self.requests.values()
                if request.type_name == type_name and request.operation == "CREATE" and request.result is not None
                and request.status not in TERMINAL and request.identifier is not None}

    def _check_no_request_in_progress(self, schema: TypeSchema, identifier: str) -> None:
        for request in self.requests.values():
            if (request.type_name, request.identifier) == (schema.type_name, identifier) \
                    and request.status not in TERMINAL:
                raise CloudControlError("ConcurrentOperationException",
                                        f"Another request ({request.token}) is in progress on {schema.type_name} "
                                        f"'{identifier}'")

    def _replay(self, body: Json, fingerprint: Any) -> Json | None:
        """A request already made with this ClientToken: the same request again, or a conflict when the token
        was used for another one."""
        client_token = body.get("ClientToken")
        if not client_token or client_token not in self.client_tokens:
            return None
        earlier = self.requests[self.client_tokens[client_token]]
        if earlier.fingerprint != fingerprint:
            raise CloudControlError("ClientTokenConflictException",
                                    f"The client token {client_token} was already used for another request")
        return {"ProgressEvent": earlier.event()}

    def _stored(self, schema: TypeSchema, identifier: str) -> Json:
        found = self.resources.get(schema.type_name, {}).get(identifier)
        if found is None:
            raise not_found(schema.type_name, identifier)
        return found

    # -- request parsing -------------------------------------------------------------------------------------

    def _schema(self, body: Json, handler: str) -> TypeSchema:
        type_name = body.get("TypeName")
        if not isinstance(type_name, str) or type_name not in self.registry:
            raise type_not_found(str(type_name))
        schema = self.registry.schema(type_name)
        if handler not in schema.handlers:
            raise unsupported_action(type_name, handler.upper())
        return schema

    @staticmethod
    def _identifier(schema: TypeSchema, body: Json) -> str:
        identifier = body.get("Identifier")
        if not isinstance(identifier, str) or not identifier:
            raise invalid_request("Identifier is required")
        return parse_identifier(schema, identifier)

    def _request(self, body: Json) -> Request:
        token = body.get("RequestToken")
        request = self.requests.get(token) if isinstance(token, str) else None
        if request is None:
            raise CloudControlError("RequestTokenNotFoundException", f"Request with token {token} was not found")
        return request

    def _page(self, body: Json, scope: tuple[str, ...], items: list[Any]) -> tuple[list[Any], str | None]:
        """One page of ``items`` from the offset in ``NextToken`` (a token of another listing is refused)."""
        size = body.get("MaxResults") or self.page_size
        if not isinstance(size, int) or not 1 <= size <= _MAX_RESULTS:
            raise invalid_request(f"MaxResults must be between 1 and {_MAX_RESULTS}")
        start = 0
        if body.get("NextToken"):
            try:
                token = json.loads(base64.urlsafe_b64decode(body["NextToken"]))
                assert token["scope"] == list(scope)
                start = int(token["offset"])
            except (ValueError, KeyError, TypeError, AssertionError):
                raise invalid_request("NextToken is not valid for this request") from None
        end = start + size
        more = base64.urlsafe_b64encode(json.dumps({"scope": list(scope), "offset": end}).encode()).decode()
        return items[start:end], more if end < len(items) else None


def _description(schema: TypeSchema, identifier: str, model: Json) -> Json:
    return {"Identifier": identifier, "Properties": json.dumps(read_view(schema, model))}


def _properties_document(body: Json, member: str) -> Json:
    text = body.get(member)
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError as error:
        raise invalid_request(f"{member} is not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise invalid_request(f"{member} must be a JSON object")
    return value


def _patch_document(body: Json) -> list[Json]:
    text = body.get("PatchDocument")
    try:
        patch = json.loads(text) if isinstance(text, str) else None
    except ValueError as error:
        raise invalid_request(f"PatchDocument is not valid JSON: {error}") from error
    if not isinstance(patch, list) or not all(isinstance(op, dict) and "op" in op and "path" in op for op in patch):
        raise invalid_request("PatchDocument must be a JSON Patch (RFC 6902): a list of operations with op and path")
    return patch


def check_desired_state(schema: TypeSchema, model: Json) -> None:
    error = first_model_error(schema, model)
    if error is not None:
        raise invalid_request(f"Model validation failed ({error})")
