"""On a terminal, the CLI says what it waits for when a wait is long: the forma's evaluation (real Pkl) and the
agent's plan of it (a stand-in agent that takes its time over real HTTP). ``svc.cli.waiting.DELAY`` is made 0 here:
a forma this small evaluates well within the second a user waits before the line appears."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.tiny_http import Answer, Request, TinyHttp
from svc import __version__
from svc.cli import waiting
from svc.cli.main import main

FORMA = """
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"

forma {
  new svc.Stack { label = "s" }
  new svc.Target { label = "t"; config = new lcl.Config { root = "/tmp/svc-waiting-lines" } }
  new fs.Directory { label = "d"; path = "d" }
}
"""
NOTHING_TO_DO = {"CommandId": "", "Simulation": {"ChangesRequired": False}}


class Terminal(io.StringIO):
    """Standard error on a terminal: what is written, kept."""

    def isatty(self) -> bool:
        return True


def _agent(request: Request) -> Answer:
    """An agent that plans a submission for half a second and finds nothing to do."""
    if request.method == "POST":
        return Answer(body=NOTHING_TO_DO, delay=0.5)
    return Answer(body={"Version": __version__, "AgentId": "agent-1", "Clients": 1})


@pytest.fixture
def slow_agent(tmp_path: Path) -> Iterator[Path]:
    """The CLI config pointing at that agent, running."""
    with TinyHttp(_agent) as server:
        config = tmp_path / "cli.pkl"
        config.write_text(f'amends "svc:/Config.pkl"\ncli {{ api {{ url = "http://127.0.0.1"; port = {server.port} }} }}\n')
        yield config


def test_an_apply_says_it_evaluates_then_that_the_agent_plans(
        slow_agent: Path, write_pkl, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    forma = write_pkl("main.pkl", FORMA)
    terminal = Terminal()
    monkeypatch.setattr(waiting, "DELAY", 0.0)
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["apply", str(forma), "--yes", "--config", str(slow_agent)]) == 0
    assert "No changes needed" in capsys.readouterr().out
    lines = [text for text in terminal.getvalue().split(waiting.ERASE) if text]
    assert lines[0].startswith(f"evaluating {forma}... ")
    assert lines[-1].startswith(f"{waiting.PLANNING}... ")
    assert terminal.getvalue().endswith(waiting.ERASE)  # both erased: nothing left on the line


def test_off_a_terminal_the_cli_says_nothing_while_it_waits(
        slow_agent: Path, write_pkl, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    forma = write_pkl("main.pkl", FORMA)
    monkeypatch.setattr(waiting, "DELAY", 0.0)
    assert main(["apply", str(forma), "--yes", "--config", str(slow_agent)]) == 0
    assert capsys.readouterr().err == ""
