"""Human renderings of plans, commands and their resource updates (Rich)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from svc.cli.output import console
from svc.cli.tables import print_table
from svc.model.states import TERMINAL_UPDATE_STATES, UpdateState
from svc.model.wire import CommandView, PolicyUpdateView, ResourceUpdateView, SimulationView

_OPERATION_STYLE = {"create": ("+", "green"), "update": ("~", "yellow"), "replace": ("±", "magenta"),
                    "delete": ("-", "red"), "read": ("?", "cyan"), "resolve": ("?", "cyan"),
                    "attach": ("+", "green"), "detach": ("-", "red"), "skip": ("=", "white")}
_STATE_STYLE = {"Success": "green", "Failed": "red", "Rejected": "red", "Canceled": "yellow",
                "InProgress": "cyan", "Canceling": "yellow"}
_VALUE_WIDTH = 60
# Finished first, then what is under way, then what waits: the order counts by state are written in.
_STATE_ORDER = (UpdateState.SUCCESS, UpdateState.FAILED, UpdateState.REJECTED, UpdateState.CANCELED,
                UpdateState.IN_PROGRESS, UpdateState.PENDING, UpdateState.NOT_STARTED)


def _short(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":")) if not isinstance(value, str) else value
    return text if len(text) <= _VALUE_WIDTH else text[:_VALUE_WIDTH - 1] + "…"


def patch_lines(patch: list[dict[str, Any]] | None) -> list[str]:
    """RFC 6902 operations as short lines: ``set /Size = 2``, ``remove /Tags/0``."""
    lines = []
    for op in patch or []:
        verb = {"add": "set", "replace": "set"}.get(op.get("op", ""), op.get("op", "?"))
        line = f"{verb} {op.get('path', '')}"
        if "value" in op:
            line += f" = {_short(op['value'])}"
        lines.append(line)
    return lines


def operation_text(operation: str) -> Text:
    symbol, style = _OPERATION_STYLE.get(operation, ("·", "white"))
    return Text(f"{symbol} {operation}", style=style)


def _policy_details(update: PolicyUpdateView) -> str:
    if update.ReferencingStacks:
        return f"kept: used by {', '.join(update.ReferencingStacks)}"
    config = update.PolicyConfig or {}
    return ", ".join(f"{key} {value}" for key, value in config.items())


def state_text(state: str) -> Text:
    return Text(state, style=_STATE_STYLE.get(state, "white"))


def planned_changes(command: CommandView) -> list[tuple[str, ResourceUpdateView]]:
    """(operation, update) per resource: the delete and create halves of a replace (one ``GroupId``)
    become one ``replace``, shown with the delete half's reason."""
    updates = command.ResourceUpdates or []
    halves: dict[str, set[str]] = {}
    for update in updates:
        if update.GroupId:
            halves.setdefault(update.GroupId, set()).add(update.Operation)
    replaced = {group for group, operations in halves.items() if {"delete", "create"} <= operations}
    changes: list[tuple[str, ResourceUpdateView]] = []
    for update in updates:
        if update.GroupId in replaced:
            if update.Operation == "delete":
                changes.append(("replace", update))
        else:
            changes.append((update.Operation, update))
    return changes


def plan_counts(command: CommandView) -> Counter[str]:
    return Counter(operation for operation, _ in planned_changes(command))


def render_plan(simulation: SimulationView, title: str) -> None:
    """The planned changes of a simulation: targets, stacks, then resources with their property changes."""
    command = simulation.Command
    console.print(title, highlight=False, soft_wrap=True)
    table = Table(box=None, pad_edge=False)
    for column in ("Change", "Kind", "Type", "Label", "Stack", "Details"):
        table.add_column(column, overflow="fold")
    if command is not None:
        _plan_rows(table, command)
    print_table(table)
    counts = plan_counts(command) if command is not None else Counter[str]()
    summary = ", ".join(f"{counts.get(op, 0)} to {op}" for op in ("create", "update", "replace", "delete"))
    console.print(f"Plan: {summary}.", highlight=False)
    for warning in simulation.Warnings or []:
        console.print(f"[yellow]Warning:[/yellow] {warning}", highlight=False)


