"""Following a command until it is terminal: a live Rich view on a terminal (``progress.LiveView``), one line per
finished resource update otherwise (logs and CI read those); then how it ended (``progress.print_end``)."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

from svc.cli import agent_api
from svc.cli.agent_errors import AgentUnavailable
from svc.cli.client import AgentClient
from svc.cli.errors import CliError
from svc.cli.output import console
from svc.cli.progress import LiveView, print_end, print_finished
from svc.model.states import TERMINAL_COMMAND_STATES, TERMINAL_UPDATE_STATES
from svc.model.wire import CommandView, ResourceUpdateView

T = TypeVar("T")
_FAST_POLL = 0.25
_SLOW_POLL = 2.0
# Between polls, wait at least this many times what the last one took: a big command's status costs the agent
# real work (a full view of 10,000 updates ~1 s of its CPU), which must not slow the command itself much.
_POLL_SHARE = 4
# And at least this share of how long the command has been followed: progress is shown within an eighth of the
# time it has run, and a long command is polled at the slow pace. Each poll reads the updates written since the
# previous one and 2 s before it (the agent's margin for writes committing late), so polls every 0.25 s read
# each update of a long apply up to nine times over. The end is seen at once whatever the pause.
_AGE_SHARE = 1 / 8


def _pause(took: float, age: float) -> float:
    return min(max(_FAST_POLL, _POLL_SHARE * took, _AGE_SHARE * age), _SLOW_POLL)


class _CtrlC:
    """Ctrl-C while following. Python raises its ``KeyboardInterrupt`` wherever the main thread is when the signal's
    handler runs, and one raised in a finalizer (http.client letting go of the previous response, say) is reported
    as ignored and lost: the follower then went on to the command's end (one press in ~40 in a loop of the e2e
    test). So the handler also notes the press, and each poll raises it again if it was lost."""

    def __init__(self) -> None:
        self.pressed = False

    @contextmanager
    def noted(self) -> Iterator[None]:
        """Within: a press is noted, then raised as usual. Left alone where Ctrl-C is ignored (a background job)
        or handled by someone else."""
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield
            return
        try:
            previous = signal.signal(signal.SIGINT, self._press)
        except ValueError:  # not the main thread: its signals are not this thread's to handle
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
            self.pressed = False

    def _press(self, signum: int, frame: FrameType | None) -> None:
        self.pressed = True
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.pressed:
            raise KeyboardInterrupt


_ctrl_c = _CtrlC()


class _Poll:
    """The pause before the next poll, spent on the agent: each poll asks it to answer once the command has ended
    or after the pause (``wait``), so the end is seen at once instead of up to a pause late. An agent that answers
    sooner without the command having ended (one that predates ``wait``) leaves the rest to sleep here."""

    def __init__(self, *, at_once: bool = True) -> None:
        # A live view shows the command at once; a follower with nothing to show before updates end waits from
        # the start, so a short command is answered once, after its end, at no cost to its execution.
        self.wait = 0.0 if at_once else _FAST_POLL
        self.following_since = time.monotonic()

    def __call__(self, fetch: Callable[[float], CommandView]) -> CommandView:
        started = time.monotonic()
        command = fetch(self.wait)
        took = time.monotonic() - started
        if took < self.wait and command.State not in TERMINAL_COMMAND_STATES:
            time.sleep(self.wait - took)  # it did not wait
            work = took
        else:
            work = max(took - self.wait, 0.0)  # what the poll cost the agent, as far as this side can tell
        self.wait = _pause(work, time.monotonic() - self.following_since)
        _ctrl_c.check()
        return command


def _through_outages(fetch: Callable[[float], T], wait: float) -> T:
    """``fetch(wait)``, again after a pause while the agent answers 503: its datastore is unavailable (or no agent
    leads yet), and the command goes on and ends once it is back (the agent waits for it), so following it goes on
    too, past ``cli.api.retryFor``, which bounds each request (``AgentClient.request`` retries a 503 within it).
    Said once on stderr (stdout may be a machine-readable document)."""
    pause = _FAST_POLL
    said = False
    while True:
        try:
            return fetch(wait)
        except AgentUnavailable as error:
            if not said:
                print(f"{error}\nThe command goes on; still following it until the agent answers again.",
                      file=sys.stderr)
                said = True
            time.sleep(pause)
            pause = min(pause * 2, _SLOW_POLL)


def _fetch(client: AgentClient, command_id: str, wait: float = 0.0) -> CommandView:
    command = _through_outages(lambda w: agent_api.command(client, command_id, wait=w), wait)
    if command is None:
        raise CliError(f"command {command_id} disappeared from the agent; check: svc command list")
    return command


# The first poll's ``updated_since``: every update whose state was written, none of those still as planned (the
# agent stores a command's updates with no modified time). Asking for all of them read and sent every planned
# update of a big command (100,000 at ~40 µs of the agent's CPU each) just as it started, to show none.
_EVERY_WRITE = "1970-01-01T00:00:00+00:00"


class _Changes:
    """Polls a command's summary, each time with only the updates written since the previous answer (every one
    written so far the first time), so that following a big command costs the agent in proportion to its
    progress. ``progress``: each update with its attempts, duration and message."""

    def __init__(self, client: AgentClient, command_id: str, since: str | None = _EVERY_WRITE, *,
                 progress: bool = False) -> None:
        self.client = client
        self.command_id = command_id
        self.since = since
        self.progress = progress
        self.poll = _Poll(at_once=False)

    def next(self) -> CommandView:
        return self.poll(self.fetch)

    def fetch(self, wait: float) -> CommandView:
        command, self.since = _through_outages(lambda w: agent_api.command_changes(
            self.client, self.command_id, self.since, wait=w, progress=self.progress), wait)
        if command is None:
            raise CliError(f"command {self.command_id} disappeared from the agent; check: svc command list")
        return command


def wait_quietly(client: AgentClient, command_id: str) -> CommandView:
    """Polls the command's summary until it is terminal, then returns its whole view."""
    changes = _Changes(client, command_id)
    with _ctrl_c.noted():
        command = changes.next()
        while command.State not in TERMINAL_COMMAND_STATES:
            command = changes.next()
    return _fetch(client, command_id)


