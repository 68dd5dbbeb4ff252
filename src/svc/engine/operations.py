"""Driving one plugin operation to its end: retries with backoff, status polling, idempotency tokens.

* A recoverable failure is retried after ``retry_delay`` (Throttling: exponential, capped at 30 s) up to
  ``max_retries`` times; each re-issue carries a fresh token (the failed one would replay the failure).
* ``InProgress``/``Pending`` answers are polled with ``status`` every ``status_interval``; polls that
  report progress spend no attempt.
* Every token and request id is handed to ``record`` before the agent waits on it, so a restarted
  agent asks ``status`` about it instead of issuing the call again (``resume``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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
                record: Record, *, resume: bool = False) -> Progress:
    """Runs ``issue`` (create/update/delete) until it succeeds or fails for good."""
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
        await record(attempt, progress)
        await asyncio.sleep(policy.delay(attempt.number, progress.error_code))
        attempt.number += 1
        if polling and progress.error_code is not ErrorCode.NOT_FOUND:
            progress = await runner.status(call, attempt.request_id or attempt.token, attempt.native_id)
            continue
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
               policy: RetryPolicy, *, not_found_ok: bool) -> ReadResult:
    """A Read with retries; ``NotFound`` is an answer (not retried) when ``not_found_ok``."""
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
        await asyncio.sleep(policy.delay(attempt, code))
        attempt += 1
