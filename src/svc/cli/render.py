"""Human renderings of plans, commands and their resource updates (Rich)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rich.table import Table
from rich.text import Text

from svc.cli.output import console
from svc.cli.tables import print_table
from svc.model.states import TERMINAL_UPDATE_STATES

_OPERATION_STYLE = {"create": ("+", "green"), "update": ("~", "yellow"), "replace": ("±", "magenta"),
                    "delete": ("-", "red"), "read": ("?", "cyan"), "resolve": ("?", "cyan"),
                    "attach": ("+", "green"), "detach": ("-", "red"), "skip": ("=", "white")}
_STATE_STYLE = {"Success": "green", "Failed": "red", "Rejected": "red", "Canceled": "yellow",
                "InProgress": "cyan", "Canceling": "yellow"}
_VALUE_WIDTH = 60


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


def _operation(operation: str) -> Text:
    symbol, style = _OPERATION_STYLE.get(operation, ("·", "white"))
    return Text(f"{symbol} {operation}", style=style)


def _policy_details(update: dict[str, Any]) -> str:
    if update.get("ReferencingStacks"):
        return f"kept: used by {', '.join(update['ReferencingStacks'])}"
    config = update.get("PolicyConfig") or {}
    return ", ".join(f"{key} {value}" for key, value in config.items())


def _state(state: str) -> Text:
    return Text(state, style=_STATE_STYLE.get(state, "white"))


def planned_changes(command: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(operation, update) per resource: the delete and create halves of a replace (one ``GroupId``)
    become one ``replace``, shown with the delete half's reason."""
    updates = command.get("ResourceUpdates") or []
    halves: dict[str, set[str]] = {}
    for update in updates:
        if update.get("GroupId"):
            halves.setdefault(update["GroupId"], set()).add(update.get("Operation", ""))
    replaced = {group for group, operations in halves.items() if {"delete", "create"} <= operations}
    changes = []
    for update in updates:
        if update.get("GroupId") in replaced:
            if update.get("Operation") == "delete":
                changes.append(("replace", update))
        else:
            changes.append((update.get("Operation", "?"), update))
    return changes


def plan_counts(command: dict[str, Any]) -> Counter[str]:
    return Counter(operation for operation, _ in planned_changes(command))


def render_plan(simulation: dict[str, Any], title: str) -> None:
    """The planned changes of a simulation: targets, stacks, then resources with their property changes."""
    command = simulation.get("Command") or {}
    console.print(title, highlight=False, soft_wrap=True)
    table = Table(box=None, pad_edge=False)
    for column in ("Change", "Kind", "Type", "Label", "Stack", "Details"):
        table.add_column(column, overflow="fold")
    for update in command.get("TargetUpdates") or []:
        table.add_row(_operation(update.get("Operation", "?")), "target", "", update.get("TargetLabel", ""), "", "")
    for update in command.get("StackUpdates") or []:
        table.add_row(_operation(update.get("Operation", "?")), "stack", "", update.get("StackLabel", ""), "", "")
    for update in command.get("PolicyUpdates") or []:
        table.add_row(_operation(update.get("Operation", "?")), "policy", update.get("PolicyType", ""),
                      update.get("PolicyLabel", ""), update.get("StackLabel") or "", _policy_details(update))
    for operation, update in planned_changes(command):
        details = patch_lines(update.get("PatchDocument"))
        if update.get("CreateOnlyPatch"):
            changed = ", ".join(op.get("path", "") for op in update["CreateOnlyPatch"])
            details.insert(0, f"create-only {changed} changed")
        if update.get("OldLabel"):
            details.insert(0, f"renamed from {update['OldLabel']}")
        if update.get("IsCascade"):
            details.insert(0, f"cascade: depends on {update.get('CascadeSource')}")
        table.add_row(_operation(operation), "resource", update.get("ResourceType", ""),
                      update.get("ResourceLabel", ""), update.get("StackName", ""), "\n".join(details))
    print_table(table)
    counts = plan_counts(command)
    summary = ", ".join(f"{counts.get(op, 0)} to {op}" for op in ("create", "update", "replace", "delete"))
    console.print(f"Plan: {summary}.", highlight=False)
    for warning in simulation.get("Warnings") or []:
        console.print(f"[yellow]Warning:[/yellow] {warning}", highlight=False)


def update_counts(command: dict[str, Any]) -> Counter[str]:
    return Counter(update.get("State", "?") for update in command.get("ResourceUpdates") or [])


def command_line(command: dict[str, Any]) -> str:
    """``apply (reconcile) 2Y… Success: 3 of 3 resource updates finished (3 Success)``."""
    updates = command.get("ResourceUpdates") or []
    counts = update_counts(command)
    done = sum(count for state, count in counts.items() if state in TERMINAL_UPDATE_STATES)
    breakdown = ", ".join(f"{count} {state}" for state, count in sorted(counts.items()))
    mode = f" ({command['Mode']})" if command.get("Mode") and command.get("Command") == "apply" else ""
    return (f"{command.get('Command')}{mode} {command.get('CommandId')} {command.get('State')}: {done} of "
            f"{len(updates)} resource updates finished" + (f" ({breakdown})" if breakdown else ""))


def updates_table(command: dict[str, Any]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("Change", "Type", "Label", "Stack", "State", "Attempt", "Time", "Message"):
        table.add_column(column, overflow="fold")
    for update in command.get("ResourceUpdates") or []:
        attempt = ""
        if update.get("CurrentAttempt"):
            attempt = f"{update['CurrentAttempt']}/{update.get('MaxAttempts') or '?'}"
        duration = f"{update['Duration'] / 1000:.1f}s" if update.get("Duration") is not None else ""
        message = update.get("ErrorMessage") or update.get("StateMessage") or ""
        table.add_row(_operation(update.get("Operation", "?")), update.get("ResourceType", ""),
                      update.get("ResourceLabel", ""), update.get("StackName", ""), _state(update.get("State", "?")),
                      attempt, duration, message)
    return table


def render_command(command: dict[str, Any]) -> None:
    console.print(command_line(command), highlight=False, soft_wrap=True)
    if command.get("ResourceUpdates"):
        print_table(updates_table(command))


def render_command_list(commands: list[dict[str, Any]]) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("Command", "Id", "State", "Started", "Updates"):
        table.add_column(column, overflow="fold")
    for command in commands:
        counts = update_counts(command)
        mode = f" ({command['Mode']})" if command.get("Mode") and command.get("Command") == "apply" else ""
        table.add_row(f"{command.get('Command')}{mode}", command.get("CommandId", ""),
                      _state(command.get("State", "?")), str(command.get("StartTs", "")),
                      ", ".join(f"{n} {state}" for state, n in sorted(counts.items())))
    console.print(table)