def follow(client: AgentClient, command_id: str, *, live: bool | None = None) -> CommandView:
    """Polls the command until it is terminal and returns its last state. Ctrl-C stops following, not
    the command."""
    live = console.is_terminal if live is None else live
    try:
        with _ctrl_c.noted():
            return _follow_live(client, command_id) if live else _follow_lines(client, command_id)
    except KeyboardInterrupt:
        print(f"Still running on the agent; follow it again with: svc command status {command_id} --follow",
              file=sys.stderr)
        raise


def follow_to_outcome(client: AgentClient, command_id: str) -> int:
    """Follows the command to its end (``follow``) and prints how it ended: its summary, then on a terminal the
    failures (the live view is gone; off one, their lines were printed as they happened), and its duration. The
    exit code: 0 when it succeeded, else 1."""
    live = console.is_terminal
    return print_end(follow(client, command_id, live=live), with_failures=live)


class LiveUpdates:
    """A command's updates as a live view shows them, kept across polls: the first poll brings every update, each
    later one those written since the one before (with their progress), merged in. Polling the whole command each
    time cost the agent ~40 µs of CPU per update per poll (4 s at 100,000, every 2 s); this costs it in proportion
    to the command's progress."""

    def __init__(self, client: AgentClient, command_id: str) -> None:
        self.changes = _Changes(client, command_id, since=None, progress=True)
        self.updates: dict[tuple[str, str], ResourceUpdateView] = {}

    @property
    def since(self) -> str | None:
        """Where the next poll reads from (None: the whole command; an agent that gives no as-of time: each time)."""
        return self.changes.since

    def __call__(self, wait: float) -> CommandView:
        whole = self.since is None
        command = self.changes.fetch(wait)
        if whole:
            self.updates = {}
        for update in command.ResourceUpdates or []:
            self.updates[(update.ResourceId, update.Operation)] = update
        command.ResourceUpdates = list(self.updates.values())
        return command


def _follow_live(client: AgentClient, command_id: str) -> CommandView:
    from rich.live import Live  # on a terminal only: following into a pipe prints plain lines

    poll, merged = _Poll(), LiveUpdates(client, command_id)
    command = poll(merged)
    # Transient: once the command has ended the view gives way to its summary; the whole table is one
    # ``svc command status`` away, not printed again.
    with Live(LiveView(command), console=console.rich, refresh_per_second=4, transient=True) as view:
        while command.State not in TERMINAL_COMMAND_STATES:
            command = poll(merged)
            view.update(LiveView(command))
    return command


def _follow_lines(client: AgentClient, command_id: str) -> CommandView:
    reported: set[tuple[str, str]] = set()
    changes = _Changes(client, command_id)  # a line needs no more than the summary
    while True:
        command = changes.next()
        _report(command, reported)
        if command.State not in TERMINAL_COMMAND_STATES:
            continue
        if command.UpdateCounts is not None:
            # The agent counted every update by state: the end needs no more than that. Reading every update
            # again cost the agent ~4 s of CPU at 100,000, and the lines are those of every write the polls saw.
            return command
        # An agent that does not count: every update as it ended, in summary form.
        final = _Changes(client, command_id, since=None).fetch(0.0)
        _report(final, reported)  # any update whose last write the polls did not see
        return final


def _report(command: CommandView, reported: set[tuple[str, str]]) -> None:
    """One line per update that ended and was not reported yet."""
    ended = []
    for update in command.ResourceUpdates or []:
        key = (update.ResourceId, update.Operation)
        if update.State in TERMINAL_UPDATE_STATES and key not in reported:
            reported.add(key)
            ended.append(update)
    print_finished(ended)
