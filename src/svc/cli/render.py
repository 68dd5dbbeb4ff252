"""Human renderings of commands and their resource updates (Rich); plans: ``svc.cli.plan_render``."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

from svc.cli.output import console
from svc.model.states import TERMINAL_UPDATE_STATES, UpdateState
from svc.model.wire import CommandView

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

# Rich is imported where a table or styled text is made: a command that follows an apply into a pipe or a file
# prints plain lines, and importing Rich cost it ~25 ms of CPU.
_OPERATION_STYLE = {"create": ("+", "green"), "update": ("~", "yellow"), "replace": ("±", "magenta"),
                    "delete": ("-", "red"), "read": ("?", "cyan"), "resolve": ("?", "cyan"),
                    "attach": ("+", "green"), "detach": ("-", "red"), "skip": ("=", "white")}
_STATE_STYLE = {"Success": "green", "Failed": "red", "Rejected": "red", "Canceled": "yellow",
                "InProgress": "cyan", "Canceling": "yellow"}
# Finished first, then what is under way, then what waits: the order counts by state are written in.
_STATE_ORDER = (UpdateState.SUCCESS, UpdateState.FAILED, UpdateState.REJECTED, UpdateState.CANCELED,
                UpdateState.IN_PROGRESS, UpdateState.PENDING, UpdateState.NOT_STARTED)


def operation_text(operation: str) -> Text:
    from rich.text import Text

    symbol, style = _OPERATION_STYLE.get(operation, ("·", "white"))
    return Text(f"{symbol} {operation}", style=style)


def state_text(state: str) -> Text:
    from rich.text import Text

    return Text(state, style=_STATE_STYLE.get(state, "white"))


def update_counts(command: CommandView) -> Counter[str]:
    """How many of the command's updates are in each state: the agent's count once it has ended (its answer may
    list only the updates written since the previous one), else those listed."""
    if command.UpdateCounts is not None:
        return Counter(command.UpdateCounts)
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
    counts = update_counts(command)
    done = sum(count for state, count in counts.items() if state in TERMINAL_UPDATE_STATES)
    breakdown = ", ".join(f"{counts[state]} {state}" for state in ordered_states(counts))
    return (f"{command_name(command)} {command.CommandId} {command.State}: {done} of "
            f"{counts.total()} resource updates finished" + (f" ({breakdown})" if breakdown else ""))


def updates_table(command: CommandView) -> Table:
    from rich.table import Table

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
        from svc.cli.tables import print_table

        print_table(updates_table(command))


def render_command_list(commands: list[CommandView]) -> None:
    from rich.table import Table

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
        console.styled(f"{command.Command} {command.CommandId} succeeded.", "green", highlight=False)
        return 0
    console.print(f"[red]{command.Command} {command.CommandId} ended {command.State}.[/red] "
                  f"Details: svc command status {command.CommandId}", highlight=False)
    return 1
