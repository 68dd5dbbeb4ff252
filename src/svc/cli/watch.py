"""Following a command until it is terminal: a live Rich view on a terminal, one line per finished
resource update otherwise (logs and CI read those)."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.text import Text

from svc.cli import agent_api
from svc.cli.client import AgentClient
from svc.cli.errors import CliError
from svc.cli.output import console
from svc.cli.render import TERMINAL_COMMAND_STATES, TERMINAL_UPDATE_STATES, command_line, updates_table

_FAST_POLL = 0.25
_SLOW_POLL = 2.0
# Between polls, wait at least this many times what the last one took: a big command's status costs the agent
# real work (a full view of 10,000 updates ~1 s of its CPU), which must not slow the command itself much.
_POLL_SHARE = 4


def _pause(took: float) -> float:
    return min(max(_FAST_POLL, _POLL_SHARE * took), _SLOW_POLL)


def _fetch(client: AgentClient, command_id: str) -> dict[str, Any]:
    command = agent_api.command(client, command_id)
    if command is None:
        raise CliError(f"command {command_id} disappeared from the agent; check: svc command list")
    return command


def _timed_fetch(client: AgentClient, command_id: str) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    command = _fetch(client, command_id)
    return command, time.monotonic() - started


class _Changes:
    """Polls a command's summary, each time with only the updates written since the previous answer (all of
    them the first time), so that following a big command costs the agent in proportion to its progress."""

    def __init__(self, client: AgentClient, command_id: str) -> None:
        self.client = client
        self.command_id = command_id
        self.since: str | None = None
        self.took = 0.0

    def next(self) -> dict[str, Any]:
        started = time.monotonic()
        command, self.since = agent_api.command_changes(self.client, self.command_id, self.since)
        self.took = time.monotonic() - started
        if command is None:
            raise CliError(f"command {self.command_id} disappeared from the agent; check: svc command list")
        return command


def wait_quietly(client: AgentClient, command_id: str) -> dict[str, Any]:
    """Polls the command's summary until it is terminal, then returns its whole view."""
    changes = _Changes(client, command_id)
    while changes.next().get("State") not in TERMINAL_COMMAND_STATES:
        time.sleep(_pause(changes.took))
    return _fetch(client, command_id)


def _view(command: dict[str, Any]) -> Group:
    updates = command.get("ResourceUpdates") or []
    done = sum(1 for update in updates if update.get("State") in TERMINAL_UPDATE_STATES)
    return Group(Text(command_line(command)), ProgressBar(total=max(len(updates), 1), completed=done, width=60),
                 updates_table(command))


def follow(client: AgentClient, command_id: str, *, live: bool | None = None) -> dict[str, Any]:
    """Polls the command until it is terminal and returns its last state. Ctrl-C stops following, not
    the command."""
    live = console.is_terminal if live is None else live
    try:
        return _follow_live(client, command_id) if live else _follow_lines(client, command_id)
    except KeyboardInterrupt:
        print(f"Still running on the agent; check it with: svc command status {command_id}", file=sys.stderr)
        raise


def _follow_live(client: AgentClient, command_id: str) -> dict[str, Any]:
    command, took = _timed_fetch(client, command_id)
    with Live(_view(command), console=console, refresh_per_second=8) as view:
        while command.get("State") not in TERMINAL_COMMAND_STATES:
            time.sleep(_pause(took))
            command, took = _timed_fetch(client, command_id)
            view.update(_view(command))
    return command


def _follow_lines(client: AgentClient, command_id: str) -> dict[str, Any]:
    reported: set[tuple[str, str]] = set()
    changes = _Changes(client, command_id)  # a line needs no more than the summary
    while True:
        command = changes.next()
        _report(command, reported)
        if command.get("State") in TERMINAL_COMMAND_STATES:
            final = _fetch(client, command_id)
            _report(final, reported)  # any update whose last write the polls did not see
            return final
        time.sleep(_pause(changes.took))


def _report(command: dict[str, Any], reported: set[tuple[str, str]]) -> None:
    """One line per update that ended and was not reported yet."""
    for update in command.get("ResourceUpdates") or []:
        key = (update.get("ResourceId", ""), update.get("Operation", ""))
        if update.get("State") in TERMINAL_UPDATE_STATES and key not in reported:
            reported.add(key)
            message = update.get("ErrorMessage")
            console.print(f"{update.get('State')}: {update.get('Operation')} {update.get('ResourceType')} "
                          f"{update.get('ResourceLabel')} (stack {update.get('StackName')})"
                          + (f": {message}" if message else ""), highlight=False, soft_wrap=True)