def _plan_rows(table: Table, command: CommandView) -> None:
    for target in command.TargetUpdates or []:
        table.add_row(operation_text(target.Operation), "target", "", target.TargetLabel, "", "")
    for stack in command.StackUpdates or []:
        table.add_row(operation_text(stack.Operation), "stack", "", stack.StackLabel, "", "")
    for policy in command.PolicyUpdates or []:
        table.add_row(operation_text(policy.Operation), "policy", policy.PolicyType, policy.PolicyLabel,
                      policy.StackLabel or "", _policy_details(policy))
    for operation, update in planned_changes(command):
        details = patch_lines(update.PatchDocument)
        if update.CreateOnlyPatch:
            changed = ", ".join(op.get("path", "") for op in update.CreateOnlyPatch)
            details.insert(0, f"create-only {changed} changed")
        if update.OldLabel:
            details.insert(0, f"renamed from {update.OldLabel}")
        if update.IsCascade:
            details.insert(0, f"cascade: depends on {update.CascadeSource}")
        table.add_row(operation_text(operation), "resource", update.ResourceType, update.ResourceLabel or "",
                      update.StackName or "", "\n".join(details))


def update_counts(command: CommandView) -> Counter[str]:
    return Counter(update.State for update in command.ResourceUpdates or [])


def ordered_states(counts: Counter[str]) -> list[str]:
    """The states counted, in the one order counts are written in (``_STATE_ORDER``; any other last)."""
    return [*(state for state in _STATE_ORDER if counts[state]),
            *sorted(state for state in counts if state not in _STATE_ORDER and counts[state])]


def command_name(command: CommandView) -> str:
    """``apply (reconcile)``, or the command alone."""
    return f"{command.Command} ({command.Mode})" if command.Mode and command.Command == "apply" else command.Command


def command_line(command: CommandView) -> str:
    """``apply (reconcile) 2Y… Success: 3 of 3 resource updates finished (3 Success)``."""
    updates = command.ResourceUpdates or []
    counts = update_counts(command)
    done = sum(count for state, count in counts.items() if state in TERMINAL_UPDATE_STATES)
    breakdown = ", ".join(f"{counts[state]} {state}" for state in ordered_states(counts))
    return (f"{command_name(command)} {command.CommandId} {command.State}: {done} of "
            f"{len(updates)} resource updates finished" + (f" ({breakdown})" if breakdown else ""))


def updates_table(command: CommandView) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("Change", "Type", "Label", "Stack", "State", "Attempt", "Time", "Message"):
        table.add_column(column, overflow="fold")
    for update in command.ResourceUpdates or []:
        attempt = f"{update.CurrentAttempt}/{update.MaxAttempts or '?'}" if update.CurrentAttempt else ""
        duration = f"{update.Duration / 1000:.1f}s" if update.Duration is not None else ""
        message = update.ErrorMessage or update.StateMessage or ""
        table.add_row(operation_text(update.Operation), update.ResourceType, update.ResourceLabel or "",
                      update.StackName or "", state_text(update.State), attempt, duration, message)
    return table


def render_command(command: CommandView) -> None:
    console.print(command_line(command), highlight=False, soft_wrap=True)
    if command.ResourceUpdates:
        print_table(updates_table(command))


def render_command_list(commands: list[CommandView]) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("Command", "Id", "State", "Started", "Updates"):
        table.add_column(column, overflow="fold")
    for command in commands:
        counts = update_counts(command)
        table.add_row(command_name(command), command.CommandId, state_text(command.State), moment(command.StartTs),
                      ", ".join(f"{counts[state]} {state}" for state in ordered_states(counts)))
    console.print(table)


def moment(value: datetime | None) -> str:
    """A time as the agent writes it (``2026-01-02T03:04:05.678901Z``); blank for none."""
    return value.isoformat().replace("+00:00", "Z") if value is not None else ""


def print_outcome(command: CommandView) -> int:
    """The followed command's last line; the exit code: 0 when it succeeded, else 1."""
    if command.State == "Success":
        console.print(f"[green]{command.Command} {command.CommandId} succeeded.[/green]", highlight=False)
        return 0
    console.print(f"[red]{command.Command} {command.CommandId} ended {command.State}.[/red] "
                  f"Details: svc command status {command.CommandId}", highlight=False)
    return 1
