"""The AWS plugin: the six operations of the contract, dispatched to one handler per resource type.

This module does, once for every type, what a handler should not care about: the target's boto3 session
(``session``), boto3's exceptions as the contract's error codes (``errors``), the request-token journal that
makes a repeated create, update or delete answer instead of act (``journal``), read-back after a change,
polling of resources that are not ready yet, "already gone" on delete, and paging of lists.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from svc.plugins.journal import Journal
from svc.plugins.sdk import Ctx, ErrorCode, Json, ListResult, Operation, PluginError, Progress, ReadResult, Status
from svc_plugin_aws.errors import mapped
from svc_plugin_aws.handler import Change, Handler
from svc_plugin_aws.handlers import load_all
from svc_plugin_aws.session import Aws, Sessions


class Plugin:
    def __init__(self) -> None:
        self.plugin_config: Json = {}
        self.handlers: dict[str, Handler] = load_all()
        self.sessions = Sessions()
        self.journal = Journal("AWS")

    def configure(self, plugin_config: Json) -> None:
        self.plugin_config = plugin_config

    # -- helpers ------------------------------------------------------------------------------------------------

    def _handler(self, ctx: Ctx) -> Handler:
        handler = self.handlers.get(ctx.resource_type)
        if handler is None:
            raise PluginError(ErrorCode.INVALID_REQUEST, f"AWS has no resource type {ctx.resource_type}; it has "
                                                         f"{', '.join(sorted(self.handlers))}")
        return handler

    def _aws(self, ctx: Ctx) -> Aws:
        return self.sessions.for_target(ctx.target)

    def _settled(self, handler: Handler, aws: Aws, native_id: str, request_id: str) -> Progress:
        """Success with the read-back properties when the resource is ready, else InProgress (poll ``status``)."""
        properties = handler.read(aws, native_id)
        if properties is None or not handler.ready(aws, native_id, properties):
            return Progress(Status.IN_PROGRESS, native_id=native_id, request_id=request_id)
        return Progress(Status.SUCCESS, native_id=native_id, properties=properties)

    def _mutate(self, ctx: Ctx, op: Operation, native_id: str, act: Callable[[str], Progress]) -> Progress:
        """Runs ``act(request_id)`` under the journal; a refusal is an answer, journaled too."""
        token = ctx.request_token
        if token:
            entry = self.journal.get(token)
            if entry is not None and entry.get("state") == "done":
                return Progress.from_json(entry["result"])
            if entry is not None:
                return Progress.failure(ErrorCode.UNFORESEEN_ERROR, f"an earlier {op} with this request token "
                                        "was interrupted and may have reached AWS; read the resource before "
                                        "trying again", native_id=native_id, operation=op)
        request_id = token or uuid.uuid4().hex
        self.journal.begin(request_id, str(op), native_id)
        try:
            with mapped():
                progress = act(request_id)
        except PluginError as refusal:
            progress = Progress.failure(refusal.code, refusal.message, native_id=native_id, operation=op)
        progress.operation = op
        progress.request_id = request_id
        self.journal.finish(request_id, str(op), progress.native_id or native_id, progress.to_json())
        return progress

    # -- operations ---------------------------------------------------------------------------------------------

    def create(self, ctx: Ctx, label: str, properties: Json) -> Progress:
        handler = self._handler(ctx)
        aws = self._aws(ctx)

        def act(request_id: str) -> Progress:
            native_id = handler.create(aws, label, properties)
            try:
                with mapped():
                    return self._settled(handler, aws, native_id, request_id)
            except PluginError as failure:
                # It exists now: never report a failure that would orphan it; the agent polls ``status``,
                # which reads it again.
                ctx.log.warning("created %s %s but could not read it back yet (%s)", ctx.resource_type,
                                native_id, failure.code)
                return Progress(Status.IN_PROGRESS, native_id=native_id, request_id=request_id)

        return self._mutate(ctx, Operation.CREATE, "", act)

    def read(self, ctx: Ctx, native_id: str, prior: Json | None) -> ReadResult:
        handler = self._handler(ctx)
        try:
            with mapped():
                properties = handler.read(self._aws(ctx), native_id)
        except PluginError as failure:
            return ReadResult(error_code=failure.code, message=failure.message)
        if properties is None:
            return ReadResult(error_code=ErrorCode.NOT_FOUND, message=f"{ctx.resource_type} {native_id} does not exist")
        return ReadResult(properties=properties)

    def update(self, ctx: Ctx, native_id: str, prior: Json, desired: Json, patch: list[Json]) -> Progress:
        handler = self._handler(ctx)
        aws = self._aws(ctx)

        def act(request_id: str) -> Progress:
            if handler.read(aws, native_id) is None:
                raise PluginError(ErrorCode.NOT_FOUND, f"{ctx.resource_type} {native_id} does not exist")
            handler.update(aws, Change(native_id, prior, desired, patch))
            return self._settled(handler, aws, native_id, request_id)

        return self._mutate(ctx, Operation.UPDATE, native_id, act)

    def delete(self, ctx: Ctx, native_id: str) -> Progress:
        handler = self._handler(ctx)
        aws = self._aws(ctx)

        def act(request_id: str) -> Progress:
            try:
                with mapped():
                    handler.delete(aws, native_id)
            except PluginError as failure:
                if failure.code is not ErrorCode.NOT_FOUND:
                    raise
            return Progress(Status.SUCCESS, native_id=native_id)

        return self._mutate(ctx, Operation.DELETE, native_id, act)

    def status(self, ctx: Ctx, request_id: str, native_id: str) -> Progress:
        entry = self.journal.get(request_id)
        if entry is None:
            raise PluginError(ErrorCode.NOT_FOUND, f"no operation {request_id}")
        if entry.get("state") != "done":
            return Progress.failure(ErrorCode.UNFORESEEN_ERROR, f"the {entry.get('op')} with request {request_id} "
                                    "was interrupted and may have reached AWS", native_id=entry.get("nativeId") or "")
        progress = Progress.from_json(entry["result"])
        if progress.status is Status.IN_PROGRESS:  # waiting for the resource to become ready: look again
            handler = self._handler(ctx)
            with mapped():
                progress = self._settled(handler, self._aws(ctx), progress.native_id or native_id, request_id)
            progress.operation = Operation(entry["op"])
            if progress.finished:
                self.journal.finish(request_id, entry["op"], progress.native_id, progress.to_json())
        progress.request_id = request_id
        return progress

    def list(self, ctx: Ctx, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult:
        handler = self._handler(ctx)
        with mapped():
            found = sorted({native_id for native_id in handler.list(self._aws(ctx), filters)})
        # Pages continue after the last id of the previous page: stable while resources come and go.
        remaining = [native_id for native_id in found if page_token is None or native_id > page_token]
        page = remaining[:max(page_size, 1)]
        return ListResult(page, page[-1] if len(remaining) > len(page) else None)
