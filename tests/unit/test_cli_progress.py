"""How a followed command's progress reads (``svc.cli.progress``): natural order, the ETA, durations, the header
line, and the live view's pinned failures, attempt column and rows that fit the terminal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from svc.cli import progress
from svc.model.wire import CommandView, ResourceUpdateView

START = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def update(label: str, state: str = "Success", **fields: object) -> ResourceUpdateView:
    return ResourceUpdateView(ResourceId=f"id-{label}", ResourceType="FAKE::Test::Item", ResourceLabel=label,
                              StackName="app", Operation="create", State=state, **fields)


def command(*updates: ResourceUpdateView, state: str = "InProgress", ended: float | None = None) -> CommandView:
    return CommandView(CommandId="2Yc0mmand", Command="apply", Mode="reconcile", State=state, StartTs=START,
                       EndTs=START + timedelta(seconds=ended) if ended is not None else None,
                       ResourceUpdates=list(updates))


def test_natural_order_puts_f2_before_f10() -> None:
    labels = ["f10", "f2", "F1", "g", "f2a", "f02", "10", "9", "", "f1b2", "f1b10"]
    assert sorted(labels, key=progress.natural_key) == [
        "", "9", "10", "F1", "f1b2", "f1b10", "f02", "f2", "f2a", "f10", "g"]


def test_natural_order_is_total_and_never_compares_a_number_with_text() -> None:
    labels = ["a1", "1a", "a", "1", "a1b", "A1", "a01"]
    ordered = sorted(labels, key=progress.natural_key)
    assert sorted(reversed(labels), key=progress.natural_key) == ordered  # ties broken by the text itself
    assert ordered.index("1") < ordered.index("1a") < ordered.index("a") < ordered.index("a1")


@pytest.mark.parametrize(("done", "total", "elapsed", "expected"), [
    (0, 10, 30.0, None),  # no rate before one has finished
    (1, 4, 3.0, 9.0),
    (5, 10, 20.0, 20.0),
    (10, 10, 20.0, None),  # nothing left
    (3, 0, 5.0, None),
    (2, 4, 0.0, None),
])
def test_eta_from_the_rate_of_finished_updates(done: int, total: int, elapsed: float, expected: float | None) -> None:
    assert progress.eta(done, total, elapsed) == expected


@pytest.mark.parametrize(("seconds", "text"), [
    (0.016, "16ms"), (0.0999, "100ms"), (0.1, "0.1s"), (4.25, "4.2s"), (9.96, "10.0s"), (12.7, "12s"), (60, "1m00s"), (187, "3m07s"),
    (3720, "1h02m"), (-3, "0ms"),
])
def test_human_durations(seconds: float, text: str) -> None:
    assert progress.human_duration(seconds) == text


def test_the_header_counts_by_state_with_elapsed_and_an_eta_once_there_is_a_rate() -> None:
    running = command(update("a"), update("b", "Failed", ErrorMessage="AccessDenied"), update("c", "InProgress"),
                      update("d", "Pending"), update("e", "Pending"))
    assert progress.header_line(running, 12.0) == (
        "apply (reconcile) 2Yc0mmand InProgress: 2 of 5 done (1 Success, 1 Failed), 1 InProgress, 2 Pending; "
        "12s elapsed, ETA 18s")
    starting = command(update("a", "InProgress"), update("b", "Pending"))
    assert progress.header_line(starting, 1.5) == (
        "apply (reconcile) 2Yc0mmand InProgress: 0 of 2 done, 1 InProgress, 1 Pending; 1.5s elapsed")


def test_the_duration_is_the_agents_from_start_to_end() -> None:
    assert progress.command_duration(command(update("a"), state="Success", ended=75.5)) == 75.5
    assert progress.command_duration(command(update("a", "InProgress"))) is None


def _render(view: progress.LiveView, height: int = 40) -> str:
    console = Console(width=160, height=height, color_system=None, record=True, force_terminal=False)
    console.print(view)
    return console.export_text()


def test_the_live_view_pins_failures_with_their_message_above_rows_in_natural_order() -> None:
    now = (START + timedelta(seconds=8)).timestamp()
    view = progress.LiveView(command(
        update("f10"), update("f2", "InProgress", StartedAt=START + timedelta(seconds=5)), update("f1", Duration=1500),
        update("f3", "Failed", ErrorMessage="AccessDenied: no"), update("f20", "Pending")), clock=lambda: now)
    lines = _render(view).splitlines()
    assert lines[0].startswith("apply (reconcile) 2Yc0mmand InProgress: 3 of 5 done (2 Success, 1 Failed)")
    assert "8.0s elapsed, ETA 5.3s" in lines[0]
    assert lines[1] == "Failed: create FAKE::Test::Item f3 (stack app): AccessDenied: no"
    assert lines[2].split() == ["Change", "Type", "Label", "Stack", "State", "Time", "Message"]  # nothing retried
    rows = [line.split() for line in lines[3:]]
    assert [row[3] for row in rows] == ["f1", "f2", "f10", "f20"]
    assert rows[0][-1] == "1.5s" and rows[1][-1] == "3.0s"  # took; has been running


def test_the_attempt_column_shows_only_for_retried_updates() -> None:
    view = progress.LiveView(command(update("a", "InProgress", CurrentAttempt=3, MaxAttempts=5,
                                            StateMessage="Throttling"),
                                     update("b", "InProgress", CurrentAttempt=1, MaxAttempts=5)), clock=lambda: 0)
    lines = _render(view).splitlines()
    assert "Attempt" in lines[1].split()
    assert "3/5" in lines[2] and "Throttling" in lines[2]
    assert "/5" not in lines[3]


def test_a_view_taller_than_the_terminal_keeps_the_updates_under_way_and_counts_the_rest() -> None:
    updates = [update(f"r{n}") for n in range(1, 50)] + [update("r50", "InProgress"), update("r51", "Pending")]
    lines = _render(progress.LiveView(command(*updates), clock=lambda: 0), height=8).splitlines()
    assert len(lines) <= 8
    labels = [line.split()[3] for line in lines[2:-1]]
    assert labels[-2:] == ["r50", "r51"] and labels == sorted(labels, key=progress.natural_key)
    hidden = 49 - len(labels) + 2
    assert lines[-1] == f"… and {hidden} more ({hidden} Success)"
