"""What route handlers take from the request: the datastore, the command service, the caller."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request

from svc.api.problems import bad_request
from svc.datastore import Datastore
from svc.engine.service import Caller, CommandService

T = TypeVar("T")

CLIENT_ID_HEADER = "Client-ID"
_MAX_CLIENT_ID = 128


def datastore(request: Request) -> Datastore:
    return request.app.state.datastore


def service(request: Request) -> CommandService:
    return request.app.state.service


def caller(request: Request, *, required: bool = True) -> Caller:
    """The CLI's persistent id (``Client-ID``: required on command endpoints; elsewhere, as on ``POST
    /stacks/{stack}/reconcile`` which the original clients call without one, it may be absent: "") and the
    authenticated user."""
    client_id = request.headers.get(CLIENT_ID_HEADER, "").strip()
    if not client_id and required:
        raise bad_request("Client-ID header is required")
    if len(client_id) > _MAX_CLIENT_ID or not client_id.isprintable():  # "" is printable
        raise bad_request(f"Client-ID header must be at most {_MAX_CLIENT_ID} printable characters")
    subject = request.scope.get("state", {}).get("subject")
    return Caller(client_id=client_id, subject=subject)


async def in_thread(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Runs a (synchronous) datastore call on a worker thread: the event loop never waits on SQL."""
    return await asyncio.to_thread(function, *args, **kwargs)


def max_results(raw: str | None, *, default: int, ceiling: int | None) -> int:
    """``max_results`` as the reference reads it: an integer, clamped to ``ceiling``; 0 means no limit
    where there is no ceiling."""
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"max_results must be an integer, got {raw!r}") from None
    if value < 0:
        raise bad_request(f"max_results must not be negative, got {value}")
    if ceiling is not None:
        return min(value or ceiling, ceiling)
    return value
