"""The plugin gateway: the one place the engine calls plugins.

The executor (through ``change_execution``), synchronization and discovery reach a plugin only through here: its runner
by namespace (as a change or a target spells it), its retry policy and its rate limits, and every call with
its retries and status polling. So a runner is looked up, a ``Call`` built and a failure retried in one way,
whoever asks. The runners themselves (``svc.plugins.runner``: in process, or ``svc.plugins.host``: in a
process of their own) share one error mapping; the gateway sees only their protocol.

* ``drive`` (create, update, delete): a recoverable failure is retried after ``retry_delay`` (Throttling:
  exponential, capped at 30 s) up to ``max_retries`` times; each re-issue carries a fresh token (the failed
  one would replay the failure). ``InProgress``/``Pending`` answers are polled with ``status`` every
  ``status_interval``; polls that report progress spend no attempt. A poll that fails is polled again; an
  operation the poll reports ended failed is issued again like a failed call. Every token and request id is handed to
  ``record`` before the agent waits on it, so a restarted agent asks ``status`` about it instead of issuing
  the call again (``resume``). A cancel reaches an operation through its command's ``Guard``
  (``operations``): no call is issued once the command is canceled, and a wait for a retry ends at once
  (``Stopped``); a call already issued goes on (polled to its end).
* ``read`` and ``list`` retry recoverable failures the same way; a read's ``NotFound`` may be an answer.
* Rate limits: the caller decides what one token covers (``PluginAccess.dispatch``): a resource change's
  whole plugin work, one background read, one page of a listing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from svc.engine.operations import Attempt, RetryPolicy, Step
from svc.engine.ratelimit import NamespaceLimits
from svc.plugins.runner import Call, PluginCallError, PluginRunner
from svc.plugins.sdk import ErrorCode, ListResult, Operation, Progress, ReadResult, Status, is_recoverable

Json = dict[str, Any]
Record = Callable[[Attempt, Progress | None], Awaitable[None]]
_Issue = Callable[[Call], Awaitable[Progress]]

log = logging.getLogger("svc.engine.gateway")


@dataclass(frozen=True)
class PluginLimits:
    """What the agent config says about one plugin's calls: its rate, its in-flight cap, its retries (None: the
    agent's)."""

    requests_per_second: float = 10.0
    max_in_flight: int = 32
    retry: RetryPolicy | None = None


class ChangeGate:
    """Whether this agent may change the cloud now: always, unless its leadership installs a ``check`` (an agent
    sharing its datastore with others must hold the lease, so that one paused past its lease issues no call)."""

    __slots__ = ("check",)

    def __init__(self) -> None:
        self.check: Callable[[], Awaitable[None]] | None = None

    async def passage(self) -> None:
        if self.check is not None:
            await self.check()


