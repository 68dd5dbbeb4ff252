"""The agent's command and inventory endpoints, as the CLI calls them: each answer decoded into its wire shape
(``svc.cli.answers``). Errors are ``CliError`` lines."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from svc import jsontext
from svc.cli.agent_errors import raise_for
from svc.cli.answers import Shape, decode, decode_list
from svc.cli.client import AgentClient
from svc.cli.http import Timeout
from svc.model.wire import (
    CancelCommandResponse,
    CommandView,
    EveryStackDriftView,
    ListCommandStatusResponse,
    ReconcileStackResponse,
    StackDriftView,
    SubmitCommandResponse,
)

SUBMISSION_BYTES_PER_SECOND = 100_000


def submit(client: AgentClient, *, command: str, action: str, forma: dict[str, Any] | None = None,
           simulate: bool = False, **fields: str | bool | None) -> SubmitCommandResponse:
    """``POST /commands``: the multipart form with the forma as ``file=forma.json``; the
    ``SubmitCommandResponse``."""
    data = {"command": command, "simulate": _bool(simulate)}
    for name, value in fields.items():
        if value is not None and value != "":
            data[name.replace("_", "-")] = _bool(value) if isinstance(value, bool) else value
    files = None
    timeout: dict[str, Any] = {}
    if forma is not None:
        body = jsontext.dump_bytes(forma)
        files = {"file": ("forma.json", body, "application/json")}
        # The agent answers once it has planned the forma, which takes longer the larger it is: a 100,000-resource
        # forma (27 MB) took over 30 s on a loaded machine. A second for every 100 kB, on top of the usual 30 s.
        timeout = {"timeout": Timeout(30.0 + len(body) / SUBMISSION_BYTES_PER_SECOND, connect=5.0)}
    else:
        # multipart even without a file: the endpoint takes only multipart/form-data
        files = {"command": (None, command.encode())}
        data.pop("command")
    response = client.request("POST", "/commands", data=data, files=files, **timeout)
    raise_for(response, action)
    return decode(SubmitCommandResponse, response.content, "POST /commands")


def command(client: AgentClient, command_id: str, *, wait: float = 0.0) -> CommandView | None:
    """One command (``CommandView``), None when the agent knows no such id; ``wait``: the agent answers once the
    command has ended or after that many seconds."""
    response = client.request("GET", f"/commands/{command_id}/status", params=_wait(wait))
    if response.status_code == 404:
        return None
    raise_for(response, "command status")
    commands = decode(ListCommandStatusResponse, response.content, "GET /commands/{id}/status").Commands
    return commands[0] if commands else None


def command_changes(client: AgentClient, command_id: str, since: str | None,
                    *, wait: float = 0.0, progress: bool = False) -> tuple[CommandView | None, str | None]:
    """The command in summary form with only the updates written since ``since`` (an as-of time the agent gave;
    None: all of them), and the as-of time to ask from next; None when the agent knows no such id. ``wait`` as
    for ``command``; ``progress``: each update with its attempts, duration and message."""
    params = {"summary": "true", **({"updated_since": since} if since else {}),
              **({"progress": "true"} if progress else {}), **_wait(wait)}
    response = client.request("GET", f"/commands/{command_id}/status", params=params)
    if response.status_code == 404:
        return None, None
    raise_for(response, "command status")
    commands = decode(ListCommandStatusResponse, response.content, "GET /commands/{id}/status").Commands
    return (commands[0] if commands else None), response.headers.get("X-Svc-Updates-As-Of")


def _wait(seconds: float) -> dict[str, str]:
    return {"wait": f"{seconds:.3f}"} if seconds > 0 else {}


def commands(client: AgentClient, *, query: str = "", scope: str = "client",
             max_results: int | None = None, counts: bool = False) -> list[CommandView]:
    """``counts``: each command with its updates counted by state (``UpdateCounts``), none of them listed."""
    params: dict[str, str] = {"scope": scope, **({"counts": "true"} if counts else {})}
    if query:
        params["query"] = query
    if max_results is not None:
        params["max_results"] = str(max_results)
    response = client.request("GET", "/commands/status", params=params)
    if response.status_code == 404:  # the agent's way of saying "none"
        return []
    raise_for(response, "command list")
    return decode(ListCommandStatusResponse, response.content, "GET /commands/status").Commands


def cancel(client: AgentClient, *, query: str = "", force: bool = False) -> CancelCommandResponse | None:
    """The ``CancelCommandResponse``; None when nothing was in progress."""
    params = {"query": query} if query else {}
    if force:
        params["force"] = "true"
    response = client.request("POST", "/commands/cancel", params=params)
    if response.status_code == 404:
        return None
    raise_for(response, "cancel")
    return decode(CancelCommandResponse, response.content, "POST /commands/cancel")


def inventory(client: AgentClient, path: str, shape: type[Shape], *, query: str = "",
              max_results: int = 0) -> list[Shape]:
    """A list endpoint (``/resources/summary``, ``/stacks``, ``/targets``, ``/policies``), each item a ``shape``;
    none when the agent answers that nothing matched."""
    body = _inventory(client, path, query, max_results)
    return [] if body is None else decode_list(shape, body, f"GET {path}")


def inventory_forma(client: AgentClient, query: str, *, max_results: int = 0) -> dict[str, Any] | None:
    """``GET /resources``: the matching resources as a forma JSON document (with their stacks and targets), as
    ``svc extract`` and machine output take it; None when nothing matched."""
    body = _inventory(client, "/resources", query, max_results)
    return None if body is None else json.loads(body)


def stack_drift(client: AgentClient, stack: str) -> StackDriftView | None:
    """``GET /stacks/{stack}/drift``: what changed in the stack since its last reconcile; None for no such stack."""
    response = client.request("GET", f"/stacks/{quote(stack, safe='')}/drift")
    if response.status_code == 404:
        return None
    raise_for(response, "stack drift")
    return decode(StackDriftView, response.content, "GET /stacks/{stack}/drift")


def every_drift(client: AgentClient) -> EveryStackDriftView:
    """``GET /drift``: what changed in every stack since its last reconcile, the stacks that drifted."""
    response = client.request("GET", "/drift")
    raise_for(response, "drift")
    return decode(EveryStackDriftView, response.content, "GET /drift")


def reconcile_stack(client: AgentClient, stack: str) -> str | None:
    """``POST /stacks/{stack}/reconcile``: the id of the command reverting the stack's drift, None when there is
    no drift."""
    response = client.request("POST", f"/stacks/{quote(stack, safe='')}/reconcile")
    raise_for(response, "reconcile")
    return decode(ReconcileStackResponse, response.content, "POST /stacks/{stack}/reconcile").command_id


def run_job(client: AgentClient, job: str, shape: type[Shape]) -> Shape:
    """``POST /admin/{job}`` (``synchronize``, ``discover``, ``check-ttl``): the agent runs the background job
    now, to its end, and answers what the run did, as ``shape``."""
    response = client.request("POST", f"/admin/{job}", timeout=None)  # a run takes as long as the cloud does
    raise_for(response, job)
    return decode(shape, response.content, f"POST /admin/{job}")


def _inventory(client: AgentClient, path: str, query: str, max_results: int) -> bytes | None:
    params: dict[str, str] = {}
    if query:
        params["query"] = query
    if max_results:
        params["max_results"] = str(max_results)
    response = client.request("GET", path, params=params)
    if response.status_code == 404 and "error" in _json(response):
        return None
    raise_for(response, "inventory")
    return response.content


def _json(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _bool(value: bool) -> str:
    return "true" if value else "false"
