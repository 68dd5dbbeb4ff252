"""The AWS plugin: the six operations of the contract, dispatched to one handler per resource type.

This module does, once for every type, what a handler should not care about: the handler of the type
(``routing``: native or Cloud Control), the target's boto3 session (``session``), boto3's exceptions as the
contract's error codes (``errors``), the request-token journal that makes a repeated create, update or delete
answer instead of act (``journal``), read-back after a change, polling (of resources that are not ready yet,
and of requests a provider finishes after its call returned), "already gone" on delete, and paging of lists.

An interrupted call (the process died between journaling it and its answer) is refused when repeated, since it
may have reached AWS, unless the handler's provider keeps the token itself (Cloud Control's ClientToken): then
``status`` says the call is unknown and the agent's host sends it again with the same token, which the provider
answers with its first request instead of acting twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from svc.plugins.journal import Journal
from svc.plugins.sdk import Ctx, ErrorCode, Json, ListResult, Operation, PluginError, Progress, ReadResult, Status
from svc_plugin_aws.errors import mapped
from svc_plugin_aws.handler import Change, Handler, RequestFailed, Started
from svc_plugin_aws.routing import Routes
from svc_plugin_aws.session import Aws, Sessions


class Plugin:
    def __init__(self) -> None:
        self.plugin_config: Json = {}
        self.routes = Routes()
        self.sessions = Sessions()
        self.journal = Journal("AWS")

    def configure(self, plugin_config: Json) -> None:
        self.plugin_config = plugin_config

    # -- helpers ------------------------------------------------------------------------------------------------

    def _handler(self, ctx: Ctx) -> Handler:
        if not ctx.resource_type.startswith("AWS::") or ctx.resource_type.count("::") != 2:
            raise PluginError(ErrorCode.INVALID_REQUEST, f"{ctx.resource_type!r} is not an AWS resource type; "
                                                         "write it as AWS::<Service>::<Resource>")
        return self.routes.handler(ctx.resource_type)

    def _aws(self, ctx: Ctx) -> Aws:
        return self.sessions.for_target(ctx.target)

    def _settled(self, handler: Handler, aws: Aws, native_id: str, request_id: str) -> Progress:
        """Success with the read-back properties when the resource is ready, else InProgress (poll ``status``)."""
        properties = handler.read(aws, native_id)
        if properties is None or not handler.ready(aws, native_id, properties):
            return Progress(Status.IN_PROGRESS, native_id=native_id, request_id=request_id)
        return Progress(Status.SUCCESS, native_id=native_id, properties=properties)

    def _after(self, handler: Handler, aws: Aws, op: Operation, started: Started, request_id: str) -> Progress:
        """The answer once the provider finished the work: a deletion is done, a resource is read back."""
        if op is Operation.DELETE:
            return Progress(Status.SUCCESS, native_id=started.native_id)
        return self._settled(handler, aws, started.native_id, request_id)

    def _mutate(self, ctx: Ctx, op: Operation, native_id: str, act: Callable[[str], Started],
                handler: Handler, aws: Aws) -> Progress:
        """Runs ``act(request_id)`` under the journal; a refusal is an answer, journaled too. A provider still at
        work answers InProgress and its request is journaled, for ``status`` to follow."""
        token = ctx.request_token
        if token:
            entry = self.journal.get(token)
            if entry is not None and entry.get("state") == "done":
                return Progress.from_json(entry["result"])
            if entry is not None and not handler.provider_keeps_tokens:
                return Progress.failure(ErrorCode.UNFORESEEN_ERROR, f"an earlier {op} with this request token "
                                        "was interrupted and may have reached AWS; read the resource before "
                                        "trying again", native_id=native_id, operation=op)
        request_id = token or uuid.uuid4().hex
        self.journal.begin(request_id, str(op), native_id)
        follow = ""
        try:
            with mapped():
                started = act(request_id)
            if started.request:
                follow = started.request
                progress = Progress(Status.IN_PROGRESS, native_id=started.native_id, request_id=request_id)
            else:
                progress = self._finished(ctx, handler, aws, op, started, request_id)
        except PluginError as refusal:
            progress = Progress.failure(refusal.code, refusal.message, native_id=native_id, operation=op)
        progress.operation = op
        progress.request_id = request_id
        self.journal.finish(request_id, str(op), progress.native_id or native_id, progress.to_json(), follow=follow)
        return progress

    def _finished(self, ctx: Ctx, handler: Handler, aws: Aws, op: Operation, started: Started,
                  request_id: str) -> Progress:
        try:
            with mapped():
                return self._after(handler, aws, op, started, request_id)
        except PluginError as failure:
            # It exists now: never report a failure that would orphan it; the agent polls ``status``, which
            # reads it again.
            ctx.log.warning("%s of %s %s done, but it could not be read back yet (%s)", op, ctx.resource_type,
                            started.native_id, failure.code)
            return Progress(Status.IN_PROGRESS, native_id=started.native_id, request_id=request_id)

    # -- operations ---------------------------------------------------------------------------------------------

    def create(self, ctx: Ctx, label: str, properties: Json) -> Progress:
        handler = self._handler(ctx)
        aws = self._aws(ctx)
        return self._mutate(ctx, Operation.CREATE, "",
                            lambda request_id: handler.start_create(aws, label, properties, request_id), handler, aws)

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

        def act(request_id: str) -> Started:
            if handler.read(aws, native_id) is None:
                raise PluginError(ErrorCode.NOT_FOUND, f"{ctx.resource_type} {native_id} does not exist")
            return handler.start_update(aws, Change(native_id, prior, desired, patch), request_id)

        return self._mutate(ctx, Operation.UPDATE, native_id, act, handler, aws)

    def delete(self, ctx: Ctx, native_id: str) -> Progress:
        handler = self._handler(ctx)
        aws = self._aws(ctx)

        def act(request_id: str) -> Started:
            try:
                with mapped():
                    return handler.start_delete(aws, native_id, request_id)
            except PluginError as failure:
                if failure.code is not ErrorCode.NOT_FOUND:
                    raise
            return Started(native_id)

        return self._mutate(ctx, Operation.DELETE, native_id, act, handler, aws)

    def status(self, ctx: Ctx, request_id: str, native_id: str) -> Progress:
        entry = self.journal.get(request_id)
        if entry is None:
            raise PluginError(ErrorCode.NOT_FOUND, f"no operation {request_id}")
        handler = self._handler(ctx)
        if entry.get("state") != "done":
            if handler.provider_keeps_tokens:  # "unknown": the host sends it again, the provider answers once
                raise PluginError(ErrorCode.NOT_FOUND, f"the {entry.get('op')} with request {request_id} was "
                                  "interrupted before it answered; send it again with the same token")
            return Progress.failure(ErrorCode.UNFORESEEN_ERROR, f"the {entry.get('op')} with request {request_id} "
                                    "was interrupted and may have reached AWS", native_id=entry.get("nativeId") or "")
        progress = Progress.from_json(entry["result"])
        if progress.status is Status.IN_PROGRESS:  # the provider or the resource is not done yet: look again
            progress = self._progress(ctx, handler, entry, progress.native_id or native_id, request_id)
        progress.request_id = request_id
        return progress

    def _progress(self, ctx: Ctx, handler: Handler, entry: Json, native_id: str, request_id: str) -> Progress:
        """Where an unfinished operation is now, journaled once it changed: the provider's request followed while
        it runs, then the resource read back (a failed status check raises: the operation is still under way)."""
        op = Operation(entry["op"])
        aws = self._aws(ctx)
        follow = str(entry.get("follow") or "")
        if follow:
            try:
                with mapped():
                    started = handler.follow(aws, follow)
            except RequestFailed as failure:
                gone = op is Operation.DELETE and failure.code is ErrorCode.NOT_FOUND
                progress = Progress(Status.SUCCESS, native_id=native_id) if gone else \
                    Progress.failure(failure.code, failure.message, native_id=native_id)
                progress.operation = op
                self.journal.finish(request_id, str(op), native_id, progress.to_json())
                return progress
            if started.request:
                progress = Progress(Status.IN_PROGRESS, native_id=started.native_id or native_id,
                                    request_id=request_id, operation=op)
                if progress.native_id != native_id:  # the provider named the resource: keep it
                    self.journal.finish(request_id, str(op), progress.native_id, progress.to_json(), follow=follow)
                return progress
            native_id = started.native_id or native_id
        with mapped():
            progress = self._after(handler, aws, op, Started(native_id), request_id)
        progress.operation = op
        if progress.finished or follow:  # a provider's finished request is not followed again
            self.journal.finish(request_id, str(op), progress.native_id or native_id, progress.to_json())
        return progress

    def list(self, ctx: Ctx, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult:
        handler = self._handler(ctx)
        with mapped():
            found = sorted({native_id for native_id in handler.list(self._aws(ctx), filters)})
        # Pages continue after the last id of the previous page: stable while resources come and go.
        remaining = [native_id for native_id in found if page_token is None or native_id > page_token]
        page = remaining[:max(page_size, 1)]
        return ListResult(page, page[-1] if len(remaining) > len(page) else None)