class PluginAccess:
    """One plugin as the gateway serves it: its runner, retry policy and limits, looked up once."""

    __slots__ = ("namespace", "runner", "policy", "limits", "gate", "_warned")

    def __init__(self, runner: PluginRunner, policy: RetryPolicy, limits: NamespaceLimits, gate: ChangeGate) -> None:
        self.namespace = runner.namespace
        self.runner = runner
        self.policy = policy
        self.limits = limits
        self.gate = gate
        self._warned: set[str] = set()

    def warn_once(self, subject: str, message: str) -> None:
        """Logs a warning about this plugin's answers once per ``subject`` (e.g. a resource type) for the
        agent's life: a plugin's mistake repeats on every call, and the log should say it, not drown in it."""
        if subject not in self._warned:
            self._warned.add(subject)
            log.warning("%s", message)

    def dispatch(self) -> NamespaceLimits:
        """``async with plugin.dispatch():`` holds one of the namespace's in-flight slots and one rate-limit
        token for the work inside it."""
        return self.limits

    def _call(self, resource_type: str, target_config: Mapping[str, Any]) -> Call:
        return Call(resource_type, dict(target_config), self.policy.call_timeout)

    # -- operations that change the cloud --------------------------------------------------------------------
    # Each returns its ``_drive`` coroutine instead of awaiting it: one frame less on every change's path.

    def create(self, resource_type: str, target_config: Mapping[str, Any], label: str, properties: Json,
               attempt: Attempt, record: Record, step: Step, *, resume: bool = False) -> Awaitable[Progress]:
        runner = self.runner

        async def issue(call: Call) -> Progress:
            return await runner.create(call, label, properties)

        return self._drive(self._call(resource_type, target_config), attempt, issue, record, step, resume)

    def update(self, resource_type: str, target_config: Mapping[str, Any], native_id: str, prior: Json,
               desired: Json, patch: list[Json], attempt: Attempt, record: Record, step: Step, *,
               resume: bool = False) -> Awaitable[Progress]:
        runner = self.runner

        async def issue(call: Call) -> Progress:
            return await runner.update(call, native_id, prior, desired, patch)

        return self._drive(self._call(resource_type, target_config), attempt, issue, record, step, resume)

    def delete(self, resource_type: str, target_config: Mapping[str, Any], native_id: str, attempt: Attempt,
               record: Record, step: Step, *, resume: bool = False) -> Awaitable[Progress]:
        runner = self.runner

        async def issue(call: Call) -> Progress:
            return await runner.delete(call, native_id)

        return self._drive(self._call(resource_type, target_config), attempt, issue, record, step, resume)

    async def _drive(self, call: Call, attempt: Attempt, issue: _Issue, record: Record, step: Step,
                     resume: bool) -> Progress:
        """Runs ``issue`` until it succeeds or fails for good; ``Stopped`` when the command is canceled before a
        call is issued."""
        runner, policy = self.runner, self.policy
        step.enter()  # a resumed call may be running already
        if resume:
            progress = await self._reattach(call, attempt, issue, record)
        else:
            await record(attempt, None)
            await self.gate.passage()
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
            # A status check that failed (the plugin's ``status`` raised: the failure's operation is Status) leaves
            # the operation under way (it is followed to its end); a failed call, or an operation the plugin says
            # ended failed (a provider's request that failed throttled, say), leaves nothing running until it is
            # issued again.
            repoll = polling and progress.operation is Operation.STATUS \
                and progress.error_code is not ErrorCode.NOT_FOUND
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
            await self.gate.passage()
            progress = await issue(_with_token(call, attempt.token))

    async def _reattach(self, call: Call, attempt: Attempt, issue: _Issue, record: Record) -> Progress:
        """After a restart: the state of the call we may have made, by its request id or token; a plugin that
        never saw the token gets the call now (with the same token, so it still cannot run twice)."""
        progress = await self.runner.status(call, attempt.request_id or attempt.token, attempt.native_id)
        if progress.status is Status.FAILURE and progress.error_code is ErrorCode.NOT_FOUND and not attempt.request_id:
            await record(attempt, None)
            await self.gate.passage()
            return await issue(_with_token(call, attempt.token))
        return progress

    # -- reads ------------------------------------------------------------------------------------------------

    async def read(self, resource_type: str, target_config: Mapping[str, Any], native_id: str, prior: Json | None,
                   *, not_found_ok: bool, step: Step | None = None) -> ReadResult:
        """A Read with retries; ``NotFound`` is an answer (not retried) when ``not_found_ok``. A change's read
        (``step``) is not retried once its command is canceled (``Stopped``)."""
        runner, policy = self.runner, self.policy
        call = self._call(resource_type, target_config)
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

    async def list(self, resource_type: str, target_config: Mapping[str, Any], page_size: int,
                   page_token: str | None, filters: Mapping[str, str]) -> ListResult:
        """One page of a listing, with retries; each attempt takes its own slot and token (none is held while
        waiting to retry). ``PluginCallError`` when it fails for good."""
        call = self._call(resource_type, target_config)
        attempt = 1
        while True:
            try:
                async with self.limits:
                    return await self.runner.list(call, page_size, page_token, dict(filters))
            except PluginCallError as error:
                if not is_recoverable(error.code) or attempt >= self.policy.max_attempts:
                    raise
                await asyncio.sleep(self.policy.delay(attempt, error.code))
                attempt += 1


