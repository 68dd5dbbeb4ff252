"""The command service: what the HTTP API asks of the engine.

The API parses and authenticates requests, then calls one of these methods and serialises the
returned wire objects (``svc.model.wire``). Refusals are ``svc.engine.errors.EngineError``; a lost
datastore is ``svc.datastore.DatastoreUnavailable`` (HTTP 503).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from svc.model import wire
from svc.model.forma import Forma


@dataclass(frozen=True)
class Caller:
    """Who sent the request: the CLI's persistent ``Client-ID`` and the authenticated user; ``source`` is
    ``user`` for requests, or the background job (``stack-expirer``, ``auto-reconciler``) acting itself."""

    client_id: str
    subject: str | None = None
    source: str = "user"


@dataclass(frozen=True)
class ApplyRequest:
    forma: Forma
    mode: Literal["reconcile", "patch"]
    simulate: bool = False
    force: bool = False


@dataclass(frozen=True)
class DestroyRequest:
    """Destroy the resources of ``forma``, or the managed resources matching ``query``."""

    forma: Forma | None = None
    query: str | None = None
    simulate: bool = False
    on_dependents: Literal["abort", "cascade"] = "abort"


class CommandService(Protocol):
    async def apply(self, request: ApplyRequest, caller: Caller) -> wire.SubmitCommandResponse:
        """Plans (and unless simulating, stores and starts) an apply; ``ChangesRequired`` false = no-op."""

    async def destroy(self, request: DestroyRequest, caller: Caller) -> wire.SubmitCommandResponse: ...

    async def command(self, command_id: str, *, summary: bool = False,
                      updated_since: datetime | None = None) -> wire.CommandView | None:
        """``summary``: each resource update reduced to its identity, operation, state and error; with
        ``updated_since``, only the updates whose state was written since then."""

    async def await_end(self, command_id: str, timeout: float) -> None:
        """Returns once the command's execution in this agent has ended, or after ``timeout`` seconds."""

    async def commands(self, query: str, caller: Caller, *, scope: Literal["client", "agent"],
                       max_results: int) -> list[wire.CommandView]:
        """Newest first; only user commands (not sync/discovery). Empty query + client scope = the
        caller's latest command."""

    async def cancel(self, query: str, caller: Caller, *, force: bool) -> wire.CancelCommandResponse | None:
        """``None`` when nothing was in progress to cancel."""
