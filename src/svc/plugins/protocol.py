"""The wire protocol between the agent and a plugin process: newline-delimited JSON-RPC 2.0 over stdio.

One JSON document per line, UTF-8. The plugin's first line is the ``hello`` notification
(``{sdk, name, version, namespace, pid}``); the agent then sends ``configure`` (``{pluginConfig}``) and any
number of operation requests at once, answered by id in any order; ``shutdown`` ends the process. The
plugin logs on stderr only, so stdout carries nothing but protocol.

Both ends build and read the documents here, so they cannot drift apart. Operation params are the
per-call context (``resourceType``, ``targetConfig``, ``timeout``, ``requestToken``) plus the operation's
own arguments; results are the reference's shapes (``sdk.Progress``/``ReadResult``/``ListResult`` JSON).
"""

from __future__ import annotations

from typing import Any

from svc import jsontext
from svc.plugins.runner import Call
from svc.plugins.sdk import Json, Operation

PROTOCOL_VERSION = "1"
# A line holds a whole request or answer (a file's content, a large resource): far above asyncio's 64 KiB.
MAX_LINE_BYTES = 64 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# A ``list`` that failed: ``data`` is ``{"ErrorCode": …, "StatusMessage": …}`` (list results have no error field).
OPERATION_FAILED = -32000

METHODS: dict[Operation, str] = {
    Operation.CREATE: "create", Operation.READ: "read", Operation.UPDATE: "update",
    Operation.DELETE: "delete", Operation.STATUS: "status", Operation.LIST: "list",
}
OPERATIONS: dict[str, Operation] = {method: operation for operation, method in METHODS.items()}


class ProtocolError(Exception):
    """A line that is not a valid message of this protocol."""


def encode(message: Json) -> bytes:
    return jsontext.dump_bytes(message) + b"\n"


def decode(line: bytes) -> Json:
    try:
        message = jsontext.loads(line)
    except ValueError as error:
        raise ProtocolError(f"not JSON: {error}") from error
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise ProtocolError("not a JSON-RPC 2.0 message")
    return message


def request(request_id: int, method: str, params: Json) -> Json:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification(method: str, params: Json) -> Json:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result(request_id: Any, value: Any) -> Json:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: Any, code: int, message: str, data: Any = None) -> Json:
    body: Json = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def hello(name: str, version: str, namespace: str, pid: int) -> Json:
    return notification("hello", {"sdk": PROTOCOL_VERSION, "name": name, "version": version,
                                  "namespace": namespace, "pid": pid})


# -- operation params ---------------------------------------------------------------------------------------

def _call(call: Call) -> Json:
    params: Json = {"resourceType": call.resource_type, "targetConfig": call.target_config, "timeout": call.timeout}
    if call.request_token:
        params["requestToken"] = call.request_token
    return params


def create_params(call: Call, label: str, properties: Json) -> Json:
    return {**_call(call), "label": label, "properties": properties}


def read_params(call: Call, native_id: str, prior: Json | None) -> Json:
    return {**_call(call), "nativeId": native_id, "priorProperties": prior}


def update_params(call: Call, native_id: str, prior: Json, desired: Json, patch: list[Json]) -> Json:
    return {**_call(call), "nativeId": native_id, "priorProperties": prior, "desiredProperties": desired,
            "patchDocument": patch}


def delete_params(call: Call, native_id: str) -> Json:
    return {**_call(call), "nativeId": native_id}


def status_params(call: Call, request_id: str, native_id: str) -> Json:
    return {**_call(call), "requestId": request_id, "nativeId": native_id}


def list_params(call: Call, page_size: int, page_token: str | None, filters: dict[str, str]) -> Json:
    return {**_call(call), "pageSize": page_size, "pageToken": page_token, "additionalProperties": filters}


def call_of(params: Json) -> Call:
    """The per-call context of an operation's params (``KeyError``/``TypeError`` when malformed)."""
    resource_type = params["resourceType"]
    target = params.get("targetConfig") or {}
    if not isinstance(resource_type, str) or not isinstance(target, dict):
        raise TypeError("resourceType must be a string and targetConfig an object")
    timeout = float(params.get("timeout") or 60.0)
    return Call(resource_type, target, timeout, params.get("requestToken") or None)