def _with_token(call: Call, token: str) -> Call:
    return Call(call.resource_type, call.target_config, call.timeout, token)


class PluginGateway:
    """The enabled plugins by namespace (matched case-insensitively), each with its policy and limits."""

    def __init__(self, runners: Mapping[str, PluginRunner], *, retry: RetryPolicy | None = None,
                 plugins: Mapping[str, PluginLimits] | None = None) -> None:
        self.runners = dict(runners)
        self._retry = retry or RetryPolicy()
        self.gate = ChangeGate()  # every plugin's creates, updates and deletes pass it
        configured = {name.upper(): limits for name, limits in (plugins or {}).items()}
        self._plugins: dict[str, PluginAccess] = {}  # by namespace upper-cased, and as callers spell it
        for name, runner in self.runners.items():
            self._plugins[name.upper()] = self._access(runner, configured.get(name.upper()) or PluginLimits())

    def _access(self, runner: PluginRunner, limits: PluginLimits) -> PluginAccess:
        return PluginAccess(runner, limits.retry or self._retry,
                            NamespaceLimits(limits.requests_per_second, limits.max_in_flight), self.gate)

    async def add(self, runner: PluginRunner, limits: PluginLimits) -> None:
        """Starts a plugin installed while the agent runs and serves its namespace from now on."""
        await runner.start()
        self.runners[runner.namespace] = runner
        self._plugins[runner.namespace.upper()] = self._access(runner, limits)

    async def remove(self, namespace: str) -> None:
        """Stops serving ``namespace`` (every spelling a caller used) and closes its plugin."""
        removed = [name for name in self.runners if name.upper() == namespace.upper()]
        for key in [key for key, access in self._plugins.items() if access.namespace.upper() == namespace.upper()]:
            del self._plugins[key]
        for name in removed:
            await self.runners.pop(name).close()

    def find(self, namespace: str) -> PluginAccess | None:
        """The plugin serving ``namespace``; None when no enabled plugin does."""
        found = self._plugins.get(namespace)
        if found is None:
            found = self._plugins.get(namespace.upper())
            if found is not None:  # asked for every resource change: the spelling is remembered
                self._plugins[namespace] = found
        return found

    def plugin(self, namespace: str) -> PluginAccess:
        """The plugin serving ``namespace``; ``LookupError`` when no enabled plugin does."""
        found = self._plugins.get(namespace)  # the common case, a few times per resource change
        if found is None:
            found = self.find(namespace)
            if found is None:
                raise LookupError(f"no plugin serves namespace {namespace!r}")
        return found

    async def start(self) -> None:
        for runner in self.runners.values():
            await runner.start()  # a plugin process that cannot start stops the agent with its reason

    async def close(self) -> None:
        for runner in self.runners.values():
            await runner.close()

    def rates(self) -> dict[str, float]:
        """Each plugin's rate limit in requests per second, by namespace upper-cased: the user's, else the one
        its manifest declares, else the agent's default."""
        return {name.upper(): access.limits.bucket.rate for name, access in self._plugins.items()}

    def processes(self) -> dict[str, Json]:
        """Each running plugin's process, by namespace upper-cased (``GET /plugins``): the host's description,
        or, for a plugin loaded in the agent's process, that it runs there."""
        described: dict[str, Json] = {}
        for name, runner in self.runners.items():
            describe = getattr(runner, "describe", None)
            described[name.upper()] = describe() if callable(describe) else {"state": "running", "inProcess": True}
        return described
