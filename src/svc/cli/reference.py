"""The CLI reference, ``docs/cli.md``, rendered from the Typer app itself: every command's help, usage, arguments and
options, so the page says what the CLI does. ``tests/unit/test_cli_reference.py`` fails when the committed page is
not what this renders.

    python -m svc.cli.reference            # writes docs/cli.md
    python -m svc.cli.reference --check    # exit 1 when docs/cli.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from svc.cli.lazy import fully_loaded

REGENERATE = ".venv/bin/python -m svc.cli.reference"
DEFAULT_PAGE = Path(__file__).resolve().parents[3] / "docs" / "cli.md"

HEADER = f"""\
# CLI reference

<!-- Generated from the CLI itself by `{REGENERATE}`: do not edit by hand. -->

Every `svc` command, its arguments and options, as `svc … --help` gives them. How the commands fit together:
[Applying formas](applying.md) (apply, destroy, commands, queries, extract), [Planning](cli-plan.md) (`svc plan`
and plan files), [Live progress](cli-progress.md) (the progress view, `svc command status --follow`),
[Drift, discovery and policies](drift.md), [Configuration](configuration.md) (which agent the CLI talks to).

A failure is one `Error: …` line on stderr and exit code 1. A forma's own properties become flags of `eval`,
`apply` and `destroy`: `svc apply main.pkl --help` lists them. While the agent is unavailable (being replaced,
restarting, answering 503), a command waits and tries again for up to `cli.api.retryFor` (60 s; `SVC_RETRY_FOR`
seconds overrides it, `0` fails at once), saying so once on stderr; a submission the agent may have taken is never
sent twice ([Configuration](configuration.md#when-the-agent-is-unavailable)). `svc agent status` does not wait.
"""


def render(app: typer.Typer) -> str:
    """The whole reference page as Markdown."""
    root = fully_loaded(typer.main.get_command(app))
    sections = [HEADER]
    for path, command in _walk(root, ["svc"]):
        sections.append(_section(path, command, root))
    return "\n".join(sections)


def _walk(command: Any, path: list[str]) -> list[tuple[list[str], Any]]:
    found = [(path, command)]
    for name, sub in sorted(getattr(command, "commands", {}).items()):  # a group: its commands, by name
        if not sub.hidden:
            found.extend(_walk(sub, [*path, name]))
    return found


def _section(path: list[str], command: Any, root: Any) -> str:
    name = " ".join(path)
    ctx = command.context_class(command, info_name=name)
    lines = [f"{'##' if len(path) <= 2 else '###'} `{name}`", ""]
    if command.deprecated:
        lines += ["*Deprecated.*", ""]
    if command.help:
        lines += [_plain(command.help), ""]
    params = [p for p in command.get_params(ctx) if not p.hidden and p.name != "help"
              and (command is root or p.name not in ("install_completion", "show_completion"))]
    arguments = [_argument(p) for p in params if p.param_type_name == "argument"]
    subcommands = sorted((n, c) for n, c in getattr(command, "commands", {}).items() if not c.hidden)
    usage = [name, "[OPTIONS]" if len(arguments) < len(params) else "", *arguments, "COMMAND" if subcommands else ""]
    lines += ["```text", " ".join(piece for piece in usage if piece), "```", ""]
    if subcommands:
        lines += ["| Command | What it does |", "| --- | --- |"]
        lines += [f"| `{n}` | {_plain(c.get_short_help_str(limit=300))} |" for n, c in subcommands]
        lines.append("")
    if params:
        lines += ["| Argument or option | Description |", "| --- | --- |"]
        for param in params:
            names, help_text = param.get_help_record(ctx) or (param.name, "")
            if param.param_type_name == "argument":
                names = _argument(param)
            lines.append(f"| `{names}` | {_plain(help_text)} |")
        lines.append("")
    return "\n".join(lines)


def _argument(param: Any) -> str:
    text = (param.name or "").upper() + (" …" if param.nargs == -1 else "")
    return text if param.required else f"[{text}]"


def _plain(text: str) -> str:
    """One Markdown table cell or paragraph: whitespace folded, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    from svc.cli.main import app

    args = sys.argv[1:] if argv is None else argv
    text = render(app)
    if "--check" in args:
        if not DEFAULT_PAGE.is_file() or DEFAULT_PAGE.read_text(encoding="utf-8") != text:
            print(f"{DEFAULT_PAGE} is stale; regenerate it with: {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    DEFAULT_PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {DEFAULT_PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
