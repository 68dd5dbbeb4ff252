"""A Typer group whose commands are imported when one runs, not when the CLI starts.

``svc --version`` and ``svc --help`` need no command's module, and ``svc inventory`` needs one: importing every
command (HTTP client, Pkl, forma model, pip runner …) cost more CPU than the work of a short command. The group
lists each lazy command by the one-line summary it is registered with, and imports the command only when it is
resolved (run, completed into, or documented); ``tests/unit/test_cli_start.py`` checks that each summary is
the loaded command's own.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    """A command as ``svc --help`` lists it, and how to add the real one (importing its module) to a Typer app."""

    summary: str
    register: Callable[[typer.Typer], None]


class LazyGroup(TyperGroup):
    """A ``TyperGroup`` whose ``lazy`` commands are loaded by name on first resolution (``lazy_group`` makes
    one for a registry). Listing them (help, completion of names) shows a stand-in with the summary."""

    lazy: ClassVar[Mapping[str, LazyCommand]] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.lazy, *(name for name in super().list_commands(ctx) if name not in self.lazy)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        return TyperCommand(cmd_name, help=self.lazy[cmd_name].summary)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] in self.lazy:
            self.load(args[0])
        elif args and args[0] not in self.commands:
            # A name no command has: Typer suggests the nearest of the loaded ones ("Did you mean 'command'?"), so
            # all of them are loaded first, as the CLI server has them (the error path, worth the imports).
            self.load_all()
        return super().resolve_command(ctx, args)

    def load(self, name: str) -> None:
        """Imports the command ``name`` (and whatever its registration adds with it) into ``commands``."""
        if name in self.commands:
            return
        holder = typer.Typer()
        self.lazy[name].register(holder)
        loaded = typer.main.get_group(holder).commands
        if name not in loaded:
            raise LookupError(f"the registration of {name!r} did not add a command of that name")
        self.commands.update({added: command for added, command in loaded.items() if added not in self.commands})
        if not gc.isenabled():  # the console script's start (``svc.cli.main.run``), whose imports are now done
            gc.freeze()
            gc.enable()

    def load_all(self) -> LazyGroup:
        """Every command loaded: for the CLI reference and tests that walk the whole tree."""
        for name in self.lazy:
            self.load(name)
        return self


def lazy_group(commands: Mapping[str, LazyCommand]) -> type[LazyGroup]:
    """A ``LazyGroup`` class over ``commands`` (by name, in the order ``--help`` lists them), for
    ``typer.Typer(cls=…)``."""
    return type("SvcLazyGroup", (LazyGroup,), {"lazy": dict(commands)})


def fully_loaded(command: Any) -> Any:
    """``command`` with every lazy subcommand loaded (any other command as it is)."""
    return command.load_all() if isinstance(command, LazyGroup) else command
