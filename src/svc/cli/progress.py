"""How a followed command's progress reads: the live terminal view (one header line, the failures pinned under it,
then the resource updates in natural order), the line for a finished update, and the end (a summary, the
failures, the duration). The pure parts (natural order, ETA, durations, the header) are unit-tested; ``watch``
decides when to poll and what to print."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from svc.cli.output import console
from svc.cli.render import command_line, command_name, operation_text, ordered_states, print_outcome, state_text
from svc.model.states import TERMINAL_UPDATE_STATES, UpdateState
from svc.model.wire import CommandView, ResourceUpdateView

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.table import Table

_DIGITS = re.compile(r"([0-9]+)")
Clock = Callable[[], float]
FAILED_STATES = frozenset({UpdateState.FAILED, UpdateState.REJECTED})
# Which rows a view too short for all of them keeps: those under way, then those waiting, then the finished.
_ROW_PRIORITY = {UpdateState.IN_PROGRESS: 0, UpdateState.PENDING: 1, UpdateState.NOT_STARTED: 1,
                 UpdateState.FAILED: 2, UpdateState.REJECTED: 2, UpdateState.CANCELED: 2, UpdateState.SUCCESS: 3}


def natural_key(text: str) -> tuple[tuple[str | int, ...], str]:
    """Sorts ``f2`` before ``f10``: runs of digits compare as numbers, the rest case-insensitively (then exactly,
    so that the order is total). ``re.split`` with a group alternates text and digits from a text part, so equal
    positions always hold the same kind and the tuples compare."""
    parts = _DIGITS.split(text)
    return tuple(int(part) if index % 2 else part.casefold() for index, part in enumerate(parts)), text


def update_key(update: ResourceUpdateView) -> tuple[object, ...]:
    return (natural_key(update.ResourceLabel or ""), natural_key(update.StackName or ""), update.ResourceType,
            update.Operation)


def eta(done: int, total: int, elapsed: float) -> float | None:
    """The seconds left at the rate updates have finished so far; None until one has finished (no rate yet) and
    once all have."""
    if done <= 0 or done >= total or elapsed <= 0:
        return None
    return elapsed / done * (total - done)


def human_duration(seconds: float) -> str:
    """``16ms``, ``0.4s``, ``12s``, ``3m07s``, ``1h02m``: precise for short things, short for long ones."""
    seconds = max(seconds, 0.0)
    if seconds < 0.1:  # a local change takes milliseconds: "0.0s" would read as not measured
        return f"{round(seconds * 1000)}ms"
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def since(moment: datetime | None, now: float) -> float:
    """Seconds from an agent's timestamp to ``now`` (a ``time.time()``); 0 for none, and never negative when the
    agent's clock is ahead of this one."""
    return max(now - moment.timestamp(), 0.0) if moment is not None else 0.0


def command_duration(command: CommandView) -> float | None:
    """How long the command ran, on the agent's clock; None while it has not ended."""
    if command.StartTs is None or command.EndTs is None:
        return None
    return max((command.EndTs - command.StartTs).total_seconds(), 0.0)


def header_line(command: CommandView, elapsed: float) -> str:
    """``apply (reconcile) 2Y… InProgress: 3 of 10 done (2 Success, 1 Failed), 2 InProgress, 5 Pending;
    12s elapsed, ETA 28s``."""
    updates = command.ResourceUpdates or []
    counts = Counter(update.State for update in updates)
    finished = [f"{counts[state]} {state}" for state in ordered_states(counts) if state in TERMINAL_UPDATE_STATES]
    waiting = [f"{counts[state]} {state}" for state in ordered_states(counts) if state not in TERMINAL_UPDATE_STATES]
    done = sum(counts[state] for state in counts if state in TERMINAL_UPDATE_STATES)
    line = f"{command_name(command)} {command.CommandId} {command.State}: {done} of {len(updates)} done"
    if finished:
        line += f" ({', '.join(finished)})"
    if waiting:
        line += ", " + ", ".join(waiting)
    line += f"; {human_duration(elapsed)} elapsed"
    left = eta(done, len(updates), elapsed)
    if left is not None:
        line += f", ETA {human_duration(left)}"
    return line


def update_line(update: ResourceUpdateView) -> str:
    """``Failed: create FAKE::Test::Item c (stack app): AccessDenied …``: a finished update on one line."""
    message = update.ErrorMessage
    return (f"{update.State}: {update.Operation} {update.ResourceType} {update.ResourceLabel} "
            f"(stack {update.StackName})" + (f": {message}" if message else ""))


