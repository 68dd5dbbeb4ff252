"""How the CLI paces its status polls (``svc.cli.watch._Poll``): the pause is spent on the agent (``wait``), and
an agent that does not wait leaves it to a sleep here; a costly poll slows the next ones down."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from svc.cli import watch
from svc.cli.render import command_line
from svc.model.wire import CommandView, ResourceUpdateView


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(watch, "time", clock)
    return clock


def agent(clock: Clock, *, honours_wait: bool, work: float, ends_after: float = 1e9) -> Any:
    """A status endpoint that costs ``work`` seconds and, if it honours ``wait``, holds the answer until the
    command ends (at ``ends_after``) or the wait is over."""
    asked: list[float] = []

    def fetch(wait: float) -> CommandView:
        asked.append(wait)
        if honours_wait:
            clock.now = min(clock.now + wait, max(clock.now, ends_after))
        clock.now += work
        return CommandView(CommandId="c", Command="apply", State="Success" if clock.now >= ends_after else "InProgress")

    fetch.asked = asked  # type: ignore[attr-defined]
    return fetch


def test_the_first_poll_answers_at_once_then_the_agent_holds_each_answer(clock: Clock) -> None:
    poll, fetch = watch._Poll(), agent(clock, honours_wait=True, work=0.01)
    for _ in range(3):
        poll(fetch)
    assert fetch.asked == [0.0, 0.25, 0.25]
    assert clock.slept == []  # the agent did the waiting


def test_a_follower_with_nothing_to_show_waits_from_the_first_poll(clock: Clock) -> None:
    """``--wait`` and the line output: a command shorter than the pause is asked about once, after its end, so the
    poll costs its execution nothing."""
    poll, fetch = watch._Poll(at_once=False), agent(clock, honours_wait=True, work=0.0, ends_after=0.1)
    assert poll(fetch).State == "Success"
    assert fetch.asked == [0.25] and clock.now == pytest.approx(0.1)


def test_the_end_is_seen_when_it_happens_not_a_pause_later(clock: Clock) -> None:
    poll, fetch = watch._Poll(), agent(clock, honours_wait=True, work=0.0, ends_after=0.1)
    assert poll(fetch).State == "InProgress"
    assert poll(fetch).State == "Success"
    assert clock.now == pytest.approx(0.1)


def test_an_agent_that_does_not_wait_is_polled_at_the_same_pace(clock: Clock) -> None:
    poll, fetch = watch._Poll(), agent(clock, honours_wait=False, work=0.01)
    for _ in range(3):
        poll(fetch)
    assert clock.slept == [0.24, 0.24]
    assert clock.now == pytest.approx(0.51)  # polls at 0, 0.25 and 0.5 s, each taking 0.01 s


def test_costly_polls_are_spaced_out_up_to_the_slow_pace(clock: Clock) -> None:
    poll, fetch = watch._Poll(), agent(clock, honours_wait=True, work=0.2)
    for _ in range(3):
        poll(fetch)
    assert fetch.asked == [0.0, pytest.approx(0.8), pytest.approx(0.8)]
    poll, fetch = watch._Poll(), agent(clock, honours_wait=True, work=1.0)
    poll(fetch)
    poll(fetch)
    assert fetch.asked == [0.0, 2.0]


def test_a_long_command_is_polled_at_the_slow_pace(clock: Clock) -> None:
    """The pause grows with the time followed (an eighth of it), so a long command's polls read fewer updates
    twice; its end is still seen at once."""
    poll, fetch = watch._Poll(), agent(clock, honours_wait=True, work=0.01, ends_after=30.5)
    while poll(fetch).State != "Success":
        pass
    assert fetch.asked[:3] == [0.0, 0.25, 0.25]
    assert fetch.asked[-1] == 2.0
    assert all(later >= earlier for earlier, later in zip(fetch.asked[1:], fetch.asked[2:], strict=False))
    assert clock.now == pytest.approx(30.5 + 0.01)


# -- following by lines: what the end reads ----------------------------------------------------------------------

def _update(label: str, state: str) -> ResourceUpdateView:
    return ResourceUpdateView(ResourceId=label, ResourceType="FAKE::Test::Item", ResourceLabel=label,
                              StackName="app", Operation="create", State=state)


def _changes_agent(monkeypatch: pytest.MonkeyPatch, answers: list[CommandView], everything: CommandView) -> list[Any]:
    """``agent_api.command_changes`` answering ``answers`` in turn, or ``everything`` when asked for every update
    (``since`` None); returns the ``since`` of each call."""
    asked: list[Any] = []

    def command_changes(client: Any, command_id: str, since: str | None, *, wait: float = 0.0,
                        progress: bool = False) -> Any:
        assert not progress  # a line per finished update needs no update's progress (a third more of a read)
        asked.append(since)
        return (everything if since is None else answers.pop(0)), f"as-of-{len(asked)}"

    monkeypatch.setattr(watch.agent_api, "command_changes", command_changes)
    return asked


def test_following_by_lines_ends_with_the_agents_counts_not_another_read(clock: Clock, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """At 100,000 updates, reading every one again at the end cost the agent ~4 s of CPU: an agent that counts
    them by state (``UpdateCounts``, once the command has ended) is asked for nothing more."""
    asked = _changes_agent(monkeypatch, [
        CommandView(CommandId="c", Command="apply", State="InProgress", ResourceUpdates=[_update("a", "Success")]),
        CommandView(CommandId="c", Command="apply", State="Failed", ResourceUpdates=[_update("b", "Failed")],
                    UpdateCounts={"Success": 1, "Failed": 1, "NotStarted": 1}),
    ], everything=CommandView(CommandId="c", Command="apply", State="Failed"))
    final = watch._follow_lines(Any, "c")  # type: ignore[arg-type]
    assert asked == [watch._EVERY_WRITE, "as-of-1"]  # no read of every update
    assert command_line(final) == "apply c Failed: 2 of 3 resource updates finished (1 Success, 1 Failed, 1 NotStarted)"
    out = capsys.readouterr().out
    assert "Success: create FAKE::Test::Item a" in out and "Failed: create FAKE::Test::Item b" in out


def test_following_an_agent_that_does_not_count_reads_every_update_at_the_end(
        clock: Clock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    everything = CommandView(CommandId="c", Command="apply", State="Success",
                             ResourceUpdates=[_update("a", "Success"), _update("b", "Success")])
    asked = _changes_agent(monkeypatch, [
        CommandView(CommandId="c", Command="apply", State="Success", ResourceUpdates=[_update("a", "Success")])],
        everything=everything)
    assert watch._follow_lines(Any, "c") is everything  # type: ignore[arg-type]
    assert asked == [watch._EVERY_WRITE, None]
    assert "Success: create FAKE::Test::Item b" in capsys.readouterr().out  # the write the polls missed


class _LetGo:
    """An object whose finalizer runs as Ctrl-C's handler is due, as http.client's previous response does when the
    next request lets go of it: the handler's ``KeyboardInterrupt`` is raised in the finalizer, where Python reports
    it as ignored."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


