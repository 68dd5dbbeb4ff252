"""What one plugin operation carries through the plugin gateway (``gateway``), besides its arguments.

* ``RetryPolicy``: how often and how fast a failure is retried and a call under way is polled.
* ``Attempt``: the operation's token, attempt number and request id, persisted with the resource update
  before the agent waits on them, so a restarted agent asks ``status`` instead of calling again.
* ``Guard``/``Step``: how a cancel reaches an operation: no call is issued once its command is canceled, and
  a wait for a retry ends at once (``Stopped``); a call already issued goes on (polled to its end).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from svc.plugins.sdk import ErrorCode

MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 9
    retry_delay: float = 10.0
    status_interval: float = 20.0
    call_timeout: float = 60.0

    @property
    def max_attempts(self) -> int:
        return self.max_retries + 1

    def delay(self, attempt: int, code: ErrorCode | None) -> float:
        if code is ErrorCode.THROTTLING:
            return min(self.retry_delay * 2 ** (attempt - 1), MAX_BACKOFF)
        return self.retry_delay


class Stopped(Exception):
    """The command was canceled before this change's next plugin call: nothing more is sent for it."""


@dataclass
class Guard:
    """How a cancel reaches the operations of one command. ``underway`` holds each change from issuing a call
    that may change the cloud until its end, except while it waits to retry a failed call: what a cancel lets
    finish (or, forced, abandons). Every other change of a canceled command stops at its next step, having
    changed nothing (``Stopped``)."""

    stop: asyncio.Event = field(default_factory=asyncio.Event)
    underway: set[str] = field(default_factory=set)

    def halted(self, key: str) -> bool:
        """Whether the command is canceled while ``key`` has no call under way (so it is to end Canceled)."""
        return self.stop.is_set() and key not in self.underway


@dataclass(frozen=True)
class Step:
    """One change's view of its command's ``Guard``."""

    guard: Guard
    key: str

    def check(self) -> None:
        if self.guard.halted(self.key):
            raise Stopped()

    def enter(self) -> None:
        """Before issuing a call that may change the cloud (with no await in between)."""
        self.check()
        self.guard.underway.add(self.key)

    def leave(self) -> None:
        """The call failed: nothing of this change runs until it is issued again."""
        self.guard.underway.discard(self.key)

    async def pause(self, seconds: float) -> None:
        """A wait before a retry. A change under way waits it out (its effect is to be followed to the end);
        any other is woken by a cancel and stops."""
        if self.key in self.guard.underway:
            await asyncio.sleep(seconds)
            return
        try:
            await asyncio.wait_for(self.guard.stop.wait(), seconds)
        except TimeoutError:
            pass
        self.check()


@dataclass
class Attempt:
    """What is persisted about the operation in flight (JSON: it goes into the resource update's data)."""

    op: str
    token: str
    number: int = 1
    request_id: str | None = None
    native_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "token": self.token, "number": self.number, "request_id": self.request_id,
                "native_id": self.native_id}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Attempt:
        return cls(document["op"], document["token"], int(document.get("number", 1)), document.get("request_id"),
                   document.get("native_id") or "")
