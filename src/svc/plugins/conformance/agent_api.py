"""The agent's HTTP API as the kit's client: formas evaluated in this process as the CLI evaluates them, and
submitted, followed and answered as the CLI submits them, without a CLI process per step (a CLI process costs a
second or more of start-up and Pkl evaluation; a case submits a dozen formas).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from svc.forma import evaluate_forma
from svc.model.states import TERMINAL_COMMAND_STATES
from svc.plugins.conformance.case import expect

Json = dict[str, Any]
HEADERS = {"Client-ID": "svc-conformance"}


def submit(api: str, command: str, path: Path, *, simulate: bool = False, **fields: str | bool) -> Json:
    """``POST /commands`` of the forma at ``path`` (``command``: apply or destroy; ``fields``: ``mode``, ``force``,
    …) as ``svc apply``/``svc destroy`` sends it; the ``SubmitCommandResponse``."""
    forma = evaluate_forma(path, command=command, mode=str(fields.get("mode", "reconcile"))).to_json()
    data = {"command": command, "simulate": str(simulate).lower(),
            **{name.replace("_", "-"): str(value).lower() if isinstance(value, bool) else value
               for name, value in fields.items()}}
    files = {"file": ("forma.json", json.dumps(forma).encode(), "application/json")}
    response = httpx.post(f"{api}/commands", data=data, files=files, headers=HEADERS, timeout=120)
    expect(response.status_code in (200, 202), f"{command} {path.name}: {response.status_code} {response.text}")
    return response.json()


def finished(api: str, command_id: str, timeout: float = 300) -> Json:
    """The command once it has ended (``GET /commands/{id}/status?wait=…``, as ``--wait`` follows it)."""
    deadline = time.monotonic() + timeout
    while True:
        response = httpx.get(f"{api}/commands/{command_id}/status", params={"wait": "10"}, headers=HEADERS,
                             timeout=60)
        expect(response.status_code == 200, response.text)
        [command] = response.json()["Commands"]
        if command["State"] in TERMINAL_COMMAND_STATES:
            return command
        expect(time.monotonic() < deadline, f"command {command_id} has not ended: {command}")


def run(api: str, command: str, path: Path, **fields: str | bool) -> Json | None:
    """``svc apply|destroy … --yes --wait``: the finished command, which must have succeeded; None when nothing
    needed to change (and no command ran)."""
    answer = submit(api, command, path, **fields)
    if not answer["Simulation"]["ChangesRequired"]:
        return None
    command_view = finished(api, answer["CommandId"])
    expect(command_view["State"] == "Success", f"{command} {path.name} ended {command_view['State']}: " + "; ".join(
        f"{u['ResourceLabel']} {u['State']} {u.get('ErrorMessage') or ''}" for u in command_view["ResourceUpdates"]))
    return command_view


def synchronize(api: str) -> None:
    """``POST /admin/synchronize``: one synchronization pass, answered when it ends."""
    response = httpx.post(f"{api}/admin/synchronize", timeout=120)
    expect(response.status_code == 200, response.text)


def discover(api: str) -> None:
    """``POST /admin/discover``: one discovery pass, answered when it ends."""
    response = httpx.post(f"{api}/admin/discover", timeout=120)
    expect(response.status_code == 200, response.text)


def resources(api: str, query: str) -> list[Json]:
    """``svc inventory resources --query QUERY``: the API's answer (none found: empty)."""
    response = httpx.get(f"{api}/resources", params={"query": query}, timeout=60)
    if response.status_code == 404:
        return []
    expect(response.status_code == 200, response.text)
    return response.json()["Resources"]
