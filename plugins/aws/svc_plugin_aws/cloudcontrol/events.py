"""Cloud Control's progress events as the handler interface's answers.

A request is PENDING or IN_PROGRESS until it ends SUCCESS or FAILED (or, canceled, CANCEL_COMPLETE). A
failed event's ``ErrorCode`` is one of CloudFormation's handler error codes, spelled exactly as the plugin
contract's codes, so it keeps its meaning (throttling, not found, invalid request …); its ``StatusMessage``
goes to the user with the type and the operation.
"""

from __future__ import annotations

from typing import Any

from svc.plugins.sdk import ErrorCode
from svc_plugin_aws.errors import handler_error_code
from svc_plugin_aws.handler import RequestFailed, Started

_RUNNING = frozenset({"PENDING", "IN_PROGRESS", "CANCEL_IN_PROGRESS"})


def started(event: dict[str, Any]) -> Started:
    """The request's state: ``Started.request`` set while it runs; ``RequestFailed`` when it ended otherwise
    than SUCCESS."""
    status = str(event.get("OperationStatus") or "")
    identifier = str(event.get("Identifier") or "")
    if status == "SUCCESS":
        return Started(identifier)
    if status in _RUNNING:
        return Started(identifier, str(event["RequestToken"]))
    type_name = event.get("TypeName") or "the resource"
    operation = str(event.get("Operation") or "request").lower()
    if status == "CANCEL_COMPLETE":
        raise RequestFailed(ErrorCode.GENERAL_SERVICE_EXCEPTION, f"Cloud Control canceled the {operation} of "
                                                                 f"{type_name}")
    code = event.get("ErrorCode")
    reason = event.get("StatusMessage") or "no reason given"
    raise RequestFailed(handler_error_code(code), f"{type_name} {operation} failed in Cloud Control "
                                          f"({code or 'no error code'}): {reason}")
