"""Driving one plugin operation to its end: retries with backoff, status polling, idempotency tokens.

* A recoverable failure is retried after ``retry_delay`` (Throttling: exponential, capped at 30 s) up to
  ``max_retries`` times; each re-issue carries a fresh token (the failed one would replay the failure).
* ``InProgress``/``Pending`` answers are polled with ``status`` every ``status_interval``; polls that
  report progress spend no attempt.
* Every token and request id is handed to ``record`` before the agent waits on it, so a restarted
  agent asks ``status`` about it instead of issuing the call again (``resume``).
* A cancel reaches an operation through its ``Guard``: no call is issued once the command is canceled, and
  a wait for a retry ends at once (``Stopped``); a call already issued goes on (polled to its end).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from svc.plugins.runner import Call, PluginRunner
from svc.plugins.sdk import ErrorCode, Progress, ReadResult, Status, is_recoverable

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


Issue = Callable[[Call], Awaitable[Progress]]
Record = Callable[[Attempt, Progress | None], Awaitable[None]]


async def drive(runner: PluginRunner, call: Call, attempt: Attempt, issue: Issue, policy: RetryPolicy,
                record: Record, step: Step, *, resume: bool = False) -> Progress:
    """Runs ``issue`` (create/update/delete) until it succeeds or fails for good; ``Stopped`` when the command is
    canceled before a call is issued."""
    step.enter()  # a resumed call may be running already
    if resume:
        progress = await _reattach(runner, call, attempt, issue, record)
    else:
        await record(attempt, None)
        progress = await issue(_with_token(call, attempt.token))
    polling = False
    while True:
        if progress.native_id:
            attempt.native_id = progress.native_id
        if progress.status in (Status.IN_PROGRESS, Status.PENDING):
            attempt.request_id = progress.request_id or attempt.request_id or attempt.token
            await record(attempt, progress)
            await asyncio.sleep(policy.status_interval)
            progress = await runner.status(call, attempt.request_id, attempt.native_id)
            polling = True
            continue
        if progress.status is Status.SUCCESS:
            return progress
        if not is_recoverable(progress.error_code) or attempt.number >= policy.max_attempts:
            return progress
        # A status check that failed leaves the operation under way (it is followed to its end); a failed call
        # leaves nothing running until it is issued again.
        repoll = polling and progress.error_code is not ErrorCode.NOT_FOUND
        if not repoll:
            step.leave()
        await record(attempt, progress)
        delay = policy.delay(attempt.number, progress.error_code)
        attempt.number += 1
        if repoll:
            await asyncio.sleep(delay)
            progress = await runner.status(call, attempt.request_id or attempt.token, attempt.native_id)
            continue
        await step.pause(delay)
        step.enter()
        polling = False
        attempt.token = f"{attempt.token.split('.')[0]}.{attempt.number}"
        attempt.request_id = None
        await record(attempt, None)
        progress = await issue(_with_token(call, attempt.token))


async def _reattach(runner: PluginRunner, call: Call, attempt: Attempt, issue: Issue, record: Record) -> Progress:
    """After a restart: the state of the call we may have made, by its request id or token; a plugin
    that never saw the token gets the call now (with the same token, so it still cannot run twice)."""
    progress = await runner.status(call, attempt.request_id or attempt.token, attempt.native_id)
    if progress.status is Status.FAILURE and progress.error_code is ErrorCode.NOT_FOUND and not attempt.request_id:
        await record(attempt, None)
        return await issue(_with_token(call, attempt.token))
    return progress


def _with_token(call: Call, token: str) -> Call:
    return Call(call.resource_type, call.target_config, call.timeout, token)


async def read(runner: PluginRunner, call: Call, native_id: str, prior: dict[str, Any] | None,
               policy: RetryPolicy, *, not_found_ok: bool, step: Step | None = None) -> ReadResult:
    """A Read with retries; ``NotFound`` is an answer (not retried) when ``not_found_ok``. A change's read
    (``step``) is not retried once its command is canceled (``Stopped``)."""
    attempt = 1
    while True:
        result = await runner.read(call, native_id, prior)
        code = result.error_code
        if code is None and result.properties is not None:
            return result
        if code is ErrorCode.NOT_FOUND and not_found_ok:
            return result
        if code is None:
            code = result.error_code = ErrorCode.UNFORESEEN_ERROR
            result.message = result.message or "the plugin's Read returned no properties"
        if not is_recoverable(code) or attempt >= policy.max_attempts:
            return result
        if step is None:
            await asyncio.sleep(policy.delay(attempt, code))
        else:
            await step.pause(policy.delay(attempt, code))
        attempt += 1
