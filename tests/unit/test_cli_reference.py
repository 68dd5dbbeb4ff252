"""docs/cli.md is the CLI's own help, rendered by ``svc.cli.reference``: it fails when the page is stale."""

from __future__ import annotations

import typer

from svc.cli.lazy import fully_loaded
from svc.cli.main import app
from svc.cli.reference import DEFAULT_PAGE, REGENERATE, render


def test_the_committed_cli_reference_is_current() -> None:
    assert DEFAULT_PAGE.read_text(encoding="utf-8") == render(app), \
        f"docs/cli.md is stale: regenerate it with {REGENERATE} and commit it"


def test_every_visible_command_has_a_section() -> None:
    page = render(app)

    def names(command, path: str) -> list[str]:
        found = [path]
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                found += names(sub, f"{path} {name}")
        return found

    for name in names(fully_loaded(typer.main.get_command(app)), "svc"):
        assert f"# `{name}`\n" in page, name
