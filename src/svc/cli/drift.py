"""Drift as the CLI shows it: ``svc drift``, and ``svc apply --mode reconcile`` when the agent refuses it for
drift (409 ReconcileRejected).

Per stack, each resource changed outside the forma since the last reconcile (``update|delete label (Type)``),
for updates each changed property as ``/Path: old → new`` (from ``GET /stacks/{stack}/drift``, shown as every
property change is: ``svc.cli.property_changes``). The refused apply then names the two ways out: fold the
change into the forma (``svc extract``), or revert it (``--force``).
"""

from __future__ import annotations

from typing import Any, NoReturn

from svc.cli import agent_api
from svc.cli.answers import decode
from svc.cli.client import AgentClient
from svc.cli.errors import CliError
from svc.cli.output import console
from svc.cli.property_changes import change_lines
from svc.model.wire import DriftedResource, ReconcileRejectedData


def print_modified(stack: str, modified: list[DriftedResource],
                   details: dict[tuple[str, str], DriftedResource]) -> None:
    """``Stack S:`` then each modified resource and, for updates, its changed properties (from ``details``, the
    stack's drift entries by (type, label))."""
    console.print(f"\nStack {stack}:", highlight=False, markup=False)
    for item in modified:
        console.print(f"  {item.Operation:<7} {item.Label} ({item.Type})", highlight=False, markup=False)
        detail = details.get((item.Type, item.Label))
        if item.Operation == "update" and detail is not None:
            for line in change_lines(detail.Changes):
                console.print(f"            {line}", highlight=False, markup=False)


def by_resource(entries: list[DriftedResource]) -> dict[tuple[str, str], DriftedResource]:
    return {(entry.Type, entry.Label): entry for entry in entries}


def _details(client: AgentClient, stack: str) -> dict[tuple[str, str], DriftedResource]:
    """The stack's drift entries by (type, label); none when the agent cannot tell (the list still shows)."""
    try:
        found = agent_api.stack_drift(client, stack)
    except CliError:
        found = None
    return by_resource(found.ModifiedResources) if found is not None else {}


def _revert_command(title: str) -> str:
    """The apply's own command line (``svc apply --mode reconcile FILE``) with ``--force``."""
    return title.replace(" --mode reconcile ", " --mode reconcile --force ", 1)


def explain_drift(client: AgentClient, data: dict[str, Any], title: str) -> NoReturn:
    """Prints the refused reconcile's drift (``data``: the refusal's) and the ways out; raises the one-line error
    (exit 1)."""
    stacks = decode(ReconcileRejectedData, data, "the refused reconcile").ModifiedStacks
    console.print("The agent refused this reconcile: resources changed outside this forma since the last "
                  "reconcile.", highlight=False, markup=False)
    for stack, entry in stacks.items():
        print_modified(stack, entry.ModifiedResources, _details(client, stack))
    console.print("\nTwo ways out:", highlight=False, markup=False)
    for stack in stacks:
        console.print(f"  keep the change:   svc extract --query 'stack:{stack}' <file.pkl>   then fold what it "
                      "writes into the forma and apply again", highlight=False, markup=False)
    console.print(f"  revert the change: {_revert_command(title)}", highlight=False, markup=False)
    names = ", ".join(stacks) or "the forma's stacks"
    raise CliError(f"reconcile refused: {names} changed outside this forma since the last reconcile (listed above)")
