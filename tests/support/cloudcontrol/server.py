"""The HTTP side: the AWS JSON 1.0 protocol on ``POST /``, and the test control API under ``/_standin/``.

botocore's ``cloudcontrol`` client posts every operation to ``/`` with ``X-Amz-Target:
CloudApiService.<Operation>`` and a JSON body (``application/x-amz-json-1.0``); answers are JSON of the same
content type, errors as ``errors.CloudControlError.body``. Signatures are not checked (any credentials do).
No AWS client uses ``/_standin/``: tests reach the control API there (``client.StandIn`` wraps it).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .errors import EXCEPTIONS, HANDLER_ERROR_CODES, CloudControlError
from .faults import ErrorRule, FailRule
from .models import read_view
from .registry import Json, registry
from .resource_requests import Timing
from .service import CloudControl, check_desired_state

_TARGET_PREFIX = "CloudApiService."
_CONTENT_TYPE = "application/x-amz-json-1.0"


def _aws_response(status: int, body: Json) -> Response:
    return Response(json.dumps(body), status_code=status, media_type=_CONTENT_TYPE,
                    headers={"x-amzn-RequestId": str(uuid.uuid4())})


class BadControlRequest(Exception):
    """A control API request the stand-in cannot follow; answered 400 with what to fix."""


def make_app(service: CloudControl | None = None) -> Starlette:
    """The ASGI app over ``service`` (a fresh account on the pinned registry by default)."""
    account = service or CloudControl(registry())
    # One event loop thread runs every call, so the account needs no lock; only injected delays await.

    async def aws(request: Request) -> Response:
        target = request.headers.get("x-amz-target", "")
        operation = target.removeprefix(_TARGET_PREFIX)
        try:
            if not target.startswith(_TARGET_PREFIX):
                raise CloudControlError("UnknownOperationException", f"Unknown target '{target}'")
            try:
                body = json.loads(await request.body() or b"{}")
            except ValueError as error:
                raise CloudControlError("SerializationException", f"The request body is not JSON: {error}") from error
            if not isinstance(body, dict):
                raise CloudControlError("SerializationException", "The request body must be a JSON object")
            delay = account.faults.delay_for(operation)
            if delay:
                await asyncio.sleep(delay)
            return _aws_response(200, account.call(operation, body))
        except CloudControlError as error:
            return _aws_response(error.status, error.body())
        except Exception as error:  # a stand-in bug answers like the service's 500, never drops the connection
            return _aws_response(500, CloudControlError("ServiceInternalErrorException",
                                                        f"stand-in failure: {error!r}").body())

    async def control(request: Request) -> Response:
        action = request.path_params["action"]
        try:
            body = json.loads(await request.body() or b"{}") if request.method == "POST" else {}
            if not isinstance(body, dict):
                raise BadControlRequest("the body must be a JSON object")
            handler = _CONTROL.get((request.method, action))
            if handler is None:
                return JSONResponse({"error": f"no control action {request.method} /_standin/{action}"}, 404)
            return JSONResponse(handler(account, body))
        except (BadControlRequest, CloudControlError, ValueError, KeyError, TypeError) as error:
            return JSONResponse({"error": str(error)}, 400)

    return Starlette(routes=[Route("/", aws, methods=["POST"]),
                             Route("/_standin/{action:path}", control, methods=["GET", "POST"])])


# -- the control API --------------------------------------------------------------------------------------------

def _state(account: CloudControl, _body: Json) -> Json:
    return {"resources": account.resources, "calls": dict(account.calls), "throttled": dict(account.faults.throttled),
            "requests": {token: request.status for token, request in account.requests.items()},
            "timing": {"polls": account.timing.polls, "milliseconds": account.timing.milliseconds,
                       "pageSize": account.page_size}}


def _reset(account: CloudControl, _body: Json) -> Json:
    account.reset()
    return {}


def _timing(account: CloudControl, body: Json) -> Json:
    account.timing = Timing(polls=int(body.get("polls", 1)), milliseconds=int(body.get("milliseconds", 0)))
    if "pageSize" in body:
        account.page_size = int(body["pageSize"])
    return {}


def _operations(body: Json) -> frozenset[str] | None:
    operations = body.get("operations")
    return frozenset(operations) if operations else None


def _throttle(account: CloudControl, body: Json) -> Json:
    rate = float(body.get("rate", 0.0))
    if not 0.0 <= rate <= 1.0:
        raise BadControlRequest(f"rate must be between 0 and 1, not {rate}")
    per_second = float(body.get("perSecond", 0.0))
    if per_second < 0:
        raise BadControlRequest(f"perSecond must be 0 (no limit) or more, not {per_second}")
    account.faults.throttle_next = int(body.get("next", 0))
    account.faults.throttle_rate = rate
    account.faults.throttle_per_second = per_second
    account.faults.buckets.clear()  # a new limit starts with a full bucket
    account.faults.throttle_operations = _operations(body)
    return {}


def _delay(account: CloudControl, body: Json) -> Json:
    account.faults.delay_ms = int(body.get("milliseconds", 0))
    account.faults.delay_operations = _operations(body)
    return {}


def _fail(account: CloudControl, body: Json) -> Json:
    operation, code = body["operation"], body["errorCode"]
    if operation not in ("CREATE", "UPDATE", "DELETE"):
        raise BadControlRequest(f"operation must be CREATE, UPDATE or DELETE, not {operation}")
    if code not in HANDLER_ERROR_CODES:
        raise BadControlRequest(f"errorCode must be a HandlerErrorCode ({', '.join(sorted(HANDLER_ERROR_CODES))})")
    account.faults.failures.append(FailRule(operation, code, body.get("message", f"injected {code}"),
                                            body.get("typeName"), body.get("count")))
    return {}


def _error(account: CloudControl, body: Json) -> Json:
    code = body["code"]
    if code not in EXCEPTIONS and not code.endswith("Exception"):
        raise BadControlRequest(f"code must be an AWS error name such as {sorted(EXCEPTIONS)[0]}, not {code}")
    account.faults.errors.append(ErrorRule(body["operation"], code, body.get("message", f"injected {code}"),
                                           body.get("typeName"), body.get("count")))
    return {}


def _put_resource(account: CloudControl, body: Json) -> Json:
    """A resource made behind the API's back (as if by another tool), at once: for discovery and drift tests."""
    schema = account.registry.schema(body["typeName"])
    check_desired_state(schema, body.get("properties", {}))
    request = account.accept_create(schema, dict(body.get("properties", {})))
    if request.error_code:
        raise BadControlRequest(request.status_message or request.error_code)
    model = request.result or {}
    account.requests.pop(request.token)
    assert request.identifier is not None
    account.resources.setdefault(schema.type_name, {})[request.identifier] = model
    return {"Identifier": request.identifier, "Properties": read_view(schema, model)}


def _delete_resource(account: CloudControl, body: Json) -> Json:
    """A resource removed behind the API's back."""
    removed = account.resources.get(body["typeName"], {}).pop(body["identifier"], None)
    return {"deleted": removed is not None}


_CONTROL: dict[tuple[str, str], Any] = {
    ("GET", "state"): _state,
    ("POST", "reset"): _reset,
    ("POST", "timing"): _timing,
    ("POST", "throttle"): _throttle,
    ("POST", "delay"): _delay,
    ("POST", "fail"): _fail,
    ("POST", "error"): _error,
    ("POST", "resources"): _put_resource,
    ("POST", "resources/delete"): _delete_resource,
}
