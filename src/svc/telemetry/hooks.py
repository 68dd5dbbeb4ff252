"""The engine's telemetry hooks: a module-level switch, so that the engine needs no telemetry object.

Off (no ``activate``), each hook hands its coroutine back untouched: one function call and one global
read per command or resource operation, no span, no allocation, no SQL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from svc.model.records import CommandRecord
    from svc.telemetry.instruments import Instruments

T = TypeVar("T")


class ObservedChange(Protocol):
    """What a resource operation's span says of its change (the planner's ``ResourceChange``): telemetry sits
    below the engine and does not import it."""

    ksuid: str
    operation: str
    type: str
    label: str
    stack: str
    target: str
    namespace: str
    schema: dict[str, Any]
    desired: dict[str, Any] | None
    group_id: str | None


_active: Instruments | None = None


def activate(instruments: Instruments | None) -> None:
    """Turns the hooks on (or off with ``None``)."""
    global _active
    _active = instruments


def traced_command(work: Coroutine[Any, Any, str], command_id: str,
                   command: CommandRecord | None = None) -> Coroutine[Any, Any, str]:
    """``work`` (a command's run, returning its final state) inside the command's trace."""
    active = _active
    return work if active is None else active.command(work, command_id, command)


def traced_operation(work: Awaitable[T], change: ObservedChange) -> Awaitable[T]:
    """``work`` (one resource change's plugin calls, returning its outcome) as a span of the command's trace."""
    active = _active
    return work if active is None else active.operation(work, change)


def traced_job(name: str, work: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
    """One run of a background job (synchronization, discovery…) as its own trace."""
    active = _active
    return work if active is None else active.job(name, work)
