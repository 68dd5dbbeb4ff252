"""Commands: submit an apply or destroy, read their status, cancel them. All need ``Client-ID``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request, Response

from svc.api import deps
from svc.api.answer_parts import status_parts, streamed, submit_parts
from svc.api.command_views import cancel_response
from svc.api.problems import bad_request, not_found
from svc.api.responses import JSONResponse
from svc.api.submission import read_submission
from svc.collector import admitting
from svc.datastore import COMMAND_FIELDS, parse_query
from svc.engine.service import ApplyRequest

router = APIRouter()

DEFAULT_MAX_RESULTS = 10
# A state write is stamped inside its transaction, which can commit shortly after a status read: the next
# read of a client following the command starts this much before the previous one.
_UPDATES_MARGIN = timedelta(seconds=2)
UPDATES_AS_OF_HEADER = "X-Svc-Updates-As-Of"
MAX_RESULTS_CEILING = 200
MAX_WAIT_SECONDS = 30.0
# The body is read by hand (to answer malformed uploads with our own messages); this documents it.
_SUBMIT_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["command"],
    "properties": {
        "command": {"type": "string", "enum": ["apply", "destroy"]},
        "mode": {"type": "string", "enum": ["reconcile", "patch"], "description": "apply only (required)"},
        "simulate": {"type": "boolean", "default": False},
        "force": {"type": "boolean", "default": False, "description": "apply (reconcile) only"},
        "query": {"type": "string", "description": "destroy only: destroy the managed resources matching it"},
        "on-dependents": {"type": "string", "enum": ["abort", "cascade"], "default": "abort"},
        "file": {"type": "string", "format": "binary", "description": "forma.json: the evaluated forma"},
        "expected-plan": {"type": "string", "description": "the Fingerprint a simulation answered (JSON): go "
                          "ahead only if the agent still plans exactly that, else 409 PlanChanged"},
        "seal-secrets": {"type": "boolean", "default": False, "description": "with simulate and a file only: also "
                         "answer SealedForma, the forma with its secrets sealed under the agent's key"},
    }}}}}}
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Bad request: a missing Client-ID, a malformed form or forma, an invalid query, a cycle…"},
    409: {"description": "Refused: conflicting commands, unabsorbed out-of-band changes (ReconcileRejected), a plan "
                         "that moved since its expected-plan was made (PlanChanged)…"},
    422: {"description": "Refused: patch on unknown stacks, empty new stacks."},
}


@router.post("/commands", status_code=202, responses=_ERRORS, openapi_extra=_SUBMIT_BODY,
             summary="Submit an apply or destroy (multipart: command, mode, simulate, force, query, on-dependents, "
                     "file=forma.json). 202 when it started, 200 for a simulation or when nothing needs to change "
                     "(CommandId is then empty, unless a reconcile that changes nothing was stored as its stacks' "
                     "new baseline).")
async def submit_command(request: Request) -> Response:
    caller = deps.caller(request)
    with admitting() as admitted:  # what a command's admission makes lives as long as it: out of the collector's walks
        submission = await read_submission(request)
        service = deps.service(request)
        if isinstance(submission, ApplyRequest):
            submitted = await service.apply(submission, caller)
        else:
            submitted = await service.destroy(submission, caller)
        started = admitted.started = submitted.changes_required and not submission.simulate
    parts = await deps.in_thread(submit_parts, submitted, caller)
    if not started:
        return streamed(parts)
    return streamed(parts, status_code=202, headers={"Location": f"/api/v1/commands/{submitted.command_id}/status"})


@router.get("/commands/{command_id}/status",
            summary="One command, by id. summary=true: each resource update reduced to its identity, operation, "
                    "state and error message (what following a command needs; cheap for big commands). "
                    "updated_since=<time> (implies summary): only the updates whose state was written since then; "
                    f"pass the previous answer's {UPDATES_AS_OF_HEADER} header to follow a command. "
                    "progress=true (implies summary): each update also with its attempts, duration and message. "
                    f"wait=<seconds> (at most {MAX_WAIT_SECONDS:g}): answer once the command has ended or after that "
                    "long, whichever comes first, so that a client polling with waits learns of the end at once.")
async def command_status(request: Request, command_id: str, summary: str = "", updated_since: str = "",
                         progress: str = "", wait: str = "") -> Response:
    deps.caller(request)
    since = _time(updated_since) if updated_since else None
    seconds = _wait(wait) if wait else 0.0
    service = deps.service(request)
    await service.await_end(command_id, seconds)
    as_of = datetime.now(UTC) - _UPDATES_MARGIN
    with_progress = progress.lower() == "true"
    command = await service.command(command_id, summary=summary.lower() == "true" or since is not None or with_progress,
                                    updated_since=since, progress=with_progress)
    if command is None:
        raise not_found(f"command not found: {command_id}")
    # Rendered on a worker thread, as the reads are: a command's view holds each of its updates (tens of
    # milliseconds for a few hundred), and the event loop meanwhile runs the commands, one of which the caller is
    # following (on the loop, following an apply slowed it down).
    return streamed(await deps.in_thread(status_parts, [command]), headers={UPDATES_AS_OF_HEADER: as_of.isoformat()})


def _wait(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_WAIT_SECONDS:  # also NaN
        raise bad_request(f"wait must be a number of seconds from 0 to {MAX_WAIT_SECONDS:g}, not {text!r}")
    return seconds


def _time(text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise bad_request(f"updated_since must be an ISO 8601 time, not {text!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


@router.get("/commands/status",
            summary="Commands, newest first: the query's matches, else the caller's latest (scope=client) or "
                    "everyone's (scope=agent). counts=true: no resource update listed, each command's counted by "
                    "state instead (UpdateCounts; what a table of commands needs). 404 when there are none.")
async def list_commands(request: Request, query: str = "", scope: str = "client",
                        max_results: str | None = None, counts: str = "") -> Response:
    caller = deps.caller(request)
    if scope not in ("client", "agent"):
        raise bad_request(f"scope must be client or agent, not {scope!r}")
    limit = deps.max_results(max_results, default=DEFAULT_MAX_RESULTS, ceiling=MAX_RESULTS_CEILING)
    query = query.strip()
    parse_query(query, COMMAND_FIELDS)  # a bad query is a 400 before the engine is asked
    commands = await deps.service(request).commands(query, caller, scope="agent" if scope == "agent" else "client",
                                                    max_results=limit, counts=counts.lower() == "true")
    if not commands:
        raise not_found("no commands match")
    return streamed(await deps.in_thread(status_parts, commands))


@router.post("/commands/cancel", status_code=202,
             summary="Cancel in-progress commands: the query's matches, else the caller's latest. force=true ends "
                     "them at once (running operations are abandoned). 404 with no body when nothing was canceled.")
async def cancel_commands(request: Request, query: str = "", force: str = "") -> Response:
    caller = deps.caller(request)
    query = query.strip()
    parse_query(query, COMMAND_FIELDS)
    outcome = await deps.service(request).cancel(query, caller, force=force.lower() == "true")
    if outcome is None:
        return Response(status_code=404)
    return JSONResponse(cancel_response(outcome).to_json(), status_code=202)
