"""The FAKE plugin: the six operations over a ``FakeCloud`` file, under the knobs (``_Gate``).

Every mutating call is idempotent by ``ctx.request_token``: the operation is stored under the token in
the same transaction as its effect, so a repeated token returns the first answer instead of acting
twice, and ``status(token)`` tells whether a call ever arrived (``NotFound`` if not).

The operations are coroutines: latency and hangs are asyncio sleeps, so a thousand calls in flight cost no
threads, and each call's SQLite work is one short transaction on the event loop. (Run on a thread pool, the
calls' GIL hand-offs made the plugin, not the engine, the limit of the latency benchmark.) A call acts when it
arrives and answers when its latency is over, so the calls a wave of answers starts are acted on while the
others of the wave are still being answered, instead of all after them.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from types import TracebackType
from typing import Any

import jsonpatch

from svc import jsontext
from svc.plugins.sdk import Ctx, ErrorCode, ListResult, Operation, PluginError, Progress, ReadResult, Status
from svc_plugin_fake.cloud import FakeCloud, new_native_id
from svc_plugin_fake.types import TypeSpec, spec

_HANG_GRACE = 5.0  # a hung call gives up this long after its deadline, even if nobody cancels it


class Plugin:
    def __init__(self) -> None:
        self._clouds: dict[str, FakeCloud] = {}

    def configure(self, plugin_config: dict[str, Any]) -> None:
        self.plugin_config = plugin_config

    # -- helpers -------------------------------------------------------------------------------------------

    def _cloud(self, ctx: Ctx) -> FakeCloud:
        path = ctx.target.get("Path")
        if not path:
            raise PluginError(ErrorCode.INVALID_CREDENTIALS, "the FAKE target config has no Path")
        cloud = self._clouds.get(path)
        if cloud is None:
            cloud = self._clouds[path] = FakeCloud(path)
        return cloud

    @staticmethod
    def _spec(ctx: Ctx) -> TypeSpec:
        found = spec(ctx.resource_type)
        if found is None:
            raise PluginError(ErrorCode.INVALID_REQUEST, f"FAKE has no resource type {ctx.resource_type}")
        return found

    @staticmethod
    def _log(conn: sqlite3.Connection, op: str, ctx: Ctx, subject: str) -> None:
        conn.execute("INSERT INTO calls (op, type, subject, token, at) VALUES (?, ?, ?, ?, ?)",
                     (op, ctx.resource_type, subject, ctx.request_token, time.time()))

    @staticmethod
    def _view(spec_: TypeSpec, properties: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in properties.items() if key not in spec_.write_only}

    def _replay(self, conn: sqlite3.Connection, token: str | None) -> Progress | None:
        if not token:
            return None
        row = conn.execute("SELECT polls_left, result, native_id FROM operations WHERE request_id = ?",
                           (token,)).fetchone()
        if row is None:
            return None
        if row[0] > 0:
            return Progress(Status.IN_PROGRESS, native_id=row[2], request_id=token)
        return Progress.from_json(jsontext.loads(row[1]))

    # -- operations ----------------------------------------------------------------------------------------

    async def create(self, ctx: Ctx, label: str, properties: dict[str, Any]) -> Progress:
        cloud, spec_ = self._cloud(ctx), self._spec(ctx)
        async with _Gate(cloud, ctx, "create", label) as gate:
            with cloud.transaction() as conn:
                if (replay := self._replay(conn, ctx.request_token)) is not None:
                    return replay
                self._log(conn, "create", ctx, label)
                if spec_.id_prefix is None:
                    native_id = str(properties.get(spec_.id_field) or "")
                    if not native_id:
                        raise PluginError(ErrorCode.INVALID_REQUEST, f"{spec_.id_field} is required")
                    taken = conn.execute("SELECT 1 FROM resources WHERE native_id = ?", (native_id,)).fetchone()
                    if taken:
                        return gate.finish(conn, native_id, Progress.failure(
                            ErrorCode.ALREADY_EXISTS, f"{native_id} already exists", operation=Operation.CREATE))
                else:
                    native_id = new_native_id(spec_.id_prefix)
                stored = _with_id({**spec_.defaults, **properties}, spec_.id_field, native_id)
                conn.execute("INSERT INTO resources VALUES (?, ?, ?, ?)",
                             (native_id, ctx.resource_type, jsontext.dumps(stored), time.time()))
                if _matches(gate.knobs.get("anonymous"), "create", ctx, label):
                    answer = Progress(Status.SUCCESS, operation=Operation.CREATE)
                else:
                    view = self._view(spec_, stored)
                    if _matches(gate.knobs.get("raw_keys"), "create", ctx, label):
                        view = {key[:1].lower() + key[1:]: value for key, value in view.items()}
                    answer = Progress(Status.SUCCESS, native_id=native_id if spec_.answers_id else "",
                                      operation=Operation.CREATE, properties=view)
                return gate.finish(conn, native_id, answer)

    async def read(self, ctx: Ctx, native_id: str, prior: dict[str, Any] | None) -> ReadResult:
        cloud, spec_ = self._cloud(ctx), self._spec(ctx)
        async with _Gate(cloud, ctx, "read"):
            found = cloud.get(native_id)
            if found is None or found["type"] != ctx.resource_type:
                return ReadResult(error_code=ErrorCode.NOT_FOUND, message=f"{native_id} does not exist")
            return ReadResult(properties=self._view(spec_, found["properties"]))

    async def update(self, ctx: Ctx, native_id: str, prior: dict[str, Any], desired: dict[str, Any],
               patch: list[dict[str, Any]]) -> Progress:
        cloud, spec_ = self._cloud(ctx), self._spec(ctx)
        async with _Gate(cloud, ctx, "update") as gate:
            with cloud.transaction() as conn:
                if (replay := self._replay(conn, ctx.request_token)) is not None:
                    return replay
                self._log(conn, "update", ctx, native_id)
                row = conn.execute("SELECT properties FROM resources WHERE native_id = ?", (native_id,)).fetchone()
                if row is None:
                    return gate.finish(conn, native_id, Progress.failure(
                        ErrorCode.NOT_FOUND, f"{native_id} does not exist", native_id=native_id,
                        operation=Operation.UPDATE))
                touched = {_top(op["path"]) for op in patch}
                if blocked := sorted(touched & spec_.create_only):
                    return gate.finish(conn, native_id, Progress.failure(
                        ErrorCode.NOT_UPDATABLE, f"cannot update create-only {', '.join(blocked)}",
                        native_id=native_id, operation=Operation.UPDATE))
                current = jsontext.loads(row[0])
                for key in spec_.forget_unless_resent - touched:
                    current.pop(key, None)
                try:
                    updated = jsonpatch.apply_patch(current, patch)
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
                    return gate.finish(conn, native_id, Progress.failure(
                        ErrorCode.INVALID_REQUEST, f"bad patch: {error}", native_id=native_id,
                        operation=Operation.UPDATE))
                conn.execute("UPDATE resources SET properties = ? WHERE native_id = ?",
                             (jsontext.dumps(updated), native_id))
                return gate.finish(conn, native_id, Progress(
                    Status.SUCCESS, native_id=native_id, operation=Operation.UPDATE,
                    properties=self._view(spec_, updated)))

    async def delete(self, ctx: Ctx, native_id: str) -> Progress:
        cloud = self._cloud(ctx)
        async with _Gate(cloud, ctx, "delete") as gate:
            with cloud.transaction() as conn:
                if (replay := self._replay(conn, ctx.request_token)) is not None:
                    return replay
                self._log(conn, "delete", ctx, native_id)
                conn.execute("DELETE FROM resources WHERE native_id = ?", (native_id,))  # gone already: success
                return gate.finish(conn, native_id,
                                    Progress(Status.SUCCESS, native_id=native_id, operation=Operation.DELETE))

    async def status(self, ctx: Ctx, request_id: str, native_id: str) -> Progress:
        cloud = self._cloud(ctx)
        async with _Gate(cloud, ctx, "status"):
            with cloud.transaction() as conn:
                row = conn.execute("SELECT polls_left, result, native_id FROM operations WHERE request_id = ?",
                                   (request_id,)).fetchone()
                if row is None:
                    raise PluginError(ErrorCode.NOT_FOUND, f"no operation {request_id}")
                if row[0] > 0:
                    conn.execute("UPDATE operations SET polls_left = polls_left - 1 WHERE request_id = ?",
                                 (request_id,))
                    return Progress(Status.IN_PROGRESS, native_id=row[2], request_id=request_id)
                result = Progress.from_json(jsontext.loads(row[1]))
                result.request_id = request_id
                return result

    async def list(self, ctx: Ctx, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult:
        cloud = self._cloud(ctx)
        self._spec(ctx)  # an unknown type is an InvalidRequest
        async with _Gate(cloud, ctx, "list"):
            start = int(page_token or 0)
            if filters:  # a child type listed by its parent's value
                found = cloud.resources(ctx.resource_type)
                ids = sorted(native_id for native_id, resource in found.items()
                             if all(str(resource["properties"].get(key)) == value for key, value in filters.items()))
                ids = ids[start:start + page_size + 1]
            else:
                ids = cloud.native_ids(ctx.resource_type, offset=start, limit=page_size + 1)
            more = len(ids) > page_size
            return ListResult(ids[:page_size], str(start + page_size) if more else None)


class _Gate:
    """One call under the knobs (``async with``): a hang holds it before anything happens; then a throttle or
    fail knob refuses it, or its effect is made (the body); the answer comes once the latency has passed since
    it arrived. A slow API acts when a request arrives and answers late, so the cloud holds what a call did
    while the caller still waits, which is when an agent or plugin crash leaves it to be adopted."""

    __slots__ = ("arrived", "cloud", "ctx", "delay", "knobs", "label", "op")

    def __init__(self, cloud: FakeCloud, ctx: Ctx, op: str, label: str | None = None) -> None:
        self.cloud, self.ctx, self.op, self.label = cloud, ctx, op, label
        self.arrived = time.monotonic()
        self.knobs = cloud.knobs()
        latency = self.knobs.get("latency") or {}
        self.delay = float(latency.get(op, latency.get("*", 0)) or 0)

    async def __aenter__(self) -> _Gate:
        if _matches(self.knobs.get("hang"), self.op, self.ctx, self.label):
            give_up = (self.ctx.deadline or time.monotonic() + 60) + _HANG_GRACE
            while time.monotonic() < give_up and _matches(self.cloud.knobs().get("hang"), self.op, self.ctx,
                                                          self.label):
                await asyncio.sleep(0.05)
            self.knobs = self.cloud.knobs()  # as they are when it goes on
        if "throttle" in self.knobs or "fail" in self.knobs:
            try:
                self._inject()
            except PluginError:  # ``__aexit__`` does not run when entering fails
                await _until(self.arrived + self.delay)
                raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        if kind is None or issubclass(kind, PluginError):  # a refusal takes as long as an answer
            await _until(self.arrived + self.delay)

    def _inject(self) -> None:
        """Raises the failure a throttle or fail knob injects into this call, counting it down."""
        cloud, op = self.cloud, self.op
        error: ErrorCode | None = None
        with cloud.transaction() as conn:  # the countdown commits before the failure is raised
            knobs = cloud.knobs()  # again, now that no other call can count down
            for name, code in (("throttle", ErrorCode.THROTTLING), ("fail", None)):
                knob = knobs.get(name)
                if knob is None or not _matches(knob, op, self.ctx, self.label):
                    continue
                remaining = int(knob.get("remaining", -1))
                if remaining == 0:
                    continue
                if remaining > 0:
                    cloud.store_knob(conn, name, {**knob, "remaining": remaining - 1})
                error = code or ErrorCode(knob.get("code", "GeneralServiceException"))
                break
        if error is not None:
            raise _Injected(error, f"FAKE injected {error} on {op}")

    def finish(self, conn: sqlite3.Connection, native_id: str, result: Progress) -> Progress:
        """Stores the operation under its token; answers InProgress when the in_progress knob says so."""
        ctx = self.ctx
        token = ctx.request_token or uuid.uuid4().hex
        knob = self.knobs.get("in_progress")
        polls = 0
        if knob and result.status is Status.SUCCESS and _matches(knob, self.op, ctx, None):
            polls = int(knob.get("polls", 0))
        conn.execute("INSERT INTO operations VALUES (?, ?, ?, ?, ?, ?)",
                     (token, self.op, ctx.resource_type, native_id, polls, jsontext.dumps(result.to_json())))
        if polls > 0:
            return Progress(Status.IN_PROGRESS, native_id=native_id, request_id=token,
                            operation=result.operation)
        result.request_id = token
        return result


async def _until(moment: float) -> None:
    if (left := moment - time.monotonic()) > 0:
        await asyncio.sleep(left)


class _Injected(PluginError):
    """A failure the knobs injected (a PluginError: the agent sees a coded failure)."""


def _matches(knob: dict[str, Any] | None, op: str, ctx: Ctx, label: str | None) -> bool:
    if not knob:
        return False
    if (ops := knob.get("ops")) and op not in ops:
        return False
    if (types := knob.get("types")) and ctx.resource_type not in types:
        return False
    if (labels := knob.get("labels")) and label not in labels:
        return False
    return True


def _with_id(properties: dict[str, Any], id_field: str, native_id: str) -> dict[str, Any]:
    """``properties`` with the native id set at ``id_field`` (dotted: inside an object)."""
    *parents, leaf = id_field.split(".")
    holder = properties
    for step in parents:
        holder[step] = dict(holder.get(step) or {})
        holder = holder[step]
    holder[leaf] = native_id
    return properties


def _top(path: str) -> str:
    return path.split("/")[1].replace("~1", "/").replace("~0", "~") if path.count("/") else path
