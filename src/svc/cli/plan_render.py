"""A plan as people read it (``svc plan``, ``svc apply``, ``svc destroy``): each change with what it does to the
properties, then Terraform's summary line.

    + create  FAKE::Test::Item c (stack app)
        /Value: "y"
    ~ update  FAKE::Test::Item a (stack app)
        /Value: "v1" → "v2"
    ± replace FAKE::Test::Item b (stack app): create-only field(s) changed: Token
        /Token: "t1" → "t2"
    - delete  FAKE::Test::Item d (stack app): not in the forma (reconcile)
        /Value: "x"

    Plan: 2 to add, 1 to change, 2 to destroy.

A create lists the properties it sets, an update each changed property, a replace its create-only changes (what
forces it) and then its other changes, a delete what goes; every property change is shown as
``svc.cli.property_changes`` shows it. The summary counts resources as Terraform does: a replace is one to add and
one to destroy.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from svc.cli.output import console, plain_line
from svc.cli.property_changes import change_lines, patch_changes, value_lines
from svc.model.wire import CommandView, PolicyUpdateView, ResourceUpdateView, SimulationView

UNMANAGED_STACK = "$unmanaged"
DETAIL_INDENT = "    "
_SYMBOL = {"create": "+", "update": "~", "replace": "±", "delete": "-", "attach": "+", "detach": "-", "skip": "="}
_STYLE = {"+": "green", "~": "yellow", "±": "magenta", "-": "red", "=": "white"}
_PLAIN = {"highlight": False, "soft_wrap": True, "markup": False, "emoji": False}  # what Text(line) prints


def _style(line: str) -> str:
    """A change's heading in its operation's colour; the title, the details and the summary as they are."""
    return _STYLE.get(line[:1], "") if not line.startswith(" ") else ""


def planned_changes(command: CommandView) -> list[tuple[str, ResourceUpdateView, ResourceUpdateView | None]]:
    """(operation, update, its create half) per resource, by stack, type and label: the delete and create halves
    of a replace (one ``GroupId``) become one ``replace`` (the delete half, with its reason and create-only
    changes; the create half second)."""
    updates = command.ResourceUpdates or []
    halves: dict[str, dict[str, ResourceUpdateView]] = {}
    for update in updates:
        if update.GroupId:
            halves.setdefault(update.GroupId, {})[update.Operation] = update
    changes: list[tuple[str, ResourceUpdateView, ResourceUpdateView | None]] = []
    for update in updates:
        pair = halves.get(update.GroupId or "", {})
        if "delete" in pair and "create" in pair:
            if update.Operation == "delete":
                changes.append(("replace", update, pair["create"]))
        else:
            changes.append((update.Operation, update, None))
    return sorted(changes, key=lambda c: (c[1].StackName or "", c[1].ResourceType, c[1].ResourceLabel or ""))


def summary_line(command: CommandView | None) -> str:
    """``Plan: 2 to add, 1 to change, 0 to destroy.``"""
    counts = Counter(operation for operation, _, _ in planned_changes(command)) if command is not None else Counter()
    add = counts["create"] + counts["replace"]
    destroy = counts["delete"] + counts["replace"]
    return f"Plan: {add} to add, {counts['update']} to change, {destroy} to destroy."


def plan_lines(command: CommandView) -> list[str]:
    """The plan's changes, one heading line each (``+ create  Type label (stack s)``) and its details indented."""
    lines: list[str] = []
    for target in command.TargetUpdates or []:
        lines.append(_heading(target.Operation, f"target {target.TargetLabel}"))
        if target.Operation == "update":
            lines.extend(DETAIL_INDENT + line for line in _config_changes(target.ExistingConfig, target.DesiredConfig))
    for stack in command.StackUpdates or []:
        details = f": description {stack.Description!r}" if stack.Description else ""
        lines.append(_heading(stack.Operation, f"stack {stack.StackLabel}{details}"))
    for policy in command.PolicyUpdates or []:
        lines.append(_heading(policy.Operation, _policy_text(policy)))
    for operation, update, created in planned_changes(command):
        lines.append(_heading(operation, _resource_text(operation, update)))
        lines.extend(DETAIL_INDENT + line for line in _resource_details(operation, update, created))
    return lines


def _heading(operation: str, what: str) -> str:
    return f"{_SYMBOL.get(operation, '·')} {operation:<7} {what}"


def _resource_text(operation: str, update: ResourceUpdateView) -> str:
    text = f"{update.ResourceType} {update.ResourceLabel or ''} (stack {update.StackName or ''})"
    notes = []
    if update.IsCascade:
        notes.append(f"cascade: depends on {update.CascadeSource}")
    if update.OldLabel:
        notes.append(f"renamed from {update.OldLabel}")
    if update.OldStackName == UNMANAGED_STACK:
        notes.append("brought under management")
    elif update.OldStackName:
        notes.append(f"moved from stack {update.OldStackName}")
    if update.StateMessage and operation in ("replace", "delete"):
        notes.append(update.StateMessage)
    return text + (f": {'; '.join(notes)}" if notes else "")


def _resource_details(operation: str, update: ResourceUpdateView, created: ResourceUpdateView | None) -> list[str]:
    if operation == "create":
        return value_lines(update.Properties)
    if operation == "update":
        return change_lines(patch_changes(update.PatchDocument, update.OldProperties), max_fields=None,
                            max_value=None)
    if operation == "replace":  # what forces it first, then what else the new resource changes
        return change_lines(patch_changes([*(update.CreateOnlyPatch or ()), *(update.PatchDocument or ())],
                                          update.OldProperties), max_fields=None, max_value=None)
    if operation == "delete":
        return value_lines(update.OldProperties)
    return []


def _config_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """A target's changed config keys as property changes."""
    old, new = old or {}, new or {}
    patch = [{"op": "remove", "path": f"/{key}"} if key not in new else {"op": "replace", "path": f"/{key}",
                                                                          "value": new[key]}
             for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key) or key not in new]
    return change_lines(patch_changes(patch, old), max_fields=None, max_value=None)


def _policy_text(policy: PolicyUpdateView) -> str:
    text = f"policy {policy.PolicyType} {policy.PolicyLabel}"
    if policy.StackLabel:
        text += f" (stack {policy.StackLabel})"
    if policy.ReferencingStacks:
        return f"{text}: kept, used by {', '.join(policy.ReferencingStacks)}"
    config = policy.PolicyConfig or {}
    return text + (": " + ", ".join(f"{key} {value}" for key, value in config.items()) if config else "")


def render_plan(simulation: SimulationView, title: str) -> None:
    """The planned changes of a simulation under ``title``, the summary line and the agent's warnings."""
    command = simulation.Command
    lines = [title, *(plan_lines(command) if command is not None else []), summary_line(command)]
    # One print: Rich's cost is per call, and a big plan is thousands of lines (printed while the agent works).
    # Off a terminal the colours are not shown, and the lines are written as they are when Rich would write
    # them so (a plan of 20,000 creates took 1 s of CPU as Rich's styled text).
    plain = plain_line(("\n".join(lines),), _PLAIN)
    if plain is not None:
        console.print(plain, **_PLAIN)
    else:
        from rich.text import Text  # a terminal's colours: off one, the lines are written as they are

        console.print(Text("\n").join(Text(line, style=_style(line)) for line in lines), highlight=False,
                      soft_wrap=True)
    for warning in simulation.Warnings or []:
        from rich.text import Text

        console.print(Text.assemble(("Warning:", "yellow"), f" {warning}"), highlight=False, soft_wrap=True)
