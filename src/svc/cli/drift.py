"""What ``svc apply --mode reconcile`` shows when the agent refuses it for drift (409 ReconcileRejected).

Per stack, each resource changed outside the forma since the last reconcile (``update|delete label
(Type)``), for updates the changed fields as a short patch list (from ``GET /stacks/{stack}/drift``;
secrets are shown as changed, never by value), then the two ways out: fold the change into the forma
(``svc extract``), or revert it (``--force``).
"""

from __future__ import annotations

import json
from typing import Any, NoReturn
from urllib.parse import quote

from svc.cli.client import AgentClient
from svc.cli.errors import CliError
from svc.cli.output import console

MAX_FIELDS = 8  # patch lines shown per resource
MAX_VALUE = 60  # characters of a value shown


def _is_secret(value: Any) -> bool:
    if isinstance(value, dict):
        if value.get("$hashed") or value.get("$visibility") == "Opaque":
            return True
        return any(_is_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_is_secret(v) for v in value)
    return False


def _shown(value: Any) -> str:
    if _is_secret(value):
        return "(a secret: changed)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"


def patch_lines(patch: list[dict[str, Any]] | None) -> list[str]:
    """``replace /Content: "new"`` lines; at most ``MAX_FIELDS``, then how many more."""
    lines = []
    for op in (patch or [])[:MAX_FIELDS]:
        line = f"{op.get('op')} {op.get('path') or '/'}"
        if "value" in op:
            line += f": {_shown(op['value'])}"
        lines.append(line)
    if patch and len(patch) > MAX_FIELDS:
        lines.append(f"… and {len(patch) - MAX_FIELDS} more")
    return lines


def _details(client: AgentClient, stack: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The stack's drift entries by (type, label); none when the agent cannot tell (the list still shows)."""
    try:
        response = client.request("GET", f"/stacks/{quote(stack, safe='')}/drift")
        entries = response.json().get("ModifiedResources") if response.status_code == 200 else None
    except (ValueError, AttributeError, CliError):
        entries = None
    return {(e.get("Type"), e.get("Label")): e for e in entries or [] if isinstance(e, dict)}


def _revert_command(title: str) -> str:
    """The apply's own command line (``svc apply --mode reconcile FILE``) with ``--force``."""
    return title.replace(" --mode reconcile ", " --mode reconcile --force ", 1)


def explain_drift(client: AgentClient, data: dict[str, Any], title: str) -> NoReturn:
    """Prints the refused reconcile's drift and the ways out; raises the one-line error (exit 1)."""
    stacks = data.get("ModifiedStacks") or {}
    console.print("The agent refused this reconcile: resources changed outside this forma since the last "
                  "reconcile.", highlight=False, markup=False)
    for stack, entry in stacks.items():
        details = _details(client, stack)
        console.print(f"\nStack {stack}:", highlight=False, markup=False)
        for item in (entry or {}).get("ModifiedResources") or []:
            operation, label, type_ = item.get("Operation"), item.get("Label"), item.get("Type")
            console.print(f"  {operation:<7} {label} ({type_})", highlight=False, markup=False)
            if operation == "update":
                for line in patch_lines((details.get((type_, label)) or {}).get("PatchDocument")):
                    console.print(f"            {line}", highlight=False, markup=False)
    console.print("\nTwo ways out:", highlight=False, markup=False)
    for stack in stacks:
        console.print(f"  keep the change:   svc extract --query 'stack:{stack}' <file.pkl>   then fold what it "
                      "writes into the forma and apply again", highlight=False, markup=False)
    console.print(f"  revert the change: {_revert_command(title)}", highlight=False, markup=False)
    names = ", ".join(stacks) or "the forma's stacks"
    raise CliError(f"reconcile refused: {names} changed outside this forma since the last reconcile (listed above)")