def failures(command: CommandView) -> list[ResourceUpdateView]:
    """The failed and rejected updates, in natural order."""
    return sorted((update for update in command.ResourceUpdates or [] if update.State in FAILED_STATES),
                  key=update_key)


def retried(update: ResourceUpdateView) -> bool:
    """An update whose operation failed and is being (or was) tried again: the only rows with an attempt."""
    return (update.CurrentAttempt or 0) > 1


class LiveView:
    """The live view of one poll's answer. Ordering is done once per answer; the header (elapsed time, ETA) and
    what fits the terminal's height are worked out at each refresh, so the clock ticks between polls and a
    10,000-update command draws only the rows it shows."""

    def __init__(self, command: CommandView, *, clock: Clock = time.time) -> None:
        self.command = command
        self.clock = clock
        self.failures = failures(command)
        self.rows = sorted((update for update in command.ResourceUpdates or [] if update.State not in FAILED_STATES),
                           key=update_key)
        self.with_attempts = any(retried(update) for update in self.rows)

    def elapsed(self, now: float) -> float:
        ended = command_duration(self.command)
        return ended if ended is not None else since(self.command.StartTs, now)

    def __rich_console__(self, _console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        now = self.clock()
        yield Text(header_line(self.command, self.elapsed(now)), style="bold", overflow="ellipsis", no_wrap=True)
        room = max((options.height or options.max_height or 24) - 1, 0)
        pinned = self.failures[:max(room // 2, 1)] if self.failures else []
        for update in pinned:
            yield Text(update_line(update), style="red", overflow="ellipsis", no_wrap=True)
        if len(self.failures) > len(pinned):
            yield Text(f"… and {len(self.failures) - len(pinned)} more failed", style="red")
            room -= 1
        room -= len(pinned)
        if not self.rows or room < 2:
            return
        shown = self._fitting(room - 1)  # the table's header takes a line
        yield self._table(shown, now)
        hidden = Counter(update.State for update in self.rows) - Counter(update.State for update in shown)
        if hidden:
            breakdown = ", ".join(f"{hidden[state]} {state}" for state in ordered_states(hidden))
            yield Text(f"… and {hidden.total()} more ({breakdown})", style="dim")

    def _fitting(self, room: int) -> list[ResourceUpdateView]:
        if len(self.rows) <= room:
            return self.rows
        room = max(room - 1, 0)  # the "… and N more" line
        kept = sorted(range(len(self.rows)), key=lambda index: (_ROW_PRIORITY.get(self.rows[index].State, 1), index))
        return [self.rows[index] for index in sorted(kept[:room])]

    def _table(self, updates: Iterable[ResourceUpdateView], now: float) -> Table:
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        columns = ["Change", "Type", "Label", "Stack", "State", *(["Attempt"] if self.with_attempts else []),
                   "Time", "Message"]
        for column in columns:
            table.add_column(column, overflow="ellipsis", no_wrap=True)
        for update in updates:
            attempt = [f"{update.CurrentAttempt}/{update.MaxAttempts or '?'}" if retried(update) else ""]
            table.add_row(operation_text(update.Operation), update.ResourceType, update.ResourceLabel or "",
                          update.StackName or "", state_text(update.State), *(attempt if self.with_attempts else []),
                          _update_time(update, now), update.ErrorMessage or update.StateMessage or "")
        return table


def _update_time(update: ResourceUpdateView, now: float) -> str:
    if update.Duration is not None:
        return human_duration(update.Duration / 1000)
    if update.State == UpdateState.IN_PROGRESS and update.StartedAt is not None:
        return human_duration(since(update.StartedAt, now))
    return ""


def print_finished(updates: list[ResourceUpdateView]) -> None:
    """A line per finished update, in one print: a poll may bring thousands while the agent, on the same machine,
    still works. Off a terminal they are written as they are (``console``: Rich, which rendered each line of 100,000
    as text to wrap, is not needed for them); resource types (``AWS::S3::Bucket``) hold no emoji codes."""
    if updates:
        console.print("\n".join(update_line(update) for update in updates), highlight=False, soft_wrap=True,
                      markup=False, emoji=False)


def print_end(command: CommandView, *, with_failures: bool) -> int:
    """How the followed command ended: its summary, the failures (when they were not printed as they happened),
    whether it succeeded and, last, its duration. The exit code: 0 when it succeeded, else 1."""
    console.print(command_line(command), highlight=False, soft_wrap=True)
    if with_failures:
        for update in failures(command):
            console.styled(update_line(update), "red", soft_wrap=True)
    code = print_outcome(command)
    duration = command_duration(command)
    if duration is not None:
        console.print(f"Duration: {human_duration(duration)}", highlight=False)
    return code

