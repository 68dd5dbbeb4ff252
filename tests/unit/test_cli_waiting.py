"""The line the CLI shows on a terminal while it waits on something slow (``svc.cli.waiting``): nothing for a
short wait or off a terminal; what it waits for and for how long, erased before the command goes on."""

from __future__ import annotations

import io
import time

import pytest

from svc.cli.waiting import ERASE, waiting_line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_short_wait_shows_nothing() -> None:
    stream = Terminal()
    with waiting_line("evaluating main.pkl", stream=stream, delay=5):
        pass
    assert stream.getvalue() == ""


def test_a_long_wait_says_what_it_waits_for_and_is_erased_before_the_command_goes_on() -> None:
    stream = Terminal()
    with waiting_line("evaluating main.pkl", stream=stream, delay=0.05):
        time.sleep(0.5)
        assert stream.getvalue() == f"{ERASE}evaluating main.pkl... 0s"  # shown, and still shown
    assert stream.getvalue() == f"{ERASE}evaluating main.pkl... 0s{ERASE}"


def test_the_seconds_waited_are_counted_once_a_second() -> None:
    stream = Terminal()
    with waiting_line("the agent is planning", stream=stream, delay=0):
        time.sleep(1.8)
    shown = stream.getvalue().split(ERASE)
    assert shown[0] == "" and shown[-1] == ""
    seconds = [int(line.removeprefix("the agent is planning... ").removesuffix("s")) for line in shown[1:-1]]
    assert seconds[0] == 0 and len(seconds) >= 2 and seconds == sorted(set(seconds))


def test_off_a_terminal_nothing_is_shown_however_long_the_wait() -> None:
    stream = io.StringIO()  # a log file, a pipe
    with waiting_line("evaluating main.pkl", stream=stream, delay=0):
        time.sleep(0.1)
    assert stream.getvalue() == ""


def test_a_failure_inside_erases_the_line_and_goes_on_failing() -> None:
    stream = Terminal()
    with pytest.raises(KeyError), waiting_line("evaluating main.pkl", stream=stream, delay=0):
        time.sleep(0.1)
        raise KeyError("x")
    assert stream.getvalue().endswith(ERASE)
