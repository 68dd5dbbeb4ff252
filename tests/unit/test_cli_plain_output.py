"""``svc.cli.output.console`` writes a plain line itself only when Rich would have written exactly that line."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from svc.cli import output

TEXTS = [
    "No changes: the resources already match the forma.",
    "No changes needed: the resources already match the forma.",
    "Command 2Zx9 started on the agent.",
    "Follow it with: svc command status 2Zx9 --follow",
    "a line of exactly forty characters......",
    "a line of exactly forty-one characters...",
    "[bold]markup[/bold] and [link]",
    "an :thumbs_up: emoji code",
    "AWS::S3::Bucket changed",
    "http://localhost:8080/api",
    "  edge spaces ",
    "tab\there",
    "two\nlines",
    "Success: create FAKE::Test::Item a (stack app)\nSuccess: create FAKE::Test::Item b (stack app)",
    "a line\n  then one with edge spaces",
    "+ create  FAKE::Test::Item c (stack app)\n    /Value: \"y\"\n    /Ref: (known after apply)\n\nPlan: 1 to add.",
    "   leading",
    "trailing   ",
    "a line of exactly thirty-seven chars  ",
    "a line of exactly thirty-nine chars... ",
    "a line of exactly forty-one characters.. ",
    "a line\nthen a line of exactly forty-one chars...",
    "a :sun: and :Test: in the text",
    "wide 日本語 cells",
    "ellipsis …",
    "",
]
OPTIONS = [{}, {"highlight": False}, {"markup": False}, {"highlight": False, "markup": False, "soft_wrap": True},
           {"highlight": False, "markup": False, "soft_wrap": True, "emoji": False}, {"emoji": False},
           {"end": ""}, {"style": "bold"}]


def rich_prints(text: str, options: dict[str, object]) -> str:
    out = io.StringIO()
    Console(file=out).print(text, **options)
    return out.getvalue()


@pytest.mark.parametrize("columns", ["40", "120"])
def test_a_plain_line_is_what_rich_prints(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(variable, raising=False)
    taken = 0
    for text in TEXTS:
        for options in OPTIONS:
            line = output.plain_line((text,), options)
            if line is not None:
                taken += 1
                assert rich_prints(text, options) == line + "\n", (text, options)
    assert taken >= 20  # the short plain lines do take the direct path, and the lines of finished updates


def test_a_line_too_wide_or_a_terminal_is_left_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert output.plain_line(("a line of exactly forty-one characters...",), {}) is None
    assert output.plain_line(("a line of exactly forty-one characters...",), {"soft_wrap": True}) is not None
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert output.plain_line(("short",), {}) is None
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    assert output.plain_line(("short",), {}) == "short"


def test_once_rich_is_made_it_prints_everything(capsys: pytest.CaptureFixture[str]) -> None:
    console = output.LazyConsole()
    console.print("plain")
    assert capsys.readouterr().out == "plain\n"
    with console.capture() as captured:  # Rich's console from here on
        console.print("plain again")
    assert captured.get() == "plain again\n"
    assert capsys.readouterr().out == ""


def test_the_lines_of_finished_updates_are_written_directly(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    from svc.cli import progress
    from svc.model import wire
    from svc.model.wire import ResourceUpdateView

    made: list[object] = []
    monkeypatch.setattr(progress, "console", output.LazyConsole())  # one that has not made Rich's console yet
    monkeypatch.setattr(output.LazyConsole, "rich", property(lambda self: made.append(1)))
    updates = [wire.decode(ResourceUpdateView, {
        "ResourceId": f"k{n}", "ResourceType": "AWS::S3::Bucket", "ResourceLabel": f"logs-{n}", "StackName": "app",
        "Operation": "create", "State": "Success"}) for n in range(3)]
    progress.print_finished(updates)
    assert capsys.readouterr().out == "".join(
        f"Success: create AWS::S3::Bucket logs-{n} (stack app)\n" for n in range(3))
    assert not made  # Rich's console was never asked for


@pytest.mark.parametrize("text", ["apply 2Zx9 succeeded.", "Failed: create FAKE::Test::Item a → b (stack app)",
                                  "[not markup]", "a :sun: code", "wide 日本語 cells"])
def test_styled_text_off_a_terminal_is_what_rich_prints(text: str, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from rich.text import Text

    monkeypatch.setenv("COLUMNS", "40")
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(variable, raising=False)
    console = output.LazyConsole()
    console.styled(text, "red", highlight=False, soft_wrap=True)
    assert console._rich is None  # written directly
    rich = io.StringIO()
    Console(file=rich).print(Text(text, style="red"), highlight=False, soft_wrap=True)
    assert capsys.readouterr().out == rich.getvalue()


def test_the_end_of_a_followed_command_off_a_terminal_needs_no_rich(monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """An apply followed into a pipe or a file (CI logs) prints its plan, its lines and its end without Rich."""
    monkeypatch.setenv("COLUMNS", "40")
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(variable, raising=False)
    from svc.cli import progress, render
    from svc.model import wire

    made: list[object] = []
    lazy = output.LazyConsole()
    monkeypatch.setattr(progress, "console", lazy)
    monkeypatch.setattr(render, "console", lazy)
    monkeypatch.setattr(output.LazyConsole, "rich", property(lambda self: made.append(1)))
    command = wire.decode(wire.CommandView, {
        "CommandId": "2Zx9", "Command": "apply", "Mode": "reconcile", "State": "Success",
        "ResourceUpdates": [{"ResourceId": "k", "ResourceType": "T", "ResourceLabel": "a", "Operation": "create",
                             "State": "Success"}]})

    assert progress.print_end(command, with_failures=True) == 0
    assert capsys.readouterr().out == (
        "apply (reconcile) 2Zx9 Success: 1 of 1 resource updates finished (1 Success)\napply 2Zx9 succeeded.\n")
    assert not made