@pytest.fixture
def ctrl_c_raises() -> Any:
    """Ctrl-C's handler as in a command started from a shell (a test worker may have it ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("follower", [lambda: watch.follow(None, "c", live=False),  # type: ignore[arg-type]
                                      lambda: watch.wait_quietly(None, "c")],  # type: ignore[arg-type]
                         ids=["follow", "wait_quietly"])
def test_a_ctrl_c_lost_in_a_finalizer_still_stops_following(clock: Clock, ctrl_c_raises: None,
                                                             monkeypatch: pytest.MonkeyPatch, follower: Any) -> None:
    polls: list[float] = []

    def changes(client: Any, command_id: str, since: str | None, *, wait: float, progress: bool = False) -> Any:
        polls.append(wait)
        if len(polls) == 2:
            _LetGo()  # let go of at once: Ctrl-C is pressed, and its exception lost
        assert len(polls) < 5, "followed on after Ctrl-C"
        clock.now += wait
        return CommandView(CommandId="c", Command="apply", State="InProgress"), "2026-01-01T00:00:00+00:00"

    monkeypatch.setattr(watch.agent_api, "command_changes", changes)
    with pytest.raises(KeyboardInterrupt):
        follower()
    assert len(polls) == 2  # the poll that saw it was the last
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # and the handler is given back
